"""The write-behind call cache: pending calls are visible, flush stores them, errors surface."""

from __future__ import annotations

import pytest

from judge.grading.cache import MemoryCache
from judge.grading.writebehind import WriteBehindCache
from judge.providers.base import CallRecord


def record(i: int) -> CallRecord:
    return CallRecord(cache_key=f"k{i}", item_id=f"t#{i}:r", prompt_hash="sha256:p",
                      model="m", params={}, request={}, response_text=f"{{\"n\": {i}}}",
                      usage={}, latency_s=0.0)


def test_pending_calls_are_visible_and_flush_stores_them() -> None:
    inner = MemoryCache()
    cache = WriteBehindCache(inner, interval_s=60.0)  # the writer will not wake by itself
    for i in range(5):
        cache.put(record(i))
    assert cache.get("k3") is not None and cache.get("k3").response_text == '{"n": 3}'
    cache.flush()
    assert all(inner.get(f"k{i}") is not None for i in range(5))
    cache.close()


def test_the_writer_thread_stores_without_a_flush() -> None:
    inner = MemoryCache()
    cache = WriteBehindCache(inner, interval_s=0.01)
    cache.put(record(1))
    cache.close()
    assert inner.get("k1") is not None


class Broken(MemoryCache):
    def put(self, record: CallRecord) -> None:
        raise OSError("disk full")


def test_a_failed_write_is_raised_to_the_caller() -> None:
    cache = WriteBehindCache(Broken(), interval_s=60.0)
    cache.put(record(1))
    with pytest.raises(OSError, match="disk full"):
        cache.flush()
