"""Bulk first loads through Neo4j's own importer (``neo4j-admin database import full``).

:mod:`kg.bulk.load` runs it (``kg ingest PATH --triplets FILE --bulk``);
:mod:`kg.bulk.staging` builds the graph ``kg ingest`` would write, in memory;
:mod:`kg.bulk.export` and :mod:`kg.bulk.csvfiles` write it as import files.
"""

from kg.bulk.load import BULK_STAGES, BulkSummary, bulk_ingest

__all__ = ["BULK_STAGES", "BulkSummary", "bulk_ingest"]
