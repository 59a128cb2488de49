"""Local, global and routed search over the graph.

service (orchestrates) -> signals (one retriever each: text, vector, graph, communities) ->
fusion; startup apart; models are the request and response shapes. Light on purpose: nothing
heavy is imported until a submodule is (kg.search.models is read by kg.cypher).
"""
