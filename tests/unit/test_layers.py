"""The floors of docs/architecture.md: front ends reach the stages only through the surface."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The front ends' whole view of kg: the surface (the package root) and four ground modules that
# are public on purpose (settings, the error tree, secret scrubbing for their logs, and the
# observability seam for their request spans, metrics and JSON logs).
PUBLIC = frozenset({"kg", "kg.settings", "kg.errors", "kg.redact", "kg.observe"})
FRONT_ENDS = ("cli", "api", "kg_mcp")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _below_surface(name: str) -> bool:
    return (name == "kg" or name.startswith("kg.")) and name not in PUBLIC


def test_front_ends_call_only_the_surface() -> None:
    offenders = {
        f"{path.relative_to(REPO)}: {name}"
        for folder in FRONT_ENDS
        for path in sorted((REPO / folder).rglob("*.py"))
        for name in _imports(path)
        if _below_surface(name)
    }
    assert offenders == set()


def test_the_checker_sees_an_import_below_the_surface(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from kg.graph.driver import open_driver\nimport kg.cypher.guard\n"
        "from kg.search.service import SearchService\nfrom kg import KnowledgeGraph\n"
        "from kg.errors import KGError\nimport kg_mcp\n"
    )
    assert {n for n in _imports(probe) if _below_surface(n)} == {
        "kg.graph.driver",
        "kg.cypher.guard",
        "kg.search.service",
    }


def test_the_package_is_typed() -> None:
    assert (REPO / "kg" / "py.typed").exists()


def test_the_surface_is_exported_lazily() -> None:
    import kg

    assert set(kg.__all__) >= {"KnowledgeGraph", "AsyncKnowledgeGraph", "KGError", "Settings"}
    assert all(getattr(kg, name) is not None for name in kg.__all__)


def test_one_exit_code_table() -> None:
    from kg.errors import (
        ConfigError,
        KGError,
        NotFoundError,
        Overloaded,
        QueryRejected,
        QueryTimeout,
        StoreError,
        StoreUnavailable,
        exit_code,
    )

    cases = {
        QueryRejected("x"): 2,
        ConfigError("x"): 2,
        StoreUnavailable("x"): 3,
        Overloaded("x"): 3,
        NotFoundError("x"): 4,
        QueryTimeout("x"): 5,
        StoreError("x"): 1,
        KGError("x"): 1,
    }
    assert {type(e).__name__: exit_code(e) for e in cases} == {
        type(e).__name__: code for e, code in cases.items()
    }


def test_long_functions_say_why() -> None:
    """No function in kg/ runs past ~60 lines without a `# Long on purpose: ...` line above it."""
    unexplained = []
    for path in sorted((REPO / "kg").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                above = "\n".join(lines[max(0, node.lineno - 4) : node.lineno - 1])
                if length > 65 and "# Long on purpose:" not in above:
                    unexplained.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    assert unexplained == []
