"""A question in the corpus's other languages, through the LLM (``search.translate``).

Offline, a Russian question reaches English text only through names (aliases in both scripts,
transliteration) and the words both languages share. With an LLM configured, local search asks
it once per question for the question in each language the corpus holds but the question is not
written in, with the entity names it mentions as they would be written in that language; the
text index of each language then gets its own translation, the dense signal the English one,
and question linking the translated names too.

The answer is a validated :class:`~kg.search.models.QuestionTranslation` (instructor); the call
is counted against the request's LLM budget (``answer.max_calls``, ``answer.max_tokens``, as
for answers) and the result cached per question and target languages, so asking again costs
nothing. A failing endpoint never fails the search: it runs on the original question and says
so in ``SearchResponse.translation_error``.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence

from kg.languages import BY_CODE, LanguageCode
from kg.llm import LLMEndpoint, LLMUsage, ask
from kg.search.models import QuestionTranslation, TranslatedQuestion
from kg.settings import Settings

#: Translations kept in memory, least recently used dropped first.
CACHE_SIZE = 4096

_SYSTEM = (
    "You translate search questions for a knowledge-graph search engine. Translate the user's "
    "question into each requested language, faithfully and without answering it. Keep product, "
    "service and code names as they are usually written in that language (English technical "
    "names usually stay in Latin script). List, per language, the named entities the question "
    "mentions, written as they would appear in documents in that language."
)


class Translator:
    """Question translation with a per-process cache; one instance per search service."""

    def __init__(self, settings: Settings) -> None:
        self._endpoint = LLMEndpoint.from_settings(settings, "translate")
        self._cache: OrderedDict[tuple[str, tuple[str, ...]], list[TranslatedQuestion]] = (
            OrderedDict()
        )
        self._lock = asyncio.Lock()
        self.usage = LLMUsage()  # what this process has spent on translations

    async def translate(
        self, question: str, languages: Sequence[LanguageCode]
    ) -> tuple[dict[LanguageCode, TranslatedQuestion], LLMUsage]:
        """The question in each of ``languages``, and what it cost (zero when cached)."""
        key = (question, tuple(sorted(languages)))
        async with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return _by_language(cached, languages), LLMUsage()
        names = ", ".join(f"{BY_CODE[code].name} ({code})" for code in key[1])
        messages = [
            {"role": "system", "content": _SYSTEM},
            {"role": "user", "content": f"Languages: {names}\nQuestion: {question}"},
        ]
        answer, usage = await ask(
            self._endpoint, QuestionTranslation, messages, context={"languages": key[1]}
        )
        async with self._lock:
            self._cache[key] = answer.translations
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
            self.usage.calls += usage.calls
            self.usage.prompt_tokens += usage.prompt_tokens
            self.usage.completion_tokens += usage.completion_tokens
        return _by_language(answer.translations, languages), usage


def _by_language(
    translations: Sequence[TranslatedQuestion], languages: Sequence[LanguageCode]
) -> dict[LanguageCode, TranslatedQuestion]:
    wanted = set(languages)
    found: dict[LanguageCode, TranslatedQuestion] = {}
    for item in translations:
        if item.language in wanted:
            found.setdefault(item.language, item)
    return found
