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
└── QueryTimeout         a guarded query ran past its time bound
"""

from __future__ import annotations


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


class GraphModelError(StoreError):
    """The graph was written by another version of kg's graph model (see ``kg migrate``)."""


class ClientBusy(Overloaded):
    """One client already holds its share of the query slots; the others keep theirs."""
