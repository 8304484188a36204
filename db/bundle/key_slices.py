"""Validate a case's optional `key_slices` (docs/bundle-format.md): the slices a model is shown.

`key_slices` is a list of `{"series": sequence name, "plane": axial|coronal|sagittal,
"index": slice on the RAS+ grid}` (`index` optional: the middle slice). The form is checked with
the case; the index range once the images are known (from the image header, on its RAS+ grid).
"""

from pathlib import Path
from typing import Any

from db.bundle.errors import Problem
from errors import UserError
from imaging.geometry import PLANES
from imaging.key_slices import n_slices

MAX_KEY_SLICES = 64


def _index(v: Any) -> str | None:
    if not isinstance(v, int) or isinstance(v, bool):
        return "is not an integer"
    return "is negative" if v < 0 else None


def key_slice_messages(value: Any, sequences: list[str]) -> list[str]:
    """What is wrong with a case's `key_slices` given its series' sequence names (empty: fine)."""
    if not isinstance(value, list):
        return []  # reported with the case's other fields
    if len(value) > MAX_KEY_SLICES:
        return [f"key_slices has {len(value)} slices, more than {MAX_KEY_SLICES}"]
    out, seen = [], set()
    for i, item in enumerate(value):
        where = f"key_slices[{i}]"
        if not isinstance(item, dict):
            out.append(f"{where} must be a JSON object")
            continue
        out += [f'unknown field "{where}.{k}"' for k in item if k not in ("series", "plane",
                                                                             "index")]
        series, plane = item.get("series"), item.get("plane")
        for key in ("series", "plane"):
            if key not in item:
                out.append(f'missing required field "{where}.{key}"')
        if "series" in item and sequences.count(series) != 1:
            what = "names two series" if sequences.count(series) > 1 else "is not a series"
            out.append(f"{where}.series {series!r} {what} of this case")
        if "plane" in item and plane not in PLANES:
            out.append(f"{where}.plane {plane!r} is not one of {', '.join(PLANES)}")
        if "index" in item and (why := _index(item["index"])):
            out.append(f"{where}.index {item['index']!r} {why}")
        key = (series, plane, item.get("index"))
        if all(isinstance(k, str | int | None) for k in key):
            if key in seen:
                out.append(f"{where} repeats an earlier key slice")
            seen.add(key)
    return out


def key_slice_range_problems(cases: list[dict[str, Any]],
                             images: dict[tuple[str, str], tuple[str, Path]]) -> list[Problem]:
    """Indices beyond their series' slices. `images`: (case_id, sequence) -> (bundle file,
    path) of the usable images; key slices of other series were reported already."""
    out = []
    for case in cases:
        for i, ks in enumerate(case.get("key_slices") or []):
            found, index = images.get((case["case_id"], ks["series"])), ks.get("index")
            if found is None or index is None:
                continue
            try:
                n = n_slices(found[1], ks["plane"])
            except UserError:
                continue  # an image problem, reported with the image
            if index >= n:
                out.append(Problem(f"cases/{case['case_id']}/case.json", None,
                                   f"key_slices[{i}].index {index} is beyond the {n} "
                                   f"{ks['plane']} slices of {found[0]} (0..{n - 1})"))
    return out
