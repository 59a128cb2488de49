"""The library surface: twins method for method, every signature type exported, light imports."""

from __future__ import annotations

import inspect
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import kg
from kg import AsyncKnowledgeGraph, KnowledgeGraph
from tests.clienv import clean_env

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("openai", "instructor", "faiss", "wordllama", "litestar", "graspologic_native")

# The intended differences between the twins, and the only ones: the names of the closing
# call (as in httpx: close / aclose) and of the driver each holds (sync / async).
PAIRS = {"close": "aclose", "driver": "async_driver"}


def _public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_the_twins_have_the_same_public_members() -> None:
    sync = {PAIRS.get(name, name) for name in _public(KnowledgeGraph)}
    asynchronous = _public(AsyncKnowledgeGraph)
    assert asynchronous - sync == set()
    assert sync - asynchronous == set()
    # the renamed pairs exist on both sides (a rename on one twin alone fails here)
    for sync_name, async_name in PAIRS.items():
        assert sync_name in _public(KnowledgeGraph), sync_name
        assert async_name in _public(AsyncKnowledgeGraph), async_name
        assert sync_name not in _public(AsyncKnowledgeGraph), sync_name


def test_the_twins_take_the_same_parameters() -> None:
    for name in _public(KnowledgeGraph) - set(PAIRS) - {"open", "settings", "embedder"}:
        sync, other = getattr(KnowledgeGraph, name), getattr(AsyncKnowledgeGraph, name)
        if isinstance(sync, property) or not callable(sync):
            continue
        assert inspect.signature(sync).parameters.keys() == (
            inspect.signature(other).parameters.keys()
        ), name
        # templates() reads the registry in memory: no I/O, so no await on either twin
        if name == "templates":
            continue
        if name.startswith("answer_stream"):  # an async iterator there, a blocking one here
            assert inspect.isasyncgenfunction(other), f"AsyncKnowledgeGraph.{name}"
        else:
            assert inspect.iscoroutinefunction(other), f"AsyncKnowledgeGraph.{name} is not async"


def _kg_types(hint: object) -> set[type]:
    found: set[type] = set()
    for arg in typing.get_args(hint):
        found |= _kg_types(arg)
    origin = typing.get_origin(hint)
    if origin is None and isinstance(hint, type) and hint.__module__.startswith("kg."):
        found.add(hint)
    return found


def _signature_types(cls: type) -> set[type]:
    hints = vars(kg) | {name: getattr(kg, name) for name in kg.__all__}
    found: set[type] = set()
    for name in _public(cls) | {"__init__"}:
        member = inspect.getattr_static(cls, name)
        fn = member.fget if isinstance(member, property) else member
        if callable(fn):
            for hint in typing.get_type_hints(fn, localns=hints).values():
                found |= _kg_types(hint)
    return found


def test_every_type_in_a_public_signature_is_exported() -> None:
    exported = {id(getattr(kg, name)) for name in kg.__all__}
    types = _signature_types(KnowledgeGraph) | _signature_types(AsyncKnowledgeGraph)
    assert len(types) > 15  # the walk found the models, not nothing
    missing = sorted(f"{t.__module__}.{t.__qualname__}" for t in types if id(t) not in exported)
    assert missing == []


def _modules_after(code: str) -> set[str]:
    """The top-level packages loaded after ``code`` runs in a fresh interpreter."""
    return {name.split(".")[0] for name in _loaded_after(code)}


