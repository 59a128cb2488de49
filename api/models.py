"""API-only response models; search request/response shapes live in ``kg.search.models``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class FieldError(BaseModel):
    """One rejected input: which field, and why."""

    field: str = Field(description="Dotted path of the offending input, e.g. `body.depth`.")
    reason: str


class ErrorBody(BaseModel):
    """Every error the API returns has this shape; never a stack trace."""

    status_code: int
    error: str = Field(description="Stable machine-readable code, e.g. `invalid_parameters`.")
    detail: str = Field(description="A human-readable explanation.")
    errors: list[FieldError] = Field(default_factory=list)


class HealthStatus(BaseModel):
    """Whether the API can reach Neo4j."""

    status: Literal["ok", "unavailable"]
    neo4j: bool
