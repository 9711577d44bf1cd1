"""Words of any language: the package's one tokenizer module.

Every word rule beyond the core's lives here, once, and every other module
calls it (the core keeps its spec rule, ``poolsplit.significant_words``,
because it must be vendorable alone; its byte twin, the ASCII splitter
of a batch and of one text, is `relevance.batch.byte_runs`). The rules,
each named for what it does:

* `words`: BM25's Unicode words (steps 1 to 3 below), and [`Analyzer`][]
  on top of them: stems, stopwords, CJK bigrams, Hebrew particles (steps 4
  to 6).
* `lower_words`: whole lower-cased words in order, for matching task
  signals and detail words.
* `pair_words` and `content_words`: the words a near-duplicate
  comparison counts.
* `embedding_words`: the hash embedder's features.

Each of the last three says why it differs from `words`.

The relevance-first scorer's rule. The core's word rule (``poolsplit.significant_words``) is the spec's:
ASCII runs of three or more characters. It gives Hebrew, Chinese, Greek or
accented words no lexical relevance at all and cannot see that "refunds"
answers "refund". This module is the rule for everything beyond the core:

1. **Normalise**: invisible format characters (zero-width space, soft
   hyphen, ...) removed, as every text comparison removes them
   (`visible`); NFKC (full-width letters and ligatures become plain ones)
   then ``casefold`` (``"Straße"`` matches ``"STRASSE"``); combining marks
   are then dropped, so pointed and unpointed Hebrew match.
2. **Words**: maximal runs of letters and digits of any script (``_`` and
   punctuation separate words); a lone Latin letter is dropped (the ``s``
   of ``Maya's``, the ``t`` of ``don't``: noise in every text).
3. **CJK**: Chinese, Japanese and Korean runs have no spaces between words;
   each run becomes its overlapping character **bigrams** (a one-character
   run is kept as it is). Bigrams need no dictionary and work offline for
   all three scripts, where a segmenter such as jieba knows Chinese only
   and ships a 20 MB dictionary; the price is some noise bigrams that BM25's
   document frequencies weigh down.
4. **Language** of a text: by script (Cyrillic: Russian, Greek, Arabic),
   else by counting the stopwords of each configured Latin-script language
   (a cheap heuristic, right on sentences, unsure on three-word notes: then
   ``default_language``).
5. **Stem** each word with the Snowball stemmer of the text's language
   (``snowballstemmer``, which uses PyStemmer's C code when installed) and
   drop that language's stopwords. A query is short and its language a
   guess, so each query word keeps its stems in *every* configured
   language (a set of variants); it matches a document word equal to any.
   A word the stemmer strips to nothing (Greek ``ιζε``) stays itself: an
   empty stem would make every such word one term.
6. **Hebrew** has no Snowball stemmer, and its particles are written joined
   to the next word: "the refund" is one word, ``ההחזר``, "and in the
   house" is ``ובבית``. A Hebrew word loses its leading particle letters
   (ו ה ב כ ל מ ש) one by one while three letters or more remain, whatever
   the text's language, in a document and a query alike. Stripping to a
   fixed length, not a list of particle spellings, is what makes
   ``stem(particle + word) == stem(word)`` hold for every word of three
   letters or more, so a query written with or without the article finds
   the entry either way; the price is that a root starting with one of
   those letters can meet another word's (BM25's document frequencies
   weigh such collisions down).

Without ``snowballstemmer`` installed words are not stemmed ("refund" no
longer finds "refunds"); [`STEMMING`][] says so, and [`Analyzer`][]
warns once ([`StemmingUnavailableWarning`][]) rather than rank silently
worse. The ``relevance`` extra (and the framework extras) install it.
"""

from __future__ import annotations

import functools
import re
import unicodedata
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

from ..poolsplit import MIN_WORD_LENGTH, visible
from ..poolsplit import STOPWORDS as CORE_STOPWORDS

try:  # pragma: no cover - exercised by the environment, not by a test
    import snowballstemmer as _snowball
