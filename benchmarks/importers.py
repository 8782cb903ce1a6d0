"""Peak memory and time of `judge import otel` on OTLP/JSON exports of 1k, 10k and 50k spans,
and of `judge import inspect` on a zip bomb and on an archive member just under the cap.

Each file is a synthetic agent export in the GenAI conventions: traces of `--per-trace`
spans (an `invoke_agent` root, then chat spans whose `gen_ai.input.messages` repeat the
conversation so far — the last `--window` messages, as an agent with a sliding context
sends them — each followed by an `execute_tool` span), exported children first, as a batch
span processor does. Each run is the whole command as a user runs it (a fresh process:
start-up, import, reading, writing), measured with `os.wait4` (peak RSS of that process
alone), reading the file streaming (`--stream`) and whole (`--no-stream`), side by side.

    python benchmarks/importers.py                      # 1k, 10k, 50k spans
    python benchmarks/importers.py --spans 1000 --per-trace 1000   # one long trace
    python benchmarks/importers.py --compare /work/main/.venv/bin/python --repeat 3
        # the same files through another tree's judge too, interleaved, best of 3
    python benchmarks/importers.py --archives           # the zip bomb, a 127 MiB member

CPU is user + system time of that process (`os.wait4`): what the change costs, whatever the
machine's load; wall time moves with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

JUDGE = ["-m", "judge.cli.main"]
WORDS = ["order", "refund", "customer", "policy", "confirm", "shipment", "ticket", "account",
         "invoice", "status", "please", "thanks", "update", "change", "address", "payment",
         "card", "receipt", "agent", "check"]


def _text(i: int, n: int = 18) -> str:
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n)) + f" #{i}"


def _kv(k: str, v: Any) -> dict[str, Any]:
    return {"key": k, "value": {"stringValue": v}}


def make_export(path: Path, spans: int, per_trace: int, window: int) -> int:
    """Write the export; returns how many traces it holds."""
    t0 = 1_767_261_600_000_000_000
    out: list[dict[str, Any]] = []
    n_traces = 0
    made = 0
    with path.open("w") as fh:
        fh.write('{"resourceSpans":[{"resource":{"attributes":[' +
                 json.dumps(_kv("service.name", "bench-agent")) +
                 ']},"scopeSpans":[{"scope":{"name":"bench"},"spans":[')
        first = True
        while made < spans:
            n_traces += 1
            tid = f"{n_traces:032x}"
            root = f"{n_traces:08x}00000000"
            history: list[dict[str, Any]] = [
                {"role": "user", "parts": [{"type": "text", "content": _text(n_traces)}]}]
            steps = max(1, (min(per_trace, spans - made) - 1) // 2)
            t = t0 + n_traces * 10**12
            for s in range(steps):
                cid = f"call_{n_traces}_{s}"
                out_msg = {"role": "assistant", "parts": [
                    {"type": "text", "content": _text(s)},
                    {"type": "tool_call", "id": cid, "name": "lookup",
                     "arguments": {"id": f"item-{s}", "note": _text(s, 6)}}]}
                chat = {"traceId": tid, "spanId": f"{n_traces:08x}{2 * s + 1:08x}",
                        "parentSpanId": root, "name": "chat bench-model", "kind": 3,
                        "startTimeUnixNano": str(t), "endTimeUnixNano": str(t + 500),
                        "attributes": [
                            _kv("gen_ai.operation.name", "chat"),
                            _kv("gen_ai.request.model", "bench-model"),
                            _kv("gen_ai.input.messages", json.dumps(history[-window:])),
                            _kv("gen_ai.output.messages", json.dumps([out_msg]))]}
                result = {"ok": True, "id": f"item-{s}", "detail": _text(s + 1, 10)}
                tool = {"traceId": tid, "spanId": f"{n_traces:08x}{2 * s + 2:08x}",
                        "parentSpanId": root, "name": "execute_tool lookup", "kind": 1,
                        "startTimeUnixNano": str(t + 600), "endTimeUnixNano": str(t + 900),
                        "attributes": [
                            _kv("gen_ai.operation.name", "execute_tool"),
                            _kv("gen_ai.tool.name", "lookup"), _kv("gen_ai.tool.call.id", cid),
                            _kv("gen_ai.tool.call.arguments", json.dumps(
                                out_msg["parts"][1]["arguments"])),
                            _kv("gen_ai.tool.call.result", json.dumps(result))]}
                history += [out_msg, {"role": "tool", "parts": [
                    {"type": "tool_call_response", "id": cid, "response": result}]}]
                if s % 5 == 4:
                    history.append({"role": "user", "parts": [
                        {"type": "text", "content": _text(s + 2)}]})
                for sp in (chat, tool):
                    fh.write(("" if first else ",") + json.dumps(sp))
                    first = False
                t += 1000
                made += 2
            rootspan = {"traceId": tid, "spanId": root, "name": "invoke_agent bench",
                        "startTimeUnixNano": str(t0 + n_traces * 10**12),
                        "endTimeUnixNano": str(t + 1), "attributes": [
                            _kv("gen_ai.operation.name", "invoke_agent")]}
            fh.write("," + json.dumps(rootspan))
            made += 1
        fh.write("]}]}]}")
    del out
    return n_traces


def run(cmd: list[str]) -> tuple[float, float, int, int]:
    """(seconds, CPU seconds, peak RSS in MiB of that process alone, exit code)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    secs = time.perf_counter() - start
    if proc.stderr is not None:
        proc.stderr.read()
        proc.stderr.close()
    return (secs, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024,
            os.waitstatus_to_exitcode(status))


