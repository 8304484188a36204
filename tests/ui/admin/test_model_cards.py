"""Model cards round-trip: a CSV and `nmb models set` write them, /models shows and edits them,
`nmb models list` reads back what the page saved; a bad CSV changes nothing."""

import json
from pathlib import Path

from sqlmodel import select

from cli import main
from db.engine import session
from db.models import AuditLog
from tests.apptest import make_user, page


def _cards(capsys) -> list[dict]:
    capsys.readouterr()
    assert main(["models", "list", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cards_round_trip_cli_csv_page(sqlite_url: str, tmp_path: Path, capsys) -> None:
    good = tmp_path / "cards.csv"
    good.write_text("name,maker,version,released,training_cutoff,web_access,params,kind\n"
                    "gpt-4o-2024-08-06,OpenAI,2024-08-06,2024-08-06,2023-10,no,unknown,general\n"
                    "<b>med</b>,Lab,,2025-05-20,,yes,4B,medical\n")
    assert main(["models", "set", "--from-csv", str(good)]) == 0
    assert main(["models", "set", "gpt-4o-2024-08-06", "--params", "200B", "--maker", ""]) == 0
    before = _cards(capsys)
    assert before[0] == {"name": "<b>med</b>", "maker": "Lab", "version": None,
                         "released": "2025-05-20", "training_cutoff": None, "web_access": "yes",
                         "params": "4B", "kind": "medical"}
    assert before[1]["training_cutoff"] == "2023-10-31" and before[1]["maker"] is None
    assert before[1]["params"] == "200B"

    bad = tmp_path / "bad.csv"  # the first row is fine; the second is refused: nothing written
    bad.write_text("name,kind,released\nnew-model,base,2024-01-01\n<b>med</b>,medical,2024-13-01\n")
    assert main(["models", "set", "--from-csv", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{bad}: line 3: field 'released'" in err, err
    assert _cards(capsys) == before

    admin = make_user("admin1", "admin")
    at = page("pages/models.py", admin).run()
    assert not at.exception
    shown = at.dataframe[-1].value
    assert shown["model"].tolist() == ["<b>med</b>", "gpt-4o-2024-08-06"]
    assert shown["kind"].tolist() == ["medical", "general"]
    at.selectbox(key="card_model").select("<b>med</b>").run()
    assert at.text_input(key="card_maker:<b>med</b>").value == "Lab"  # the card, to edit
    at.text_input(key="card_version:<b>med</b>").input("2025-05")
    at.selectbox(key="card_web:<b>med</b>").select("no")
    next(b for b in at.button if b.label == "Save the card").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    after = _cards(capsys)
    assert after[0] == {**before[0], "version": "2025-05", "web_access": "no"}
    assert after[1] == before[1]
    with session() as s:
        audited = s.exec(select(AuditLog).where(AuditLog.action == "model-card")).all()
    assert [a.actor for a in audited] == ["cli", "cli", "cli", "admin1"]
