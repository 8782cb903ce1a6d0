"""One small error hierarchy. Messages for people are made only at the CLI edge."""

from __future__ import annotations


class JudgeError(Exception):
    """Base class for every error judge raises on purpose."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InputError(JudgeError):
    """Bad input: names the file, the line (JSONL) or path (YAML/JSON), and the field."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        path: str | None = None,
        field: str | None = None,
    ) -> None:
        self.file = file
        self.line = line
        self.path = path
        self.field = field
        parts = []
        if file:
            parts.append(file + (f":{line}" if line is not None else ""))
        if path:
            parts.append(path)
        if field:
            parts.append(f"field '{field}'")
        super().__init__(": ".join([*parts, message]))


class LedgerError(InputError):
    """A scenario's ledger breaks a transition rule; names the delta."""


class ConfigError(JudgeError):
    """Unknown rubric, model spec, prompt problem, bad settings."""


class StoreError(JudgeError):
    """The database cannot be opened or is in a bad state."""


class ProviderError(JudgeError):
    """A provider failed in a way that is not retryable any more."""

    exit_code = 1
