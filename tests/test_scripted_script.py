"""`scripted:<file>` reads a regular file of bounded size (issue 21: `scripted:/dev/zero`
grew memory without bound and `scripted:` on a FIFO hung until someone wrote to it)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from judge.errors import ConfigError
from judge.providers import scripted
from judge.providers.scripted import load_script


def _load_within(path: Path, seconds: float = 10.0) -> BaseException | list[object]:
    """load_script(path) in a thread, so a hang fails the test instead of blocking it."""
    out: list[BaseException | list[object]] = []

    def target() -> None:
        try:
            out.append(list(load_script(path)))
        except BaseException as exc:  # handed to the test
            out.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    assert out, f"load_script({path}) did not return within {seconds} s"
    return out[0]


def test_a_regular_file_is_read() -> None:
    Path("s.jsonl").write_text('"a"\n{"label": "pass"}\n\n')
    assert _load_within(Path("s.jsonl")) == ["a", '{"label": "pass"}']


@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "dir"])
def test_what_is_not_a_regular_file_is_refused_at_once(special: str) -> None:
    path = Path(special)
    if special == "fifo":
        os.mkfifo(path)
    elif special == "dir":
        path.mkdir()
    got = _load_within(path)
    assert isinstance(got, ConfigError), got
    assert str(path) in str(got) and "cannot read scripted responses" in str(got)


def test_a_file_past_the_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scripted, "MAX_SCRIPT_BYTES", 100)
    Path("big.jsonl").write_text('"x"\n' * 100)
    got = _load_within(Path("big.jsonl"))
    assert isinstance(got, ConfigError) and "larger than" in str(got)


def test_bytes_that_are_not_utf8_name_the_byte() -> None:
    Path("bad.jsonl").write_bytes(b'"ok"\n"\xff"\n')
    got = _load_within(Path("bad.jsonl"))
    assert isinstance(got, ConfigError) and "not UTF-8 text (byte 6)" in str(got)
