"""Request and response models of global search (map-reduce over community reports)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, field_validator

from kg.basemodel import Model
from kg.instants import AsOf
from kg.models import no_nul
from kg.scope import NamespaceList
from kg.search.models import (
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    MAX_RELATION_FILTERS,
    Depth,
    Mode,
    RelationType,
    SearchResponse,
)

MAX_GLOBAL_LIMIT = 50
MAX_LEVEL = 20


def _no_bool(value: object) -> object:
    # A JSON boolean is not a level, even where lax parsing would read false as 0.
    if isinstance(value, bool):
        raise ValueError("must be an integer")
    return value


def _check_query(value: str) -> str:
    no_nul(value)
    if not value.strip():
        raise ValueError("must not be blank")
    return value


class GlobalSearchRequest(Model):
    """POST /search/global body."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    level: int | None = Field(
        None,
        ge=0,
        le=MAX_LEVEL,
        description="Community level; default KG_COMMUNITIES__GLOBAL_LEVEL.",
    )
    limit: int = Field(10, ge=1, le=MAX_GLOBAL_LIMIT, description="Reports returned (and mapped).")
    namespaces: NamespaceList | None = None

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return _check_query(value)

    @field_validator("level", mode="before")
    @classmethod
    def _level_is_int(cls, value: object) -> object:
        return _no_bool(value)


class ReportFinding(Model):
    summary: str
    explanation: str = ""
    citations: list[str] = Field(default_factory=list)


class CommunityHit(Model):
    """One community report, scored for the question."""

    id: str
    level: int
    size: int
    title: str
    summary: str
    rank: float = Field(description="The report's rating, 0..10.")
    score: float = Field(description="Rank and word overlap with the question, 0..1.")
    report_kind: str = Field(description="`extractive` or `llm`.")
    findings: list[ReportFinding] = Field(default_factory=list)


class GlobalPoint(Model):
    """A rated point of the map step, citing community or fact ids."""

    description: str
    score: float = Field(ge=0, le=100)
    citations: list[str] = Field(default_factory=list)


class GlobalSearchResponse(Model):
    """Ranked reports (always); with an LLM, the map's points and the reduced answer."""

    mode: Literal["global"] = "global"
    query: str
    level: int
    reports: list[CommunityHit]
    answer: str | None = Field(None, description="The reduce step's answer (LLM only).")
    citations: list[str] = Field(
        default_factory=list, description="What the answer cites (community, relation, chunk ids)."
    )
    points: list[GlobalPoint] = Field(default_factory=list)
    llm_calls: int = 0
    llm_tokens: int = 0
    stopped_by_budget: bool = False
    notes: list[str] = Field(default_factory=list)
    took_ms: float


class RoutedRequest(Model):
    """POST /search: every mode, ``auto`` (the router) by default."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    mode: Mode = "auto"
    depth: Depth = 2
    limit: int = Field(20, ge=1, le=MAX_LIMIT)
    as_of: AsOf | None = None
    relation_types: list[RelationType] | None = Field(None, max_length=MAX_RELATION_FILTERS)
    level: int | None = Field(None, ge=0, le=MAX_LEVEL, description="Global search's level.")
    namespaces: NamespaceList | None = None

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return _check_query(value)

    @field_validator("level", mode="before")
    @classmethod
    def _level_is_int(cls, value: object) -> object:
        return _no_bool(value)


class RoutedResponse(Model):
    """One shape for every mode: which mode ran and why, and the local or global result."""

    requested: Mode = Field(description="The mode asked for.")
    mode: Mode = Field(
        description="The mode that ran (auto resolves to text, hybrid, graph or global)."
    )
    reason: str = Field(description="Why this mode: the router's rule, or `requested`.")
    linked: list[str] = Field(
        default_factory=list, description="Entities the question names (auto)."
    )
    local: SearchResponse | None = Field(None, description="Set when a local mode ran.")
    global_search: GlobalSearchResponse | None = Field(
        None, description="Set when global search ran."
    )
