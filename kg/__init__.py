"""kg: folders of documents into a temporal knowledge graph in Neo4j, searched safely."""

__version__ = "0.1.0"
