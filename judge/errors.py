"""One small error hierarchy. Messages for people are made only at the CLI edge."""

from __future__ import annotations


class JudgeError(Exception):
    """Base class for every error judge raises on purpose."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def lines(self) -> list[str]:
        """What the CLI prints, one line each (one problem, one line)."""
        return [self.message]


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
        if file:  # a name from undecodable bytes holds surrogates: shown as escapes
            file = file.encode("utf-8", "backslashreplace").decode("utf-8")
            parts.append(file + (f":{line}" if line is not None else ""))
        if path:
            parts.append(path)
        if field:
            parts.append(f"field '{field}'")
        super().__init__(": ".join([*parts, message]))


class InputErrors(InputError):
    """Several independent problems with one input (e.g. every broken cross-reference of a
    scenario); the CLI prints one line for each."""

    def __init__(self, errors: list[InputError]) -> None:
        if not errors:
            raise ValueError("InputErrors needs at least one error")
        self.errors = list(errors)
        first = errors[0]
        super().__init__(first.message if len(errors) == 1
                         else f"{first.message} (and {len(errors) - 1} more problems)")

    def lines(self) -> list[str]:
        return [e.message for e in self.errors]


class LedgerError(InputError):
    """A scenario's ledger breaks a transition rule; names the delta."""


class ConfigError(JudgeError):
    """Unknown rubric, model spec, prompt problem, bad settings."""


class StoreError(JudgeError):
    """The database cannot be opened or is in a bad state."""


class ProviderError(JudgeError):
    """A provider failed in a way that is not retryable any more. Exit 2, like every failure
    of judge's own: exit 1 means a veto or a failed gate and nothing else."""
