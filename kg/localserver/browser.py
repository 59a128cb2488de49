"""What the local server's config tells Neo4j Browser: load kg's style, allow kg's guide.

kg's API serves both files (api/browser.py) at the paths below; docs/browser.md says what
happens when the API does not answer.
"""

from __future__ import annotations

from kg.settings import ApiSettings

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


def browser_config(api: ApiSettings) -> list[str]:
    """neo4j.conf lines that style Browser on connect and allow kg's guide.

    Browser runs ``browser.post_connect_cmd`` after each connect; a GRASS file cannot be
    inlined there (commands are split on ``;``), so it is loaded by URL from kg's API.
    ``browser.remote_content_hostname_whitelist`` replaces Browser's default list and matches
    host names, not ports: the defaults are kept and the API's host is added.
    """
    host = _api_host(api)
    hosts = [*BROWSER_DEFAULT_HOSTS, *([host] if host not in BROWSER_DEFAULT_HOSTS else [])]
    return [
        f"browser.post_connect_cmd=style {kg_api_url(api)}{BROWSER_STYLE_PATH}",
        f"browser.remote_content_hostname_whitelist={','.join(hosts)}",
        # Browser would report usage to Neo4j from the user's page (and ask about it).
        "client.allow_telemetry=false",
    ]
