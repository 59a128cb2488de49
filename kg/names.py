"""A name as the text means it, without the Markdown around it: `` `"timeout"` `` is ``timeout``.

Documentation writes names as code (`` `AuthService` ``), quotes them (``"timeout"``,
«Платежи») or stresses them (``**Ledger**``), and an LLM copies that punctuation into the
names it extracts; a heading carries it too. Kept, the same thing became two entities
(``timeout`` and `` `"timeout"` ``) and Browser showed the backticks. So every name taken from
text (extracted, imported from triplets, or read from a document's headings, titles, links and
front matter) passes :func:`plain_name` first. Punctuation inside a name stays where it is part
of it (``Don't Panic``, ``C++``, ``snake_case``, ``node.js``).
"""

from __future__ import annotations

import functools
import re

__all__ = ["heading_text", "plain_name"]

# A heading's attribute list, as VitePress, MkDocs, Pandoc and kramdown write it after the
# title: ``## Props {#props}``, ``# Install {#install .tabbed}``: an anchor, not a word.
_HEADING_ATTRIBUTES = re.compile(r"[ \t]*\{[ \t]*[#.][^{}\n]*\}[ \t]*$")


def heading_text(text: str) -> str:
    """A heading's title without a trailing attribute list: ``Доступность {#accessibility}``
    is ``Доступность``; a heading that is nothing but one keeps it (no empty title)."""
    stripped = _HEADING_ATTRIBUTES.sub("", text)
    return stripped if stripped.strip() else text


# Quotes of English, Russian and typewriter text, and emphasis marks: opening -> closing.
_PAIRS = {
    '"': '"', "'": "'", "“": "”", "”": "”", "„": "“", "‘": "’", "‚": "‘",
    "«": "»", "‹": "›", "*": "*", "~": "~",
}  # fmt: skip
_BACKTICKS = re.compile(r"`+")
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])")


def plain_name(text: str) -> str:
    """``text`` without code marks, ``**strong**`` and ``*emphasis*`` marks, and the quotes
    wrapped around it whole; spaces joined.

    An empty result means the text was only punctuation (the caller refuses such a name).
    """
    if len(text) <= _CACHED_CHARS:
        return _plain_cached(text)
    return _plain(text)


# Imports and extraction repeat the same names many times over; the result is pure, so short
# names are remembered (bounded: a hostile input cannot grow it).
_CACHED_CHARS = 256


@functools.lru_cache(maxsize=65536)
def _plain_cached(text: str) -> str:
    return _plain(text)


def _plain(text: str) -> str:
    text = _BACKTICKS.sub("", text)
    text = _STRONG.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\1", text)
    text = " ".join(text.split())
    # quotes wrapped around the whole name, pair by pair (a lone one may belong to it: users')
    while len(text) >= 2 and _PAIRS.get(text[0]) == text[-1]:
        text = text[1:-1].strip()
    return text
