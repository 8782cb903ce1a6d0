"""`judge serve tokens add|list|revoke`, and `judge serve` itself: loopback by default, a loud
warning when told to listen elsewhere, the same database as the other commands."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from serve_live import client, fill, item
from typer.testing import CliRunner

from judge.cli.main import app
from judge.store import open_store


def invoke(args: list[str], url: str):
    return CliRunner().invoke(app, [*args, "--db", url])


def test_tokens_add_list_revoke(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    added = invoke(["serve", "tokens", "add", "asha"], url)
    assert added.exit_code == 0, added.output
    token = added.stdout.strip().splitlines()[0]
    assert token.startswith("jdg_") and len(token) > 40
    with open_store(url) as store:
        assert store.annotators.who(token) == "asha"
        with store.engine.connect() as conn:  # only the hash is stored
            dump = "\n".join(str(r) for r in conn.exec_driver_sql(
                "SELECT * FROM annotator_tokens"))
        assert token not in dump
    listed = invoke(["serve", "tokens", "list"], url)
    assert listed.exit_code == 0 and "asha" in listed.output and token not in listed.output
    assert invoke(["serve", "tokens", "revoke", "nobody"], url).exit_code == 2
    revoked = invoke(["serve", "tokens", "revoke", "asha"], url)
    assert revoked.exit_code == 0 and "revoked 1 token" in revoked.output
    with open_store(url) as store:
        assert store.annotators.who(token) is None
    assert "asha" not in invoke(["serve", "tokens", "list"], url).output
    assert "revoked" in invoke(["serve", "tokens", "list", "--all"], url).output
    bad = invoke(["serve", "tokens", "add", "\x1b[2J"], url)
    assert bad.exit_code == 2 and "annotator name" in bad.output


def _serve(args: list[str], url: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "judge.cli.main", "serve", *args,
                             "--db", url], stderr=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env)


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_up(base: str, proc: subprocess.Popen[str] | None = None) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"judge serve exited {proc.returncode}: "
                                 f"{proc.stderr.read() if proc.stderr else ''}")
        try:
            httpx.get(f"{base}/login", timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise AssertionError("judge serve did not come up")


def test_serve_runs_on_loopback_over_the_same_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    with open_store(url) as store:
        fill(store, [item(1)])
        token = store.annotators.add_token("asha")
    port = _free_port()
    proc = _serve(["--port", str(port)], url)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_up(base, proc)
        c = client(base, token)
        page = c.get("/")
        assert page.status_code == 200 and "uncalibrated" in page.text
    finally:
        err = _stop(proc)
    assert "WARNING" not in err and f"127.0.0.1:{port}" in err


def test_serve_warns_loudly_off_loopback(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    port = _free_port()
    proc = _serve(["--host", "0.0.0.0", "--port", str(port), "--create"], url)
    try:
        _wait_up(f"http://127.0.0.1:{port}", proc)
    finally:
        err = _stop(proc)
    assert "WARNING: serving on 0.0.0.0, reachable from other machines" in err
    assert "no annotator tokens yet" in err
