"""Small studies built straight into the database (no images) for fast tests."""

import secrets

from sqlmodel import Session

from db.models import Case, Response, Task
from db.users import add_user

MODELS = ("model-alpha", "model-beta")


def make_study(s: Session, *, n_tasks: int = 6, samples: int = 1, experts: int = 3) -> list[str]:
    """Cases, tasks over all families and levels, model responses and expert accounts.

    Returns the response ids.
    """
    rids = []
    families = ("differential", "lesion", "rationale")
    for t in range(n_tasks):
        cid = f"case{t}"
        s.add(Case(case_id=cid, title=f"Case {t} (synthetic)", ehr="Synthetic record.",
                   scores={"MMSE": 27}, ground_truth={"final_diagnosis": "MS"}, bundle="test"))
        level = 1 + t % 3
        s.add(Task(task_id=f"task{t}", case_id=cid, family=families[t % 3], level=level,
                   prompt=f"Prompt {t}", stages=["More information."] if level == 3 else []))
        s.flush()  # no ORM relationships: parents first
        for model in MODELS:
            for k in range(samples):
                rid = f"r{t}-{model}-{k}"
                s.add(Response(response_id=rid, task_id=f"task{t}", source="model", model=model,
                               sample=k, text=f"Synthetic answer {t} ({model[-4:]}, {k}).",
                               blind_code="R-" + secrets.token_hex(4).upper()))
                rids.append(rid)
    for e in range(1, experts + 1):
        add_user(s, name=f"expert{e}", role="expert", password="pw")
    s.commit()
    return rids
