// Text retrieval over chunks: Lucene BM25 over each chunk's text and its document's title.
// The analyzer was measured on the retrieval benchmark (docs/search.md, "Text").
CREATE FULLTEXT INDEX chunk_text IF NOT EXISTS FOR (c:Chunk) ON EACH [c.text, c.title]
  OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}};
