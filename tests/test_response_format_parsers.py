"""Hypothesis properties of what reads server answers and the settings cache: a server's error
becomes one short line whatever it holds, and no file content breaks the remembered modes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from judge.providers.response_format import LADDER, FormatMemory
from judge.providers.retry import MAX_MESSAGE, is_refusal, server_message
from judge.settings import Settings

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=400),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["message", "error", "detail", "msg", "loc", "type",
                                       "x"]) | st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(body=JSONISH, fallback=st.text(max_size=600))
def test_a_servers_message_is_one_short_line(body: Any, fallback: str) -> None:
    line = server_message(body, fallback)
    assert "\n" not in line and "\r" not in line
    assert len(line) <= MAX_MESSAGE + 1
    assert line == line.strip()


@settings(max_examples=200, deadline=None)
@given(status=st.integers(100, 599), message=st.text(max_size=200))
def test_only_malformed_requests_are_refusals(status: int, message: str) -> None:
    refused = is_refusal(status, message)
    if status in (429, 401, 403, 408, 409) or status < 400:
        assert not refused
    if status in (400, 404, 413, 422):
        assert refused


@settings(max_examples=200, deadline=None)
@given(content=st.binary(max_size=400) | JSONISH.map(lambda v: json.dumps(v).encode()))
def test_any_settings_cache_file_reads_as_nothing_or_a_ladder_mode(content: bytes,
                                                                   tmp_path_factory: Any) -> None:
    path = Path(tmp_path_factory.mktemp("m")) / "formats.json"
    path.write_bytes(content)
    memory = FormatMemory(path)
    assert memory.get("http://h/v1", "m") in (None, *LADDER)
    assert memory.put("http://h/v1", "m", "json_object", "why")
    assert memory.get("http://h/v1", "m") == "json_object"


def test_the_setting_from_the_environment_and_judge_toml(tmp_path: Path) -> None:
    assert Settings.load(environ={}).response_format == "auto"
    assert Settings.load(environ={"JUDGE_RESPONSE_FORMAT": " Prompt "}).response_format == \
        "prompt"
    (tmp_path / "judge.toml").write_text('[judge]\nresponse_format = "json_object"\n')
    assert Settings.load(environ={}, cwd=tmp_path).response_format == "json_object"
    assert Settings.load(environ={"JUDGE_RESPONSE_FORMAT": "guided_json"},
                         cwd=tmp_path).response_format == "guided_json"
    (tmp_path / "judge.toml").write_text('[judge]\nresponse_format = "xml"\n')
    try:
        Settings.load(environ={}, cwd=tmp_path)
    except Exception as exc:
        assert "[judge] field 'response_format'" in str(exc) and "'xml'" in str(exc)
    else:
        raise AssertionError("an unknown mode in judge.toml was taken")
