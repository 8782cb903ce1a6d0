"""judge.outputs: `-o` writes regular files atomically and anything else in place; nothing
temporary survives a failure; a directory or a missing parent is one line, exit 2. Then
every command with `-o` is driven through it as a user runs it."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import judge.outputs as outputs
from judge.errors import InputError
from judge.outputs import check_output, write_output

ROOT = Path(__file__).resolve().parent.parent
REFUND = ROOT / "examples" / "scenarios" / "refund-once"
TAU = ROOT / "examples" / "data" / "tau-bench-airline" / "historical_trajectories" \
    / "gpt-4o-airline.json"


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp")
                  or ".partial" in p.name)


def test_new_file_is_written_with_the_umask_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    write_output(target, (f"{i}\n" for i in range(3)))
    assert target.read_text() == "0\n1\n2\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert leftovers(tmp_path) == []


def test_existing_file_is_replaced_keeping_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.md"
    target.write_text("old")
    target.chmod(0o640)
    inode = target.stat().st_ino
    write_output(target, "new")
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.stat().st_ino != inode  # a new file renamed over: readers never see half
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("exc", [ValueError("bad record"), KeyboardInterrupt()])
def test_a_failing_producer_leaves_the_old_file_and_no_temp(tmp_path: Path,
                                                            exc: BaseException) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")

    def lines() -> Iterator[str]:
        yield "half\n"
        raise exc

    with pytest.raises(type(exc)):
        write_output(target, lines())
    assert target.read_text() == "old\n" and leftovers(tmp_path) == []


@pytest.mark.parametrize("where", ["write", "fsync", "replace"])
def test_full_disk_at_any_step_is_one_error_and_no_temp(tmp_path: Path, where: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")

    def enospc(*_: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    if where == "write":  # the text file's flush to the fd fails
        real_fdopen = os.fdopen

        def fdopen(fd: int, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
            fh = real_fdopen(fd, *args, **kwargs)  # type: ignore[call-overload]
            monkeypatch.setattr(fh, "flush", enospc)
            return fh

        monkeypatch.setattr(outputs.os, "fdopen", fdopen)
    else:
        monkeypatch.setattr(outputs.os, where, enospc)
    with pytest.raises(InputError) as err:
        write_output(target, ["x" * 100_000, "\n"])
    assert "No space left on device" in err.value.message and str(target) in err.value.message
    monkeypatch.undo()
    assert target.read_text() == "old\n" and leftovers(tmp_path) == []


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs (root with mount rights only; else the monkeypatched tests above)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if shutil.which("mount") is None or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
            capture_output=True, check=False).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_a_really_full_disk_leaves_no_temp(tiny_tmpfs: Path) -> None:
    target = tiny_tmpfs / "labels.jsonl"
    target.write_text("old\n")
    with pytest.raises(InputError, match="No space left on device"):
        write_output(target, ("x" * 1000 + "\n" for _ in range(1000)))
    assert target.read_text() == "old\n" and leftovers(tiny_tmpfs) == []


def test_dev_full_is_written_in_place_and_stays_a_device() -> None:
    with pytest.raises(InputError, match="No space left on device"):
        write_output("/dev/full", "x" * 100_000)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_fifo_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_output(fifo, ["a\n", "b\n"])
    reader.join(10)
    assert got == [b"a\nb\n"] and stat.S_ISFIFO(fifo.stat().st_mode)
    assert leftovers(tmp_path) == []


def device_node(tmp_path: Path) -> Path:
    """A character device like /dev/null (1, 3) inside tmp_path: needs root."""
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs root")
    return node


def test_a_device_is_written_in_place_never_replaced(tmp_path: Path) -> None:
    node = device_node(tmp_path)
    write_output(node, "discarded\n")
    assert stat.S_ISCHR(node.stat().st_mode) and leftovers(tmp_path) == []


def test_a_symlink_is_followed_and_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    write_output(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    dev_link = tmp_path / "devlink"
    dev_link.symlink_to(device_node(tmp_path))
    write_output(dev_link, "x")
    assert dev_link.is_symlink() and stat.S_ISCHR(os.stat(dev_link).st_mode)


def test_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    write_output("-", ["a", "b\n"])
    assert capsys.readouterr().out == "ab\n"


@pytest.mark.parametrize(("make", "message"), [
    (lambda t: t, "is a directory"),
    (lambda t: t / "missing" / "out.md", "does not exist"),
    (lambda t: t / "file.txt" / "out.md", "not a directory"),
])
def test_bad_targets_are_input_errors(tmp_path: Path, make, message: str) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "file.txt").write_text("x")
    target = make(tmp_path)
    for call in (lambda: check_output(target), lambda: write_output(target, "x")):
        with pytest.raises(InputError, match=message):
            call()
    assert leftovers(tmp_path) == []


# -- every command's -o, as a user runs it ---------------------------------------------------
def judge(*args: str | Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "judge.cli.main", *map(str, args)], env=env,
                          capture_output=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A database with a graded run, a label, and the files the file-mode commands read."""
    tmp = tmp_path_factory.mktemp("outputs")
    env = {**os.environ, "JUDGE_DATABASE_URL": f"sqlite:///{tmp / 'judge.db'}",
           "JUDGE_CALIBRATION_DIR": str(tmp / "calibration")}
    graded = judge("grade", REFUND, REFUND / "pass.json", "-o", tmp / "verdicts.jsonl",
                   "--format", "json", env=env)
    assert graded.returncode == 0, graded.stderr
    summary = json.loads(graded.stdout)["summary"]
    item = json.loads((tmp / "verdicts.jsonl").read_text().splitlines()[0])["item_id"]
    assert judge("label", "--item", item, "--label", "pass", "--annotator", "asha",
                 env=env).returncode == 0
    suite = tmp / "suite.yaml"
    suite.write_text(json.dumps({"suites": {"s": {
        "rubrics": ["scope_fidelity"],
        "scenarios": [{"scenario": str(REFUND), "traces": [str(REFUND / "pass.json")]}],
        "release": {"max_review_share": 1.0}}}}))
    run = judge("run", suite, "--allow-outside", "--format", "json", "--no-progress", env=env)
    assert run.returncode == 0, run.stderr
    labels = tmp / "labels.jsonl"
    labels.write_text(json.dumps({"item_id": item, "label": "pass", "annotator": "asha",
                                  "created_at": "2026-01-01T00:00:00Z"}) + "\n")
    chat = tmp / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "hi"},
                                {"role": "assistant", "content": "hello"}]))
    return {"tmp": tmp, "env": env, "run_id": json.loads(run.stdout)["run_id"],
            "labels": labels, "verdicts": tmp / "verdicts.jsonl", "chat": chat,
            "graded": summary}