except ImportError:  # pragma: no cover
    _snowball = None

__all__ = [
    "Analyzer",
    "QUERY_CAP_NOTE",
    "QUERY_WORDS",
    "STEMMING",
    "StemmingUnavailableWarning",
    "normalise",
    "words",
    "fold",
    "lower_words",
    "pair_words",
    "content_words",
    "embedding_words",
    "detect_language",
    "hebrew_stem",
    "query_cap_note",
]

#: Whether Snowball stemming is available (``snowballstemmer`` installed).
STEMMING = _snowball is not None

_WORD = re.compile(r"[^\W_]+")
# The same runs on ASCII text, a lone letter dropped by the pattern itself:
# a run of two or more is matched whole from its start, a one-character run
# only when it is a digit.
_ASCII_WORD = re.compile(r"[a-z0-9]{2,}|[0-9]")
# Han (with extensions and compatibility ideographs), kana, Hangul syllables.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002ffff"
_CJK_RUN = re.compile("([%s]+)" % _CJK)
_CYRILLIC = re.compile("[\u0400-\u04ff]")
_GREEK = re.compile("[\u0370-\u03ff]")
_ARABIC = re.compile("[\u0600-\u06ff]")
_HEBREW_WORD = re.compile("[\u05d0-\u05ea]+")
# The particles written joined to the next word: and, the, in, as, to, from, that.
_HEBREW_PARTICLES = frozenset("\u05d5\u05d4\u05d1\u05db\u05dc\u05de\u05e9")
_HEBREW_MIN = 3


class StemmingUnavailableWarning(UserWarning):
    """``snowballstemmer`` is not installed: words are compared unstemmed."""


class _Marks(dict):  # type: ignore[type-arg]
    """``str.translate`` table deleting combining marks, filled on demand
    (a full table of the Unicode range would cost a second to build)."""

    def __missing__(self, code: int) -> Optional[int]:
        if unicodedata.category(chr(code)) in ("Mn", "Mc", "Me"):
            self[code] = None
            return None
        raise LookupError(code)


_MARKS = _Marks()


def fold(text: str) -> str:
    """Invisible characters removed (`visible`), NFKC, casefold: the
    comparison form `normalise`
    and the duplicates' ``normalise_text`` start from."""
    return unicodedata.normalize("NFKC", visible(text)).casefold()


def normalise(text: str) -> str:
    """Invisible characters removed (`visible`),
    NFKC, casefold, combining marks removed (steps 1 of the module doc)."""
    folded = fold(text)
    return folded if folded.isascii() else folded.translate(_MARKS)


def words(text: str) -> List[str]:
    """The normalised words of ``text`` in order, CJK runs as bigrams
    (steps 1 to 3), neither stemmed nor stopword-filtered."""
    folded = normalise(text)
    if folded.isascii():  # the common case, in one pass: no CJK to split
        return _ASCII_WORD.findall(folded)
    found: List[str] = []
    for word in _WORD.findall(folded):
        if word.isascii():
            if len(word) > 1 or word.isdigit():
                found.append(word)
            continue
        for part in _CJK_RUN.split(word):
            if not part:
                continue
            if _CJK_RUN.fullmatch(part):
                found.extend([part] if len(part) == 1 else [part[k : k + 2] for k in range(len(part) - 1)])
            else:
                found.append(part)
    return found


def lower_words(text: str) -> Tuple[str, ...]:
    """The lower-cased words of ``text``, in order: runs of letters and
    digits of any script (``_`` and punctuation separate words), invisible
    characters removed first (`visible`).

    Differs from `words` on
    purpose: task signals and detail words match whole words as written
    (``"fix"`` is not ``"fixing"``, a lone letter counts, a CJK run stays
    one word), so there is no NFKC, no casefold beyond ``lower``, no
    bigrams and no dropped letters.

    Example:
        >>> lower_words("Run_Test, a pull-request")
        ('run', 'test', 'a', 'pull', 'request')
    """
    return tuple(_WORD.findall(visible(text).lower()))


