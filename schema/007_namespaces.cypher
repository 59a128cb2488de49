// Namespaces (graph model 7): every chunk carries its document's source (Chunk.namespace);
// entities, relations and facts the namespaces of the chunks behind them (lists). Scoped search
// filters by them; `kg forget` and `kg namespaces` find a namespace's chunks by this index.
CREATE INDEX chunk_namespace IF NOT EXISTS FOR (c:Chunk) ON (c.namespace);
// A scoped caller's predicate list asks, per predicate, for one fact in its namespaces.
CREATE INDEX fact_predicate IF NOT EXISTS FOR (f:Fact) ON (f.predicate);
