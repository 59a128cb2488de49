"""Write docs/configuration.md from kg.settings (run after changing a setting).

.venv/bin/python scripts/config_docs.py
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, SecretStr

from kg.settings import Settings

OUT = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"

HEAD = """# Configuration

kg reads its settings once, at the edge (CLI command, API factory), from environment variables
with the `KG_` prefix and `__` between section and field, and from a `.env` file in the working
directory (`KG_ENV_FILE` names another file; set empty, no file is read: the test suite does
that, so a developer's `.env` cannot steer a test). Lists and maps take JSON
(`KG_SEARCH__TYPE_WEIGHTS='{"DEPENDS_ON": 0.9}'`); `KG_API__API_KEYS`,
`KG_API__ALLOWED_HOSTS` and `KG_API__TRUSTED_PROXIES` also take a comma-separated list. The
Neo4j connection also honours `NEO4J_URI`, `NEO4J_USERNAME`, `NEO4J_PASSWORD` and
`NEO4J_DATABASE`; the `KG_` names win when both are set. Secrets are `SecretStr`: printed as
`**********`, never logged. With no Neo4j password configured, kg reads the one the local
server generated on its first start from `.kg/neo4j/password` (mode 0600; `kg neo4j status`
says where). `KG_NEO4J__URI` takes `bolt://`, `neo4j://` (routing: reads to a cluster's
secondaries, writes to the leader) and their TLS forms `bolt+s://`, `neo4j+s://` (Aura); see
[scaling.md](scaling.md).

Every LLM use (extraction, answers and questions to templates, community reports and global
search, the `mode=auto` router, question translation, entity adjudication) reads the shared
`llm` section. The sections `extract`, `answer`, `reports`, `router` and `translate` override
it field by field for their use only: a field they leave unset comes from `llm` (`translate`
reads `answer` first, as translations always ran on the answer endpoint and budget).
Embedding endpoints keep their own fields (`KG_RESOLVE__EMBED_*`, `KG_CHUNKS__EMBED_*`).

Deprecated: before the `llm` section, `KG_EXTRACT__BASE_URL`, `KG_EXTRACT__MODEL`,
`KG_EXTRACT__API_KEY` and `KG_EXTRACT__MODE` set the endpoint of every use. Set while the
matching `KG_LLM__` name is unset, they still do for one release (they move to `llm`, with a
`DeprecationWarning`); set them as `KG_LLM__BASE_URL`, `KG_LLM__MODEL`, `KG_LLM__API_KEY`,
`KG_LLM__MODE`. With the `KG_LLM__` name set too, the `KG_EXTRACT__` value is an override
for extraction only. `KG_ANSWER__*` keep their meaning: the answer use's own endpoint.

This page is generated from `kg/settings.py` by `scripts/config_docs.py`; a test keeps it current.
"""


def _default(field: object) -> str:
    from pydantic.fields import FieldInfo

    assert isinstance(field, FieldInfo)
    factory = field.default_factory
    value = factory() if factory is not None else field.default  # type: ignore[call-arg]
    if isinstance(value, SecretStr):
        return "(secret)"
    if value is None:
        return "unset"
    return f"`{value}`".replace(str(Path.home()), "~")


def render() -> str:
    parts = [HEAD]
    for section, info in Settings.model_fields.items():
        model = info.annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            note = f": {info.description}" if info.description else ""
            parts.append(f"\n`KG_{section.upper()}` — default {_default(info)}{note}\n")
            continue
        doc = (model.__doc__ or "").strip().splitlines()[0]
        parts.append(f"\n## {section}: {doc}\n\n| Variable | Default | Notes |\n|---|---|---|")
        parts += _rows(f"KG_{section.upper()}", model)
    return "\n".join(parts) + "\n"


def _rows(prefix: str, model: type[BaseModel]) -> list[str]:
    """One table row per field; a nested model (`search.rerank`) lists its own fields."""
    rows: list[str] = []
    for name, field in model.model_fields.items():
        env = f"{prefix}__{(field.alias or name).upper()}"  # the name the environment uses
        nested = field.annotation
        if isinstance(nested, type) and issubclass(nested, BaseModel):
            rows += _rows(env, nested)
            continue
        note = (field.description or "").replace("|", "\\|")
        rows.append(f"| `{env}` | {_default(field)} | {note} |")
    return rows


if __name__ == "__main__":
    OUT.write_text(render())
    print(f"wrote {OUT}")
