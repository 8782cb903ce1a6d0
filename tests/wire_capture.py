"""Capture the exact request bodies judge's OpenAI and Anthropic providers send for one real
item, as bytes on the wire (tests/data/wire/*.json; tests/test_wire_bodies.py compares them).

    python tests/wire_capture.py OUT_DIR

The committed files were captured from the code before the item's own schema existed (main
at b87f930, exported with `git archive` and put first on PYTHONPATH), so the test shows what
changed for OpenAI and Anthropic: the two narrowed properties of the schema and nothing else.
The item: refund-once/fail-second-refund#10 under scope_fidelity (examples/scenarios), the
settings' default parameters; the fake server answers, and the bytes it received are kept.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "examples" / "scenarios" / "refund-once"
ITEM = "refund-once/fail-second-refund#10:scope_fidelity"


def the_request() -> Any:
    from judge.items import extract_items
    from judge.ledger.loader import load_scenario
    from judge.prompts import load_prompt, render
    from judge.request import ModelParams
    from judge.trace import load_traces

    loaded = load_scenario(SCENARIO)
    trace = load_traces([SCENARIO / "fail-second-refund.json"])[0]
    (item,) = [i for i in extract_items(loaded, trace) if i.item_id == ITEM]
    return render(load_prompt(item.rubric), item, ModelParams())


def capture() -> dict[str, bytes]:
    from judge.providers.anthropic_provider import AnthropicProvider
    from judge.providers.openai_provider import OpenAIProvider
    from judge.testing.fakeapi import FakeAPI
    from judge.testing.fakeserver import FakeProviderServer

    seen: dict[str, bytes] = {}
    original = FakeAPI.generate

    async def keep(self: Any, wire: Any, method: str, path: str, headers: Any,
                   raw: bytes) -> Any:
        seen[wire.api] = raw
        return await original(self, wire, method, path, headers, raw)

    FakeAPI.generate = keep  # type: ignore[method-assign]
    try:
        with FakeProviderServer() as srv:
            request = the_request()

            async def both() -> None:
                openai = OpenAIProvider("gpt-4.1-mini", api_key="sk-test",
                                        base_url=srv.openai_base_url)
                anthropic = AnthropicProvider("claude-haiku-4-5", api_key="k",
                                              base_url=srv.anthropic_base_url)
                await openai.generate(request)
                await anthropic.generate(request)
                await openai.aclose()
                await anthropic.aclose()

            asyncio.run(both())
    finally:
        FakeAPI.generate = original  # type: ignore[method-assign]
    return seen


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for api, raw in capture().items():
        (out / f"{api}_body.json").write_bytes(raw)
        print(out / f"{api}_body.json", len(raw), "bytes")
