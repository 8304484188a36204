"""The malformed and hostile bundle corpus: each entry breaks one rule of docs/bundle-format.md.

`build(name, dest)` writes the valid base bundle (tests/db/bundle/bundles.py), applies the mutation
and returns what to import (the folder, or a zip made of it); `CORPUS[name].expect` holds the
substrings the one problem line must contain (the file, the line for JSONL, and the offending
value). Besides plain mistakes, it holds what an attacker or an unlucky user would try (issue
14): images that would exhaust memory or cannot be shown, values the database cannot store,
zip bombs and zips with hostile names or lying headers; and (issue 22) text over its limit and
model names with control or format characters.
"""

import gzip
import json
import os
import shutil
import struct
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nibabel as nib
import numpy as np

from db.text_limits import (
    ANSWER,
    DIFFERENTIAL,
    PROMPT,
    RECORD,
    SCORE_NAME,
    STAGES,
    TITLE,
)
from tests.db.bundle import pictures
from tests.db.bundle.bundles import responses, write_bundle, write_image, write_jsonl


@dataclass(frozen=True)
class Malformed:
    mutate: Callable[[Path], object]  # returns the path to import if not the folder
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


def _linked_out(rel: str) -> Callable[[Path], None]:
    """The bundle's own file (or case folder) `rel` moved outside the bundle and linked back."""
    def mutate(root: Path) -> None:
        outside = root.parent / f"outside-{rel.replace('/', '-')}"
        shutil.move(root / rel, outside)
        os.symlink(outside, root / rel)
    return mutate


def _loop(rel: str) -> Callable[[Path], None]:
    """The bundle's file `rel` replaced by a symbolic link to itself (resolving it loops)."""
    def mutate(root: Path) -> None:
        (root / rel).unlink()
        os.symlink((root / rel).name, root / rel)
    return mutate


def _pipe(rel: str) -> Callable[[Path], None]:
    """The bundle's file `rel` replaced by a named pipe no one writes to (opening it blocks)."""
    def mutate(root: Path) -> None:
        (root / rel).unlink()
        os.mkfifo(root / rel)
    return mutate


def _dotdot(root: Path) -> None:
    write_image(root / "shared.nii.gz")
    _case(root, lambda c: c["series"][0].update(file="../shared.nii.gz"))


def _header_only_gz(path: Path, shape: tuple[int, ...]) -> None:
    img = nib.Nifti1Image(np.zeros((2, 2, 2), np.int16), np.eye(4))
    img.header.set_data_shape(shape)
    with gzip.open(path, "wb") as f:
        f.write(img.header.binaryblock + b"\0" * 4)


def _extension_bomb(path: Path) -> None:
    # 100 KB of gzip: one header extension claiming 100 MiB, which nibabel would read whole.
    header = nib.Nifti1Image(np.zeros((2, 2, 2), np.int16), np.eye(4)).header
    header["vox_offset"] = 368
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(header.binaryblock + b"\1\0\0\0" + np.array([100 * 2**20, 0], "<i4").tobytes())
        for _ in range(100):
            f.write(b"\0" * 2**20)


def _pixdim_zero(path: Path) -> None:
    img = nib.Nifti1Image(np.zeros((8, 8, 8), np.int16), None)
    img.header.set_qform(np.eye(4), 1)
    img.header["pixdim"][3] = 0  # nibabel took it as 1 mm
    nib.save(img, path)


def _voxels(dtype: object) -> Callable[[Path], None]:
    return lambda path: nib.save(nib.Nifti1Image(np.zeros((8, 8, 8), dtype), np.eye(4)), path)


def _skewed_affine(path: Path) -> None:
    affine = np.eye(4)
    affine[0, 1] = 1e20  # det 1, but one axis is lost to rounding
    nib.save(nib.Nifti1Image(np.zeros((8, 8, 8), np.int16), affine), path)


def _garbage_mgz(root: Path) -> None:
    (root / "cases" / "c1" / "t1.mgz").write_bytes(gzip.compress(bytes(range(256)) * 4))
    _case(root, lambda c: c["series"][0].update(file="t1.mgz"))