# The CJK characters of a near-duplicate comparison (no supplementary planes).
_PAIR_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_DIGIT = re.compile(r"\d")


def pair_words(folded: str) -> List[str]:
    """The words of an already folded text (`fold`) for a near-duplicate
    comparison: runs of letters and digits, a run holding a CJK character
    as its overlapping character pairs.

    Differs from `words` on
    purpose: duplicates compare what was written, so lone letters stay
    (``"keep a"`` is not ``"keep b"``), combining marks are kept, and a
    mixed run (``"v2版本"``) becomes pairs whole, as the stored duplicate
    keys were built.

    Example:
        >>> pair_words("a 退款规则 x1")
        ['a', '退款', '款规', '规则', 'x1']
    """
    out: List[str] = []
    for word in _WORD.findall(folded):
        if _PAIR_CJK.search(word) and len(word) > 1:
            # A CJK run has no spaces: its character pairs stand for words.
            out.extend(word[i : i + 2] for i in range(len(word) - 1))
        else:
            out.append(word)
    return out


def content_words(text: str) -> FrozenSet[str]:
    """The words a near-duplicate comparison counts, the core's
    significant words widened to every script: Unicode words of the
    folded text of 3+ characters minus the core's stopwords, every word
    with a digit ("7" in "db-7"), and CJK runs as overlapping character
    pairs (`pair_words`).

    Differs from `words` on
    purpose: short function words ("is", "of", "to") would otherwise make
    "X is A" and "Y is A" look alike, and a duplicate is judged on the
    words themselves, unstemmed.
    """
    return frozenset(
        t
        for t in pair_words(fold(text))
        if _DIGIT.search(t) or _PAIR_CJK.search(t) or (len(t) >= MIN_WORD_LENGTH and t not in CORE_STOPWORDS)
    )


def embedding_words(text: str) -> FrozenSet[str]:
    """The hash embedder's word features: the Unicode
    `words`, an ASCII one only
    when the core would count it (3+ characters, not a core stopword).

    Differs from `words` on
    purpose: on ASCII text the features stay exactly the core's significant
    words (what the embedder hashed before it read other scripts), so
    stored vectors keep their meaning.

    Example:
        >>> sorted(embedding_words("The refunds were rounded"))
        ['refunds', 'rounded']
    """
    return frozenset(
        w for w in words(text) if not w.isascii() or (len(w) >= MIN_WORD_LENGTH and w not in CORE_STOPWORDS)
    )


#: Stopwords of the Latin-script languages the heuristic tells apart (also
#: dropped from that language's terms). Short on purpose: the most frequent
#: function words are what separates languages on a sentence.
STOPWORDS: Dict[str, FrozenSet[str]] = {
    "english": frozenset(
        "a an the and or of to in on at for with by from is are was were be been it its this that these those "
        "we you he she they i me my our your his her their them what which who when where how why not no do "
        "does did has have had will would can could should about into than then there here so as if but".split()
    ),
    "spanish": frozenset(
        "el la los las un una unos unas y o de del al en con por para es son fue era que se su sus lo le les "
        "como pero más muy ya no sí este esta estos estas ese esa hay cuando donde quién qué cómo nos mi tu".split()
    ),
    "german": frozenset(
        "der die das den dem des ein eine einen einem einer und oder von zu im in am an auf mit für ist sind "
        "war waren wird wurde nicht kein keine es sie er wir ich du ihr sich auch aber wie wann wo was wer "
        "bei nach aus dass hat haben".split()
    ),
    "french": frozenset(
        "le la les un une des et ou de du au aux en dans sur avec pour par est sont était que qui quoi ne pas "
        "il elle ils elles nous vous je tu se sa son ses ce cette ces mais comme quand où".split()
    ),
    "portuguese": frozenset(
        "o a os as um uma uns umas e ou de do da dos das em no na nos nas com por para é são foi era que se "
        "seu sua não sim como mas quando onde quem".split()
    ),
    "italian": frozenset(
        "il lo la i gli le un uno una e o di del della dei in nel nella con per è sono era che si suo sua non "
        "come ma quando dove chi cosa".split()
    ),
    "dutch": frozenset(
        "de het een en of van in op met voor is zijn was waren dat die niet geen ik jij hij zij wij ze ook "
        "maar hoe wanneer waar wat wie bij naar uit heeft hebben".split()
    ),
}
_ANY_STOPWORD: FrozenSet[str] = frozenset().union(*STOPWORDS.values())


