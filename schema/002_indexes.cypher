// Lookup indexes used by ingest and search.
CREATE INDEX document_path IF NOT EXISTS FOR (d:Document) ON (d.path);
CREATE INDEX chunk_document IF NOT EXISTS FOR (c:Chunk) ON (c.document_id);
CREATE INDEX entity_type IF NOT EXISTS FOR (e:Entity) ON (e.type);
CREATE INDEX entity_name IF NOT EXISTS FOR (e:Entity) ON (e.name);
// Full-text search over names and every alias (aliases is a list of strings).
CREATE FULLTEXT INDEX entity_names IF NOT EXISTS FOR (e:Entity) ON EACH [e.name, e.aliases];
CREATE INDEX document_source IF NOT EXISTS FOR (d:Document) ON (d.source);
// The long tail of predicates is stored as RELATED {predicate}: filter and Browser lookups by it.
CREATE INDEX related_predicate IF NOT EXISTS FOR ()-[r:RELATED]-() ON (r.predicate);
