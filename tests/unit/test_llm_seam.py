"""The LLM seam: how a use's endpoint is resolved, the deprecated names, and that openai and
instructor are imported only inside kg/llm, and only once a client is built."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr

from kg.llm import USES, resolve_endpoint
from kg.settings import LLMSettings, Settings

REPO = Path(__file__).resolve().parents[2]
LLM_PACKAGES = {"openai", "instructor"}


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("KG_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no stray .env


def test_defaults_are_todays_for_every_use() -> None:
    s = Settings()
    for use in USES:
        e = resolve_endpoint(s, use)
        assert (e.base_url, e.model, e.mode) == ("http://127.0.0.1:11434/v1", "llama3.1", "tools")
        assert e.api_key.get_secret_value() == "not-needed"
    extract = resolve_endpoint(s, "extract")
    assert (extract.timeout_s, extract.max_retries, extract.concurrency) == (120.0, 2, 4)
    assert (extract.max_calls, extract.max_tokens) == (None, None)
    answer = resolve_endpoint(s, "answer")
    assert (answer.timeout_s, answer.max_calls, answer.max_tokens) == (60.0, 3, 24_000)
    translate = resolve_endpoint(s, "translate")
    assert (translate.timeout_s, translate.max_calls, translate.max_tokens) == (60.0, 3, 24_000)
    reports = resolve_endpoint(s, "reports")
    assert (reports.timeout_s, reports.max_retries, reports.temperature) == (120.0, 2, 0.0)


def test_shared_section_reaches_every_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KG_LLM__BASE_URL", "http://llm:8000/v1")
    monkeypatch.setenv("KG_LLM__MODEL", "qwen2.5")
    monkeypatch.setenv("KG_LLM__API_KEY", "sk-shared")
    s = Settings()
    for use in USES:
        e = resolve_endpoint(s, use)
        assert (e.base_url, e.model) == ("http://llm:8000/v1", "qwen2.5")
        assert e.api_key.get_secret_value() == "sk-shared"


def test_a_use_overrides_only_what_it_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KG_LLM__BASE_URL", "http://llm:8000/v1")
    monkeypatch.setenv("KG_LLM__MODEL", "small")
    monkeypatch.setenv("KG_LLM__CONCURRENCY", "9")
    monkeypatch.setenv("KG_EXTRACT__MODEL", "extractor")  # llm.model set: an override
    monkeypatch.setenv("KG_REPORTS__MODEL", "writer")
    monkeypatch.setenv("KG_ROUTER__BASE_URL", "http://router:1/v1")
    monkeypatch.setenv("KG_ANSWER__MODEL", "big")
    s = Settings()  # no deprecation: llm sets what extract overrides
    assert resolve_endpoint(s, "extract").model == "extractor"
    assert resolve_endpoint(s, "extract").concurrency == 9
    assert resolve_endpoint(s, "reports").model == "writer"
    assert resolve_endpoint(s, "reports").base_url == "http://llm:8000/v1"
    assert resolve_endpoint(s, "router").base_url == "http://router:1/v1"
    assert resolve_endpoint(s, "router").model == "small"
    assert resolve_endpoint(s, "answer").model == "big"
    assert resolve_endpoint(s, "translate").model == "big"  # translate reads answer first
    assert resolve_endpoint(s, "adjudicate").model == "small"


def test_translate_has_its_own_section(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KG_ANSWER__MODEL", "big")
    monkeypatch.setenv("KG_TRANSLATE__MODEL", "translator")
    monkeypatch.setenv("KG_TRANSLATE__MAX_CALLS", "1")
    e = resolve_endpoint(Settings(), "translate")
    assert (e.model, e.max_calls, e.max_tokens) == ("translator", 1, 24_000)


@pytest.mark.parametrize(
    ("name", "field", "value"),
    [
        ("KG_EXTRACT__BASE_URL", "base_url", "http://old:1/v1"),
        ("KG_EXTRACT__MODEL", "model", "qwen2.5"),
        ("KG_EXTRACT__MODE", "mode", "json"),
    ],
)
def test_old_extract_names_move_to_llm_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, name: str, field: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.warns(DeprecationWarning, match=f"KG_LLM__{field.upper()}"):
        s = Settings()
    assert getattr(s.llm, field) == value
    assert getattr(s.extract, field) is None
    for use in USES:  # as before: the extract section's endpoint was every use's
        assert getattr(resolve_endpoint(s, use), field) == value


def test_old_extract_key_moves_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KG_EXTRACT__API_KEY", "sk-old")
    with pytest.warns(DeprecationWarning, match="KG_EXTRACT__API_KEY"):
        s = Settings()
    assert resolve_endpoint(s, "reports").api_key.get_secret_value() == "sk-old"


def test_old_names_in_code_warn_too() -> None:
    from kg.settings import ExtractSettings

    with pytest.warns(DeprecationWarning, match="KG_LLM__BASE_URL"):
        s = Settings(extract=ExtractSettings(base_url="http://code:1/v1"))
    assert resolve_endpoint(s, "router").base_url == "http://code:1/v1"


def test_no_warning_when_llm_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    monkeypatch.setenv("KG_LLM__MODEL", "shared")
    monkeypatch.setenv("KG_EXTRACT__MODEL", "mine")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = Settings()
    assert resolve_endpoint(s, "extract").model == "mine"
    assert resolve_endpoint(s, "answer").model == "shared"


def test_answer_names_keep_their_meaning(monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    monkeypatch.setenv("KG_ANSWER__BASE_URL", "http://answers:1/v1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = Settings()
    assert resolve_endpoint(s, "answer").base_url == "http://answers:1/v1"
    assert resolve_endpoint(s, "extract").base_url == LLMSettings().base_url


def test_unknown_use_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown LLM use"):
        resolve_endpoint(Settings(), "poetry")  # type: ignore[arg-type]


def test_llm_settings_hide_the_key() -> None:
    s = Settings(llm=LLMSettings(api_key=SecretStr("sk-hidden")))
    assert "sk-hidden" not in repr(s) + s.model_dump_json()


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_only_kg_llm_imports_openai_and_instructor() -> None:
    offenders = []
    for folder in ("kg", "api", "cli", "kg_mcp"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path.is_relative_to(REPO / "kg" / "llm"):
                continue
            used = _imports(path) & LLM_PACKAGES
            if used:
                offenders.append(f"{path.relative_to(REPO)}: {', '.join(sorted(used))}")
    assert not offenders, "build LLM clients through kg.llm (the factory):\n" + "\n".join(offenders)


def test_importing_the_seam_imports_no_client() -> None:
    code = (
        "import sys, kg.llm, kg.extract, kg.communities.reports, kg.resolve.embed\n"
        "print(sorted(m for m in ('openai', 'instructor') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    assert out.stdout.strip() == "[]"
