// Uniqueness on ids: MERGE relies on these for speed and for no duplicates.
CREATE CONSTRAINT document_id IF NOT EXISTS FOR (d:Document) REQUIRE d.id IS UNIQUE;
CREATE CONSTRAINT chunk_id IF NOT EXISTS FOR (c:Chunk) REQUIRE c.id IS UNIQUE;
CREATE CONSTRAINT entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE;
// The predicate catalogue (which relationship type stores each predicate) and the model stamp.
CREATE CONSTRAINT predicate_name IF NOT EXISTS FOR (p:Predicate) REQUIRE p.name IS UNIQUE;
CREATE CONSTRAINT kgmeta_id IF NOT EXISTS FOR (m:KgMeta) REQUIRE m.id IS UNIQUE;
