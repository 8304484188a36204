"""Validate a case's optional `key_slices` (docs/bundle-format.md): the slices a model is shown;
and its optional `hanging_protocol`: where the viewer opens the case (plane, layout, a slice per
series; `imaging.opening_view`).

`key_slices` is a list of `{"series": sequence name, "plane": axial|coronal|sagittal,
"index": slice on the RAS+ grid}` (`index` optional: the middle slice). The form is checked with
the case; the index range once the images are known (from the image header, on its RAS+ grid).
"""

from pathlib import Path
from typing import Annotated, Any

from db.bundle.errors import Problem
from db.bundle.records import Record, check_fields, one_of, rule, show
from errors import UserError
from imaging.geometry import NORMAL_AXIS, PLANES
from imaging.key_slices import n_slices
from imaging.opening_view import LAYOUTS, VIEW_PLANES

MAX_KEY_SLICES = 64


class KeySlice(Record):
    series: str
    plane: one_of(PLANES)
    index: Annotated[int, rule(lambda v: "is negative" if v < 0 else None)] = None


class ProtocolSlice(Record):
    series: str
    index: Annotated[int, rule(lambda v: "is negative" if v < 0 else None)] = None


class HangingProtocol(Record):
    plane: one_of(VIEW_PLANES)
    layout: one_of(LAYOUTS) = None
    slices: list[Any] = None


def hanging_protocol_messages(value: Any, volumes: list[str]) -> list[str]:
    """What is wrong with a case's `hanging_protocol` given its volume series' sequence names
    (empty: fine). Each slice names a volume series of the case once; its index counts in the
    protocol's plane (axial for "multiplanar") on the series' RAS+ grid."""
    if value is None:
        return []
    msgs = check_fields(value, HangingProtocol, "hanging_protocol.")
    if msgs:
        return msgs
    slices = value.get("slices") or []
    if len(slices) > MAX_KEY_SLICES:
        return [f"hanging_protocol.slices has {len(slices)} slices, more than {MAX_KEY_SLICES}"]
    seen: set[str] = set()
    for i, item in enumerate(slices):
        where = f"hanging_protocol.slices[{i}]."
        found = check_fields(item, ProtocolSlice, where)
        if not found and volumes.count(item["series"]) != 1:
            found.append(f"{where}series {show(item['series'])} is not a volume series of "
                         "this case")
        elif not found and item["series"] in seen:
            found.append(f"{where}series {show(item['series'])} has a slice already")
        if not found:
            seen.add(item["series"])
        msgs += found
    return msgs


def key_slice_messages(value: Any, sequences: list[str]) -> list[str]:
    """What is wrong with a case's `key_slices` given its series' sequence names (empty: fine)."""
    if not isinstance(value, list):
        return []  # reported with the case's other fields
    if len(value) > MAX_KEY_SLICES:
        return [f"key_slices has {len(value)} slices, more than {MAX_KEY_SLICES}"]
    out, seen = [], set()
    for i, item in enumerate(value):
        msgs = check_fields(item, KeySlice, f"key_slices[{i}].")
        if not msgs and (n := sequences.count(item["series"])) != 1:
            msgs.append(f"key_slices[{i}].series {show(item['series'])} "
                        f"{'names two series' if n > 1 else 'is not a series'} of this case")
        elif not msgs:
            if (key := (item["series"], item["plane"], item.get("index"))) in seen:
                msgs.append(f"key_slices[{i}] repeats an earlier key slice")
            seen.add(key)
        out += msgs
    return out


def key_slice_range_problems(cases: list[dict[str, Any]],
                             images: dict[tuple[str, str], tuple[str, Path]]) -> list[Problem]:
    """Indices beyond their series' slices. `images`: (case_id, sequence) -> (bundle file,
    path) of the usable images; key slices of other series were reported already."""
    out = []
    for case in cases:
        protocol = case.get("opening_view") or {}  # the row: the case's hanging_protocol
        plane = protocol.get("plane") if protocol.get("plane") in NORMAL_AXIS else "axial"
        for i, item in enumerate(protocol.get("slices") or []):
            found, index = images.get((case["case_id"], item["series"])), item.get("index")
            if found is None or index is None:
                continue
            try:
                n = n_slices(found[1], plane)
            except UserError:
                continue
            if index >= n:
                out.append(Problem(f"cases/{case['case_id']}/case.json", None,
                                   f"hanging_protocol.slices[{i}].index {index} is beyond the "
                                   f"{n} {plane} slices of {found[0]} (0..{n - 1})"))
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
