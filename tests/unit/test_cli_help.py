"""`kg --help` describes every command without importing it, in the command's own words."""

from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys
import typing
from collections.abc import Callable
from pathlib import Path

import pytest
from cyclopts import App, Parameter

from cli.main import COMMANDS

REPO = Path(__file__).resolve().parents[2]


def _target(path: str) -> object:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _description(target: object) -> str:
    """What the command says about itself: a sub-app's help, or a function's docstring
    up to its Parameters section."""
    if isinstance(target, App):
        return str(target.help)
    doc = inspect.cleandoc(getattr(target, "__doc__", None) or "")
    return doc.split("Parameters\n----------")[0].strip()


def _paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in text.split("\n\n")]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_listed_description_is_the_commands_own(name: str) -> None:
    path, listed = COMMANDS[name]
    assert listed.strip()
    assert _paragraphs(listed) == _paragraphs(_description(_target(path)))


def test_every_subcommand_has_a_description() -> None:
    missing = []
    for name, (path, _) in COMMANDS.items():
        target = _target(path)
        if isinstance(target, App):
            for sub in target:
                if sub.startswith("-"):
                    continue
                if not str(target[sub].help or "").strip():
                    missing.append(f"{name} {sub}")
    assert missing == []


def test_kg_help_lists_each_command_with_its_first_line() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    env["COLUMNS"] = "400"  # one line per command
    out = subprocess.run(
        [sys.executable, "-m", "cli.main", "--help"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    rows = {line.strip("│ ").split(" ", 1)[0]: line for line in out.splitlines()}
    for name, (_, listed) in COMMANDS.items():
        first = listed.splitlines()[0].replace("`", "")
        assert first in " ".join(rows[name].split()), name


def _functions() -> list[tuple[str, Callable[..., object]]]:
    """Every command's function, sub-commands included, by its command line."""
    found: list[tuple[str, Callable[..., object]]] = []
    for name, (path, _) in COMMANDS.items():
        target = _target(path)
        if not isinstance(target, App):
            found.append((name, target))  # type: ignore[arg-type]
            continue
        for sub in target:
            command = target[sub].default_command
            if not sub.startswith("-") and command is not None:
                found.append((f"{name} {sub}", command))
    return found


def _documented(function: Callable[..., object]) -> set[str]:
    """Parameter names the docstring's numpydoc Parameters section describes."""
    doc = inspect.cleandoc(function.__doc__ or "")
    section = doc.split("Parameters\n----------", 1)[1] if "Parameters\n----------" in doc else ""
    return {line.strip() for line in section.splitlines() if line and not line[0].isspace()}


def _own_help(annotation: object) -> bool:
    """A ``Parameter(help=...)`` or ``Parameter(show=False)`` in an Annotated type."""
    for meta in getattr(annotation, "__metadata__", ()):
        if isinstance(meta, Parameter) and (meta.help or meta.show is False):
            return True
    return False


@pytest.mark.parametrize(
    ("line", "function"),
    _functions(),
    ids=lambda v: v if isinstance(v, str) else getattr(v, "__name__", "?"),
)
def test_every_parameter_has_a_help_text(line: str, function: Callable[..., object]) -> None:
    hints = typing.get_type_hints(function, include_extras=True)
    documented = _documented(function)
    missing = [
        name
        for name, p in inspect.signature(function).parameters.items()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and name not in documented
        and not _own_help(hints.get(name))
    ]
    assert missing == [], f"kg {line}: no help text for {missing}"
