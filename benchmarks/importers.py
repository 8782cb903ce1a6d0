"""Peak memory and time of `judge import otel` on OTLP/JSON exports of 1k, 10k and 50k spans.

Each file is a synthetic agent export in the GenAI conventions: traces of `--per-trace`
spans (an `invoke_agent` root, then chat spans whose `gen_ai.input.messages` repeat the
conversation so far — the last `--window` messages, as an agent with a sliding context
sends them — each followed by an `execute_tool` span), exported children first, as a batch
span processor does. Each run is the whole command as a user runs it (a fresh process:
start-up, import, reading, writing), measured with `os.wait4` (peak RSS of that process
alone), reading the file streaming (`--stream`) and whole (`--no-stream`), side by side.

    python benchmarks/importers.py                      # 1k, 10k, 50k spans
    python benchmarks/importers.py --spans 1000 --per-trace 1000   # one long trace
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

JUDGE = [sys.executable, "-m", "judge.cli.main"]
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


def run(cmd: list[str]) -> tuple[float, int, int]:
    """(seconds, peak RSS in MiB of that process alone, exit code)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    secs = time.perf_counter() - start
    if proc.stderr is not None:
        proc.stderr.read()
        proc.stderr.close()
    return secs, usage.ru_maxrss // 1024, os.waitstatus_to_exitcode(status)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spans", type=int, nargs="*", default=[1000, 10_000, 50_000])
    ap.add_argument("--per-trace", type=int, default=200)
    ap.add_argument("--window", type=int, default=12)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; python {sys.version.split()[0]}")
    print(f"{'spans':>7} {'traces':>6} {'MB':>6} {'mode':>9} {'seconds':>8} {'peak RSS MiB':>12}")
    base = run([*JUDGE, "--help"])
    print(f"{'':>7} {'':>6} {'':>6} {'--help':>9} {base[0]:8.2f} {base[1]:12d}")
    with tempfile.TemporaryDirectory() as d:
        for n in args.spans:
            src = Path(d) / f"export-{n}.json"
            traces = make_export(src, n, args.per_trace, args.window)
            mb = src.stat().st_size / 1e6
            for mode in ("--stream", "--no-stream"):
                out = Path(d) / "out.jsonl"
                secs, rss, rc = run([*JUDGE, "import", "otel", str(src), "-o", str(out), mode])
                if rc != 0:
                    raise SystemExit(f"judge import failed ({rc}) on {src}")
                print(f"{n:>7} {traces:>6} {mb:6.1f} {mode:>9} {secs:8.2f} {rss:12d}")
            src.unlink()


if __name__ == "__main__":
    main()
