"""The rules that close superseded edges of single-valued relationship types."""

from __future__ import annotations

from datetime import UTC, date, datetime

from kg.graph.writer import OpenEdge, superseded

T0 = datetime(2025, 1, 1, tzinfo=UTC)
T1 = datetime(2025, 6, 1, tzinfo=UTC)


def edge(key: str, target: str, since: date | None, seen: datetime = T0) -> OpenEdge:
    return OpenEdge(rel=f"r-{key}", target=target, key=key, valid_from=since, first_seen=seen)


def closed(edges: list[OpenEdge]) -> dict[str, date | datetime]:
    return {old.key: when for old, when, _ in superseded(edges)}


def test_newer_dated_fact_closes_the_older_at_its_start() -> None:
    edges = [edge("identity", "team-identity", date(2020, 1, 1)),
             edge("security", "team-security", date(2024, 3, 1))]  # fmt: skip
    assert closed(edges) == {"identity": date(2024, 3, 1)}


def test_chain_closes_each_at_the_next_start() -> None:
    edges = [edge("a", "A", date(2020, 1, 1)), edge("c", "C", date(2024, 1, 1)),
             edge("b", "B", date(2022, 1, 1))]  # fmt: skip
    assert closed(edges) == {"a": date(2022, 1, 1), "b": date(2024, 1, 1)}


def test_same_target_never_closes_itself() -> None:
    edges = [edge("x1", "X", date(2020, 1, 1)), edge("x2", "X", date(2021, 1, 1))]
    assert closed(edges) == {}


def test_undated_fact_is_closed_by_a_dated_one_learned_with_or_after_it() -> None:
    edges = [edge("old", "team-identity", None, seen=T0),
             edge("new", "team-security", date(2024, 3, 1), seen=T0)]  # fmt: skip
    assert closed(edges) == {"old": date(2024, 3, 1)}


def test_undated_fact_learned_later_is_not_closed_by_an_older_dated_one() -> None:
    edges = [edge("dated", "team-identity", date(2020, 1, 1), seen=T0),
             edge("undated", "team-security", None, seen=T1)]  # fmt: skip
    assert closed(edges) == {}


def test_undated_facts_never_close_anything() -> None:
    edges = [edge("a", "A", None, seen=T0), edge("b", "B", None, seen=T1)]
    assert closed(edges) == {}


def test_a_fact_closes_only_edges_of_its_own_namespaces() -> None:
    """One corpus never ends another's facts (graph model 7): a newer owner stated in beta
    leaves alpha's owner open, and closes the edge alpha and beta both state."""

    def scoped(key: str, target: str, since: date | None, *namespaces: str) -> OpenEdge:
        return OpenEdge(f"r-{key}", target, key, since, T0, frozenset(namespaces))

    edges = [
        scoped("alpha", "A", date(2020, 1, 1), "alpha"),
        scoped("shared", "S", date(2021, 1, 1), "alpha", "beta"),
        scoped("beta", "B", date(2024, 1, 1), "beta"),
    ]
    assert closed(edges) == {"shared": date(2024, 1, 1), "alpha": date(2021, 1, 1)}
