// Facts (graph model 5): each Entity-to-Entity relation again as an embedded text node
// (kg/graph/facts.py). The id is the relation's key. The vector index uses the chunk embedder
// ($chunk_dimension, KG_CHUNKS__EMBEDDING_DIM), cosine, not quantized, like chunk_embedding.
CREATE CONSTRAINT fact_id IF NOT EXISTS FOR (f:Fact) REQUIRE f.id IS UNIQUE;
CREATE VECTOR INDEX fact_embedding IF NOT EXISTS FOR (f:Fact) ON (f.embedding)
  OPTIONS {indexConfig: {`vector.dimensions`: $chunk_dimension, `vector.similarity_function`: 'cosine',
                         `vector.quantization.enabled`: false}};
