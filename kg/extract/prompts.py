"""Every prompt the extraction sends, in one place, with the versions the cache keys on.

Bump ``PROMPT_VERSION`` whenever a prompt's wording changes and ``SCHEMA_VERSION`` whenever
:mod:`kg.extract.schema` changes shape or validation: cached extractions made under other
versions are then ignored rather than silently reused.

The chunk text reaches the model as a Jinja variable (``{{ chunk_text }}``) rendered by
instructor from the validation context, never spliced into the template: instructor renders
message templates whenever a context is passed, so text containing ``{{`` or ``{%`` must be a
value, not part of the template.
"""

from __future__ import annotations

from typing import Any

from kg.extract.ontology import Ontology

__all__ = ["PROMPT_VERSION", "SCHEMA_VERSION", "build_messages", "render_system_prompt"]

PROMPT_VERSION = "extract-2025.1"
SCHEMA_VERSION = "1"

SYSTEM_PROMPT = """\
You extract a knowledge graph from one passage of a document.

Return entities and the relations between them that the passage states.
- An entity is a specific named thing: a system, service, component, team, person,
  organization, product, document, policy, place, technology or concept.
- Keep every entity name in the language and spelling of the source text; do not translate
  names. Write descriptions in the language of the source text too.
- Put abbreviations and other spellings used in the passage into `aliases`.
- A relation joins two entities you listed; its `source` and `target` must be exactly an
  entity's name or alias. Do not invent relations the passage does not state.
- `predicate` is a short verb phrase in UPPER_SNAKE_CASE, e.g. DEPENDS_ON, OWNED_BY, CALLS,
  PART_OF (for Russian text you may use Russian words, e.g. ЯВЛЯЕТСЯ_ЧАСТЬЮ).
- `weight` from 0 to 1: how strongly or certainly the passage states the relation.
- `valid_from` / `valid_to`: only when the passage states when the fact started or stopped,
  as YYYY, YYYY-MM or YYYY-MM-DD. Otherwise leave them null.
- If the passage has nothing to extract, return empty lists.
"""

ONTOLOGY_TYPES = "Use only these entity types: {types}."
ONTOLOGY_PREDICATES = "Use only these predicates: {predicates}."

USER_TEMPLATE = """\
Extract entities and relations from this passage:

<passage>
{{ chunk_text }}
</passage>
"""


def render_system_prompt(ontology: Ontology | None) -> str:
    """The system prompt, with the ontology's allowed lists when one is configured."""
    parts = [SYSTEM_PROMPT]
    if ontology is not None and ontology.entity_types is not None:
        parts.append(ONTOLOGY_TYPES.format(types=", ".join(ontology.entity_types)))
    if ontology is not None and ontology.predicates is not None:
        parts.append(ONTOLOGY_PREDICATES.format(predicates=", ".join(ontology.predicates)))
    # Rendered by Jinja later: Ontology.build admits no braces, so nothing here is syntax.
    return "\n".join(parts)


def build_messages(ontology: Ontology | None) -> list[dict[str, Any]]:
    """Chat messages for one chunk; the text itself comes from ``context['chunk_text']``."""
    return [
        {"role": "system", "content": render_system_prompt(ontology)},
        {"role": "user", "content": USER_TEMPLATE},
    ]
