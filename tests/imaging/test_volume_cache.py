"""The volume cache: bounded in bytes, LRU out, one decode shared by all threads, no re-reads."""

import threading

import nibabel as nib
import numpy as np

from imaging import load_volume, take_slice, volume_cache
from imaging.cache import ByteBoundedLRU, cache_budget_bytes


def test_lru_keeps_within_the_byte_bound_and_evicts_least_recently_used():
    cache: ByteBoundedLRU[bytes] = ByteBoundedLRU(max_bytes=10, size_of=len)
    cache.get_or_load("a", lambda: b"aaaa")
    cache.get_or_load("b", lambda: b"bbbb")
    cache.get_or_load("a", lambda: b"never")  # hit: "a" becomes most recent
    cache.get_or_load("c", lambda: b"cccc")  # 12 bytes > 10: evict "b"
    assert cache.get_or_load("a", lambda: b"reloaded") == b"aaaa"
    assert cache.get_or_load("b", lambda: b"BBBB") == b"BBBB"
    stats = cache.stats()
    assert stats.nbytes <= 10 and stats.evictions == 2 and stats.misses == 4


def test_an_entry_larger_than_the_bound_is_kept_while_in_use():
    cache: ByteBoundedLRU[bytes] = ByteBoundedLRU(max_bytes=3, size_of=len)
    assert cache.get_or_load("big", lambda: b"12345") == b"12345"
    assert cache.get_or_load("big", lambda: b"other") == b"12345"


def test_concurrent_requests_share_one_load():
    cache: ByteBoundedLRU[object] = ByteBoundedLRU(max_bytes=1 << 20, size_of=lambda _: 1)
    calls = []
    start = threading.Barrier(20)

    def load():
        calls.append(1)
        threading.Event().wait(0.05)  # a slow decode, so requests overlap
        return object()

    results = []

    def session():
        start.wait()
        results.append(cache.get_or_load("case-1/t1", load))

    threads = [threading.Thread(target=session) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len({id(r) for r in results}) == 1


def test_budget_from_environment(monkeypatch):
    monkeypatch.setenv("NMB_VOLUME_CACHE_MB", "2")
    assert cache_budget_bytes() == 2 * 1024 * 1024
    monkeypatch.delenv("NMB_VOLUME_CACHE_MB")
    assert cache_budget_bytes() == 1024 * 1024 * 1024


def test_later_slices_do_not_reread_the_file(tmp_path):
    path = tmp_path / "t2.nii.gz"
    nib.save(nib.Nifti1Image(np.ones((8, 9, 10, 2), dtype=np.float32), np.eye(4)), path)
    before = volume_cache().stats().misses
    volume = load_volume(path)
    for index in range(10):
        assert load_volume(path) is volume
        take_slice(load_volume(path), "axial", index=index)
    assert volume_cache().stats().misses == before + 1
    assert load_volume(path, 1) is not volume  # another volume of the 4-D series
    assert volume_cache().stats().misses == before + 2


def test_a_replaced_file_is_decoded_again(tmp_path):
    path = tmp_path / "t1.nii"
    nib.save(nib.Nifti1Image(np.zeros((4, 4, 4), dtype=np.float32), np.eye(4)), path)
    first = load_volume(path)
    nib.save(nib.Nifti1Image(np.ones((4, 4, 5), dtype=np.float32), np.eye(4)), path)
    assert load_volume(path).shape == (4, 4, 5) and first.shape == (4, 4, 4)
