"""What the local server's config tells Neo4j Browser: load kg's style, allow kg's guide.

kg's API serves both files (api/browser.py) at the paths below; docs/browser.md says what
happens when the API does not answer.

Where the API is: ``kg serve`` records the address it actually serves on (its ``--host`` and
``--port``, not only ``KG_API__*``) in the local server's home while it runs
(:func:`record_served`); ``kg browse`` and the style URL written into neo4j.conf when Neo4j
starts use that address while that ``kg serve`` lives, else the settings' (:func:`api_url`).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from kg.localserver.process import pid_alive, write_private
from kg.settings import ApiSettings, Settings

#: The record of the running ``kg serve`` (in the local server's home, mode 0600).
SERVED_RECORD = Path("run") / "kg-api.json"

#: Where kg's API serves Neo4j Browser's style and guide (api/browser.py): no key, no graph data.
BROWSER_STYLE_PATH = "/browser-style.grass"
BROWSER_GUIDE_PATH = "/browser-guide"

#: Browser's own default allowlist for remote guides and styles; the setting replaces it.
BROWSER_DEFAULT_HOSTS = ("guides.neo4j.com", "localhost")


def _api_host(api: ApiSettings) -> str:
    """The API's host as a browser on this machine names it (IPv6 in brackets, as in URLs).

    A wildcard bind and ``localhost`` are reached on 127.0.0.1.
    """
    host = api.host.strip().strip("[]")
    if host in ("", "0.0.0.0", "::", "localhost"):  # noqa: S104 - names a bind, binds nothing
        host = "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def kg_api_url(api: ApiSettings) -> str:
    """The kg API's base URL as a browser on this machine reaches it."""
    return f"http://{_api_host(api)}:{api.port}"


def served_url(home: Path) -> str | None:
    """The URL a live ``kg serve`` recorded in ``home``, or None (none runs, or it died)."""
    try:
        record = json.loads((home / SERVED_RECORD).read_text(encoding="utf-8"))
        url, pid = str(record["url"]), int(record["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return url if pid_alive(pid) else None


def api_url(settings: Settings) -> str:
    """kg's API as a browser here reaches it: where ``kg serve`` serves now, else the settings'."""
    return served_url(settings.server.home.resolve()) or kg_api_url(settings.api)


@contextlib.contextmanager
def record_served(home: Path, api: ApiSettings) -> Iterator[str]:
    """While the block runs, ``home`` says this process serves kg's API at ``api``'s address.

    Nothing is written when ``home`` does not exist: no local server was ever set up there.
    """
    url = kg_api_url(api)
    if not home.is_dir():
        yield url
        return
    path = home / SERVED_RECORD
    write_private(path, json.dumps({"url": url, "pid": os.getpid()}))
    try:
        yield url
    finally:
        with contextlib.suppress(OSError):
            record = json.loads(path.read_text(encoding="utf-8"))
            if record.get("pid") == os.getpid():
                path.unlink()


def style_elsewhere(configured: str | None, api: str) -> str | None:
    """What to say when Browser loads kg's style from another address than ``api``, where
    kg's API serves: ``configured`` is the style URL in the local server's neo4j.conf, which
    Neo4j read when it started (:attr:`LocalNeo4j.browser_style_url`). None when they agree.

    ``kg serve`` and ``kg browse`` both say this, so they never name two addresses for it.
    """
    if configured is None or configured == api + BROWSER_STYLE_PATH:
        return None
    return (
        f"Neo4j Browser loads kg's style from {configured} (set when the local Neo4j "
        f"started), not from {api}, where kg's API serves; restart the local Neo4j to load it "
        "from there: `kg neo4j stop && kg neo4j start`"
    )


def browser_config(api: ApiSettings | str) -> list[str]:
    """neo4j.conf lines that style Browser on connect and allow kg's guide; ``api`` is the
    API's URL (or its settings).

    Browser runs ``browser.post_connect_cmd`` after each connect; a GRASS file cannot be
    inlined there (commands are split on ``;``), so it is loaded by URL from kg's API.
    ``browser.remote_content_hostname_whitelist`` replaces Browser's default list and matches
    host names, not ports: the defaults are kept and the API's host is added.
    """
    url = api if isinstance(api, str) else kg_api_url(api)
    name = urlsplit(url).hostname or "127.0.0.1"
    host = f"[{name}]" if ":" in name else name
    hosts = [*BROWSER_DEFAULT_HOSTS, *([host] if host not in BROWSER_DEFAULT_HOSTS else [])]
    return [
        f"browser.post_connect_cmd=style {url}{BROWSER_STYLE_PATH}",
        f"browser.remote_content_hostname_whitelist={','.join(hosts)}",
        # Browser would report usage to Neo4j from the user's page (and ask about it).
        "client.allow_telemetry=false",
    ]
