"""`judge serve` as a user starts it (a real process): every way of failing to start is one
line on stderr and exit 2, before anything listens — a lease that is not a finite number of
seconds, a bad --host, a port in use, a bad --allowed-host, a database URL that is none, a
database that does not exist (without --create). And what it does once up: --allowed-host
counts on loopback too, --port 0 says the port it took, a client that goes away in the middle
of its request leaves no traceback in the log."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from serve_live import client, fill, item

from judge.store import open_store

TIMEOUT_S = 60


def judge(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("JUDGE_DATABASE_URL", None)
    return subprocess.run([sys.executable, "-m", "judge.cli.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False)


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The single line a failed start prints (and that it is exit 2, with no traceback)."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("judge: error: "), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    return lines[0]


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'judge.db'}"
    with open_store(url) as store:
        fill(store, [item(1)])
    return url


@pytest.mark.parametrize("lease", ["nan", "inf", "-inf", "1e300", "0", "-5", "3"])
def test_a_lease_that_is_not_sane_is_one_line_exit_2(lease: str, db: str,
                                                      tmp_path: Path) -> None:
    line = one_error_line(judge("serve", "--lease", lease, "--port", "0", "--db", db,
                                cwd=tmp_path))
    assert "--lease" in line and ("is not in [10, 86400]" in line or "finite" in line)


def test_a_busy_port_is_one_line_exit_2(db: str, tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        line = one_error_line(judge("serve", "--port", str(port), "--db", db, cwd=tmp_path))
    assert f"cannot listen on 127.0.0.1:{port}" in line and "in use" in line


@pytest.mark.parametrize(("host", "says"), [
    ("999.1.1.1", "not an address of this machine"),
    ("no such host.example", "not an IP address or a host name"),
    ("", "not an IP address or a host name"),
    ("192.0.2.1", "--host is not an address of this machine"),  # TEST-NET: not ours
    ("[::1", "not an IP address or a host name"),
])
def test_a_bad_host_is_one_line_exit_2(host: str, says: str, db: str, tmp_path: Path) -> None:
    line = one_error_line(judge("serve", "--host", host, "--port", "0", "--db", db,
                                cwd=tmp_path))
    assert says in line


@pytest.mark.parametrize("pattern", ["a*b", "*x.example", "evil example", "**"])
def test_a_bad_allowed_host_is_one_line_exit_2(pattern: str, db: str, tmp_path: Path) -> None:
    line = one_error_line(judge("serve", "--allowed-host", pattern, "--port", "0", "--db", db,
                                cwd=tmp_path))
    assert "--allowed-host" in line


def test_a_missing_database_is_refused_without_create(tmp_path: Path) -> None:
    line = one_error_line(judge("serve", "--port", "0", cwd=tmp_path))
    assert "no database at judge.db" in line and "--create" in line
    (tmp_path / "empty.db").touch()
    line = one_error_line(judge("serve", "--port", "0", "--db", "empty.db", cwd=tmp_path))
    assert "holds no judge tables" in line and "--create" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]  # nothing made
    for sub in (["list"], ["revoke", "asha"]):  # listing or revoking makes no database
        assert "no database at judge.db" in one_error_line(
            judge("serve", "tokens", *sub, cwd=tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]


@pytest.mark.parametrize("url", ["not a url", "judge", "mysql://u@h/db", "sqlite//x.db",
                                 "postgresql://u@h:notaport/db", "nodir/judge.db"])
def test_a_database_url_that_is_none_is_refused_and_makes_no_file(url: str,
                                                                  tmp_path: Path) -> None:
    for args in (["serve", "--port", "0", "--create"], ["review", "stats"],
                 ["serve", "tokens", "add", "asha"]):
        line = one_error_line(judge(*args, "--db", url, cwd=tmp_path))
        assert "--db" in line, line
    assert list(tmp_path.iterdir()) == []


def test_a_bare_path_named_like_a_database_is_made(tmp_path: Path) -> None:
    added = judge("serve", "tokens", "add", "asha", "--db", "team.db", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert (tmp_path / "team.db").is_file()
    listed = judge("serve", "tokens", "list", "--db", "team.db", cwd=tmp_path)
    assert listed.returncode == 0 and "asha" in listed.stdout


@contextmanager
def serving(*args: str, cwd: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`judge serve --port 0 ARGS` running; yields the process and its base URL (read from
    its start message)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "judge.cli.main", "serve", "--port", "0",
                             *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + TIMEOUT_S
        base = ""
        seen: list[str] = []
        while not base and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                raise AssertionError(f"judge serve exited {proc.wait()}: {''.join(seen)}")
            seen.append(line)
            if line.startswith("judge serve: ") and " on http://" in line:
                base = line.split(" on ", 1)[1].split("/ ", 1)[0]
        assert base and not base.endswith(":0"), seen
        yield proc, base
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_port_0_says_the_port_it_took_and_allowed_host_counts_on_loopback(
        db: str, tmp_path: Path) -> None:
    with open_store(db) as store:
        token = store.annotators.add_token("asha")
    with serving("--allowed-host", "review.example.org", "--db", db, cwd=tmp_path) as (
            proc, base):
        c = client(base, token)
        assert c.get("/").status_code == 200  # loopback names still answer
        proxied = c.get("/", headers={"host": "review.example.org"})
        assert proxied.status_code == 200  # the name a reverse proxy forwards
        assert c.get("/", headers={"host": "evil.example"}).status_code == 400
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0


def test_a_client_gone_mid_body_leaves_no_traceback(db: str, tmp_path: Path) -> None:
    with open_store(db) as store:
        token = store.annotators.add_token("asha")
    with serving("--db", db, cwd=tmp_path) as (proc, base):
        signed_in = client(base, token)
        host, port = base.removeprefix("http://").rsplit(":", 1)
        cookie = "; ".join(f"{k}={v}" for k, v in signed_in.cookies.items())
        for path, extra in (("/login", ""), ("/label", f"Cookie: {cookie}\r\n")):
            with socket.create_connection((host, int(port))) as s:
                s.sendall((f"POST {path} HTTP/1.1\r\nHost: {host}\r\n{extra}"
                           "Content-Type: application/x-www-form-urlencoded\r\n"
                           "Content-Length: 100000\r\n\r\ncsrf_token=abc&id=x").encode())
                time.sleep(0.3)  # the app is reading the body now
            time.sleep(0.3)
        assert signed_in.get("/").status_code == 200  # still serving
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert "Traceback" not in err and "Exception in ASGI" not in err, err


def test_deleting_the_database_while_serving_refuses_labels_and_a_restart(tmp_path: Path
                                                                          ) -> None:
    path = tmp_path / "judge.db"
    with open_store(f"sqlite:///{path}") as store:
        fill(store, [item(1), item(2)])
        token = store.annotators.add_token("asha")
    with serving("--db", str(path), cwd=tmp_path) as (_proc, base):
        c = client(base, token)
        r = c.post("/next", data={"csrf_token": _csrf(c)})
        iid = httpx.URL(r.headers["location"]).params["id"]
        page = c.get("/item", params={"id": iid}).text
        for p in tmp_path.glob("judge.db*"):
            p.unlink()  # `rm judge.db*` while it runs
        once = page.split('name="once" value="', 1)[1].split('"', 1)[0]
        lost = c.post("/label", data={"csrf_token": _csrf(c, page), "id": iid,
                                      "label": "pass", "once": once})
        assert lost.status_code == 503 and "deleted while open" in lost.text
        assert c.get("/").status_code == 503
        assert not path.exists()
    restart = judge("serve", "--port", "0", "--db", str(path), cwd=tmp_path)
    assert "no database at" in one_error_line(restart) and "--create" in restart.stderr
    assert not path.exists()


def _csrf(c: httpx.Client, page: str | None = None) -> str:
    from serve_live import csrf_of

    return csrf_of(page if page is not None else c.get("/").text)


@pytest.mark.parametrize("lease", [float("nan"), float("inf"), 1e300, 0.0, -1.0, 86_401.0])
def test_the_app_refuses_a_lease_it_cannot_keep(lease: float) -> None:
    """The library's config checks the lease too (the CLI's bounds are narrower)."""
    from judge.errors import InputError
    from judge.serve import ServeConfig

    with pytest.raises(InputError, match="lease_s"):
        ServeConfig(lease_s=lease)
    assert ServeConfig(lease_s=0.5).lease_s == 0.5  # short leases are for tests


def test_connections_to_the_bound_sockets_are_nodelay() -> None:
    """bind() makes TCP sockets asyncio recognises as TCP, so each accepted connection gets
    TCP_NODELAY: without it (proto 0) every page's second write waited for the client's
    delayed ACK, ~40 ms a page (benchmarks/serve.py's round trips showed it)."""
    import asyncio

    from judge.serve.listen import bind

    [sock] = bind("127.0.0.1", 0)
    seen: list[int] = []

    async def main() -> None:
        async def on_connect(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            seen.append(w.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP,
                                                               socket.TCP_NODELAY))
            w.close()

        server = await asyncio.start_server(on_connect, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            for _ in range(100):
                if seen:
                    break
                await asyncio.sleep(0.01)
            writer.close()

    asyncio.run(main())
    assert seen and seen[0] != 0
