"""Namespaces as a search scope: which namespaces a read may see.

A namespace is a document source: the name given to ``kg ingest --namespace``, else the
ingested folder's absolute path. Chunks carry their namespace, and entities, relations, facts
and communities the namespaces of the chunks behind them (graph model 7), so every guarded
template can keep to a scope given as the ``$namespaces`` parameter (null: the whole graph).

Two context variables carry the scope through one request, so no read can forget it:

- the **ceiling** (:func:`bound_namespaces`): what a caller may see at most; the API sets it
  from the caller's key (``KG_API__API_KEYS``), and a request for a namespace outside it is
  refused with :class:`kg.errors.ScopeDenied` naming the namespace;
- the **scope** (:func:`scoped`): what this read asked for, within the ceiling; the library
  surface sets it from a request's ``namespaces``, and the guard passes it to every template.

Namespaces are data, never query text: they reach Cypher only as the ``$namespaces``
parameter.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Annotated

from pydantic import AfterValidator, Field, StringConstraints

from kg.errors import ScopeDenied
from kg.limits import MAX_KEY_CHARS
from kg.models import no_nul

__all__ = [
    "MAX_NAMESPACES",
    "Namespace",
    "NamespaceList",
    "bound_namespaces",
    "ceiling",
    "current",
    "scoped",
    "within",
]

#: Most namespaces one request may name.
MAX_NAMESPACES = 50

Namespace = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_KEY_CHARS), AfterValidator(no_nul)
]
NamespaceList = Annotated[
    list[Namespace],
    Field(
        min_length=1,
        max_length=MAX_NAMESPACES,
        description="Namespaces to search (a `kg ingest --namespace` name, or an ingested "
        "folder's absolute path); none: every namespace the caller may see.",
    ),
]

_ceiling: ContextVar[frozenset[str] | None] = ContextVar("kg_scope_ceiling", default=None)
_scope: ContextVar[tuple[str, ...] | None] = ContextVar("kg_scope", default=None)


def ceiling() -> frozenset[str] | None:
    """The namespaces this caller may see at most (None: every one)."""
    return _ceiling.get()


def current() -> list[str] | None:
    """The namespaces the running read keeps to (None: the whole graph)."""
    scope = _scope.get()
    return list(scope) if scope is not None else None


def within(requested: Sequence[str] | None) -> list[str] | None:
    """``requested`` checked against the ceiling and the scope already set: None asks for all
    the caller may see. Raises :class:`ScopeDenied` naming a namespace outside them."""
    limit = ceiling()
    outer = _scope.get()
    allowed = limit if outer is None else frozenset(outer) & (limit or frozenset(outer))
    if requested is None:
        if outer is not None:
            return list(outer)
        return sorted(limit) if limit is not None else None
    wanted = list(dict.fromkeys(requested))
    if allowed is not None:
        for name in wanted:
            if name not in allowed:
                raise ScopeDenied(f"namespace {name[:200]!r} is outside this caller's scope")
    return wanted


@contextmanager
def scoped(requested: Sequence[str] | None) -> Iterator[list[str] | None]:
    """Run the enclosed reads within ``requested`` (checked by :func:`within`)."""
    scope = within(requested)
    token = _scope.set(tuple(scope) if scope is not None else None)
    try:
        yield scope
    finally:
        _scope.reset(token)


@contextmanager
def bound_namespaces(namespaces: Iterable[str] | None) -> Iterator[None]:
    """Bind the caller to ``namespaces`` (None: unbound) for the enclosed work."""
    token = _ceiling.set(frozenset(namespaces) if namespaces is not None else None)
    try:
        yield
    finally:
        _ceiling.reset(token)
