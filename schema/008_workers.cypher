// Parallel ingest workers (kg/graph/lock.py): one lease lock node per name, so two workers
// taking a free lock at the same moment meet on one node instead of making two.
CREATE CONSTRAINT kglock_id IF NOT EXISTS FOR (l:KgLock) REQUIRE l.id IS UNIQUE;
