"""Benchmark the pytest plugin and `judge init` as a user runs them: whole processes.

    .venv/bin/python benchmarks/pytest_plugin.py [--repeat 5]

1. Start-up cost for projects that do not use the plugin: `pytest -q` on a project with one
   trivial test and no judge configuration, with the plugin loaded (as installed) beside the
   same with `-p no:judge`. Target: no measurable difference (≤ 1.05×). And the import
   of the plugin module by itself, after pytest, in a fresh process.
2. A project that uses it: `pytest -q` collecting and running the 200 tau-bench airline
   traces (one .jsonl, imported first) against the reviewed tau-airline scenario, beside
   `judge check` on the same files, text output.
3. `judge init` on those 200 traces.

Every command runs in a fresh process, the commands of a measure interleaved, best of
`--repeat`; wall and CPU (user + system, from wait4). The plugins that come with the dev
extras (hypothesis, asyncio, anyio) stay loaded in every pytest run, as in a user's venv.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
TAU = ROOT / "examples" / "data" / "tau-bench-airline" / "historical_trajectories" \
    / "gpt-4o-airline.json"


def run(cmd: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    t = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         env=ENV)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    assert p.stderr is not None
    err = p.stderr.read().decode()
    if code not in ok:
        raise SystemExit(f"{' '.join(cmd)}: exit {code}\n{err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def best(cmds: dict[str, tuple[list[str], Path, tuple[int, ...]]],
         repeat: int) -> dict[str, tuple[float, float]]:
    for cmd, cwd, ok in cmds.values():  # warm-up: byte-code caches, page cache
        run(cmd, cwd, ok)
    out: dict[str, tuple[float, float]] = {}
    for _ in range(repeat):
        for name, (cmd, cwd, ok) in cmds.items():
            wall, cpu = run(cmd, cwd, ok)
            old = out.get(name)
            out[name] = (wall, cpu) if old is None else (min(old[0], wall), min(old[1], cpu))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="judge-bench-pytest-") as tmp:
        plain = Path(tmp) / "plain"
        (plain / "tests").mkdir(parents=True)
        (plain / "tests" / "test_x.py").write_text("def test_x():\n    assert 1 + 1 == 2\n")
        (plain / "pytest.ini").write_text("[pytest]\n")
        base = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        r = best({"with": (base, plain, (0,)), "without": ([*base, "-p", "no:judge"], plain,
                                                           (0,))}, args.repeat)
        print("1. pytest -q, one trivial test, plugin not configured (best of "
              f"{args.repeat}):")
        print(f"   plugin loaded {r['with'][0]:.3f} s wall, {r['with'][1]:.3f} s CPU; "
              f"-p no:judge {r['without'][0]:.3f} s wall, {r['without'][1]:.3f} s CPU; "
              f"ratio {r['with'][0] / r['without'][0]:.3f}× wall, "
              f"{r['with'][1] / r['without'][1]:.3f}× CPU")

        probe = ("import time, pytest; t = time.perf_counter(); import judge.pytest_plugin; "
                 "print(time.perf_counter() - t)")
        times = [float(subprocess.run([py, "-c", probe], capture_output=True, text=True,
                                      check=True, env=ENV).stdout) for _ in range(args.repeat)]
        print(f"   importing judge.pytest_plugin after pytest: {min(times) * 1000:.2f} ms "
              "(best)")

        used = Path(tmp) / "used"
        scen = used / "scenarios" / "tau-airline"
        scen.mkdir(parents=True)
        shutil.copy(ROOT / "examples" / "scenarios" / "tau-airline" / "scenario.yaml", scen)
        subprocess.run([str(BIN / "judge"), "import", "tau-bench", str(TAU), "-o",
                        str(scen / "tau.jsonl")], check=True, capture_output=True, env=ENV)
        (used / "pytest.ini").write_text("[pytest]\njudge_scenarios = scenario.yaml\n")
        judge = [str(BIN / "judge")]
        r = best({
            "pytest": (base, used, (1,)),
            "check": ([*judge, "check", str(scen), str(scen / "tau.jsonl")], used, (1,)),
            "init": ([*judge, "init", str(scen / "tau.jsonl")], used, (0,)),
        }, args.repeat)
        print("2. 200 tau-bench airline traces (one .jsonl), reviewed tau-airline scenario:")
        print(f"   pytest -q (collect + run 200 items) {r['pytest'][0]:.3f} s wall, "
              f"{r['pytest'][1]:.3f} s CPU; judge check {r['check'][0]:.3f} s wall, "
              f"{r['check'][1]:.3f} s CPU; ratio {r['pytest'][0] / r['check'][0]:.2f}× wall")
        print(f"3. judge init on them: {r['init'][0]:.3f} s wall, {r['init'][1]:.3f} s CPU")


if __name__ == "__main__":
    main()
