"""Interchange records other tools depend on (formats §3, §4): verdicts and human labels."""

from judge.formats.labels import HumanLabel as HumanLabel
from judge.formats.verdicts import Verdict as Verdict
from judge.formats.verdicts import item_id as item_id
from judge.formats.verdicts import parse_item_id as parse_item_id

__all__ = ["HumanLabel", "Verdict", "item_id", "parse_item_id"]
