"""Name normalization: the keys two surface forms must share to be the same entity.

Why several keys: each one catches a different kind of variation, and each is cheap.

- ``compact``: NFKC, casefold, camelCase/snake/kebab split, Cyrillic transliterated to Latin,
  abbreviations expanded, light plural stemming, joined without spaces. ``auth-svc``,
  ``AuthService``, ``auth_service`` and ``Auth Service`` all give ``authenticationservice``;
  ``Кафка`` and ``Kafka`` both give ``kafka``. Equality here is the exact-normalized match.
- ``core``: ``compact`` without generic tokens (service, Inc, ООО …): ``PaymentService`` and
  ``Payment`` share it, ``PaymentsGateway`` does not.
- ``phonetic``: a coarse spelling key (c/k/q, ph/f, y/i, doubled letters) so that a
  transliteration (``Докер`` -> ``doker``) lands near the English spelling (``docker``).
- ``acronyms`` / ``short``: ``Identity and Access Management`` offers ``iam``; ``IAM`` is a
  short form. The resolver pairs them only within one type and only when unambiguous.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from kg.resolve.abbreviations import AbbreviationTable
from kg.resolve.russian import Morphology

if TYPE_CHECKING:
    from kg.resolve.concept import ConceptKeys

_CYRILLIC = {
    "а": "a", "б": "b", "в": "v", "г": "g", "д": "d", "е": "e", "ё": "e", "ж": "zh",
    "з": "z", "и": "i", "й": "y", "к": "k", "л": "l", "м": "m", "н": "n", "о": "o",
    "п": "p", "р": "r", "с": "s", "т": "t", "у": "u", "ф": "f", "х": "kh", "ц": "ts",
    "ч": "ch", "ш": "sh", "щ": "shch", "ъ": "", "ы": "y", "ь": "", "э": "e", "ю": "yu",
    "я": "ya", "і": "i", "ї": "yi", "є": "ye", "ґ": "g",
}  # fmt: skip
_TRANSLIT = str.maketrans(_CYRILLIC)
_CYRILLIC_RE = re.compile("[а-яёіїєґ]")
_LATIN_RE = re.compile("[a-z]")
_COUNTRY = frozenset({"rf", "rossii", "russia"})

_CAMEL_LOWER_UPPER = re.compile(r"(?<=[a-zà-ÿа-яё])(?=[A-ZÀ-ÞА-ЯЁ])")
_CAMEL_ACRONYM_WORD = re.compile(r"(?<=[A-ZÀ-ÞА-ЯЁ]{2})(?=[A-ZÀ-ÞА-ЯЁ][a-zà-ÿа-яё])")
_APOSTROPHES = re.compile(r"['’`ʼ]")
_TOKEN = re.compile(r"[^\W_]+")
_ZERO_MINOR = re.compile(r"(\d)\.0+\b")  # "OAuth 2.0" is "OAuth 2"
_WORD_CACHE_SIZE = 1 << 20
_GLUED_SUFFIXES = ("service", "svc")
_DIGIT_RUNS = re.compile(r"\d+")
_TITLE_WORDS = re.compile(r"[A-ZА-ЯЁ][a-zа-яё]+(?:-[A-ZА-ЯЁ][a-zа-яё]+)+")  # Single-Sign-On
_RUNS = re.compile(r"\d+|[^\W\d_]+")  # "python3" -> "python", "3"; "s3" -> "s", "3"
CODE_MAX_LEN = 2  # a standalone letter run this short is a code (eu, us, j), not a word
IDENTIFIER_CODE_MAX_LEN = 3  # in a name with a digit, 3 letters too (k8s-fra-1, v1-rc)

# Ordered rewrites for the phonetic key; "\x01" protects "ch" from the c -> k rule.
_PHONETIC_STEPS: tuple[tuple[str, str], ...] = (
    ("sch", "sh"), ("tch", "ch"), ("ch", "\x01"), ("ph", "f"), ("th", "t"), ("ck", "k"),
    ("c", "k"), ("q", "k"), ("x", "ks"), ("kh", "h"), ("w", "v"), ("y", "i"), ("ee", "i"),
    ("oo", "u"), ("ea", "e"), ("\x01", "ch"),
)  # fmt: skip
# The consonant skeleton, for names written in another script: what survives of a name when
# only its consonants are heard. "h" is dropped because Russian writes it "х" (kh) or not at
# all (ГитХаб, Прометей); "ckh"/"кх" is a k then a silent h (ClickHouse/Кликхаус); "w" before
# a consonant or at the end is a vowel (Windows/Виндоус, Airflow/Эйрфлоу); a final "s" is a
# plural or a Greek ending (Prometheus/Прометей).
_SKELETON_STEPS: tuple[tuple[str, str], ...] = (
    ("sch", "sh"), ("tch", "ch"), ("ph", "f"), ("ckh", "k"), ("kkh", "k"), ("kh", "h"),
    ("ck", "k"), ("sh", "\x02"),
    ("ch", "\x01"), ("zh", "\x03"), ("h", ""), ("ts", "s"), ("q", "k"), ("x", "ks"),
)  # fmt: skip
_SOFT_C = re.compile(r"c(?=[eiy])")
_WEAK_W = re.compile(r"w(?![aeiouy])")
_VOWELS = re.compile(r"[aeiouy]+")
_DOUBLED = re.compile(r"(.)\1+")
_SILENT_E = re.compile(r"(?<=[^aeiou])e$")
# Russian case and gender endings, transliterated, longest first: "Кафке"/"Кафки" ~ "Кафка".
_RU_ENDINGS = (
    "iyami", "yami", "ami", "yakh", "akh", "ogo", "ego", "omu", "emu", "aya", "yaya", "oye",
    "uyu", "yuyu", "ykh", "ikh", "oy", "ey", "om", "em", "iy", "yy", "ym", "im",
    "ye", "ya", "yu", "a", "u", "e", "y", "i", "o",
)  # fmt: skip


# Cyrillic letters drawn like Latin ones: inside a code with digits (1С, 1C) they are the
# Latin letter typed on the other keyboard layout, not a sound to transliterate.
_HOMOGLYPHS = str.maketrans("асеорхкмтвну", "aceopxkmtbhy")
_HAS_DIGIT = re.compile(r"\d")


_SHORT_LETTER_RUN = re.compile(r"(?<![^\W\d_])[^\W\d_]{1,2}(?![^\W\d_])")
# One Latin letter per Cyrillic letter, as abbreviations are written in Latin (РЖД -> RZD,
# ЦБ -> CB): the first letter of the transliteration, with the usual choices for the rest.
_LETTERWISE = str.maketrans(
    {
        **{k: v[:1] for k, v in _CYRILLIC.items() if v},
        "ц": "c",
        "ч": "c",
        "щ": "s",
        "х": "h",
        "ю": "u",
        "я": "y",
    }
)


def transliterate_word(word: str) -> str:
    """:func:`transliterate` for one casefolded word; in a code with digits a short letter
    run keeps its look (``1С`` typed on the Russian layout is ``1C``)."""
    if _HAS_DIGIT.search(word):
        word = _SHORT_LETTER_RUN.sub(lambda m: m.group().translate(_HOMOGLYPHS), word)
    return transliterate(word)


def letterwise(short: str) -> str:
    """``ржд`` -> ``rzd``, ``цб`` -> ``cb``: an abbreviation's letters one for one in Latin."""
    return short.translate(_LETTERWISE)


