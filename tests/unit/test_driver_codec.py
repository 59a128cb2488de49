"""The driver decodes Bolt with its Rust extension, of the driver's own version."""

from __future__ import annotations

from importlib import metadata

import neo4j
from neo4j._codec.packstream import v1


def test_rust_extension_matches_the_driver() -> None:
    # neo4j-rust-ext X.Y.Z.n is built for neo4j X.Y.Z; another pairing is refused by pip, but
    # a driver upgraded alone would silently fall back to pure-Python decoding.
    assert metadata.version("neo4j-rust-ext").rsplit(".", 1)[0] == neo4j.__version__


def test_packstream_uses_the_rust_codec() -> None:
    # The driver picks the codec at import; None here means rows decode in pure Python.
    assert v1._rust_unpack is not None
    assert v1._rust_pack is not None
