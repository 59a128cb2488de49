"""``kg browse``: open Neo4j Browser on the local server with kg's guide ready in its editor.

Without a display (a server, CI, SSH), or with ``--print``, it prints the Browser URL, how to
connect, and the ``:play`` command for kg's guide instead. Browser loads kg's style by itself
on connect (``browser.post_connect_cmd``, see kg.localserver.browser); both the style
and the guide come from kg's API, so this also says whether ``kg serve`` answers.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated
from urllib.parse import urlencode

from cyclopts import Parameter
from rich.console import Console


def browser_launch_url(browser_url: str, bolt_uri: str, guide_url: str) -> str:
    """Browser's URL with the connection filled in and ``:play <guide>`` in the editor.

    ``cmd=edit`` only fills the editor: ``cmd=play`` would run the guide but also skip the
    server's post-connect commands, which load kg's style.
    """
    query = urlencode({"dbms": bolt_uri, "cmd": "edit", "arg": f":play {guide_url}"})
    return f"{browser_url}?{query}"


def has_display() -> bool:
    """Whether a graphical browser can open here (macOS and Windows always; X11 or Wayland)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def api_answers(url: str, timeout_s: float = 2.0) -> bool:
    """Whether kg's API serves the guide at ``url`` (a GET of a small static file)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # noqa: S310 - http(s) URL we built
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def browse(
    *,
    print_only: Annotated[
        bool, Parameter(name="--print", help="Print the URL and commands; open nothing.")
    ] = False,
) -> int:
    """Open Neo4j Browser with kg's guide, or print its URL and the guide command.

    Exit code 3 when the local Neo4j is not running.
    """
    import webbrowser

    from kg import local_server
    from kg.settings import Settings

    console = Console(highlight=False, soft_wrap=True)
    settings = Settings()
    server = local_server(settings)
    status = server.status()
    api = server.api_url  # where `kg serve` serves now (its --host/--port), else KG_API__*
    guide = api + server.BROWSER_GUIDE_PATH
    # what Browser runs on connect: the URL neo4j.conf got when the local Neo4j started
    configured = server.browser_style_url
    style = configured or api + server.BROWSER_STYLE_PATH
    url = browser_launch_url(status.browser_url, status.bolt_uri, guide)

    if not status.running:
        console.print(f"The local Neo4j is not running (home {status.home}): start it with "
                      "`kg neo4j start`, then run `kg browse` again.")  # fmt: skip
        return 3
    opened = not print_only and has_display() and webbrowser.open(url)
    console.print(f"Neo4j Browser: {status.browser_url}" + (" (opened)" if opened else ""))
    if not opened:
        console.print(f"  with kg's guide in its editor: {url}")
    password = (
        "your KG_NEO4J__PASSWORD"
        if status.password_file is None
        else f"the one in {status.password_file}"
    )
    console.print(f"  connect to {status.bolt_uri} as user neo4j, password {password}")
    console.print(f"kg's guide:  :play {guide}")
    console.print(f"kg's style:  :style {style}  (Browser loads it when it connects)")
    note = server.style_note(api)
    if note is not None:
        console.print(f"[yellow]note:[/] {note}")
    if not api_answers(guide):
        console.print(
            f"[yellow]kg's API does not answer on {api}[/]: run `kg serve` for the guide and "
            "the style. Until then Browser shows an error for the style when it connects and "
            "keeps the style it last loaded."
        )
    return 0
