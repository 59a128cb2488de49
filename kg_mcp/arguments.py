"""A tool's refused arguments as one plain sentence: the field and what it accepts.

The SDK validates tool arguments against each tool's signature and, left alone, answers with
pydantic's own report (``1 validation error for answerArguments ... errors.pydantic.dev``).
An agent corrects a call better from ``limit must be an integer from 1 to 50``, so the
sentence is built from the tool's published input schema: the bounds it reads there are the
bounds the agent was shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

_TYPES = {
    "integer": "an integer",
    "number": "a number",
    "string": "text",
    "boolean": "true or false",
    "object": "an object",
    "array": "a list",
}


def _choices(prop: Mapping[str, Any]) -> list[Any] | None:
    """Every allowed value, when the property is a list of constants (``enum``, ``const``,
    or an ``anyOf`` of them), else None."""
    if "enum" in prop:
        return list(prop["enum"])
    if "const" in prop:
        return [prop["const"]]
    options = [o for o in prop.get("anyOf", ()) if o.get("type") != "null"]
    if not options:
        return None
    found: list[Any] = []
    for option in options:
        values = _choices(option)
        if values is None:
            return None
        found += values
    return found


def _member(prop: Mapping[str, Any]) -> Mapping[str, Any]:
    """The first non-null member of an optional (``anyOf: [X, null]``) property."""
    for option in prop.get("anyOf", ()):
        if option.get("type") != "null":
            return {**option, **{k: v for k, v in prop.items() if k != "anyOf"}}
    return prop


def accepts(prop: Mapping[str, Any]) -> str:
    """What a schema property accepts, in words: ``an integer from 1 to 50``."""
    choices = _choices(prop)
    if choices is not None:
        return "one of " + ", ".join(str(v) for v in choices)
    prop = _member(prop)
    words = _TYPES.get(str(prop.get("type", "")), "a value")
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is not None and high is not None:
        words += f" from {low} to {high}"
    elif low is not None:
        words += f" of at least {low}"
    elif high is not None:
        words += f" of at most {high}"
    short, long = prop.get("minLength"), prop.get("maxLength")
    if short is not None and long is not None:
        words += f" of {short} to {long} characters"
    elif long is not None:
        words += f" of at most {long} characters"
    elif short:
        words += f" of at least {short} characters"
    return words


def plain_sentence(tool: str, exc: ValidationError, schema: Mapping[str, Any]) -> str:
    """``invalid arguments for answer: limit must be an integer from 1 to 50.``

    Each refused field once, in the order pydantic met them; the caller's values are not
    repeated (they are the caller's data).
    """
    properties: Mapping[str, Any] = schema.get("properties") or {}
    parts: list[str] = []
    seen: set[str] = set()
    for err in exc.errors(include_url=False, include_input=False):
        loc = err.get("loc") or ("arguments",)
        field = str(loc[0])
        if field in seen:
            continue
        seen.add(field)
        prop = properties.get(field)
        if prop is None:
            parts.append(f"{field} is not an argument of this tool")
        elif err.get("type") == "missing":
            parts.append(f"{field} is required ({accepts(prop)})")
        else:
            parts.append(f"{field} must be {accepts(prop)}")
    return f"invalid arguments for {tool}: {'; '.join(parts) or 'see its input schema'}."
