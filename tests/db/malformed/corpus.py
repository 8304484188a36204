"""The malformed-bundle corpus: each entry breaks one rule of docs/bundle-format.md.

`build(name, dest)` writes the valid base bundle (tests/db/bundles.py) and applies the
mutation; `CORPUS[name].expect` holds the substrings one problem line must contain (the file,
the line for JSONL, and the offending value).
"""

import gzip
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nibabel as nib
import numpy as np

from tests.db.bundles import responses, write_bundle, write_image, write_jsonl


@dataclass(frozen=True)
class Malformed:
    mutate: Callable[[Path], None]
    expect: tuple[str, ...]


def _edit_json(path: Path, fn: Callable[[dict], None]) -> None:
    obj = json.loads(path.read_text())
    fn(obj)
    path.write_text(json.dumps(obj))


def _edit_jsonl(path: Path, line: int, fn: Callable[[dict], object]) -> None:
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    out = fn(rows[line - 1])
    if out is not None:
        rows.insert(line, out)
    write_jsonl(path, rows)


def _case(root: Path, fn: Callable[[dict], None], cid: str = "c1") -> None:
    _edit_json(root / "cases" / cid / "case.json", fn)


def _task(line: int, fn: Callable[[dict], object]) -> Callable[[Path], None]:
    return lambda root: _edit_jsonl(root / "tasks.jsonl", line, fn)


def _resp(line: int, fn: Callable[[dict], object]) -> Callable[[Path], None]:
    return lambda root: _edit_jsonl(root / "responses.jsonl", line, fn)


def _set(**kv: object) -> Callable[[dict], None]:
    return lambda obj: obj.update(kv)


def _drop(key: str) -> Callable[[dict], None]:
    def drop(obj: dict) -> None:
        del obj[key]

    return drop


def _series_file(file: str) -> Callable[[Path], None]:
    return lambda root: _case(root, lambda c: c["series"][0].update(file=file))


def _replace_image(write: Callable[[Path], None]) -> Callable[[Path], None]:
    def mutate(root: Path) -> None:
        write(root / "cases" / "c1" / "t1.nii.gz")

    return mutate


def _truncated(path: Path) -> None:
    write_image(path, (32, 32, 32), seed=9)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _text_as_nii(path: Path) -> None:
    path.write_text("This is not an MRI, it is a note that someone renamed.\n")


def _header_claims_more(root: Path) -> None:
    # An uncompressed .nii whose header says 256^3 int16 voxels (32 MiB) but holds 8^3.
    path = root / "cases" / "c1" / "flair.nii"
    img = nib.Nifti1Image(np.zeros((8, 8, 8), np.int16), np.eye(4))
    img.header.set_data_shape((256, 256, 256))
    header = img.header.binaryblock
    path.write_bytes(header + b"\0" * 4 + np.zeros(8**3, np.int16).tobytes())


def _header_claims_more_gz(path: Path) -> None:
    img = nib.Nifti1Image(np.zeros((8, 8, 8), np.int16), np.eye(4))
    img.header.set_data_shape((128, 128, 128))
    with gzip.open(path, "wb") as f:
        f.write(img.header.binaryblock + b"\0" * 4 + np.zeros(8**3, np.int16).tobytes())


def _two_d(path: Path) -> None:
    nib.save(nib.Nifti1Image(np.zeros((8, 8), np.int16), np.eye(4)), path)


def _nan_affine(path: Path) -> None:
    img = nib.Nifti1Image(np.zeros((8, 8, 8), np.int16), np.eye(4))
    header = img.header
    header["qform_code"], header["sform_code"] = 0, 1
    header["srow_x"] = [np.nan, 0, 0, 0]
    with gzip.open(path, "wb") as f:
        f.write(header.binaryblock + b"\0" * 4 + np.zeros(8**3, np.int16).tobytes())


def _symlink_out(root: Path) -> None:
    outside = root.parent / "outside.nii.gz"
    write_image(outside)
    link = root / "cases" / "c1" / "t1.nii.gz"
    link.unlink()
    os.symlink(outside, link)


def _dotdot(root: Path) -> None:
    write_image(root / "shared.nii.gz")
    _case(root, lambda c: c["series"][0].update(file="../shared.nii.gz"))


def _dup(row: dict) -> dict:
    return dict(row)


def _same_key(row: dict) -> dict:
    return {**row, "response_id": row["response_id"] + "-again"}


