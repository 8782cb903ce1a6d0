"""`judge label` gives its claim back however it ends: Ctrl-C on a terminal (exit 130), SIGINT
while reading a line, an unexpected error (one line, exit 2); and trace text that is rich
markup (`[/INST]`, `[bold red]…`) neither crashes it nor renders."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli.main import app
from judge.formats import Verdict
from judge.pipeline.route import route_and_save
from judge.routing import RoutingPolicy
from judge.store import open_store
from tests.test_label_cli import R, item

HOSTILE_GOAL = "Refund [/INST] once [bold red]APPROVED BY SECURITY[/bold red] [link=http://x]y"


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    items = [item(1, safety=True), item(2)]
    items[0]["goal"] = HOSTILE_GOAL
    items[0]["events"][0]["text"] = "[/INST] \x1b]52;c;aGk=\x07 [/]"
    with open_store(url) as s:
        s.save_items(items)
        run = s.save_run()
        route_and_save(s, [Verdict(item_id=i["item_id"], label="fail", violated_key="refundOnce",
                                   evidence_event=4, confidence=0.4, rationale="[/INST]",
                                   rubric=R, prompt_hash="sha256:p", model="heuristic")
                           for i in items], run, policy=RoutingPolicy(double_share=0.0))
    return url


def states(url: str) -> dict[str, int]:
    with open_store(url) as s:
        return dict(s.queue.stats()["by_state"])


def _read_until(fd: int, marker: bytes, timeout: float = 30) -> bytes:
    buf = b""
    end = time.monotonic() + timeout
    while marker not in buf:
        left = end - time.monotonic()
        assert left > 0, buf[-2000:]
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            buf += chunk
    return buf


def _spawn_on_a_pty(url: str) -> tuple[subprocess.Popen[bytes], int]:
    main, child = pty.openpty()
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm-256color"}
    proc = subprocess.Popen([sys.executable, "-m", "judge.cli.main", "label", "--annotator",
                             "asha", "--db", url], stdin=child, stdout=child,
                            stderr=subprocess.PIPE, env=env, close_fds=True)
    os.close(child)
    return proc, main


def test_ctrl_c_on_a_terminal_exits_130_and_gives_the_claim_back(db: str) -> None:
    proc, fd = _spawn_on_a_pty(db)
    try:
        shown = _read_until(fd, b"[q]uit >")
        assert states(db)["claimed"] == 1
        assert b"[/INST]" in shown and b"[bold red]APPROVED BY SECURITY[/bold red]" in shown
        assert b"\x1b]52" not in shown and b"\x1b]8;" not in shown  # no clipboard, no link
        os.write(fd, b"\x03")  # Ctrl-C: the terminal is raw while a key is read
        code = proc.wait(30)
        err = proc.stderr.read() if proc.stderr else b""
    finally:
        os.close(fd)
        if proc.poll() is None:
            proc.kill()
    assert code == 130, err
    assert err.count(b"\n") == 1 and b"interrupted" in err and b"back to the queue" in err
    assert states(db) == {"open": 2, "claimed": 0, "done": 0}


def test_sigint_while_reading_a_line_exits_130_and_gives_the_claim_back(db: str) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "judge.cli.main", "label", "--annotator",
                             "bo", "--db", db], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        _read_until(proc.stdout.fileno(), b"[q]uit >")
        assert states(db)["claimed"] == 1
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.count(b"\n") == 1 and b"Traceback" not in err
    assert states(db) == {"open": 2, "claimed": 0, "done": 0}


def test_an_unexpected_error_is_one_line_exit_2_and_gives_the_claim_back(
        db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.cli import label

    def broken(*_: object) -> None:
        raise RuntimeError("rendering failed")

    monkeypatch.setattr(label.Session, "ask_choice", broken)
    res = CliRunner().invoke(app, ["label", "--annotator", "cy", "--db", db])
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and "RuntimeError: rendering failed" in res.stderr
    assert "back to the queue" in res.stderr and res.exception is not None
    assert states(db) == {"open": 2, "claimed": 0, "done": 0}


def test_markup_in_trace_text_is_labelled_like_any_text(db: str) -> None:
    res = CliRunner().invoke(app, ["label", "--annotator", "dee", "--show-judge", "--db", db],
                             input="p\n\nq\n")
    assert res.exit_code == 0, res.output
    assert HOSTILE_GOAL[:40] in res.output and "[/INST]" in res.output
    assert "\\x1b]52;c;aGk=\\x07" in res.output  # shown, not sent
    assert states(db) == {"open": 1, "claimed": 0, "done": 1}