def _loaded_after(code: str) -> set[str]:
    """Every module (full names) loaded after ``code`` runs in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sys.modules))"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return set(out.stdout.split())


def test_the_surface_imports_nothing_heavy_until_used() -> None:
    loaded = _modules_after(
        "import kg\n"
        "from kg import KnowledgeGraph, AsyncKnowledgeGraph, Settings, SearchRequest\n"
        "names = [getattr(kg, n) for n in kg.__all__]\n"
        "KnowledgeGraph(Settings())\n"
        "AsyncKnowledgeGraph(Settings())\n"
    )
    assert sorted(loaded & set(HEAVY)) == []


def test_a_search_service_loads_no_llm_e5_or_name_normalizer_until_one_is_used() -> None:
    """Every command that searches builds both embedders (check_model reads their identity);
    only an embedding of entity names needs the normalizer, only an endpoint the LLM seam."""
    loaded = _loaded_after(
        "from kg.settings import Settings\n"
        "from kg.resolve.embed import make_chunk_embedder, make_embedder, embedder_identity\n"
        "s = Settings()\n"
        "embedder_identity(make_embedder(s.resolve))\n"
        "embedder_identity(make_chunk_embedder(s.chunks))\n"
    )
    assert sorted(loaded & {"kg.llm", "kg.resolve.e5", "kg.resolve.normalize", "openai"}) == []
    used = _loaded_after(
        "from kg.settings import Settings\n"
        "from kg.resolve.embed import make_embedder\n"
        "make_embedder(Settings().resolve).embed(['AuthService'])\n"
    )
    assert "kg.resolve.normalize" in used


def _cli_modules(args: list[str], home: Path) -> tuple[set[str], str]:
    """Every module ``kg <args>`` imported (full names), and what it printed."""
    code = (
        "import contextlib, io, sys\n"
        f"sys.argv = ['kg', *{args!r}]\n"
        "from cli.main import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):\n"
        "    main()\n"
        "print(' '.join(sys.modules), file=sys.stderr)\n"
        "print(out.getvalue())\n"
    )
    env = clean_env()
    env["KG_SERVER__HOME"] = str(home)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return set(proc.stderr.split()), proc.stdout


#: What the three commands that must answer at once may not load: the LLM client, the vector
#: index, the embedders, the web framework, and the library surface that pulls them in.
NOT_AT_ONCE = (*HEAVY, "litestar", "kg.client", "kg.llm", "kg.answer", "kg.search")


@pytest.mark.parametrize(
    ("args", "shows"),
    [(["--help"], "neo4j"), (["--version"], kg.__version__), (["neo4j", "status"], "stopped")],
)
def test_commands_that_answer_at_once_import_nothing_heavy(
    args: list[str], shows: str, tmp_path: Path
) -> None:
    loaded, out = _cli_modules(args, tmp_path / "neo4j")
    assert shows in out  # the command ran and answered
    heavy = {m for m in loaded if any(m == h or m.startswith(h + ".") for h in NOT_AT_ONCE)}
    assert sorted(heavy) == []


#: What no `--help` may load: the above, and the settings, the request models and the driver
#: that a command's work needs (pydantic alone is a tenth of a second).
NOT_FOR_HELP = (*NOT_AT_ONCE, "kg.settings", "pydantic", "pydantic_settings", "neo4j", "uvicorn")
GROUPS = {"neo4j": ("start", "stop", "status", "logs"), "schema": ("apply", "show"),
          "communities": ("build",)}  # fmt: skip


def _help_cases() -> list[list[str]]:
    from cli.main import COMMANDS

    cases = [[name, "--help"] for name in COMMANDS]
    cases += [[group, sub, "--help"] for group, subs in GROUPS.items() for sub in subs]
    return cases


def test_every_command_is_in_the_help_cases() -> None:
    from cli.main import app

    listed = {tuple(args[:-1]) for args in _help_cases()}
    for name in app:
        if name.startswith("-"):
            continue
        sub = app[name]
        nested = [n for n in sub if not n.startswith("-")] if sub.default_command is None else []
        assert (name,) in listed, name
        assert {(name, n) for n in nested} <= listed, name


@pytest.mark.parametrize("args", _help_cases(), ids=" ".join)
def test_every_help_imports_only_the_command(args: list[str], tmp_path: Path) -> None:
    loaded, out = _cli_modules(args, tmp_path / "neo4j")
    assert "Usage: kg" in out  # the help was printed
    heavy = {m for m in loaded if any(m == h or m.startswith(h + ".") for h in NOT_FOR_HELP)}
    assert sorted(heavy) == []


def test_kg_help_builds_no_settings(tmp_path: Path) -> None:
    """The CLI's log redaction lists the settings' secrets on its first record, not at start:
    pydantic-settings alone costs `kg --help` a quarter second."""
    loaded, _ = _cli_modules(["--help"], tmp_path / "neo4j")
    assert "pydantic_settings" not in loaded
    assert "kg.settings" not in loaded


def test_the_checker_sees_a_heavy_import() -> None:
    assert "faiss" in _modules_after(
        "import numpy as np\nfrom kg.resolve.index import knn\n"
        "knn(np.ones((2, 4), dtype=np.float32), 1, 100)"
    )


def test_one_version_everywhere() -> None:
    import importlib.metadata

    out = subprocess.run(
        [sys.executable, "-m", "cli.main", "--version"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == kg.__version__ == importlib.metadata.version("kg")
