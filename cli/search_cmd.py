"""``kg search "question"``: guarded search from the terminal, in any mode.

``--json`` prints one shape whatever the mode: the body of ``POST /search`` for the same
request (``RoutedResponse``: ``requested``, the ``mode`` that ran, ``reason``, and ``local``,
the body ``POST /search/local`` returns, or ``global_search``). A script reads
``.local.entities`` after ``--mode graph`` as after the default ``auto``.
"""

from __future__ import annotations

from typing import Annotated

from cyclopts import Parameter

from kg import Mode


def search(
    query: str,
    /,
    *,
    mode: Mode = "auto",
    depth: int = 2,
    limit: int = 20,
    as_of: str | None = None,
    relation_type: Annotated[
        list[str] | None, Parameter(name="--relation-type", consume_multiple=False)
    ] = None,
    namespace: Annotated[
        list[str] | None, Parameter(name="--namespace", consume_multiple=False)
    ] = None,
    json_output: Annotated[bool, Parameter(name="--json", negative=())] = False,
) -> int:
    """Answer a question from the graph: entities, relations and the chunks behind them.

    Parameters
    ----------
    query
        The question, in plain words.
    mode
        auto (default): the router picks text, hybrid, graph or global and says why; global:
        community reports ranked for the question (docs/communities.md).
        text: chunks by words (BM25); vector: chunks by meaning; graph: entities, relations
        and the chunks linked to them; hybrid: the three fused (docs/search.md).
    depth
        Hops to expand from the matched entities, 1..3.
    limit
        Most entities, relations and chunks to return (each).
    as_of
        Count only relations valid at this date or datetime (ISO 8601), default now; and
        leave out the chunks of documents dated after it (a document's own date; undated
        documents always stay).
    relation_type
        Only expand through this relationship type; repeat for several.
    namespace
        Search only this namespace (a `kg ingest --namespace` name, or an ingested folder's
        absolute path; `kg namespaces` lists them); repeat for several.
    json_output
        Print the response as JSON: POST /search's body for every mode (mode, reason, and
        `local`, POST /search/local's body, or `global_search`).
    """
    from cli.routed_cmd import routed  # the search itself: `kg search --help` needs none of it

    return routed(query, mode, depth, limit, as_of, relation_type, json_output, namespace)
