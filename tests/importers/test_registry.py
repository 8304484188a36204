"""The importer registry: one entry per format, read by the CLI and the admin page alike."""

from pathlib import Path

import pytest

from cli import build_parser, main
from importers import IMPORTERS, Options, checked, names


def test_the_cli_offers_every_registered_format_and_nothing_else() -> None:
    parser = build_parser()
    choices = {}
    for action in parser._subparsers._group_actions[0].choices.items():  # noqa: SLF001
        name, sub = action
        for a in sub._actions:
            if a.dest == "source" and name in ("import", "import-responses", "import-scores"):
                choices[name] = list(a.choices)
    assert choices == {"import": names("cases"), "import-responses": names("responses"),
                       "import-scores": names("scores")}
    # the CSVs of what is known beside the answers each have one command (cli/models.py)
    assert (names("model cards"), names("breadth scores"), names("case dates")) == (
        ["model-cards"], ["breadth"], ["case-dates"])
    assert set(names("cases")) | set(names("responses")) | set(names("scores")) | {
        "model-cards", "breadth", "case-dates"} == set(IMPORTERS)


@pytest.mark.parametrize(("argv", "line"), [
    (["import", "b", "--answers", "a.json"], "nmb: --answers is for --from neural-medbench\n"),
    (["import", "b", "--from", "neural-medbench", "--case-info", "c.json"],
     "nmb: --case-info is for --from dicom and --from bids\n"),
    (["import", "d", "--from", "dicom", "--exclude", "sub-01"], "nmb: --exclude is for --from bids\n"),
    (["import-responses", "r.jsonl", "--from", "nmb", "--model", "m"],
     "nmb: --model is for --from openai-batch and --from chat-completions and --from ollama "
     "and --from vlmevalkit and --from lm-eval and --from lmms-eval\n"),
    (["import-responses", "r.jsonl", "--from", "vlmevalkit", "--filter", "x"],
     "nmb: --filter is for --from lm-eval\n"),
    (["import", "a", "b"], "nmb: --from bundle imports one path (release task files: --from "
                           "neural-medbench)\n"),
])
def test_an_option_the_format_does_not_take_is_one_line_and_nothing_is_written(
        argv: list[str], line: str, nmb_home: Path, capsys) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err == line
    assert not nmb_home.exists()  # refused before the study was opened


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(Exception, match="'zip' is not one of bundle"):
        checked("zip", [Path("x")], Options())
