"""The scope's rules (kg/scope.py): what a read may see, within a caller's ceiling."""

from __future__ import annotations

import pytest

from kg.errors import ScopeDenied
from kg.scope import bound_namespaces, ceiling, current, scoped, within


def test_unbound_callers_read_what_they_ask_for() -> None:
    assert within(None) is None
    assert within(["b", "a", "b"]) == ["b", "a"]
    with scoped(["a"]):
        assert current() == ["a"]
        assert within(None) == ["a"]  # a nested read keeps the outer scope
        with pytest.raises(ScopeDenied, match="'b'"):
            within(["b"])
    assert current() is None


def test_a_bound_caller_never_reads_past_its_ceiling() -> None:
    with bound_namespaces(["a", "b"]):
        assert ceiling() == frozenset({"a", "b"})
        assert within(None) == ["a", "b"]
        assert within(["b"]) == ["b"]
        with pytest.raises(ScopeDenied, match="'c'"):
            within(["a", "c"])
        with scoped(None) as scope:
            assert scope == ["a", "b"]
            assert current() == ["a", "b"]
        with pytest.raises(ScopeDenied), scoped(["c"]):
            pass
    assert ceiling() is None
    assert within(["c"]) == ["c"]
