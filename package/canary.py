"""`canary` sends the canary requests again and compares the answers with the frozen ones. At
temperature 0 with a fixed seed a model that has not changed answers nearly the same; OpenAI
documents `seed` as best-effort determinism and `system_fingerprint` as the backend
configuration that affects it, so both a changed fingerprint and changed scores are reported. A
package is untrusted input: requests go to the official API (or the user's OPENAI_BASE_URL), or
to `--base-url` given on the command line, never to an address the package names.
"""

from __future__ import annotations

from typing import Any

from package.format import Package
from package.grade import canary_answer, send

CHECKED, DRIFT, UNCHECKED = "ok", "drift", "could not check"


def canary(pkg: Package, *, base_url: str | None = None, api_key: str | None = None,
           concurrency: int = 8, timeout: float = 60.0,
           limits: dict[str, float] | None = None) -> dict[str, Any]:
    """Send the canary requests again and compare the answers with the frozen ones.

    An item is *unreached* when no answer came back (connection refused, timeouts, HTTP errors,
    after the usual retries): it says nothing about the model. Over the answered items, drift
    is an answer that failed (invalid, cut, refused), fewer than `criteria_agreement_min` of
    the (item, criterion) levels identical, or a mean absolute difference of the overall score
    (0-1) above `overall_mad_max` (the limits frozen in the manifest, unless `limits` overrides
    them). `status`:

    - "drift" when at least half the items were answered and those answers drifted;
    - "could not check" when more than half were unreached, or some were and the others did
      not drift (no drift cannot be claimed for items never asked); `drift` is then None;
    - "ok" when every item was answered and nothing drifted.

    A new model name or system fingerprint is reported as well, never counted as drift.
    `verify` has already checked that every canary request rebuilds byte-identical.
    """
    limits = {**pkg.manifest["canary"]["drift_limits"], **(limits or {})}
    results = send(pkg, [canary_answer(c) for c in pkg.canary], lambda a, item, res: res,
                    base_url=base_url, api_key=api_key, concurrency=concurrency,
                    timeout=timeout)
    same = total = 0
    diffs, items = [], []
    for c, res in zip(pkg.canary, results, strict=True):
        frozen = c["frozen"]
        item = {"response_id": c["response_id"], "ok": res.ok,
                "answered": res.ok or res.model_returned is not None}
        if res.ok:
            equal = [res.data.criteria.get(k) == v for k, v in frozen["criteria"].items()]
            same, total = same + sum(equal), total + len(equal)
            diffs.append(abs(res.data.overall - frozen["overall"]))
            item.update(criteria_equal=all(equal), overall_diff=round(diffs[-1], 4),
                        diagnosis_equal=res.data.correct_diagnosis == frozen["correct_diagnosis"])
        else:
            item["reason"] = res.reason
        items.append(item)
    unreached = sum(not i["answered"] for i in items)
    failed = sum(i["answered"] and not i["ok"] for i in items)
    agreement = same / total if total else 0.0
    mad = sum(diffs) / len(diffs) if diffs else None
    models = sorted({r.model_returned for r in results if r.ok} - {c["model_returned"] for c in pkg.canary})
    prints = sorted({r.system_fingerprint for r in results if r.ok and r.system_fingerprint}
                    - {c["system_fingerprint"] for c in pkg.canary})
    drifted = (failed > 0 or (total > 0 and agreement < limits["criteria_agreement_min"])
               or (mad is not None and mad > limits["overall_mad_max"]))
    if 2 * unreached > len(items) or (unreached and not drifted):
        status = UNCHECKED
    else:
        status = DRIFT if drifted else CHECKED
    return {"package_sha256": pkg.sha256, **pkg.terms_json(), "status": status,
            "drift": None if status == UNCHECKED else status == DRIFT,
            "items": len(items), "unreached": unreached, "failed": failed,
            "criteria_agreement": round(agreement, 4) if total else None,
            "overall_mad": None if mad is None else round(mad, 4), "limits": limits,
            "new_models_returned": models, "new_system_fingerprints": prints,
            "per_item": items}