def detect_language(tokens: List[str], text: str, candidates: Tuple[str, ...], default: str) -> str:
    """Step 4: the language of a text, from its script, else from the
    candidates' stopwords (most hits wins, the first of the candidates on a
    tie; no hits: ``default``)."""
    if not text.isascii():
        if _CYRILLIC.search(text):
            return "russian"
        if _GREEK.search(text):
            return "greek"
        if _ARABIC.search(text):
            return "arabic"
    # Only the text's stopwords are counted per language: most of a text's
    # words are none, and one pass over the text finds the few that are.
    hits = list(filter(_ANY_STOPWORD.__contains__, tokens))
    if not hits:
        return default
    counted = Counter(hits)
    best, most = default, 0
    for language in candidates:
        stop = STOPWORDS.get(language)
        if stop is None:
            continue
        count = sum(n for token, n in counted.items() if token in stop)
        if count > most:
            best, most = language, count
    return best


class _WordTable(Dict[str, str]):
    """word -> what `decide` says of it, decided once per distinct
    word: a store repeats the same few thousand words, so a hit is one dict
    lookup at C speed (``map(table.__getitem__, words)``). Emptied when it
    passes `_STEMS_LIMIT` words, so a stream of distinct tokens (ids,
    hashes) cannot grow it without end."""

    def decide(self, word: str) -> str:
        raise NotImplementedError

    def __missing__(self, word: str) -> str:
        value = self.decide(word)
        if len(self) >= _STEMS_LIMIT:
            self.clear()
        self[word] = value
        return value


class _Stems(_WordTable):
    """word -> stem in one language. Stemming is what an analysis costs
    (Snowball in pure Python is tens of microseconds a word). A CJK run is
    its own stem (step 3 keeps it)."""

    def __init__(self, stem_word: Callable[[str], str]) -> None:
        super().__init__()
        self.stem_word = stem_word

    def decide(self, word: str) -> str:
        if word.isascii():
            stem = self.stem_word(word)
        elif _HEBREW_WORD.fullmatch(word):
            stem = hebrew_stem(word)
        else:
            stem = word if _CJK_RUN.fullmatch(word) else self.stem_word(word)
        # Snowball's Greek stemmer strips some short words to nothing ("ιζε"):
        # an empty stem would be one word for all of them, so the word stays.
        return stem or word


_STEMS_LIMIT = 1 << 18


def hebrew_stem(word: str) -> str:
    """Step 6: a Hebrew word without its leading particle letters, stripped
    one by one while three letters or more remain.

    Example:
        >>> hebrew_stem("ההחזר") == hebrew_stem("החזר") == "חזר"
        True
        >>> hebrew_stem("ובבית") == hebrew_stem("בית") == "בית"
        True
    """
    start = 0
    while len(word) - start > _HEBREW_MIN and word[start] in _HEBREW_PARTICLES:
        start += 1
    return word[start:]


def _stemmer(language: str) -> Optional[_Stems]:
    return None if _snowball is None else _snowball_stemmer(language)


@functools.cache
def _snowball_stemmer(language: str) -> Optional[_Stems]:
    if _snowball is None or language not in _snowball.algorithms():
        return None
    return _Stems(_snowball.stemmer(language).stemWord)


