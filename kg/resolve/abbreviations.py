"""The abbreviation table: built-in defaults, optionally replaced/extended from a YAML/JSON file.

Why a table and not a model: expansions such as ``svc -> service`` or ``k8s -> kubernetes``
are domain conventions a team wants to read and edit, and the resolver must stay offline.
Keys and values are matched after normalization (casefolded, Cyrillic transliterated to Latin).

File format (YAML or JSON)::

    replace_defaults: false     # true: start from an empty table
    abbreviations: {svc: service, k8s: kubernetes}
    generic: [service, inc]     # tokens dropped from the "core" key (suffixes that add no identity)
    stopwords: [and, of]        # skipped when forming an acronym from words
    vendors: [apache]           # leading vendor names ("Apache Kafka" ~ "Kafka")
    translations: {шлюз: gateway, "оплата труда": remuneration}   # Russian -> English words
    names: {Минфин: Министерство финансов}   # short names that stand for longer ones

``translations`` and ``names`` extend the Russian-English lexicon (kg/resolve/lexicon.py); keys
are written in their dictionary form, as in the built-in tables.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kg.errors import ConfigError
from kg.resolve.lexicon import DEFAULT_TRANSLATIONS, KNOWN_NAMES

# Careful with "auth": in service names it almost always means authentication, while
# authorization is spelled "authz"; both expand so the two stay apart (different tokens).
DEFAULT_ABBREVIATIONS: Mapping[str, str] = {
    "svc": "service",
    "srvc": "service",
    "servis": "service",  # Russian "сервис" after transliteration
    "db": "database",
    "k8s": "kubernetes",
    "kube": "kubernetes",
    "postgres": "postgresql",
    "psql": "postgresql",
    "auth": "authentication",
    "authn": "authentication",
    "authz": "authorization",
    "mgmt": "management",
    "mgr": "manager",
    "cfg": "configuration",
    "config": "configuration",
    "repo": "repository",
    "env": "environment",
    "infra": "infrastructure",
    "msg": "message",
    "msgs": "messages",
    "notif": "notification",
    "notifs": "notifications",
    "js": "javascript",
    "ts": "typescript",
    "gw": "gateway",
    "acct": "account",
    "org": "organization",
    "dept": "department",
    "prod": "production",
    "corp": "corporation",
    "intl": "international",
    "univ": "university",
    "gov": "government",
    "govt": "government",
    "mongo": "mongodb",
    "golang": "go",
    "jan": "january",
    "feb": "february",
    "mar": "march",
    "apr": "april",
    "jun": "june",
    "jul": "july",
    "aug": "august",
    "sep": "september",
    "sept": "september",
    "oct": "october",
    "nov": "november",
    "dec": "december",
}

# Tokens that say what kind of thing a name is, not which one: "AuthService" and "auth" are
# the same component. Legal forms (Inc, ООО, ПАО) belong here too.
DEFAULT_GENERIC: frozenset[str] = frozenset(
    {
        "service",
        "services",
        "inc",
        "llc",
        "ltd",
        "gmbh",
        "plc",
        "corporation",
        "company",
        "co",
        "the",
        "kompaniya",
        "ooo",
        "oao",
        "pao",
        "zao",
        "ao",
        "com",
        "net",
        "io",
        "ru",
        "javascript",  # "React.js", "ReactJS": the .js suffix names no new thing
        "pjsc",
        "jsc",
        "ojsc",
        "goskorporatsiya",  # "Госкорпорация Росатом"
        "of",
        "rossii",  # "МВД России", "ФНС России": the country adds nothing inside one country
        "rf",
        "russia",
        "g",  # "г. Москва"
        "gorod",
        # Qualifiers that name the kind of thing next to a brand (each measured on the alias
        # set; none lowered precision). Not "server" ("SQL Server" is not "SQL") and not
        # "platform" ("Platform Team" vs "Platform" got worse).
        "engine",  # "Docker Engine"
        "ci",  # "Jenkins CI", "GitLab CI"
        "lab",  # "Kaspersky Lab"
        "labs",
        "laboratoriya",  # "Лаборатория Касперского"
        "group",  # "Mail.ru Group", "Sber Group"
        "team",  # "SRE team", "Platform Team" (entities of type Team)
        "komanda",  # "команда платформы"
        "lang",  # "Go lang"
    }
)

# Vendor prefixes: "Apache Kafka" is Kafka, but "Google Cloud" is not "Amazon Cloud", so a
# vendor is dropped from the core only while the other side names no different vendor.
DEFAULT_VENDORS: frozenset[str] = frozenset(
    {"apache", "hashicorp", "atlassian", "microsoft", "ms", "google", "amazon", "aws", "oracle",
     "ibm", "adobe", "jetbrains", "elastic", "mozilla", "redhat", "kontur", "yandex"}
)  # fmt: skip

DEFAULT_STOPWORDS: frozenset[str] = frozenset(
    {
        "and",
        "of",
        "for",
        "the",
        "a",
        "an",
        "to",
        "in",
        "on",
        "&",
        "i",
        "v",
        "po",
        "dlya",
        "na",
        "o",
        "ob",
        "ot",
        "pri",
        "iz",
    }
)


@dataclass(frozen=True)
class AbbreviationTable:
    """Token expansions, generic tokens and acronym stopwords, all in normalized form."""

    abbreviations: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_ABBREVIATIONS))
    generic: frozenset[str] = DEFAULT_GENERIC
    stopwords: frozenset[str] = DEFAULT_STOPWORDS
    vendors: frozenset[str] = DEFAULT_VENDORS
    translations: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_TRANSLATIONS))
    names: Mapping[str, str] = field(default_factory=lambda: dict(KNOWN_NAMES))


def _mapping(data: dict[str, Any], key: str, path: Path) -> dict[str, str]:
    extra = data.get(key) or {}
    if not isinstance(extra, dict):
        raise ConfigError(f"'{key}' in {path} must be a mapping")
    return {str(k): "" if v is None else str(v) for k, v in extra.items()}


def load_table(path: Path | None) -> AbbreviationTable:
    """Build the table from ``path`` (YAML or JSON) merged over the defaults; None: defaults."""
    if path is None:
        return AbbreviationTable()
    import yaml  # only for a user's file: a search that never reads one skips its import

    try:
        text = path.read_text(encoding="utf-8")
        data: Any = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read abbreviations file {path}: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"abbreviations file {path} must hold a mapping")
    replace = bool(data.get("replace_defaults", False))
    abbreviations: dict[str, str] = {} if replace else dict(DEFAULT_ABBREVIATIONS)
    extra = _mapping(data, "abbreviations", path)
    abbreviations.update({k.casefold(): v.casefold() for k, v in extra.items()})
    translations = {} if replace else dict(DEFAULT_TRANSLATIONS)
    translations.update(
        {k.casefold(): v.casefold() for k, v in _mapping(data, "translations", path).items()}
    )
    names = {} if replace else dict(KNOWN_NAMES)
    names.update(_mapping(data, "names", path))
    generic = set() if replace else set(DEFAULT_GENERIC)
    generic.update(str(t).casefold() for t in data.get("generic") or [])
    stopwords = set() if replace else set(DEFAULT_STOPWORDS)
    stopwords.update(str(t).casefold() for t in data.get("stopwords") or [])
    vendors = set() if replace else set(DEFAULT_VENDORS)
    vendors.update(str(t).casefold() for t in data.get("vendors") or [])
    return AbbreviationTable(
        abbreviations,
        frozenset(generic),
        frozenset(stopwords),
        frozenset(vendors),
        translations,
        names,
    )
