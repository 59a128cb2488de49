"""The search and answer modes, defined once in a module that imports nothing.

The CLI's ``--mode`` options read these for their help, so ``kg search --help`` needs them
without the request models (pydantic) or the search service (the driver) behind them.
"""

from __future__ import annotations

from typing import Literal, get_args

# The local search modes (the request model, the CLI and the docs use this): text: Lucene BM25
# over chunk text and title; vector: the chunk embedding index; graph: question -> entities ->
# propagation over entities and chunks; hybrid: the three fused.
SearchMode = Literal["text", "vector", "graph", "hybrid"]
SEARCH_MODES: tuple[SearchMode, ...] = get_args(SearchMode)

# Every mode a question can take: the local modes above, `global` (map-reduce over community
# reports, kg/search/signals/communities.py) and `auto` (kg/search/router.py picks one from
# the question and says why). The CLI's --mode and the router's answer use this; it extends
# the one list above.
Mode = Literal[SearchMode, "global", "auto"]
MODES: tuple[Mode, ...] = get_args(Mode)

#: ``auto``: the router decides, as in ``kg search`` (kg.search.routed.decide); when it picks
#: global search, answers run hybrid: they cite passages and relations, not reports.
AnswerMode = Literal["auto"] | SearchMode
