"""Which endpoint, model and bounds one LLM use runs with: settings resolved, nothing opened.

Every use has an ordered list of settings sections; a field takes the first value that is set.
The shared ``llm`` section is last and sets everything, so a use's own section holds only what
the user wants different for it. ``translate`` reads ``answer`` before ``llm``: translations
always ran on the answer endpoint and against the request's answer budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import BaseModel, SecretStr

from kg.redact import public_url
from kg.settings import ExtractSettings, LLMSettings, LLMUse, Settings

__all__ = ["USES", "Endpoint", "extract_endpoint", "resolve_endpoint", "setting_names"]

USES: tuple[LLMUse, ...] = get_args(LLMUse)


@dataclass(frozen=True)
class Endpoint:
    """One use's resolved endpoint and per-call (or per-run) bounds."""

    use: str
    base_url: str
    api_key: SecretStr
    model: str
    mode: str
    temperature: float
    timeout_s: float
    max_retries: int
    concurrency: int
    max_calls: int | None
    max_tokens: int | None
    max_output_tokens: int | None = 4096  # the llm section's defaults
    max_response_bytes: int = 2_000_000

    @classmethod
    def from_settings(cls, settings: Settings, use: LLMUse = "answer") -> Endpoint:
        """The endpoint of ``use`` (``answer`` by default: answers and questions to templates)."""
        return resolve_endpoint(settings, use)

    @property
    def where(self) -> str:
        """What was called, safe to print: the URL without userinfo or query, and the model."""
        return f"{public_url(self.base_url)} (model {self.model})"

    def failed(
        self,
        what: str,
        *,
        status: int | None = None,
        connection: bool = False,
        timed_out: bool = False,
    ) -> str:
        """One line for a failed call: the endpoint tried, what happened, the settings to
        change (never the key): ``the LLM endpoint http://... (model m) failed: timeout; ...``.
        """
        url, model, key = (setting_names(self.use, f) for f in ("base_url", "model", "api_key"))
        if timed_out:
            timeout = setting_names(self.use, "timeout_s")
            fix = f"it gave no answer within {self.timeout_s:g}s ({timeout}); check its load"
        elif status in (401, 403):
            fix = f"check the key ({key})"
        elif status == 404:
            fix = f"check the model ({model}) and the URL ({url})"
        elif connection or status is None:
            fix = f"start that server, or point {url} at one that answers (and {model})"
        else:
            fix = f"the settings are {url}, {model} and {key}"
        if self.use == "extract":
            fix += "; or build the document graph without an LLM: kg ingest --graph metadata"
        return f"the LLM endpoint {self.where} failed: {what}; {fix}"


#: Each use's own settings section (environment prefix), searched before ``KG_LLM__``.
_OWN_PREFIXES: dict[str, tuple[str, ...]] = {
    "extract": ("KG_EXTRACT__",),
    "answer": ("KG_ANSWER__",),
    "reports": ("KG_REPORTS__",),
    "router": ("KG_ROUTER__",),
    "translate": ("KG_TRANSLATE__", "KG_ANSWER__"),
    "adjudicate": (),
}


def setting_names(use: str, field: str) -> str:
    """The variables that set ``field`` for ``use``, the one that wins first:
    ``KG_ANSWER__BASE_URL or KG_LLM__BASE_URL``."""
    prefixes = (*_OWN_PREFIXES.get(use, ()), "KG_LLM__")
    return " or ".join(f"{prefix}{field.upper()}" for prefix in prefixes)


def _sections(settings: Settings, use: LLMUse) -> list[BaseModel]:
    own: dict[str, list[BaseModel]] = {
        "extract": [settings.extract],
        "answer": [settings.answer],
        "reports": [settings.reports],
        "router": [settings.router],
        "translate": [settings.translate, settings.answer],
        "adjudicate": [],
    }
    return [*own[use], settings.llm]


def _pick(sections: Sequence[BaseModel], name: str) -> Any:
    for section in sections:
        value = getattr(section, name, None)
        if value is not None:
            return value
    return None


def _build(use: str, sections: Sequence[BaseModel]) -> Endpoint:
    return Endpoint(
        use=use,
        base_url=_pick(sections, "base_url"),
        api_key=_pick(sections, "api_key"),
        model=_pick(sections, "model"),
        mode=_pick(sections, "mode"),
        temperature=_pick(sections, "temperature"),
        timeout_s=_pick(sections, "timeout_s"),
        max_retries=_pick(sections, "max_retries"),
        concurrency=_pick(sections, "concurrency"),
        max_calls=_pick(sections, "max_calls"),
        max_tokens=_pick(sections, "max_tokens"),
        # only the shared section (always last) sets these: what any endpoint may send back;
        # its None means "send no max_tokens", so it is read, not picked
        max_output_tokens=getattr(sections[-1], "max_output_tokens", None),
        max_response_bytes=_pick(sections, "max_response_bytes"),
    )


def resolve_endpoint(settings: Settings, use: LLMUse) -> Endpoint:
    """``use``'s endpoint: each field from its own section when set, else from ``llm``."""
    if use not in USES:
        raise ValueError(f"unknown LLM use {use!r}; one of {', '.join(USES)}")
    return _build(use, _sections(settings, use))


def extract_endpoint(extract: ExtractSettings, shared: LLMSettings | None = None) -> Endpoint:
    """Extraction's endpoint from its section alone (the shared section's defaults beneath)."""
    return _build("extract", [extract, shared or LLMSettings()])