def _nested(depth: int) -> Callable[[Path], None]:
    """case.json with ground_truth.differential nested `depth` lists deep (as raw text)."""
    def mutate(root: Path) -> None:
        _case(root, lambda c: c["ground_truth"].update(differential="NESTED"), "c2")
        path = root / "cases" / "c2" / "case.json"
        path.write_text(path.read_text().replace('"NESTED"', "[" * depth + "]" * depth))

    return mutate


def _zip(add: Callable[[zipfile.ZipFile], None] | None = None, level: int | None = None
         ) -> Callable[[Path], Path]:
    """The bundle as a flat zip (`bad.zip` next to it), with `add` writing more entries."""
    def mutate(root: Path) -> Path:
        archive = root.parent / f"{root.name}.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
            for p in sorted(root.rglob("*")):
                if p.is_file():
                    zf.write(p, p.relative_to(root).as_posix())
            if add:
                add(zf)
        return archive

    return mutate


def _not_a_zip(root: Path) -> Path:
    (root.parent / "bad.zip").write_text("This is a note, not a zip.\n")
    return root.parent / "bad.zip"


def _second_tasks_jsonl(zf: zipfile.ZipFile) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name it writes
        zf.writestr("tasks.jsonl", "")


def _symlink_entry(zf: zipfile.ZipFile) -> None:
    info = zipfile.ZipInfo("cases/c1/link.nii.gz")
    info.external_attr = 0o120777 << 16
    zf.writestr(info, "/etc/passwd")


def _patched_zip(patch: Callable[[bytearray, int], None]) -> Callable[[Path], Path]:
    """The bundle zipped, then `patch(archive bytes, offset of bundle.json's central directory
    header)` (the table of contents at the end of a zip, which readers trust)."""
    def mutate(root: Path) -> Path:
        archive = _zip()(root)
        with zipfile.ZipFile(archive) as zf:
            at = zf.start_dir
        blob = bytearray(archive.read_bytes())
        while blob[at + 46:at + 46 + len(b"bundle.json")] != b"bundle.json":
            name, extra, comment = struct.unpack("<HHH", blob[at + 28:at + 34])
            at += 46 + name + extra + comment
        patch(blob, at)
        archive.write_bytes(bytes(blob))
        return archive

    return mutate


def _lie_about_size(blob: bytearray, central: int) -> None:
    """The central directory says bundle.json unpacks to 10 bytes (it is longer)."""
    blob[central + 24:central + 28] = struct.pack("<I", 10)


def _corrupt_deflate(blob: bytearray, central: int) -> None:
    local = struct.unpack("<I", blob[central + 42:central + 46])[0]
    name_len, extra_len = struct.unpack("<HH", blob[local + 26:local + 30])
    start = local + 30 + name_len + extra_len
    blob[start:start + 8] = b"\xff" * 8


def _mask(write: Callable[[Path], None] | None, **entry: object) -> Callable[[Path], None]:
    """Give case c1 a mask `lesion.nii.gz` written by `write` (None: no file) and `entry`."""

    def mutate(root: Path) -> None:
        if write is not None:
            write(root / "cases" / "c1" / "lesion.nii.gz")
        _case(root, _set(masks=[{"label": "lesion", "file": "lesion.nii.gz", **entry}]))

    return mutate


def _mask_image(data: np.ndarray, shift_mm: float = 0.0) -> Callable[[Path], None]:
    affine = np.diag([2.0, 2.0, 2.0, 1.0])
    affine[:3, 3] = shift_mm
    return lambda p: nib.save(nib.Nifti1Image(data, affine), p)


_LABELS = np.zeros((8, 8, 8), np.uint8)
_LABELS[2:5, 2:5, 2:5] = 1


def _picture(write: Callable[[Path], object], file: str = "key.png",
             **entry: object) -> Callable[[Path], None]:
    """Case c1 gains a picture series KEY (its file written by `write`)."""
    def mutate(root: Path) -> None:
        write(root / "cases" / "c1" / file)
        _case(root, lambda c: c["series"].append({"sequence": "KEY", "file": file, **entry}))

    return mutate