def make_bomb(path: Path, member_mib: int, content: bytes) -> None:
    """An `.eval` whose one sample member is `member_mib` MiB: of `content` repeated (a
    string's characters, or spaces for a bomb)."""
    import zipfile
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps({"eval": {"task": "bench"}}))
        with z.open("samples/1_epoch_1.json", "w", force_zip64=True) as fh:
            fh.write(b'{"id": 1, "epoch": 1, "messages": [{"role": "user", "content": "')
            block = content * (1 << 20)
            for _ in range(member_mib):
                fh.write(block)
            fh.write(b'"}]}')


def archives(pythons: dict[str, str]) -> None:
    print(f"{'archive':>24} {'file MB':>8} {'tree':>6} {'exit':>4} {'seconds':>8} "
          f"{'CPU s':>6} {'peak RSS MiB':>12}")
    with tempfile.TemporaryDirectory() as d:
        for name, mib, content in (("zip bomb, 2 GiB member", 2048, b" "),
                                   ("127 MiB string member", 127, b"a")):
            src = Path(d) / "a.eval"
            make_bomb(src, mib, content)
            for tree, py in pythons.items():
                secs, cpu, rss, rc = run([py, *JUDGE, "import", "inspect", str(src), "-o",
                                          str(Path(d) / "o.jsonl")])
                print(f"{name:>24} {src.stat().st_size / 1e6:8.1f} {tree:>6} {rc:>4} "
                      f"{secs:8.2f} {cpu:6.2f} {rss:12d}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spans", type=int, nargs="*", default=[1000, 10_000, 50_000])
    ap.add_argument("--per-trace", type=int, default=200)
    ap.add_argument("--window", type=int, default=12)
    ap.add_argument("--compare", metavar="PYTHON",
                    help="another tree's interpreter: each file through it too, interleaved")
    ap.add_argument("--repeat", type=int, default=1, help="best of N (default 1)")
    ap.add_argument("--archives", action="store_true",
                    help="measure the zip bomb and a member just under the cap instead")
    args = ap.parse_args()
    pythons = {"this": sys.executable}
    if args.compare:
        pythons["other"] = args.compare
    print(f"load average {os.getloadavg()[0]:.2f}; python {sys.version.split()[0]}")
    if args.archives:
        archives(pythons)
        return
    print(f"{'spans':>7} {'traces':>6} {'MB':>6} {'mode':>11} {'tree':>6} {'seconds':>8} "
          f"{'CPU s':>6} {'peak RSS MiB':>12}")
    for tree, py in pythons.items():
        base = run([py, *JUDGE, "--help"])
        print(f"{'':>7} {'':>6} {'':>6} {'--help':>11} {tree:>6} {base[0]:8.2f} "
              f"{base[1]:6.2f} {base[2]:12d}")
    with tempfile.TemporaryDirectory() as d:
        for n in args.spans:
            src = Path(d) / f"export-{n}.json"
            traces = make_export(src, n, args.per_trace, args.window)
            mb = src.stat().st_size / 1e6
            for mode in ("--stream", "--no-stream"):
                best: dict[str, tuple[float, float, int]] = {}
                for _ in range(args.repeat):
                    for tree, py in pythons.items():
                        out = Path(d) / "out.jsonl"
                        secs, cpu, rss, rc = run([py, *JUDGE, "import", "otel", str(src),
                                                  "-o", str(out), mode])
                        if rc != 0:
                            raise SystemExit(f"judge import failed ({rc}) on {src}")
                        old = best.get(tree)
                        best[tree] = (secs, cpu, rss) if old is None else (
                            min(old[0], secs), min(old[1], cpu), max(old[2], rss))
                for tree, (secs, cpu, rss) in best.items():
                    print(f"{n:>7} {traces:>6} {mb:6.1f} {mode:>11} {tree:>6} {secs:8.2f} "
                          f"{cpu:6.2f} {rss:12d}")
                if "other" in best:
                    print(f"{'':>33} CPU this/other {best['this'][1] / best['other'][1]:.2f}")
            src.unlink()


if __name__ == "__main__":
    main()
