"""`nmb report checklist` on the demo: the six MI-CLEAR-LLM items written as Markdown and JSON,
filled where the records allow (model cards, cases' dates, the results) and missing with a hint
where not (the demo's responses were imported: no query dates, no prompts sent); methods.md
with the study's numbers."""

import json
from pathlib import Path

from sqlmodel import select

from cli import main
from db.engine import session
from db.models import Case

ROOT = Path(__file__).resolve().parents[2]


def test_checklists_from_the_demo_records(demo_study: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "checklists"
    assert main(["report", "checklist", "--out", str(out)]) == 0
    bare = {i["id"]: i for i in json.loads((out / "mi-clear-llm.json").read_text())["items"]}
    assert bare["1"]["status"] == "missing" and "nmb models set" in bare["1"]["hint"]

    assert main(["models", "set", "--from-csv",
                 str(ROOT / "examples" / "demo-claims" / "model-cards.csv")]) == 0
    with session() as s:
        case_ids = sorted(s.exec(select(Case.case_id)))
    dates = tmp_path / "dates.csv"
    dates.write_text("case_id,published\n" + "".join(
        f"{cid},{'2024-01' if n % 2 else '2024-12-01'}\n" for n, cid in enumerate(case_ids)))
    assert main(["cases", "dates", str(dates)]) == 0
    capsys.readouterr()
    assert main(["results", "--by", "", "--format", "json"]) == 0
    overall = {c["who"]: c for c in json.loads(capsys.readouterr().out)["overall"]}
    assert main(["report", "checklist", "--out", str(out)]) == 0

    assert {p.name for p in out.iterdir()} == {
        f"{k}.{x}" for k in ("mi-clear-llm", "tripod-llm", "grras") for x in ("md", "json")
    } | {"methods.md"}
    mi = json.loads((out / "mi-clear-llm.json").read_text())
    items = {i["id"]: i for i in mi["items"]}
    assert list(items) == ["1", "2", "3", "4", "5", "6"]
    for i in items.values():  # each item either filled with its source, or says what to supply
        assert i["sources"] and (i["status"] == "filled" or i["hint"]), i
    # 1: three cards complete, aurora-vl-7b without a training cutoff
    assert items["1"]["status"] == "partly filled" and "training_cutoff" in items["1"]["hint"]
    assert "meridian-med-2: maker Meridian Labs (synthetic), version 2" in items["1"]["text"]
    # 3-5: imported responses, no prompt or date recorded by the tool
    assert {items[k]["status"] for k in "345"} == {"missing"}
    assert "query dates of imported responses" in items["5"]["hint"]
    # 6: judged from each cutoff against the cases' dates (cutoff 2024-06 -> 2024-06-30)
    assert items["6"]["status"] == "partly filled"
    half = len(case_ids) // 2
    assert (f"meridian-med-2: {half} of {len(case_ids)} cases published after the training "
            f"cutoff 2024-06-30 (independent by date), {len(case_ids) - half} on or before it"
            in items["6"]["text"])
    md = (out / "mi-clear-llm.md").read_text()
    assert md.count("\n| ") == 7 and "| 6 | Independence of the test data" in md

    methods = (out / "methods.md").read_text()
    assert "The benchmark holds 12 tasks" in methods and "on 10 cases" in methods
    for who, cell in overall.items():
        if cell["group"] == "model":
            e = cell["pass_at"]["1"]
            assert f"- {who}: pass@1 {e['value']:.3f} [{e['ci'][0]:.3f}, {e['ci'][1]:.3f}]" \
                in methods
