"""`kg --help` describes every command without importing it, in the command's own words."""

from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cyclopts import App

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
