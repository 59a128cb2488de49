"""The shard split (kg/shards.py): stable, complete, disjoint, roughly even, by path."""

from __future__ import annotations

import pytest

from kg.errors import ConfigError
from kg.shards import Shard, parse_shard, shard_of

PATHS = [f"docs/{i:04d}-page.md" for i in range(2000)]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7])
def test_every_document_has_exactly_one_shard(count: int) -> None:
    shards = [Shard(i, count) for i in range(count)]
    for path in PATHS:
        assert sum(shard.owns(path) for shard in shards) == 1


def test_the_split_is_roughly_even() -> None:
    sizes = [sum(shard_of(p, 4) == i for p in PATHS) for i in range(4)]
    assert min(sizes) > 0.8 * len(PATHS) / 4, sizes


def test_the_split_depends_on_the_path_only_not_on_order_or_process() -> None:
    # Pinned values: the same on every machine, Python version and run (sha256, not hash()).
    assert [shard_of(p, 4) for p in ("a.md", "b.md", "0000:Journal of Mathematical Physics")] == [
        1,
        2,
        1,
    ]


def test_parse_shard() -> None:
    assert parse_shard("2/4") == Shard(2, 4)
    assert parse_shard(" 0 / 1 ") == Shard(0, 1)
    assert str(Shard(3, 8)) == "3/8"


@pytest.mark.parametrize("spec", ["4/4", "-1/4", "1/0", "1", "a/b", "1/4/2", ""])
def test_bad_shards_are_refused_with_the_form_to_use(spec: str) -> None:
    with pytest.raises(ConfigError):
        parse_shard(spec)