def _good_picture(path: Path) -> None:
    pictures.save(pictures.noise(), path, "PNG")


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
    "bundle_name_escape_sequence": Malformed(  # printed by nmb import: it would drive the terminal
        lambda r: _edit_json(r / "bundle.json", _set(name="A\x1b[2J\x1b[31mbundle")),
        ("bundle.json", "name", "contains U+001B, a control character")),
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
    "response_usage_negative_tokens": Malformed(
        _resp(1, _set(usage={"prompt_tokens": -3})), ("responses.jsonl:1", "prompt_tokens -3")),
    "response_usage_unknown_field": Malformed(
        _resp(2, _set(usage={"images": 2, "tokens": 9})), ("responses.jsonl:2", '"tokens"')),
    "response_usage_cost_text": Malformed(
        _resp(3, _set(usage={"cost_usd": "0.1"})), ("responses.jsonl:3", 'cost_usd "0.1"')),
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
    "bundle_json_symlink_leaves_bundle": Malformed(
        _linked_out("bundle.json"), ("bundle.json", "symbolic link that leaves the bundle")),
    "case_json_symlink_leaves_bundle": Malformed(
        _linked_out("cases/c1/case.json"),
        ("cases/c1/case.json", "symbolic link that leaves the bundle")),
    "case_folder_symlink_leaves_bundle": Malformed(
        _linked_out("cases/c1"), ("cases/c1", "symbolic link that leaves the bundle")),
    "tasks_jsonl_symlink_leaves_bundle": Malformed(
        _linked_out("tasks.jsonl"), ("tasks.jsonl", "symbolic link that leaves the bundle")),
    "responses_jsonl_symlink_leaves_bundle": Malformed(
        _linked_out("responses.jsonl"),
        ("responses.jsonl", "symbolic link that leaves the bundle")),
    "bundle_json_symlink_loop": Malformed(
        _loop("bundle.json"), ("bundle.json", "symbolic link that leaves the bundle")),
    "image_symlink_loop": Malformed(
        _loop("cases/c1/t1.nii.gz"), ("cases/c1/case.json", '"t1.nii.gz"', "symbolic link")),
    "responses_jsonl_pipe": Malformed(
        _pipe("responses.jsonl"), ("responses.jsonl", "is not a regular file")),
    "image_name_too_long": Malformed(  # no file can have it (ENAMETOOLONG)
        _series_file("t" * 300 + ".nii.gz"),
        ("cases/c1/case.json", "series[0].file", "cannot be opened: File name too long")),
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
    # images that would exhaust memory or that the viewer cannot show
    "image_header_claims_1100_cubed": Malformed(
        _replace_image(lambda p: _header_only_gz(p, (1100, 1100, 1100))),
        ("cases/c1/t1.nii.gz", "1100x1100x1100 voxels need 5,077 MiB", "NMB_MAX_IMAGE_BYTES")),
    "image_header_extension_of_100_mib": Malformed(
        _replace_image(_extension_bomb),
        ("cases/c1/t1.nii.gz", "header extension of 104,857,600 bytes", "67,108,864")),
    "image_voxels_in_metres": Malformed(
        _replace_image(lambda p: nib.save(nib.Nifti1Image(
            np.zeros((8, 8, 8), np.int16), np.diag([0.001, 0.001, 0.001, 1])), p)),
        ("cases/c1/t1.nii.gz", "voxel size 0.001 mm along x is outside 0.01-100 mm")),
    "image_pixdim_zero": Malformed(
        _replace_image(_pixdim_zero),
        ("cases/c1/t1.nii.gz", "voxel size 0 along z (pixdim) is not a positive number")),
    "image_rgb": Malformed(_replace_image(_voxels(np.dtype([("R", "u1"), ("G", "u1"),
                                                            ("B", "u1")]))),
                           ("cases/c1/t1.nii.gz", "RGB colour voxels")),
    "image_complex": Malformed(_replace_image(_voxels(np.complex64)),
                               ("cases/c1/t1.nii.gz", "complex-valued voxels")),
    "image_garbage_mgz": Malformed(_garbage_mgz, ("cases/c1/t1.mgz", "nibabel can read", "Error")),
    "image_skewed_affine": Malformed(_replace_image(_skewed_affine),
                                     ("cases/c1/t1.nii.gz", "singular")),
    # lesion masks: the image checks of a series, plus labels, one volume, world overlap
    "mask_not_an_image": Malformed(
        _mask(_text_as_nii), ("cases/c1/case.json", 'masks[0].file "lesion.nii.gz"',
                              "not a usable mask", "not an image")),
    "mask_float_labels": Malformed(
        _mask(_mask_image(_LABELS * np.float32(0.5))),
        ("cases/c1/case.json", "masks[0].file", "whole-number labels", "found 0.5")),
    "mask_negative_label": Malformed(
        _mask(_mask_image(_LABELS.astype(np.int16) * -2)),
        ("cases/c1/case.json", "masks[0].file", "whole-number labels", "found -2")),
    "mask_4d": Malformed(
        _mask(_mask_image(np.stack([_LABELS, _LABELS], axis=-1))),
        ("cases/c1/case.json", "masks[0].file", "one 3-D volume", "2 volumes")),
    "mask_2d": Malformed(
        _mask(_mask_image(_LABELS[:, :, 0])), ("cases/c1/case.json", "masks[0].file", "2-D")),
    "mask_outside_the_case": Malformed(
        _mask(_mask_image(_LABELS, shift_mm=500.0)),
        ("cases/c1/case.json", "masks[0].file", "lies outside any series")),
    "mask_missing_file": Malformed(
        _mask(None), ("cases/c1/case.json", 'masks[0].file "lesion.nii.gz"', "does not exist")),
    "mask_unknown_series": Malformed(
        _mask(_mask_image(_LABELS), series="PET"),
        ("cases/c1/case.json", 'masks[0].series "PET" is not a series')),
    "mask_without_label": Malformed(
        lambda r: _case(r, _set(masks=[{"file": "t1.nii.gz"}])),
        ("cases/c1/case.json", '"masks[0].label"')),
    "task_show_masks_string": Malformed(
        _task(2, _set(show_masks="yes")), ("tasks.jsonl:2", 'show_masks "yes" is not true or false')),
    "task_practice_number": Malformed(
        _task(1, _set(practice=1)), ("tasks.jsonl:1", "practice 1 is not true or false")),
    # hostile or unusable pictures (issue 23): refused with one line naming the file
    "picture_decompression_bomb": Malformed(
        _picture(pictures.png_bomb),
        ("cases/c1/key.png", "10,000 x 10,000", "more than the limit of 40,000,000")),
    "picture_truncated_jpeg": Malformed(
        _picture(pictures.truncated_jpeg, "key.jpg"),
        ("cases/c1/key.jpg", "JPEG data is truncated or corrupt")),
    "picture_1_by_200000": Malformed(
        _picture(lambda p: pictures.save(pictures.Image.new("L", (1, 200_000)), p, "PNG")),
        ("cases/c1/key.png", "1 x 200,000", "at most 16,384")),
    "picture_aspect_ratio": Malformed(
        _picture(lambda p: pictures.save(pictures.Image.new("L", (8000, 100)), p, "PNG")),
        ("cases/c1/key.png", "8,000 x 100", "aspect ratio beyond 20:1")),
    "picture_animated_png": Malformed(
        _picture(lambda p: pictures.animated(p, "PNG")),
        ("cases/c1/key.png", "animated picture (3 frames)")),
    "picture_animated_webp": Malformed(
        _picture(lambda p: pictures.animated(p, "WEBP"), "key.webp"),
        ("cases/c1/key.webp", "animated picture (3 frames)")),
    "picture_gif": Malformed(
        _picture(lambda p: pictures.animated(p, "GIF"), "key.gif"),
        ("cases/c1/case.json", '"key.gif"', "GIF picture", "PNG, JPEG or WebP")),
    "picture_16_bit": Malformed(
        _picture(pictures.sixteen_bit), ("cases/c1/key.png", "I;16", "8 bits per channel")),
    "picture_too_many_bytes": Malformed(
        _picture(lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(33 * 2**20))),
        ("cases/c1/key.png", "34,603,016 bytes", "more than the limit of 33,554,432")),
    "picture_named_png_is_text": Malformed(
        _picture(_text_as_nii), ("cases/c1/case.json", '"key.png"', "nor a PNG, JPEG or WebP")),
    "picture_unknown_plane": Malformed(
        _picture(_good_picture, plane="oblique"),
        ("cases/c1/case.json", 'series[2].plane "oblique"', "axial, coronal, sagittal or none")),
    "picture_caption_too_long": Malformed(
        _picture(_good_picture, caption="x" * 501),
        ("cases/c1/case.json", "series[2].caption", "longer than 500")),
    "volume_with_a_plane": Malformed(
        lambda r: _case(r, lambda c: c["series"][0].update(plane="axial")),
        ("cases/c1/case.json", "series[0].plane is for pictures", '"t1.nii.gz" is a volume')),
    "mask_on_a_picture": Malformed(
        lambda r: (_picture(_good_picture)(r), _mask(_mask_image(_LABELS), series="KEY")(r)),
        ("cases/c1/case.json", 'masks[0].series "KEY" is a picture')),
    "key_slice_of_a_picture": Malformed(
        lambda r: (_picture(_good_picture)(r),
                   _case(r, _set(key_slices=[{"series": "KEY", "plane": "axial"}]))),
        ("cases/c1/case.json", 'key_slices[0].series "KEY" is a picture')),
    # values that pass a type check but that the database cannot store
    "case_score_401_digits": Malformed(
        lambda r: _case(r, _set(scores={"MMSE": 10**400})),
        ("cases/c1/case.json", "scores.MMSE 1000", "does not fit in 64 bits")),
    "response_sample_30_digits": Malformed(
        _resp(1, _set(sample=10**29)), ("responses.jsonl:1", "sample 1000", "64 bits")),
    "response_sample_above_int32": Malformed(
        _resp(1, _set(sample=2**31)), ("responses.jsonl:1", "sample 2147483648", "larger than")),
    "task_prompt_lone_surrogate": Malformed(
        _task(1, _set(prompt="Give your \ud800 differential.")),
        ("tasks.jsonl:1", "prompt contains an unpaired surrogate (\\ud800)")),
    "response_text_nul": Malformed(
        _resp(2, _set(text="before\x00after")), ("responses.jsonl:2", "text contains a NUL")),
    "case_json_nested_20_deep": Malformed(
        _nested(20), ("cases/c2/case.json", "ground_truth.differential", "deeper than 16")),
    "case_json_nested_100000_deep": Malformed(
        _nested(100_000), ("cases/c2/case.json", "invalid JSON", "deeper than 16")),
    # text over its limit (db.text_limits, docs/bundle-format.md "Text limits"): a 200 MiB
    # record imported, then took the scoring page down
    "case_ehr_over_limit": Malformed(
        lambda r: _case(r, _set(ehr="x" * (RECORD + 1))),
        ("cases/c1/case.json", "ehr is 1,000,001 characters", "limit of 1,000,000")),
    "case_title_over_limit": Malformed(
        lambda r: _case(r, _set(title="T" * (TITLE + 1)), "c2"),
        ("cases/c2/case.json", "title is 1,001 characters", "limit of 1,000")),
    "case_reasoning_over_limit": Malformed(
        lambda r: _case(r, lambda c: c["ground_truth"].update(reasoning="r" * (PROMPT + 1))),
        ("cases/c1/case.json", "ground_truth.reasoning is 100,001", "limit of 100,000")),
    "case_differential_too_many": Malformed(
        lambda r: _case(r, lambda c: c["ground_truth"].update(
            differential=[f"d{i}" for i in range(DIFFERENTIAL + 1)])),
        ("cases/c1/case.json", "ground_truth.differential has 51 items", "limit of 50")),
    "case_score_name_over_limit": Malformed(
        lambda r: _case(r, _set(scores={"S" * (SCORE_NAME + 1): 1})),
        ("cases/c1/case.json", "a name in scores is 129 characters", "limit of 128")),
    "task_prompt_over_limit": Malformed(
        _task(2, _set(prompt="p" * (PROMPT + 1))),
        ("tasks.jsonl:2", "prompt is 100,001 characters", "limit of 100,000")),
    "task_stage_over_limit": Malformed(
        _task(3, lambda t: t["stages"].__setitem__(1, "s" * (PROMPT + 1))),
        ("tasks.jsonl:3", "stages[1] is 100,001 characters", "limit of 100,000")),
    "task_too_many_stages": Malformed(
        _task(3, _set(stages=[f"stage {i}" for i in range(STAGES + 1)])),
        ("tasks.jsonl:3", "stages has 21 items", "limit of 20")),
    "response_text_over_limit": Malformed(
        _resp(4, _set(text="a" * (ANSWER + 1))),
        ("responses.jsonl:4", "text is 200,001 characters", "limit of 200,000")),
    "response_turn_over_limit": Malformed(
        _resp(5, lambda x: x["turns"].__setitem__(0, "t" * (ANSWER + 1))),
        ("responses.jsonl:5", "turns[0] is 200,001 characters", "limit of 200,000")),
    # model names that break the Markdown and CSV tables or read as another name
    "response_model_newline": Malformed(
        _resp(1, _set(model="model-a\n| x | y |")),
        ("responses.jsonl:1", 'model "model-a\\n| x | y |" is not a model name', "U+000A")),
    "response_model_bidi_override": Malformed(
        _resp(2, _set(model="model-\u202eb-ledom")),
        ("responses.jsonl:2", 'model "model-\\u202eb-ledom"', "U+202E RIGHT-TO-LEFT OVERRIDE")),
    "response_model_line_separator": Malformed(
        _resp(3, _set(model="model-a\u2028b")),
        ("responses.jsonl:3", 'model "model-a\\u2028b"', "U+2028 LINE SEPARATOR")),
    "response_model_zero_width_space": Malformed(
        _resp(3, _set(model="model\u200b-a")),
        ("responses.jsonl:3", "U+200B ZERO WIDTH SPACE", "format character")),
    "response_model_padded": Malformed(
        _resp(4, _set(model="  =1+1")),
        ("responses.jsonl:4", 'model "  =1+1"', "blanks around it")),
    # zips
    "zip_not_a_zip": Malformed(_not_a_zip, ("bad.zip", "not a readable zip file")),
    "zip_entry_dotdot": Malformed(
        _zip(lambda zf: zf.writestr("../evil.txt", "x")), ("../evil.txt", "'..'")),
    "zip_entry_absolute": Malformed(
        _zip(lambda zf: zf.writestr("/etc/evil.txt", "x")), ("/etc/evil.txt", "absolute path")),
    "zip_entry_symlink": Malformed(
        _zip(_symlink_entry), ("cases/c1/link.nii.gz", "symbolic link")),
    "zip_file_and_folder_of_one_name": Malformed(
        _zip(lambda zf: zf.writestr("cases/c1", "x")), ("cases/c1", "a file and a folder")),
    "zip_file_twice": Malformed(_zip(_second_tasks_jsonl), ("tasks.jsonl", "twice")),
    "zip_bomb_ratio": Malformed(
        _zip(lambda zf: zf.writestr("cases/padding.bin", bytes(100 * 2**20)), level=9),
        ("bad.zip", "unzips to 104,", "times its size, more than 100x")),
    "zip_lying_size": Malformed(
        _patched_zip(_lie_about_size), ("bundle.json", "cannot extract", "CRC")),
    "zip_corrupt_data": Malformed(
        _patched_zip(_corrupt_deflate), ("bundle.json", "cannot extract from bad.zip")),
}


def build(name: str, dest: Path, *, base: Path | None = None) -> Path:
    """The base bundle (responses of model-a and model-b) with CORPUS[name]'s mutation: the
    folder `dest`, or the zip `dest.zip` made of it.

    With `base` (a copy of that bundle written earlier), the base is copied, not rewritten.
    """
    if base is None:
        root = write_bundle(dest, with_responses=responses())
    else:
        root = Path(shutil.copytree(base, dest, symlinks=True))
    out = CORPUS[name].mutate(root)
    return out if isinstance(out, Path) else root
