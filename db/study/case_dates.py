"""Cases' publication dates (`nmb cases dates FILE`): when each case was first published (a
journal's case report, a release), where known, so the reporting checklists can judge test-data
independence against each model's training cutoff (results.checklist).

A CSV with columns `case_id` and `published` (YYYY-MM-DD, or YYYY-MM read as the month's first
day; `-` empties it). Every row is checked first (the case exists, the date parses); then one
transaction and one audit row (action "case-dates").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlmodel import Session

from db.audit import record
from db.models import Case
from db.queries import fetch_in
from db.sources.csv_table import Rows, parse_date, shown
from errors import counted


@dataclass
class CaseDatesImported:
    file: str
    cases: int
    dry_run: bool = False

    def __str__(self) -> str:
        verb = "would date" if self.dry_run else "dated"
        return f"{self.file}: {verb} {counted(self.cases, 'case')}"


def import_case_dates(s: Session, path: Path, *, actor: str | None = None,
                      dry_run: bool = False) -> CaseDatesImported:
    table = Rows(path, ("case_id", "published"), ())
    wanted = {row["case_id"] for _, row in table.rows}
    found = {c.case_id: c for c in fetch_in(s, Case.case_id, wanted)}
    dates = {}
    for line, row in table.rows:
        if row["case_id"] not in found:
            raise table.refuse(line, "case_id", f"{shown(row['case_id'])} is not a case of the "
                               "study")
        if row["case_id"] in dates:
            raise table.refuse(line, "case_id", f"{shown(row['case_id'])} is on an earlier line too")
        try:
            dates[row["case_id"]] = None if row["published"] == "-" else parse_date(row["published"])
        except ValueError as e:
            raise table.refuse(line, "published", str(e)) from None
    summary = CaseDatesImported(table.name, len(dates), dry_run)
    if dry_run:
        return summary
    for case_id, when in dates.items():
        found[case_id].published = when
        s.add(found[case_id])
    record(s, "case-dates", actor=actor, file=path.name, cases=len(dates))
    s.commit()
    return summary
