"""The viewer's measuring tools, a study setting: both until set, set and printed by
`nmb viewer-tools` (audited with the tools before), an unknown tool refused in one line with
nothing written, and what the viewer then receives."""

from pathlib import Path

from sqlmodel import select

import cli
from db.engine import session
from db.models import AuditLog
from db.study.viewer_tools import viewer_tools
from ui.volume_viewer import viewer_args


def test_the_tools_are_set_printed_audited_and_reach_the_viewer(nmb_home: Path, capsys) -> None:
    assert cli.main(["viewer-tools"]) == 0
    assert capsys.readouterr().out == "ruler, roi\n"  # both until set
    assert cli.main(["viewer-tools", "roi"]) == 0
    assert cli.main(["viewer-tools", "ruler", "caliper"]) == 2
    assert capsys.readouterr().err.strip() == (
        "nmb: unknown viewer tool 'caliper' (tools: ruler, roi)")
    with session() as s:
        assert viewer_tools(s) == ("roi",)  # the refused call changed nothing
        [entry] = s.exec(select(AuditLog).where(AuditLog.action == "viewer.tools")).all()
        assert (entry.actor, entry.detail) == ("cli", {"tools": ["roi"],
                                                       "before": ["ruler", "roi"]})
        args, _ = viewer_args([], tools=viewer_tools(s))
    assert args["tools"] == ["roi"]
    assert cli.main(["viewer-tools", "none"]) == 0 and cli.main(["viewer-tools"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "none"
