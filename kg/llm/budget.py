"""The per-run ceiling on LLM calls and tokens, shared by extraction, community reports and
global search; it lives by the LLM seam so a search imports no extraction code."""

from __future__ import annotations


class RunBudget:
    """The per-run ceiling. Single event loop, so plain counters are safe between awaits."""

    def __init__(self, max_calls: int | None, max_tokens: int | None) -> None:
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self.calls = 0
        self.tokens = 0
        self.reason: str | None = None

    def reserve_call(self) -> bool:
        """Claim one LLM call; False (and ``reason`` set) once a ceiling is reached."""
        if self.reason is not None:
            return False
        if self.max_calls is not None and self.calls >= self.max_calls:
            self.reason = f"max_calls={self.max_calls} reached"
            return False
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            self.reason = f"max_tokens={self.max_tokens} reached ({self.tokens} used)"
            return False
        self.calls += 1
        return True

    def add_tokens(self, tokens: int) -> None:
        self.tokens += tokens
