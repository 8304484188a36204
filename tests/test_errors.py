"""`errors.read_at_most`, the size cap that holds where a file's reported size does not, and
the readers of named files that use it directly."""

from pathlib import Path

import pytest

from errors import UserError, read_at_most

ENDLESS = Path("/dev/zero")  # reports size 0, as pipes and /proc files do


def test_read_at_most_reads_up_to_the_cap_and_one_byte_more(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"12345")
    assert read_at_most(f, 5) == b"12345"
    assert read_at_most(f, 4) is None
    assert read_at_most(ENDLESS, 1000) is None
    with pytest.raises(OSError):
        read_at_most(tmp_path / "missing", 5)


def test_a_picture_or_responses_file_that_never_ends_is_refused() -> None:
    from imaging.picture import MAX_PICTURE_BYTES, sanitise_picture
    from package.grade import read_responses

    with pytest.raises(UserError) as refused:
        sanitise_picture(ENDLESS)
    assert str(refused.value) == (f"zero: picture is more than the limit of "
                                  f"{MAX_PICTURE_BYTES:,} bytes")
    with pytest.raises(UserError) as refused:
        read_responses(ENDLESS, max_bytes=2**20)
    assert str(refused.value) == f"{ENDLESS}: larger than {2**20} bytes"
