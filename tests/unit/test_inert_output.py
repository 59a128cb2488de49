"""cli.output.inert: text from data printed by the CLI cannot act on the terminal (issue 26)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from cli.output import inert, labelled


def _rendered(*renderables: object) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="truecolor", width=300)
    for r in renderables:
        console.print(r)
    return out.getvalue()


def test_controls_are_escaped_and_markup_is_literal() -> None:
    hostile = "a\x1b[2J\x1b]0;title\x07\nFAKE [link=mailto:x@y]c[/link] \udcff \u202e :smile: \x9b"
    text = inert(hostile).plain
    assert text == (
        "a\\x1b[2J\\x1b]0;title\\x07\\nFAKE [link=mailto:x@y]c[/link] \\xff \\u202e :smile: \\x9b"
    )
    table = Table()
    table.add_column("x")
    table.add_row(inert(hostile))
    shown = _rendered(table, labelled("skipped", "yellow", hostile))
    assert "\x1b]" not in shown  # no OSC: no title, no hyperlink
    assert "\x1b[2J" not in shown
    assert "[link=mailto:x@y]c[/link]" in shown
    assert ":smile:" in shown


def test_lines_keep_newlines_only() -> None:
    assert inert("one\ntwo\r\x1b", lines=True).plain == "one\ntwo\\r\\x1b"
    assert inert("plain text, Ünïcode, 中文").plain == "plain text, Ünïcode, 中文"
