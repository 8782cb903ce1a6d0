"""Judge items: one tool call or one summary of one trace under one rubric, with its slice."""

from judge.items.extract import extract_items as extract_items
from judge.items.model import Item as Item
from judge.items.slice import build_slice as build_slice
from judge.items.slice import estimate_tokens as estimate_tokens

__all__ = ["Item", "build_slice", "estimate_tokens", "extract_items"]
