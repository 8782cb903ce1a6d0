"""pytest fixtures for the fake provider server. Enable in a conftest.py with
`pytest_plugins = ["judge.testing.fixtures"]`.

- `fake_server`: a fresh FakeProviderServer (thread mode, no latency) per test.
- `fake_openai_env`: the same server, with OPENAI_BASE_URL pointing at it and no API keys set,
  so `openai:<model>` specs resolve to it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from judge.testing.fakeserver import FakeProviderServer


@pytest.fixture
def fake_server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server:
        yield server


@pytest.fixture
def fake_openai_env(fake_server: FakeProviderServer,
                    monkeypatch: pytest.MonkeyPatch) -> FakeProviderServer:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.openai_base_url)
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "JUDGE_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    return fake_server
