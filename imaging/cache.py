"""A process-wide, thread-safe cache of decoded volumes, bounded in bytes, least recently used out.

Streamlit runs every session as a thread of one process, so one module-level cache lets all
sessions that view the same series share one decoded copy. Concurrent first requests for the
same key wait for a single load ("single flight") instead of decoding it once each.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT_CACHE_MB = 1024
CACHE_ENV_VAR = "NMB_VOLUME_CACHE_MB"


def cache_budget_bytes() -> int:
    """The cache bound from `NMB_VOLUME_CACHE_MB` (MiB, default 1024)."""
    raw = os.environ.get(CACHE_ENV_VAR, "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_CACHE_MB
    except ValueError:
        mb = DEFAULT_CACHE_MB
    return max(0, int(mb * 1024 * 1024))


@dataclass(frozen=True)
class CacheStats:
    """Counters of a cache: entries, bytes held, hits, misses (= loads), evictions."""

    entries: int
    nbytes: int
    hits: int
    misses: int
    evictions: int


class ByteBoundedLRU(Generic[T]):
    """LRU mapping whose values report their size; total size kept within `max_bytes`.

    The most recently inserted entry is always kept, even if it alone exceeds the bound,
    so a volume larger than the budget is still decoded only once while it is being viewed.
    """

    def __init__(self, max_bytes: int, size_of: Callable[[T], int]) -> None:
        self.max_bytes = max_bytes
        self._size_of = size_of
        self._items: OrderedDict[Hashable, T] = OrderedDict()
        self._nbytes = 0
        self._lock = threading.Lock()
        self._loading: dict[Hashable, threading.Lock] = {}
        self._hits = self._misses = self._evictions = 0

    def get_or_load(self, key: Hashable, load: Callable[[], T]) -> T:
        """The value under `key`, calling `load()` once (across threads) if it is absent."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self._hits += 1
                return self._items[key]
            key_lock = self._loading.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:  # another thread may have loaded it while we waited
                if key in self._items:
                    self._items.move_to_end(key)
                    self._hits += 1
                    return self._items[key]
            try:
                value = load()
            except BaseException:
                with self._lock:
                    self._loading.pop(key, None)
                raise
            with self._lock:  # insert and release the key in one step: no second load
                self._misses += 1
                self._items[key] = value
                self._nbytes += self._size_of(value)
                self._evict_locked(keep=key)
                self._loading.pop(key, None)
            return value

    def _evict_locked(self, keep: Hashable) -> None:
        while self._nbytes > self.max_bytes and len(self._items) > 1:
            oldest = next(iter(self._items))
            if oldest == keep:
                break
            self._nbytes -= self._size_of(self._items.pop(oldest))
            self._evictions += 1

    def clear(self) -> None:
        """Drop every entry (counters are kept)."""
        with self._lock:
            self._items.clear()
            self._nbytes = 0

    def stats(self) -> CacheStats:
        """A snapshot of the counters."""
        with self._lock:
            return CacheStats(
                len(self._items), self._nbytes, self._hits, self._misses, self._evictions
            )
