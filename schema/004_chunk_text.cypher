// Text retrieval over chunks: Lucene BM25 over each chunk's text and its document's title, one
// index per language (kg/languages.py labels each chunk ChunkEn or ChunkRu), each with the
// analyzer that stems its language (docs/search.md, "Text" and "Languages").
CREATE FULLTEXT INDEX chunk_text_en IF NOT EXISTS FOR (c:ChunkEn) ON EACH [c.text, c.title]
  OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}};
CREATE FULLTEXT INDEX chunk_text_ru IF NOT EXISTS FOR (c:ChunkRu) ON EACH [c.text, c.title]
  OPTIONS {indexConfig: {`fulltext.analyzer`: 'russian'}};