@dataclass(frozen=True)
class Analyzer:
    """Turns texts into the terms BM25 counts (the module docstring's steps).

    Args:
        languages: Snowball languages considered for a text's language and
            for a query word's stems (unknown names are rejected).
        default_language: the language of a text whose script and stopwords
            say nothing (short notes); must be one of ``languages``.

    Example:
        >>> analyzer = Analyzer()
        >>> analyzer.terms("The refunds were rounded")
        ('refund', 'round')
        >>> sorted(analyzer.query_terms("refund")[0])
        ['refund']
        >>> analyzer.terms("退款被四舍五入")
        ('退款', '款被', '被四', '四舍', '舍五', '五入')
        >>> analyzer.terms("ההחזר נשלח") == analyzer.terms("החזר נשלח")
        True
    """

    languages: Tuple[str, ...] = ("english", "spanish", "german", "french", "portuguese", "italian", "dutch")
    default_language: str = "english"
    _warned: List[bool] = field(default_factory=lambda: [False], repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.languages, str) or not isinstance(self.languages, (tuple, list)) or not self.languages:
            raise ValueError("Analyzer languages must be a non-empty tuple of Snowball language names")
        # A list reads as the tuple it spells (the analysis caches key on it).
        object.__setattr__(self, "languages", tuple(self.languages))
        if not all(isinstance(name, str) for name in self.languages):
            raise ValueError("Analyzer languages must be Snowball language names (str), got %r" % (self.languages,))
        known = set(STOPWORDS) | {"russian", "greek", "arabic"}
        if _snowball is not None:
            known |= set(_snowball.algorithms())
        unknown = [name for name in self.languages if name not in known]
        if unknown:
            raise ValueError("Analyzer languages: unknown %r (Snowball names such as 'english')" % unknown)
        if self.default_language not in self.languages:
            raise ValueError(
                "Analyzer default_language %r is not one of languages %r" % (self.default_language, self.languages)
            )

    def _stem_ready(self) -> None:
        if _snowball is None and not self._warned[0]:
            self._warned[0] = True
            warnings.warn(
                "snowballstemmer is not installed: words are compared unstemmed ('refund' will not find "
                "'refunds'); install poolsplit-adapters[relevance]",
                StemmingUnavailableWarning,
                stacklevel=3,
            )

    def language_of(self, text: str) -> str:
        """The language this analyzer assumes for ``text`` (step 4)."""
        return detect_language(words(text), text, self.languages, self.default_language)

    def terms(self, text: str) -> Tuple[str, ...]:
        """A document's terms in order: words stemmed in the text's
        language, that language's stopwords dropped."""
        return _terms(self, text)

    def terms_many(self, texts: Sequence[str]) -> List[Tuple[str, ...]]:
        """[`terms`][] of each text (a store's batch: the settings are
        read once)."""
        self._stem_ready()
        key = cache_key(self)
        return [_cached_terms(key, text) for text in texts]

    def query_terms(self, text: str) -> List[FrozenSet[str]]:
        """A query's distinct words, each as the set of its stems in every
        configured language (CJK bigrams and unstemmable words: themselves).
        The query's own language's stopwords are dropped."""
        return [variants for _word, variants in self.query_words(text)]

    def query_words(self, text: str) -> List[Tuple[str, FrozenSet[str]]]:
        """[`query_terms`][] with each word as the query wrote it
        (normalised): ``(word, its stems)``, for a report of what matched.
        A query is read up to its `QUERY_WORDS`-th distinct word."""
        self._stem_ready()
        tokens = list(_query_tokens(text)[0])
        language = detect_language(tokens, text, self.languages, self.default_language)
        stop = STOPWORDS.get(language, frozenset())
        seen: Dict[str, FrozenSet[str]] = {}
        languages, stemming = self.languages, _snowball is not None
        for token in tokens:
            if token in stop or token in seen:
                continue
            seen[token] = _query_variants(languages, stemming, token)
        return list(seen.items())


