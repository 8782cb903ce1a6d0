"""Canned verdicts for fakes: a valid `pass` built from what a request shows.

The functions live with the scripted provider (production code, `judge.providers.scripted`),
so the scripted provider and the fake server answer alike; this module keeps the names the
fake server and tests import.
"""

from judge.providers.scripted import default_completion as default_completion
from judge.providers.scripted import default_verdict as default_verdict
from judge.providers.scripted import find_seq as find_seq
from judge.providers.scripted import request_text as request_text

__all__ = ["default_completion", "default_verdict", "find_seq", "request_text"]