def transliterate(text: str) -> str:
    """Cyrillic to Latin (casefolded input), with ``дж -> j`` so ``Джава`` meets ``Java``."""
    return text.replace("дж", "j").translate(_TRANSLIT)


def strip_accents(text: str) -> str:
    """``garcía`` -> ``garcia``; run after transliteration so ``й`` has become ``y``."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@lru_cache(maxsize=1 << 18)
def phonetic(text: str) -> str:
    """A coarse spelling key over Latin text; only used for similarity, never for identity."""
    for old, new in _PHONETIC_STEPS:
        text = text.replace(old, new)
    return _SILENT_E.sub("", _DOUBLED.sub(r"\1", text))


@lru_cache(maxsize=1 << 18)
def skeleton(token: str) -> str:
    """``github``/``gitkhab`` -> ``gtb``, ``windows``/``vindous`` -> ``vnd``: consonants only.

    Coarse on purpose and only ever compared across scripts (a Cyrillic name with a Latin
    one), and only when long enough to be evidence (see ``score.skeletons_match``).
    """
    for old, new in _SKELETON_STEPS:
        token = token.replace(old, new)
    token = _WEAK_W.sub("", _SOFT_C.sub("s", token)).replace("c", "k").replace("w", "v")
    token = _VOWELS.sub("", _DOUBLED.sub(r"\1", token))  # "Teterriri" keeps t-t-r-r
    if len(token) > 1 and token.endswith("s"):
        token = token[:-1]
    return token.replace("\x01", "ch").replace("\x02", "sh").replace("\x03", "zh")


# Transliteration schemes differ most at these spots: «ий»/«ый» (-iy, -y, -i), «е» after a
# vowel (ye / e), «ё» (yo / e), «кс» / x; then the spelling key. Coarse on purpose: used for
# person names and concept words, which other rules constrain.
_NAME_STEPS: tuple[tuple[str, str], ...] = (
    ("iy", "y"), ("yy", "y"), ("ij", "y"), ("yo", "e"), ("io", "e"), ("x", "ks"),
    ("ye", "e"), ("ie", "e"), ("ya", "ia"), ("yu", "iu"),
)  # fmt: skip
_VOWEL_Y = re.compile(r"(?<=[aeiou])[yi](?=[^aeiou]|$)")
_SKY = re.compile(r"(?<=sk)i$")


@lru_cache(maxsize=1 << 18)
def name_key(word: str) -> str:
    """``Чайковский``/``Tchaikovsky`` -> ``chakovsk``; ``Diadoc``/``Диадок`` -> ``diadok``."""
    latin = transliterate_word(unicodedata.normalize("NFKC", word).casefold())
    for old, new in _NAME_STEPS:
        latin = latin.replace(old, new)
    return _SKY.sub("", _VOWEL_Y.sub("", phonetic(latin)))


_EN_SUFFIXES = ("ings", "ing", "ers", "er", "ed")


@lru_cache(maxsize=1 << 18)
def english_stem(token: str) -> str:
    """``logging`` -> ``log``, ``limiter``/``limiting`` -> ``limit``: one derivational ending off.

    Only while at least 4 letters remain (``user``, ``order`` stay), then doubled letters
    collapse; used for the ``derived`` key, never for identity.
    """
    for suffix in _EN_SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= 4:
            return _DOUBLED.sub(r"\1", token[: -len(suffix)])
    return _DOUBLED.sub(r"\1", token)


@lru_cache(maxsize=1 << 18)
def strip_ending(token: str) -> str:
    """Drop one Russian case ending (transliterated) while at least 3 letters remain."""
    for ending in _RU_ENDINGS:
        if token.endswith(ending) and len(token) - len(ending) >= 3:
            return token[: -len(ending)]
    return token


def camel_split(word: str) -> str:
    """``AuthService`` -> ``Auth Service``, ``HTTPServer`` -> ``HTTP Server``; ``OAuth`` stays."""
    return _CAMEL_ACRONYM_WORD.sub(" ", _CAMEL_LOWER_UPPER.sub(" ", word))


def _stem(token: str) -> str:
    """Drop an English plural ``s`` (services -> service) but keep ``ss``, ``us``, ``is``."""
    if len(token) > 4 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


@dataclass(frozen=True, slots=True)
class Form:
    """Everything the scorer needs about one surface form, computed once."""

    text: str
    tokens: tuple[str, ...]
    compact: str
    core: tuple[str, ...]
    core_compact: str
    phonetic: str
    phonetic_core: tuple[str, ...]
    stem_key: str
    vendor: str | None
    acronyms: tuple[str, ...]
    short: str | None
    cyrillic: bool
    codes: tuple[str, ...]
    skeleton: str
    derived: str
    digits: tuple[str, ...]  # digit runs of ``compact``, in order
    core_digits: tuple[str, ...]
    concept: tuple[str, ...] = ()  # content words in English, unordered (kg/resolve/concept.py)
    nominative: bool = True  # False: an inflected Russian form («сервиса платежей»)
    mixed: bool = False  # Cyrillic and Latin words in one name («сервис auth-svc»)
    expanded: frozenset[str] = frozenset()  # codes that are known short names (ИБ, АБ)


@dataclass(frozen=True)
class Normalizer:
    """Turns names into :class:`Form` s using an :class:`AbbreviationTable`."""

    table: AbbreviationTable

    @cached_property
    def _protected(self) -> frozenset[str]:
        """Words kept whole although camelCase: ``PostgreSQL``, ``MongoDB``, ``JavaScript``."""
        words = set(self.table.abbreviations) | set(self.table.vendors)
        words.update(v for v in self.table.abbreviations.values() if " " not in v)
        return frozenset(words)

    @cached_property
    def concepts(self) -> ConceptKeys:
        from kg.resolve.concept import ConceptKeys

        return ConceptKeys(self.table, self.analyse, name_key)

    def analyse(self, word: str) -> tuple[str, ...]:
        """A word's normalized, expanded, plural-stemmed tokens (``UsersDB``: user, database)."""
        found = self._word_cache.get(word)
        if found is None:
            found = self._word(word)
        return found[2]

    def words(self, name: str) -> tuple[str, ...]:
        """Normalized, expanded words of ``name`` (not stemmed): what the hashing embedder sees."""
        out: list[str] = []
        for parts, _ in self._word_parts(name):
            out.extend(parts)
        return tuple(out)

    def _word_parts(self, name: str) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        """The analysis of each whitespace/punctuation-separated word: (words, stemmed words).

        Two one-part words that the table knows as one (``mongo db``, ``Java Script``) are
        analysed as one word, like ``PostgresSQL`` is inside a word (see ``_joins``).
        """
        text = (
            name if name.isascii() else Morphology.nominative(unicodedata.normalize("NFKC", name))
        )
        if not text.isalnum():  # plain one-word names skip the rewrites
            text = _APOSTROPHES.sub("", text).replace("&", " and ")
            if "." in text:
                text = _ZERO_MINOR.sub(r"\1", text)
        out: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        cache = self._word_cache
        previous: tuple[str, ...] = ()
        for word in _TOKEN.findall(text):
            found = cache.get(word)
            if found is None:
                found = self._word(word)
                if len(cache) < _WORD_CACHE_SIZE:
                    cache[word] = found
            raw, parts, stemmed = found
            if len(previous) == 1 and len(raw) == 1:
                joined = self._joins(previous[0], raw[0])
                if joined is not None:
                    previous = (joined,)
                    analysed = self._analyse(previous)
                    out[-1] = (analysed, tuple(map(_stem, analysed)))
                    continue
            previous = raw
            out.append((parts, stemmed))
        return out

    @cached_property
    def _word_cache(self) -> dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]:
        """Names repeat their words a lot; a word's analysis is pure, so remember it."""
        return {}

    @cached_property
    def _absorbing(self) -> Mapping[str, str]:
        """Abbreviations whose one-word expansion starts with them: ``postgres``, ``mongo``."""
        return {
            short: whole
            for short, whole in self.table.abbreviations.items()
            if " " not in whole and whole != short and whole.startswith(short)
        }

    def _joins(self, a: str, b: str) -> str | None:
        """``a b`` written apart but known as one word: ``mongo db``, ``Postgres SQL``.

        Either the two together are a word the table knows (``mongodb``, ``javascript``),
        or ``a`` abbreviates a word that already ends in ``b`` (``postgres`` -> postgresql,
        so ``PostgresSQL`` is not PostgreSQL plus SQL).
        """
        if a + b in self._protected:
            return a + b
        whole = self._absorbing.get(a)
        if (
            whole is not None
            and len(b) >= 2
            and whole.endswith(b)
            and len(a) + len(b) >= len(whole)
        ):
            return a
        return None

    def _word(self, word: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """Raw parts of one word (camelCase split, table words kept whole), their analysis,
        and the analysis with English plurals stemmed."""
        folded = strip_accents(transliterate_word(word.casefold()))
        if folded in self._protected:
            raw = [folded]
        else:
            raw = _TOKEN.findall(strip_accents(transliterate_word(camel_split(word).casefold())))
        joined: list[str] = []
        for part in raw:
            glued = self._joins(joined[-1], part) if joined else None
            if glued is None:
                joined.append(part)
            else:
                joined[-1] = glued
        analysed = self._analyse(joined)
        return tuple(joined), analysed, tuple(map(_stem, analysed))

    def _analyse(self, raw: Sequence[str]) -> tuple[str, ...]:
        out: list[str] = []
        for part in raw:
            for token in self._unglue(part):
                out.extend(self._expand(token))
        return tuple(out)

    def tokens(self, name: str) -> tuple[str, ...]:
        """``words`` with light plural stemming: the units keys and scores are built from.

        A name with no letters or digits (``"!!!"``) is its own single token.
        """
        return self._tokens(name, self._word_parts(name))

    @staticmethod
    def _tokens(
        name: str, word_parts: list[tuple[tuple[str, ...], tuple[str, ...]]]
    ) -> tuple[str, ...]:
        out: list[str] = []
        for _, stemmed in word_parts:
            out.extend(stemmed)
        return tuple(out) or (name.strip().casefold(),)

    def key(self, name: str) -> str:
        """The exact-match key (see module docstring)."""
        return "".join(self.tokens(name))

    def form(self, name: str) -> Form:
        """Analyze one surface form."""
        word_parts = self._word_parts(name)
        tokens = self._tokens(name, word_parts)
        unstemmed = [w for parts, _ in word_parts for w in parts]
        if len(unstemmed) != len(tokens):
            unstemmed = list(tokens)
        generic = self.table.generic
        vendor: str | None = None
        rest = tokens
        if tokens and tokens[0] in self.table.vendors and any(t not in generic for t in tokens[1:]):
            vendor, rest = tokens[0], tokens[1:]
        core = tuple(t for t in rest if t not in generic) or rest
        offset = len(tokens) - len(rest)
        core_words = [
            w for t, w in zip(rest, unstemmed[offset:], strict=True) if t not in generic
        ] or unstemmed[offset:]
        core_compact = "".join(core)
        compact = "".join(tokens)
        codes = self._codes(word_parts)
        nfkc = unicodedata.normalize("NFKC", name)
        folded = nfkc.casefold()
        cyrillic = bool(_CYRILLIC_RE.search(folded))
        nominative = not cyrillic or Morphology.is_nominative(nfkc)
        return Form(
            text=name,
            tokens=tokens,
            compact=compact,
            core=core,
            core_compact=core_compact,
            phonetic=phonetic(core_compact),
            phonetic_core=tuple(phonetic(t) for t in core),
            # from unstemmed words: "Яндекса" -> yandeks, as "Яндекс" (not plural-stemmed yandek)
            stem_key=phonetic("".join(strip_ending(w) for w in core_words)),
            vendor=vendor,
            acronyms=self._acronyms(folded, name),
            short=_short_form(name, self.table.generic),
            cyrillic=cyrillic,
            codes=codes,
            skeleton=skeleton(core_compact),
            derived="".join(english_stem(t) for t in core),
            digits=tuple(_DIGIT_RUNS.findall(compact)),
            core_digits=tuple(_DIGIT_RUNS.findall(core_compact)),
            concept=self.concepts.key(name),
            expanded=self.concepts.known_codes(codes),
            nominative=nominative,
            mixed=cyrillic and bool(_LATIN_RE.search(folded)),
        )

    def _codes(self, word_parts: list[tuple[tuple[str, ...], tuple[str, ...]]]) -> tuple[str, ...]:
        """Digit runs and short standalone letter runs: the parts that identify by being exact.

        ``k8s-eu-1`` -> ``(1, eu)``, ``PostgreSQL 13`` -> ``(13,)``, ``J. Smith`` -> ``(j,)``.
        Words are split where letters meet digits (``python3`` -> ``python``, ``3``) so a
        glued version compares with a spaced one. A short letter run counts only as a word of
        its own (the ``hu`` of ``GitHub`` is no code, the ``eu`` of ``eu-west`` is) and only up to
        2 letters, 3 in a name with a digit: ``log``, ``api``, ``web`` are words.
        Stopwords and vendors never count; generic tokens (``ru``, ``inc``, ``co``) count only
        in identifier-like names (those with a digit), where ``k8s-ru-1`` names a region, not a
        legal form or a domain.
        """
        runs: list[tuple[str, bool]] = []
        for parts, _ in word_parts:
            standalone = len(parts) == 1
            runs.extend((run, standalone) for part in parts for run in _RUNS.findall(part))
        identifier = any(run.isdigit() for run, _ in runs)
        max_len = IDENTIFIER_CODE_MAX_LEN if identifier else CODE_MAX_LEN
        table = self.table
        codes = [
            run
            for run, standalone in runs
            if run.isdigit()
            or (
                standalone
                and len(run) <= max_len
                and run not in table.stopwords
                and run not in table.vendors
                and (identifier or run not in table.generic)
            )
        ]
        return tuple(sorted(codes))

    def _unglue(self, token: str) -> list[str]:
        if token in self.table.abbreviations:
            return [token]
        for suffix in _GLUED_SUFFIXES:
            if token.endswith(suffix) and len(token) >= len(suffix) + 3:
                return [token[: -len(suffix)], suffix]
        return [token]

    def _expand(self, token: str) -> list[str]:
        table = self.table.abbreviations
        expanded = table.get(token)
        if expanded is None:
            expanded = table.get(_stem(token), token)
        return expanded.split()

    def _acronyms(self, folded: str, text: str) -> tuple[str, ...]:
        """Initials of the words of a multi-word name, in both scripts, without stopwords."""
        if len(folded.split()) < 2 and not _TITLE_WORDS.fullmatch(text.strip()):
            return ()  # "auth-svc" is one word, not an acronym source; "Single-Sign-On" is
        original = _TOKEN.findall(unicodedata.normalize("NFKC", text))
        words = _TOKEN.findall(folded)
        if len(words) < 2 or len(original) != len(words):
            return ()
        # an abbreviation inside a long name counts whole: «Трудовой кодекс РФ» -> ткрф
        whole = [2 <= len(w) <= 5 and w.isupper() for w in original]
        found: list[str] = []
        for script_words in (words, [transliterate(w) for w in words]):
            kept = [(w, caps) for w, caps in zip(script_words, whole, strict=True)]
            content = [
                (w, caps) for w, caps in kept if transliterate(w) not in self.table.stopwords
            ]
            for chosen in (content, kept):
                if len(chosen) >= 2 and all(w[0].isalpha() for w, _ in chosen):
                    for initials in (
                        "".join(w if caps else w[0] for w, caps in chosen),
                        "".join(w[0] for w, _ in chosen),
                    ):
                        if initials not in found:
                            found.append(initials)
        return tuple(found)


def _short_form(name: str, generic: frozenset[str] = frozenset()) -> str | None:
    """``IAM``, ``МВД``, ``IaC``: one token, 2-6 characters, at least two capitals.

    Abbreviations written apart are one short form (``ТК РФ`` -> ``ткрф``, ``ЦБ РФ``), and a
    legal form beside one is left out (``ОАО «РЖД»`` -> ``ржд``).
    """
    text = unicodedata.normalize("NFKC", name).strip()
    parts = _TOKEN.findall(text)
    if len(parts) > 1 and all(p.isupper() and len(p) <= 5 for p in parts):
        kept = [p for p in parts if transliterate(p.casefold()) not in generic - _COUNTRY] or parts
        text = "".join(kept)
    if not 2 <= len(text) <= 6 or not text.isalnum():
        return None
    if sum(1 for c in text if c.isupper()) < 2:
        return None
    return text.casefold()
