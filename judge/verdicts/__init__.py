"""The verdict a judge model must return: its JSON Schema and its validation."""

from judge.verdicts.schema import verdict_schema as verdict_schema
from judge.verdicts.validate import VerdictInvalid as VerdictInvalid
from judge.verdicts.validate import parse_verdict as parse_verdict
from judge.verdicts.validate import unscored as unscored

__all__ = ["VerdictInvalid", "parse_verdict", "unscored", "verdict_schema"]