#: The most distinct words a query contributes: it is read up to its
#: 2048th distinct word (a stopword counts), the rest ignored. Each query
#: word is stemmed in every configured language and becomes a term of the
#: ranking, so a pasted document of 200,000 words cost seconds; a question,
#: a message or a conversation's recent turns stay far below the cap. A
#: selection ranked by words over a query past it says so in its notes
#: (`QUERY_CAP_NOTE`, `query_cap_note`).
QUERY_WORDS = 2048
#: The ``selection.notes`` key of a capped query.
QUERY_CAP_NOTE = "query_words_capped"


@functools.lru_cache(maxsize=4)
def _query_tokens(text: str) -> Tuple[Tuple[str, ...], int]:
    """A query's words up to its `QUERY_WORDS`-th distinct one, and how
    many distinct words it has in all (cached: one selection reads its
    query more than once; a few queries only, since a huge one holds
    its words)."""
    tokens = words(text)
    distinct = dict.fromkeys(tokens)
    if len(distinct) <= QUERY_WORDS:
        return tuple(tokens), len(distinct)
    seen: set[str] = set()
    end = 0
    for end, token in enumerate(tokens):  # noqa: B007 - the cut is where the loop stops
        seen.add(token)
        if len(seen) > QUERY_WORDS:
            break
    return tuple(tokens[:end]), len(distinct)


def query_cap_note(text: str) -> Optional[str]:
    """What a selection notes (under `QUERY_CAP_NOTE`) when its query
    ``text`` passes `QUERY_WORDS` distinct words, else None."""
    found = _query_tokens(text)[1] if isinstance(text, str) and text else 0
    if found <= QUERY_WORDS:
        return None
    return "the query has %d distinct words; only its first %d were ranked (QUERY_WORDS), the rest ignored" % (
        found,
        QUERY_WORDS,
    )


@functools.lru_cache(maxsize=1 << 16)
def _query_variants(languages: Tuple[str, ...], stemming: bool, token: str) -> FrozenSet[str]:
    """A query word's stems in every one of ``languages`` (a CJK run, or a
    word no language stems: itself), cached (a feedback query repeats the
    store's words on every call); ``stemming``: whether Snowball is
    installed, part of the key as of every analysis cache."""
    if _CJK_RUN.fullmatch(token):
        return frozenset((token,))
    stems = [_stemmer(name) for name in languages]
    return frozenset({stem[token] for stem in stems if stem is not None} or {token})


def cache_key(analyzer: Analyzer) -> Tuple[Any, ...]:
    """What an analysis depends on besides the text (caches key on it)."""
    return (analyzer.languages, analyzer.default_language, _snowball is not None)


@functools.lru_cache(maxsize=1 << 17)
def _cached_terms(key: Tuple[Any, ...], text: str) -> Tuple[str, ...]:
    languages, default, stemming = key
    tokens = words(text)
    table = _terms_table(detect_language(tokens, text, languages, default), stemming)
    return tuple(filter(None, map(table.__getitem__, tokens)))


class _Terms(_WordTable):
    """token -> its term in one language (step 5): its stem, or "" when the
    language drops it as a stopword, so dropping and stemming a text's tokens
    is one lookup each (``filter(None, map(table.__getitem__, tokens))``). A
    token is never empty, nor is a stem, so "" only ever means dropped."""

    def __init__(self, language: str) -> None:
        super().__init__()
        self.stop = STOPWORDS.get(language, frozenset())
        self.stems = _stemmer(language)

    def decide(self, token: str) -> str:
        return "" if token in self.stop else token if self.stems is None else self.stems[token]


@functools.cache
def _terms_table(language: str, stemming: bool) -> _Terms:
    """``language``'s table; ``stemming`` (whether Snowball is installed) is
    part of the key, as it is of every analysis cache."""
    return _Terms(language)


def _terms(analyzer: Analyzer, text: str) -> Tuple[str, ...]:
    # Cached by (settings, text): a store's texts are analysed once, not on
    # every query (the cache holds the most recent 131,072 texts).
    analyzer._stem_ready()
    return _cached_terms(cache_key(analyzer), text)
