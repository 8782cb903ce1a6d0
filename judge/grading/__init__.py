"""The grading engine: concurrency, call cache, re-ask, replay-only (see `engine`)."""

from judge.grading.cache import DEFAULT_CACHE_FILE as DEFAULT_CACHE_FILE
from judge.grading.cache import JsonlCache as JsonlCache
from judge.grading.cache import MemoryCache as MemoryCache
from judge.grading.cache import RenderMemo as RenderMemo
from judge.grading.engine import REPLAY_MISS as REPLAY_MISS
from judge.grading.engine import GradingStats as GradingStats
from judge.grading.engine import ItemGrader as ItemGrader
from judge.grading.engine import grade_items as grade_items
from judge.grading.engine import grade_items_sync as grade_items_sync
from judge.grading.keys import cache_key as cache_key

__all__ = ["DEFAULT_CACHE_FILE", "REPLAY_MISS", "GradingStats", "ItemGrader", "JsonlCache",
           "MemoryCache", "RenderMemo", "cache_key", "grade_items", "grade_items_sync"]
