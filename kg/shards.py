"""Which worker ingests which document: a stable split of a source's documents into N shards.

A document belongs to shard ``int(sha256(path)[:8]) % N``. The key is the document's path
inside its source (the relative file path, or a triplets record's id), never its position in
a listing nor its id (which includes the source, a folder's absolute path that differs from
machine to machine): every worker, on any machine and in any order, agrees on the split.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from kg.errors import ConfigError

#: The most worker processes one `kg ingest --workers N` starts.
MAX_WORKERS = 64

MAX_SHARDS = 1024
_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """Worker ``index`` of ``count`` (0-based): it owns the documents whose path hashes to it."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_SHARDS:
            raise ConfigError(f"shard count must be 1..{MAX_SHARDS}, not {self.count}")
        if not 0 <= self.index < self.count:
            raise ConfigError(f"shard index must be 0..{self.count - 1}, not {self.index}")

    def owns(self, path: str) -> bool:
        return shard_of(path, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(path: str, count: int) -> int:
    """The shard of a document path among ``count``: the same on every machine and run."""
    digest = hashlib.sha256(path.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % count


def parse_shard(spec: str) -> Shard:
    """``"I/N"`` (0-based I) as a :class:`Shard`; a clear error for anything else."""
    match = _SPEC.match(spec)
    if match is None:
        raise ConfigError(f"--shard takes I/N (worker I of N, 0-based), not {spec!r}")
    return Shard(int(match.group(1)), int(match.group(2)))