def commands(s: dict[str, object], out: Path | str) -> dict[str, list[object]]:
    return {
        "labels export": ["labels", "export", "-o", out],
        "grade -o": ["grade", REFUND, REFUND / "pass.json", "--replay-only", "-o", out],
        "report run -o": ["report", "run", s["run_id"], "--format", "md", "-o", out],
        "report agreement -o": ["report", "agreement", "--labels", s["labels"], "--verdicts",
                                s["verdicts"], "--n-boot", "10", "-o", out],
        "import openai-chat -o": ["import", "openai-chat", s["chat"], "-o", out],
    }


NAMES = list(commands({"run_id": "", "labels": "", "verdicts": "", "chat": ""}, "x"))


@pytest.mark.parametrize("name", NAMES)
def test_every_o_refuses_a_directory_and_a_missing_parent(stored: dict[str, object],
                                                          name: str) -> None:
    tmp, env = stored["tmp"], stored["env"]
    assert isinstance(tmp, Path) and isinstance(env, dict)
    for target, message in ((tmp, b"is a directory"),
                            (tmp / "nope" / "x.jsonl", b"does not exist")):
        proc = judge(*commands(stored, target)[name], env=env)
        assert proc.returncode == 2, (name, proc.stderr)
        assert proc.stderr.count(b"\n") == 1 and message in proc.stderr, proc.stderr
        assert b"Traceback" not in proc.stderr
    assert leftovers(tmp) == []


@pytest.mark.parametrize("name", NAMES)
def test_every_o_writes_a_file_a_device_and_stdout(stored: dict[str, object],
                                                   name: str) -> None:
    tmp, env = stored["tmp"], stored["env"]
    assert isinstance(tmp, Path) and isinstance(env, dict)
    target = tmp / f"{name.replace(' ', '_')}.jsonl"
    done = judge(*commands(stored, target)[name], env=env)
    assert done.returncode == 0, (name, done.stderr)
    assert target.stat().st_size > 0 and leftovers(tmp) == []
    to_stdout = judge(*commands(stored, "-")[name], env=env)
    assert to_stdout.returncode == 0, (name, to_stdout.stderr)
    body = target.read_bytes()
    if name != "report agreement -o":  # the report carries its generation time
        assert body in to_stdout.stdout, name
    fifo = tmp / "fifo"
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    piped = judge(*commands(stored, fifo)[name], env=env)
    reader.join(30)
    assert piped.returncode == 0 and got and got[0], (name, piped.stderr)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    node = device_node(tmp)
    try:
        dev = judge(*commands(stored, node)[name], env=env)
        assert dev.returncode == 0 and stat.S_ISCHR(node.stat().st_mode), (name, dev.stderr)
    finally:
        node.unlink()
    assert leftovers(tmp) == []


def test_calibration_records_folder_errors_are_one_line(tmp_path: Path) -> None:
    from judge.calibration.record import CalibrationRecord

    assert CalibrationRecord is not None
    from tests.calibration_data import synth

    labels, verdicts = synth(80, n_fail=36)
    lp, vp = tmp_path / "l.jsonl", tmp_path / "v.jsonl"
    lp.write_text("".join(json.dumps(x) + "\n" for x in labels))
    vp.write_text("".join(json.dumps(x) + "\n" for x in verdicts))
    (tmp_path / "afile").write_text("x")
    env = dict(os.environ)
    bad = judge("calibrate", "files", "--labels", lp, "--verdicts", vp, "--min-per-class", "5",
                "-o", tmp_path / "afile", env=env)
    assert bad.returncode == 2 and bad.stderr.count(b"\n") == 1, bad.stderr
    good = judge("calibrate", "files", "--labels", lp, "--verdicts", vp, "--min-per-class",
                 "5", "-o", tmp_path / "records", env=env)
    assert good.returncode == 0, good.stderr
    written = list((tmp_path / "records").rglob("*"))
    assert any(p.suffix == ".json" for p in written)
    assert not any(p.name.endswith(".tmp") for p in written)
