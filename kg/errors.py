"""One error hierarchy for kg; mapped to HTTP status codes only in ``api/``.

KGError
├── ConfigError          bad or missing configuration
├── ServerError          the local Neo4j server could not start, stop or be found
├── StoreError           Neo4j refused or failed a write/read
│   ├── GraphModelError  the graph was written by an older or newer graph model
│   └── StoreUnavailable Neo4j does not answer
│       └── Overloaded   every query slot stayed busy past the queue timeout
│           └── ClientBusy   one client holds its share of the slots (per-client cap)
├── ExtractionError      the LLM could not produce a valid extraction
│   └── BudgetExceeded   the call/token ceiling for this run was reached
├── ResolutionError      entity resolution failed
├── NotFoundError        an entity, template or document does not exist
├── QueryRejected        parameters failed validation (names the field)
├── ScopeDenied          a namespace outside the caller's scope was asked for (names it)
└── QueryTimeout         a guarded query ran past its time bound
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # neo4j and pydantic load lazily: `kg --help` imports this module
    from collections.abc import Iterable

    from pydantic import ValidationError


class KGError(Exception):
    """Base of every error kg raises on purpose."""


class ConfigError(KGError):
    pass


class ServerError(KGError):
    pass


class StoreError(KGError):
    pass


class StoreUnavailable(StoreError):
    pass


class Overloaded(StoreUnavailable):
    """Shed load early: waiting longer would only turn into a timeout."""


class ExtractionError(KGError):
    pass


class BudgetExceeded(ExtractionError):
    pass


class ResolutionError(KGError):
    pass


class NotFoundError(KGError):
    pass


class QueryRejected(KGError):
    """Raised with a list of ``(field, reason)`` pairs so surfaces can name them."""

    def __init__(self, message: str, errors: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or []


class QueryTimeout(KGError):
    pass


class ScopeDenied(KGError):
    """A caller bound to some namespaces (a scoped API key) asked for another one, or for a
    read of the whole graph; the message names what was refused."""


class GraphModelError(StoreError):
    """The graph was written by another version of kg's graph model (see ``kg migrate``)."""


class ClientBusy(Overloaded):
    """One client already holds its share of the query slots; the others keep theirs."""


# -- translation at the library edge: one place for reads and writes ----------------------------


#: Exit codes of the CLI by error class, most specific first (cli/main.py uses this table).
EXIT_CODES: tuple[tuple[type[KGError], int], ...] = (
    (QueryRejected, 2),  # the caller's input (also ConfigError below)
    (ConfigError, 2),
    (StoreUnavailable, 3),  # Neo4j does not answer (or kg shed load)
    (NotFoundError, 4),
    (ScopeDenied, 6),
    (QueryTimeout, 5),
    (KGError, 1),
)


def exit_code(exc: KGError) -> int:
    return next(code for kind, code in EXIT_CODES if isinstance(exc, kind))


_TIMEOUT_CODES = (
    "Neo.ClientError.Transaction.TransactionTimedOut",  # also ...TimedOutClientConfiguration
)


def validation_errors(exc: ValidationError) -> list[dict[str, str]]:
    """Pydantic errors as ``{"field", "reason"}`` pairs (the shape QueryRejected carries).

    The field is the parameter name plus list positions (``relation_types.0``); the tags
    pydantic adds for union members (``as_of.date``) are dropped and their reasons joined.
    """
    reasons: dict[str, list[str]] = {}
    for err in exc.errors(include_url=False, include_input=False):
        loc = err["loc"]
        head = str(loc[0]) if loc else "params"
        field = head + "".join(f".{p}" for p in loc[1:] if isinstance(p, int))
        bucket = reasons.setdefault(field, [])
        if err["msg"] not in bucket:
            bucket.append(err["msg"])
    return [{"field": f, "reason": "; ".join(r)} for f, r in reasons.items()]


def rejected(exc: ValidationError, what: str) -> QueryRejected:
    errors = validation_errors(exc)
    fields = ", ".join(e["field"] for e in errors)
    return QueryRejected(f"invalid parameters for {what}: {fields}", errors=errors)


def only_sent(exc: QueryRejected, sent: Iterable[str], what: str) -> KGError:
    """``exc`` when it names only fields the caller sent, else an internal error.

    A use case builds most template parameters itself (phrases, texts, ids from a question);
    one of those out of bounds is kg's fault, so the caller must not be told to fix a field it
    never sent (``invalid --phrases.0``). Fields compare by name, list positions dropped."""
    fields = {str(e.get("field", "")).split(".")[0] for e in exc.errors}
    if fields <= set(sent):
        return exc
    names = ", ".join(sorted(fields - set(sent)))
    return KGError(f"{what} built parameters out of bounds ({names}): a bug in kg, please report")


def translate(exc: BaseException, what: str) -> KGError:
    """A driver or server failure as the kg error a surface maps to a status code."""
    from neo4j.exceptions import (
        AuthError,
        DriverError,
        Neo4jError,
        ServiceUnavailable,
        SessionExpired,
    )

    if isinstance(exc, TimeoutError):
        return QueryTimeout(f"{what} did not finish in time and was stopped")
    if isinstance(exc, ServiceUnavailable | SessionExpired | ConnectionError):
        return StoreUnavailable(f"Neo4j does not answer ({what}): {exc}")
    if isinstance(exc, AuthError):
        return StoreError(f"Neo4j refused the credentials ({what})")
    if isinstance(exc, Neo4jError):
        code = exc.code or ""
        if "MemoryPoolOutOfMemoryError" in code:
            return QueryRejected(
                f"{what} needs more memory than the server allows per query",
                errors=[{"field": "depth", "reason": "too much to expand: lower depth, limit "
                         "or fanout, or filter by relation_types"}],
            )  # fmt: skip
        if code.startswith(_TIMEOUT_CODES):
            return QueryTimeout(
                f"{what} ran past its time bound and the server stopped it ({code}); "
                "narrow it (lower depth, limit or a relation-type filter)"
            )
        return StoreError(f"{what} failed: {code}: {exc.message}")
    if isinstance(exc, DriverError | OSError):
        return StoreUnavailable(f"Neo4j does not answer ({what}): {exc}")
    return StoreError(f"{what} failed: {exc!r}")