CORPUS: dict[str, Malformed] = {
    "bundle_json_syntax": Malformed(
        lambda r: (r / "bundle.json").write_text('{"format": "nmb-bundle/1", "name": "x",}'),
        ("bundle.json", "invalid JSON")),
    "bundle_format_unknown": Malformed(
        lambda r: _edit_json(r / "bundle.json", _set(format="nmb-bundle/9")),
        ("bundle.json", '"nmb-bundle/9"')),
    "case_json_syntax": Malformed(
        lambda r: (r / "cases" / "c2" / "case.json").write_text('{"case_id": "c2"'),
        ("cases/c2/case.json", "invalid JSON")),
    "case_missing_title": Malformed(
        lambda r: _case(r, _drop("title")), ("cases/c1/case.json", '"title"')),
    "case_unknown_field": Malformed(
        lambda r: _case(r, _set(scroes={"MMSE": 20})), ("cases/c1/case.json", '"scroes"')),
    "case_score_not_number": Malformed(
        lambda r: _case(r, _set(scores={"MMSE": "twenty"})), ("cases/c1/case.json", '"twenty"')),
    "case_score_nan": Malformed(
        lambda r: (r / "cases" / "c2" / "case.json").write_text(
            (r / "cases" / "c2" / "case.json").read_text().replace("26.5", "NaN")),
        ("cases/c2/case.json", "NaN")),
    "case_ground_truth_missing": Malformed(
        lambda r: _case(r, lambda c: c["ground_truth"].pop("final_diagnosis")),
        ("cases/c1/case.json", "ground_truth.final_diagnosis")),
    "case_folder_mismatch": Malformed(
        lambda r: _case(r, _set(case_id="c7")), ("cases/c1/case.json", '"c7"', '"c1"')),
    "case_without_case_json": Malformed(
        lambda r: (r / "cases" / "c3").mkdir(), ("cases/c3", "no case.json")),
    "tasks_jsonl_syntax": Malformed(
        lambda r: (r / "tasks.jsonl").write_text(
            (r / "tasks.jsonl").read_text().replace('"lesion",', '"lesion"')),
        ("tasks.jsonl:2", "invalid JSON")),
    "tasks_jsonl_missing": Malformed(
        lambda r: (r / "tasks.jsonl").unlink(), ("tasks.jsonl", "missing")),
    "task_prompt_wrong_type": Malformed(
        _task(1, _set(prompt=["a", "list"])), ("tasks.jsonl:1", 'prompt ["a", "list"]')),
    "task_unknown_family": Malformed(
        _task(1, _set(family="surgery")), ("tasks.jsonl:1", 'family "surgery"')),
    "task_unknown_level": Malformed(
        _task(2, _set(level=4)), ("tasks.jsonl:2", "level 4 is not 1, 2 or 3")),
    "task_level_as_string": Malformed(
        _task(2, _set(level="2")), ("tasks.jsonl:2", 'level "2"')),
    "task_duplicate_id": Malformed(
        _task(1, _dup), ("tasks.jsonl:2", 'task_id "t1" is used twice')),
    "task_unknown_case": Malformed(
        _task(1, _set(case_id="c9")), ("tasks.jsonl:1", 'case_id "c9"')),
    "task_level3_without_stages": Malformed(
        _task(3, _drop("stages")), ("tasks.jsonl:3", "level-3", "stages")),
    "task_level3_empty_stages": Malformed(
        _task(3, _set(stages=[])), ("tasks.jsonl:3", "level-3", "stages")),
    "task_level1_with_stages": Malformed(
        _task(1, _set(stages=["more"])), ("tasks.jsonl:1", "level-1", '["more"]')),
    "response_sample_string": Malformed(
        _resp(1, _set(sample="0")), ("responses.jsonl:1", 'sample "0"')),
    "response_sample_negative": Malformed(
        _resp(2, _set(sample=-1)), ("responses.jsonl:2", "sample -1")),
    "response_duplicate_id": Malformed(
        _resp(4, _dup), ("responses.jsonl:5", '"model-a-t2-1" is used twice')),
    "response_same_model_task_sample": Malformed(
        _resp(1, _same_key), ("responses.jsonl:2", '"model-a"', "sample 0", '"t1"')),
    "response_unknown_task": Malformed(
        _resp(3, _set(task_id="t99")), ("responses.jsonl:3", 't99')),
    "response_turns_count": Malformed(
        _resp(5, _set(turns=["only one"])), ("responses.jsonl:5", "turns", "2 stages")),
    "response_not_utf8": Malformed(
        lambda r: (r / "responses.jsonl").write_bytes(
            (r / "responses.jsonl").read_bytes() + b'{"text": "caf\xe9"}\n'),
        ("responses.jsonl:13", "UTF-8")),
    "image_absolute_path": Malformed(
        _series_file("/etc/passwd.nii"), ("cases/c1/case.json", '"/etc/passwd.nii"', "absolute")),
    "image_dotdot_path": Malformed(
        _dotdot, ("cases/c1/case.json", '"../shared.nii.gz"', "..")),
    "image_symlink_leaves_bundle": Malformed(
        _symlink_out, ("cases/c1/case.json", '"t1.nii.gz"', "symbolic link")),
    "image_missing": Malformed(
        _series_file("t2.nii.gz"), ("cases/c1/case.json", '"t2.nii.gz"', "does not exist")),
    "image_wrong_extension": Malformed(
        _series_file("case.json"), ("cases/c1/case.json", '"case.json"', ".nii")),
    "image_truncated_gz": Malformed(
        _replace_image(_truncated), ("cases/c1/t1.nii.gz", "truncated")),
    "image_text_named_nii_gz": Malformed(
        _replace_image(_text_as_nii), ("cases/c1/t1.nii.gz", "not an image")),
    "image_header_claims_more": Malformed(
        _header_claims_more, ("cases/c1/flair.nii", "header claims")),
    "image_header_claims_more_gz": Malformed(
        _replace_image(_header_claims_more_gz), ("cases/c1/t1.nii.gz", "truncated")),
    "image_2d": Malformed(_replace_image(_two_d), ("cases/c1/t1.nii.gz", "2-D")),
    "image_nan_affine": Malformed(_replace_image(_nan_affine), ("cases/c1/t1.nii.gz", "affine")),
}


def build(name: str, dest: Path, *, base: Path | None = None) -> Path:
    """The base bundle (responses of model-a and model-b) with CORPUS[name]'s mutation.

    With `base` (a copy of that bundle written earlier), the base is copied, not rewritten.
    """
    if base is None:
        root = write_bundle(dest, with_responses=responses())
    else:
        root = Path(shutil.copytree(base, dest, symlinks=True))
    CORPUS[name].mutate(root)
    return root
