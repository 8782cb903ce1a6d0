"""A SIGKILLed `judge run`, `judge grade` or `judge worker` leaves no process behind, and no
lock in its database (issue 28).

Each command runs as a real process against the fake provider server, on SQLite and on
PostgreSQL, and is killed with SIGKILL as soon as grading has begun (the first request
reached the server: the checking child of `run` and `grade` is still at work then, and the
test checks that it was). Every process of the command, recorded from /proc while it ran,
must have exited within 2 s of the kill (each is pinned by a pidfd, so the kernel says when
it exits and a reused pid cannot pass for it). Then nothing may hold the database: on
SQLite no other process has the file, its WAL or shm open or locked and a write lock is
free at once; on PostgreSQL no client backend but ours is connected and none holds a lock.
The run is then resumed (a `judge grade` run again, a second `judge worker` started) and
must finish with every item graded once; the resuming process leaves nothing behind either.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest
from proctree import Tracked
from test_suite_run import SCEN, TAU, write_suite
from typer.testing import CliRunner

from judge.cli.main import app
from judge.testing.fakeserver import FakeProviderServer

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

#: enough traces that the checking child is still at work when grading begins, also on a
#: loaded machine (100 were not, once, at load 8: the child finished while the parent was
#: still importing the SDK): the 200 airline runs three times over, as trials 0-11
N_COPIES = 3
KILL_TO_GONE_S = 2.0  # the bound: every process of the killed command gone by then
BACKENDS_GONE_S = 15.0  # PostgreSQL ends a backend once its client's socket closes
CMD = [sys.executable, "-m", "judge.cli.main"]
APP = "judge-killed"  # PGAPPNAME of the command to kill (libpq names its connections so)


# -- the database: counts, and anything that still holds it -----------------------------------

class Db:
    def __init__(self, url: str) -> None:
        self.url = url
        self.sqlite = Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite") \
            else None

    def count(self, sql: str) -> int:
        if self.sqlite is not None:
            con = sqlite3.connect(self.sqlite, timeout=30)
            try:
                return int(con.execute(sql).fetchone()[0])
            except sqlite3.OperationalError:  # the schema is not there yet
                return 0
            finally:
                con.close()
        return int(self._pg(sql) or 0)

    def scalar(self, sql: str) -> str:
        if self.sqlite is not None:
            con = sqlite3.connect(self.sqlite, timeout=30)
            try:
                return str(con.execute(sql).fetchone()[0])
            finally:
                con.close()
        return str(self._pg(sql))

    def _pg(self, sql: str) -> Any:
        from sqlalchemy import create_engine, text
        from sqlalchemy.pool import NullPool

        eng = create_engine(self.url, poolclass=NullPool)
        try:
            with eng.connect() as conn:
                return conn.execute(text(sql)).scalar_one()
        except Exception:
            return None
        finally:
            eng.dispose()

    def holders(self, others: set[int]) -> list[str]:
        """What still holds the database, but this test and the processes `others` (on
        PostgreSQL: any backend but those of clients named APP, the killed command's)."""
        if self.sqlite is not None:
            return _sqlite_holders(self.sqlite, others | {os.getpid()})
        found = self._pg(
            "SELECT string_agg(a.pid || ' ' || a.state || coalesce(' locks ' || l.n, ''), "
            "'; ') FROM pg_stat_activity a LEFT JOIN (SELECT pid, count(*) AS n FROM pg_locks "
            "GROUP BY pid) l ON l.pid = a.pid WHERE a.datname = current_database() "
            f"AND a.backend_type = 'client backend' AND a.application_name = '{APP}'")
        return [found] if found else []


def _sqlite_holders(db: Path, others: set[int]) -> list[str]:
    files = {}
    for f in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        try:
            st = f.stat()
        except FileNotFoundError:
            continue
        files[(st.st_dev, st.st_ino)] = f.name
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) in others:
            continue
        try:
            fds = list((proc / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                st = fd.stat()
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in files:
                found.append(f"pid {proc.name} has {files[(st.st_dev, st.st_ino)]} open")
    inodes = {ino: name for (_, ino), name in files.items()}
    for line in Path("/proc/locks").read_text().splitlines():
        parts = line.split()  # "1: POSIX ADVISORY WRITE PID MAJ:MIN:INODE START END"
        if len(parts) > 5 and parts[4].lstrip("-").isdigit() and int(parts[4]) not in others:
            inode = int(parts[5].rsplit(":", 1)[1])
            if inode in inodes:
                found.append(f"pid {parts[4]} holds a {parts[3]} lock on {inodes[inode]}")
    con = sqlite3.connect(db, timeout=0, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")  # the write lock, with no wait
        con.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        found.append(f"no write lock at once: {exc}")
    finally:
        con.close()
    return found


# -- the commands ------------------------------------------------------------------------------

@dataclass
class Case:
    """The command to kill (`start`), the processes that may keep the database open after
    it died (`others`), and how its work is finished afterwards (`resume`: returns the run
    id whose verdicts must cover every item)."""

    start: Callable[[], subprocess.Popen[bytes]]
    resume: Callable[[], str]
    others: set[int] = field(default_factory=set)


def _popen(args: list[str], env: dict[str, str], cwd: Path, out: IO[bytes] | int,
           err: IO[bytes] | int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*CMD, *args], env=env, cwd=cwd, stdout=out, stderr=err)


def _run_tracked(args: list[str], env: dict[str, str], cwd: Path,
                 timeout: float = 180) -> tuple[int, str, str]:
    """Run a command to its end, recording its processes: none may outlive it by 2 s."""
    stamp = time.monotonic_ns()
    out, err = cwd / f"out-{stamp}.txt", cwd / f"err-{stamp}.txt"
    tracked = Tracked()
    try:
        with out.open("wb") as o, err.open("wb") as e:
            proc = _popen(args, env, cwd, o, e)
            deadline = time.monotonic() + timeout
            while proc.poll() is None:
                tracked.record(proc.pid)
                if time.monotonic() > deadline:
                    proc.kill()
                    pytest.fail(f"judge {args[0]} did not finish in {timeout} s")
                time.sleep(0.05)
        left = tracked.wait_gone(time.monotonic() + KILL_TO_GONE_S)
        assert not left, f"processes outlived judge {args[0]}: {tracked.describe(left)}"
    finally:
        tracked.close()
    return proc.returncode, out.read_text(), err.read_text()


def _tau_copies(tmp: Path) -> Path:
    """The airline runs N_COPIES times over, each copy's trials renumbered (trial + 4k), so
    every trace id is its own."""
    out = tmp / "tau-copies.json"
    if not out.exists():
        runs = json.loads(TAU.read_text())
        out.write_text(json.dumps([{**r, "trial": r["trial"] + 4 * k}
                                   for k in range(N_COPIES) for r in runs]))
    return out


def _suite(tmp: Path) -> Path:
    return write_suite(tmp / "s.yaml", [
        {"scenario": str(SCEN / "tau-airline"),
         "traces": [{"path": str(_tau_copies(tmp)), "format": "tau-bench"}]}],
        rubrics=("scope_fidelity",))


def _case(command: str, tmp: Path, env: dict[str, str], db: Db,
          started: list[subprocess.Popen[bytes]]) -> Case:
    model = ["--model", "openai:fake-judge"]
    doomed = {**env, "PGAPPNAME": APP}
    if command == "run":
        suite = _suite(tmp)

        def resume() -> str:
            run_id = db.scalar("SELECT run_id FROM runs")
            code, out, err = _run_tracked(["run", "--resume", run_id, "--concurrency", "8",
                                           "--format", "json", "--no-progress"], env, tmp)
            assert code in (0, 1), err
            assert json.loads(out)["run_id"] == run_id
            return run_id

        return Case(lambda: _popen(["run", str(suite), *model, "--concurrency", "4",
                                    "--no-progress"], doomed, tmp, subprocess.DEVNULL), resume)
    if command == "grade":
        traces = tmp / "tau.jsonl"
        done = CliRunner().invoke(app, ["import", "tau-bench", str(_tau_copies(tmp)),
                                        "-o", str(traces)])
        assert done.exit_code == 0, done.output
        args = ["grade", str(SCEN / "tau-airline"), str(traces), "--rubric", "scope_fidelity",
                *model, "--no-progress"]

        def regrade() -> str:  # a grade is a run of its own: the call cache makes it cheap
            code, out, err = _run_tracked([*args, "--concurrency", "8", "--format", "json"],
                                          env, tmp)
            assert code in (0, 1), err
            return str(json.loads(out)["summary"]["run_id"])

        return Case(lambda: _popen([*args, "--concurrency", "4"], doomed, tmp,
                                   subprocess.DEVNULL), regrade)
    suite = _suite(tmp)
    coordinator = _popen(["run", str(suite), *model, "--distributed", "--no-local-worker",
                          "--format", "json", "--no-progress"], env, tmp,
                         subprocess.PIPE, subprocess.PIPE)
    started.append(coordinator)
    deadline = time.monotonic() + 120
    while db.count("SELECT count(*) FROM grading_work") == 0:
        assert coordinator.poll() is None, coordinator.communicate()
        assert time.monotonic() < deadline, "the distributed run queued no work"
        time.sleep(0.1)
    worker = ["worker", "--lease", "2", "--idle-exit", "3"]

    def finish() -> str:  # another worker takes the killed one's rows once its lease ends
        code, _, err = _run_tracked([*worker, "--concurrency", "8"], env, tmp)
        assert code == 0, err
        out, err = coordinator.communicate(timeout=180)
        assert coordinator.returncode in (0, 1), err
        return str(json.loads(out)["run_id"])

    return Case(lambda: _popen([*worker, "--concurrency", "4"], doomed, tmp,
                               subprocess.DEVNULL), finish, others={coordinator.pid})


@pytest.fixture
def fake() -> Iterator[FakeProviderServer]:
    with FakeProviderServer(latency=0.05) as srv:
        yield srv


@pytest.mark.parametrize("command", ["run", "grade", "worker"])
def test_sigkill_leaves_no_process_and_no_lock(command: str, store_url: str, tmp_path: Path,
                                               fake: FakeProviderServer) -> None:
    db = Db(store_url)
    env = {**os.environ, "OPENAI_BASE_URL": fake.openai_base_url,
           "JUDGE_DATABASE_URL": store_url}
    started: list[subprocess.Popen[bytes]] = []
    tracked = Tracked()
    try:
        case = _case(command, tmp_path, env, db, started)
        proc = case.start()
        started.append(proc)
        descendants: set[int] = set()
        deadline = time.monotonic() + 120
        while fake.generation_count == 0:  # until grading has begun
            assert proc.poll() is None, f"judge {command} ended before the kill"
            assert time.monotonic() < deadline, f"judge {command} sent no request"
            descendants |= tracked.record(proc.pid)
            time.sleep(0.02)
        descendants |= tracked.record(proc.pid)
        tracked.refresh_names()  # grading has begun: every exec is long done
        # Forks of the command: only those alive now, by the name read just now. A
        # short-lived child (a `uname` run by a library) has its parent's command line
        # until it execs, and one recorded then and gone since is not a fork of judge (nor
        # is one gone before it was recorded, which has no name)
        alive = set(tracked.alive())
        forks = {pid for pid in descendants & alive
                 if tracked.names.get(pid) == tracked.names[proc.pid]}
        if command == "worker":
            assert not forks, f"judge worker forked: {tracked.describe(sorted(forks))}"
        else:  # the forked checking child, still at work: what the kill must not orphan
            assert forks, f"judge {command} forked no checking child alive before the kill " \
                "(if it ended before, give it more traces)"
        killed_at = time.monotonic()
        os.kill(proc.pid, signal.SIGKILL)
        left = tracked.wait_gone(killed_at + KILL_TO_GONE_S)
        gone_after = time.monotonic() - killed_at
        assert not left, f"alive {KILL_TO_GONE_S} s after SIGKILL of judge {command}: " \
            f"{tracked.describe(left)}"
        assert gone_after <= KILL_TO_GONE_S
        assert proc.wait(timeout=10) == -signal.SIGKILL
        print(f"judge {command}: {len(tracked.fds)} process(es) gone {gone_after:.3f} s "
              "after SIGKILL")  # (shown with -s or -rP)

        holders = db.holders(case.others)
        until = time.monotonic() + BACKENDS_GONE_S
        while holders and db.sqlite is None and time.monotonic() < until:
            time.sleep(0.1)  # a PostgreSQL backend whose client died is on its way out
            holders = db.holders(case.others)
        assert holders == [], f"the killed judge {command} still holds the database: {holders}"

        items_at_kill = db.count("SELECT count(*) FROM items")
        verdicts_at_kill = db.count("SELECT count(*) FROM verdicts")
        fake.api.latency = 0.0
        run_id = case.resume()
        n_items = db.count("SELECT count(*) FROM items")
        if command != "worker":
            assert items_at_kill < n_items, "the kill did not cut the checking short"
            print(f"judge {command}: {items_at_kill} of {n_items} items checked at the kill")
        assert db.count(f"SELECT count(*) FROM verdicts WHERE run_id = '{run_id}'") == \
            db.count(f"SELECT count(DISTINCT item_id) FROM verdicts WHERE run_id = '{run_id}'") \
            == n_items
        assert db.count("SELECT count(*) FROM verdicts") > verdicts_at_kill
        assert db.holders(set()) == []
    finally:
        for p in started:
            if p.poll() is None:
                p.kill()
                p.wait()
        tracked.close()


# -- the checks behind the assertions can fail -------------------------------------------------

def test_the_holder_check_sees_a_live_holder(store_url: str) -> None:
    """A process (named APP on PostgreSQL) holding a transaction open is reported."""
    db = Db(store_url)
    if db.sqlite is not None:
        con = sqlite3.connect(db.sqlite)
        con.execute("CREATE TABLE t (x)")
        con.commit()
        con.close()
    code = ("import sys, time\n"
            "if sys.argv[1].startswith('sqlite'):\n"
            "    import sqlite3\n"
            "    con = sqlite3.connect(sys.argv[1].removeprefix('sqlite:///'),"
            " isolation_level=None)\n"
            "    con.execute('BEGIN IMMEDIATE')\n"
            "else:\n"
            "    from sqlalchemy import create_engine, text\n"
            "    conn = create_engine(sys.argv[1]).connect()\n"
            "    conn.execute(text('CREATE TABLE t (x int)'))\n"
            "print('holding', flush=True)\n"
            "time.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, store_url], text=True,
                              stdout=subprocess.PIPE, env={**os.environ, "PGAPPNAME": APP})
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        found = db.holders(set())
        assert found, "a live holder went unseen"
        if db.sqlite is not None:
            assert any(f"pid {holder.pid} has judge.db open" in f for f in found)
            assert any("no write lock at once" in f for f in found)
        else:
            assert "idle in transaction locks" in found[0]
    finally:
        holder.kill()
        holder.wait()


# -- every other process the project starts ----------------------------------------------------

def test_a_sigkilled_judge_check_leaves_no_worker(tmp_path: Path) -> None:
    from test_checks_parallel import scenario_dir, trace_line

    d = scenario_dir(tmp_path)
    big = tmp_path / "big.jsonl"
    big.write_text("".join(trace_line(i, vetoed=False) + "\n" for i in range(20_000)))
    proc = subprocess.Popen([*CMD, "check", str(d), str(big), "--jobs", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    tracked = Tracked()
    try:
        assert proc.stdout is not None and proc.stdout.read(100)  # checking has begun
        deadline = time.monotonic() + 60
        while len(tracked.record(proc.pid)) < 2:
            assert time.monotonic() < deadline, "no worker processes"
            time.sleep(0.02)
        killed_at = time.monotonic()
        proc.kill()
        left = tracked.wait_gone(killed_at + KILL_TO_GONE_S)
        assert not left, f"alive after SIGKILL of judge check: {tracked.describe(left)}"
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
        tracked.close()


def test_the_fake_server_process_dies_with_its_starter() -> None:
    code = ("from judge.testing.fakeserver import FakeProviderServer\n"
            "import time\n"
            "srv = FakeProviderServer(process=True).start()\n"
            "print(srv._proc.pid, srv.port, flush=True)\n"
            "time.sleep(60)\n")
    starter = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    tracked = Tracked()
    try:
        assert starter.stdout is not None
        server_pid, port = map(int, starter.stdout.readline().split())
        tracked.record(starter.pid)
        assert server_pid in tracked.fds
        killed_at = time.monotonic()
        starter.kill()
        left = tracked.wait_gone(killed_at + KILL_TO_GONE_S)
        assert not left, f"the fake server outlived its starter: {tracked.describe(left)}"
        import socket

        with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port),
                                                                             timeout=5):
            pass
    finally:
        starter.kill()
        starter.wait()
        tracked.close()


@pytest.mark.postgres
def test_a_killed_test_session_leaves_no_postgres_server(pg_server: object) -> None:
    """(`pg_server`: skip, or fail when required, as the other PostgreSQL tests do.)"""
    code = ("import sys, time\n"
            f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
            "from pg import start_server\n"
            "srv = start_server()\n"
            "print(srv.datadir, flush=True)\n"
            "time.sleep(120)\n")
    session = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    tracked = Tracked()
    try:
        assert session.stdout is not None
        datadir = Path(session.stdout.readline().strip())
        postmaster = int((datadir / "postmaster.pid").read_text().split()[0])
        tracked.add(postmaster)
        assert tracked.fds, "no postmaster"
        session.kill()
        session.wait()
        left = tracked.wait_gone(time.monotonic() + 30)  # the watchdog runs pg_ctl stop
        assert not left, f"PostgreSQL outlived the killed session: {tracked.describe(left)}"
        deadline = time.monotonic() + 30
        while datadir.parent.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not datadir.parent.exists(), "the server's folder was left behind"
    finally:
        session.kill()
        session.wait()
        tracked.close()
