"""Duplicates: a repeated memory is stored once, and the repeat is remembered.

Agents repeat themselves: the same greeting episode is evicted once per
thread, the same preference is noted in every session. Stored again, each
copy takes a slot in the same budget and pushes a different memory out. So a
write is first compared with what is stored, within its **namespace and
type** (a tenant's note never merges with another tenant's, nor a fact with a
task):

* **exact**: the same normalised text (`normalise_text`): invisible
  format characters removed, Unicode NFKC (full-width and compatibility
  forms folded), case-folded, whitespace collapsed. Every word the guards
  below compare is read from it, so a zero-width space or soft hyphen
  cannot hide a "not" or an "always".
* **near**: the same claim in other words. Either the cosine of two
  embeddings (``embed=``: a batch function such as
  [`HashEmbedder.embed_documents`][poolsplit_adapters.memory.hash_embedding.HashEmbedder.embed_documents]
  ,
  a LangChain ``Embeddings.embed_documents`` or a LlamaIndex
  ``BaseEmbedding.get_text_embedding_batch``), or, without embeddings, the
  **word overlap** of the two texts: shared content words (stopwords
  removed; CJK runs as character pairs) over the words of the *shorter*
  text, so a repeat wrapped in filler ("Note: ...", "... as of today")
  still matches the original, provided it does not add more new words than
  it shares (`JACCARD_FLOOR`).

  Two guards apply to both measures, because the most similar pairs of all
  are *updates*, not repeats ("staging DB is db-7" / "staging DB is db-9"):
  the two texts must carry the same **values and identifiers**, in the same
  order (every run with a digit, whole: its sign, decimals, version dots,
  hyphens and unit, "-5", "1.2.3", "eu-west-1", "5ms", "5 ms"; paths,
  snake_case and dotted names), the same **negations** ("not", "never",
  "n't", ...), **linkers** ("and", "only", "except", ...) and
  **qualifiers** ("always", "must", "all", "two", "off", "new", ...: words
  that say how often, how much or which way, many of them stopwords the
  overlap cannot see). A change of value, sign, unit, polarity or extent is
  never merged; it is the consolidator's to supersede. Nor is a **swap**
  (`swapped`): when each text has a content word the other lacks
  ("... to alice in finance" / "... to bob in finance"), it is another
  claim, however similar; a repeat may only wrap or trim the text.

Thresholds (`OVERLAP_THRESHOLD`, `COSINE_THRESHOLD`) were chosen
on a deterministic labelled set of paraphrased repeats against
distinct-but-similar facts (another value, another subject, negated) and are
measured by ``python benchmarks/duplicates.py``, which prints precision and
recall around them.

Only **active** entries are matched (``is_active``, default the core's): a
fact that returns to an earlier value after that value was superseded must be
written again, not folded into a closed version.

The repeat's provenance is kept on the kept entry by [`record_repeat`][]
in the ``seen`` field, a list of ``{"source": ..., "at": ...}``, oldest first
(the kept entry's own ``source`` and ``created`` are its first sighting and
are not repeated there). No selector, scorer or index reads ``seen``: how
often something was said must not make it rank higher (no frequency
feedback), and the tests pin that the kept entry's score is unchanged.

Example:
    >>> from poolsplit_adapters.memory.duplicates import DuplicateFinder, record_repeat
    >>> finder = DuplicateFinder([{"id": "n1", "type": "note", "content": "User prefers dark mode."}])
    >>> hit = finder.find({"type": "note", "content": "Note: the user prefers dark mode"})
    >>> hit.kind.value, hit.kept["id"]
    ('near', 'n1')
    >>> finder.find({"type": "note", "content": "User does not prefer dark mode."}) is None
    True
    >>> record_repeat(hit.kept, source="thread:t2", at="2026-12-01T09:00:00Z")["seen"]
    [{'source': 'thread:t2', 'at': '2026-12-01T09:00:00Z'}]
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from dataclasses import dataclass
from enum import Enum
from typing import AbstractSet, Any, Callable, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ..poolsplit import default_is_active, entry_error
from ..relevance.words import content_words, fold, pair_words
from .expiry import moment_of

__all__ = [
    "SEEN",
    "OVERLAP_THRESHOLD",
    "JACCARD_FLOOR",
    "MIN_NEAR_WORDS",
    "COSINE_THRESHOLD",
    "NEGATIONS",
    "LINKERS",
    "QUALIFIERS",
    "UNITS",
    "DuplicateKind",
    "Duplicate",
    "DuplicateFinder",
    "Embed",
    "normalise_text",
    "bucket",
    "verbatim",
    "content_words",
    "key_tokens",
    "value_tokens",
    "identifiers",
    "word_overlap",
    "swapped",
    "jaccard",
    "record_repeat",
    "seen_rows",
    "shared_needed",
]

#: The field of the kept entry that lists its repeats' provenance.
SEEN = "seen"

#: Word overlap (shared content words / content words of the shorter text) at
#: or above which two texts are near duplicates. Measured on the labelled set
#: of ``benchmarks/duplicates.py`` (371 pairs, seed 0; seed 1 held out): 0.90
#: gives precision 1.00 at recall 0.96 (held out 1.00 / 0.94); 0.85 merges
#: the first twin subjects that differ in one word of five ("release" /
#: "incident manager"), 0.80 merges 31 distinct pairs. Precision is preferred
#: to recall: a missed repeat costs one slot, a false merge loses a fact.
#: Since the swap guard (`swapped`) a match by words is a containment
#: (overlap 1.0), so the threshold no longer changes what merges: 0.70 to
#: 1.00 give the same results on that set; it stays for the index's filter.
OVERLAP_THRESHOLD = 0.9
#: And shared words over all words of both (Jaccard) at least this: a
#: candidate that adds more new words than it shares ("the framework is React
#: and Vue" against "the framework is React") says something new.
JACCARD_FLOOR = 0.5
#: And the shorter text must have at least this many content words: in
#: "user: keep this" / "user: keep that" every content word is shared
#: ("this" and "that" are stopwords), yet they are two messages. Below it
#: only an exact repeat is a duplicate.
MIN_NEAR_WORDS = 3
#: Cosine at or above which two embeddings are near duplicates, measured with
#: [`HashEmbedder`][poolsplit_adapters.memory.hash_embedding.HashEmbedder] on the same
#: set: precision 0.99 at recall 0.91 (held out 0.99 / 0.90; with the swap guard 1.00 / 0.90 on both); 0.80 merged 9
#: distinct pairs, 0.90 missed 42% of the repeats. A real sentence model
#: places paraphrases higher and related-but-distinct facts higher too:
#: measure yours (``predictions(pairs, embed=your_model.embed_documents,
#: threshold=...)`` in ``benchmarks/duplicates.py``) before relying on it.
COSINE_THRESHOLD = 0.85

#: Words that flip a claim; two texts whose sets of these differ are never
#: near duplicates. Apostrophes are separators, so "don't" gives "don" + "t".
NEGATIONS = frozenset(
    "not no never none nothing nobody neither nor cannot without don doesn didn isn wasn aren weren won "
    "shouldn couldn wouldn hasn haven hadn mustn needn mightn shan ain t".split()
)
#: (``t`` is what any other "n't" leaves: "can't" gives "can" + "t".)
#: Words that join, add or limit claims ("React *and* Vue", "*only* on
#: Fridays", "*except* staging"): a repeat that gains or loses one likely says
#: something new, so these must match too. A repeat that adds one as filler is
#: missed and stored twice, the cheap error.
LINKERS = frozenset("and or but also plus except only unless instead both either".split())
#: Words that say how often, how much, how surely or which way a claim holds
#: ("*always* use tabs" / "*sometimes* use tabs", "keep *two* replicas" /
#: "keep *one* replica", "turn the cache *off*", "use the *new* API"). Many
#: are stopwords or too short for `content_words`, so overlap never
#: sees them, and the others are one word among many that a 0.9 overlap
#: outvotes in a long text. So the two texts must have the same set of
#: them. English only, like the negations; a repeat that adds one for
#: emphasis ("use tabs" / "always use tabs") is stored twice, the cheap error.
QUALIFIERS = frozenset(
    """always usually often sometimes rarely seldom occasionally frequently ever
    must should may might can could will would shall
    all some any every each most many few several more less fewer least much
    zero one two three four five six seven eight nine ten eleven twelve once twice half double triple
    off out up down over under above below before after new old first last min max
    enable enabled disable disabled allow allowed deny denied include exclude increase decrease
    true false yes start stop open closed lock unlock public private""".split()
)
#: Unit words: a number's unit is part of its value when it is written apart
#: ("5 ms" / "5 s", "9 am" / "9 pm", "30 days" / "30 weeks"): short units are
#: below `MIN_WORD_LENGTH` and invisible
#: to the overlap, long ones one word that a long text outvotes. An attached
#: unit ("5ms", "50ms", "5%") is already part of the value token.
UNITS = frozenset(
    """ns us µs ms s sec secs second seconds m min mins minute minutes h hr hrs hour hours d day days
    week weeks month months y yr yrs year years am pm
    b kb mb gb tb pb kib mib gib tib byte bytes bit bits kbps mbps gbps
    mm cm km ft mi g kg mg l ml px em rem pt dpi hz khz mhz ghz
    % ‰ ° °c °f k x percent rps qps""".split()
)

_SPACE = re.compile(r"\s+")
_DIGIT = re.compile(r"\d")
# A run of text between spaces, CJK characters and CJK punctuation: where a
# value token ("-5", "1.2.3", "eu-west-1", "5ms", "$5", "5%") is looked for.
_RUN = re.compile(r"[^\s\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
# Signs that read as a minus: the minus sign and the en dash.
_MINUS = str.maketrans({"\u2212": "-", "\u2013": "-"})
# Inside one whitespace-separated token: a slash, an underscore, or a dot
# between two word characters (one linear scan, no backtracking).
_NAME_MARK = re.compile(r"[/_]|[^\W_]\.[^\W_]")

#: A batch embedding function: texts -> one vector per text.
Embed = Callable[[List[str]], Sequence[Sequence[float]]]
IsActive = Callable[[Mapping[str, Any]], bool]


def normalise_text(text: str) -> str:
    """The form exact duplicates are compared in: invisible characters
    removed (`visible`: ``"n\u200bot"``
    is "not"), NFKC, case-folded, whitespace collapsed and stripped."""
    return _SPACE.sub(" ", fold(text)).strip()


def key_tokens(text: str) -> FrozenSet[str]:
    """What two near duplicates must share exactly: the `value_tokens`, the
    negations, the linkers and the qualifiers."""
    return frozenset(value_tokens(text)) | _guard_words(text)


def _guard_words(text: str) -> FrozenSet[str]:
    return frozenset(t for t in pair_words(normalise_text(text)) if t in NEGATIONS or t in LINKERS or t in QUALIFIERS)


def _bare(run: str) -> str:
    """A run without the punctuation around it, except what belongs to a
    value: a leading sign, ``#`` or currency symbol, a trailing ``%``."""
    start, end = 0, len(run)
    while start < end and run[start] not in "-+#" and unicodedata.category(run[start])[0] == "P":
        start += 1
    while end > start and run[end - 1] not in "%‰" and unicodedata.category(run[end - 1])[0] == "P":
        end -= 1
    return run[start:end]


def value_tokens(text: str) -> Tuple[str, ...]:
    """The value tokens of ``text``, in order, once each: every run between
    spaces (and CJK characters) that holds a digit, whole, with its sign,
    decimals, version dots, hyphens and attached unit ("-5", "+5", "1.5",
    "1.2.3", "eu-west-1", "5ms", "5%", "$5"), followed by its unit when the
    next word is one of `UNITS` ("5 ms", "9 pm"). Two texts whose
    values differ in any of these say different things however many words
    they share: "timeout 5" and "timeout -5", "5 ms" and "5 s"."""
    runs = [_bare(run.translate(_MINUS)) for run in _RUN.findall(normalise_text(text))]
    out: List[str] = []
    for i, run in enumerate(runs):
        if not _DIGIT.search(run):
            continue
        unit = runs[i + 1] if i + 1 < len(runs) else ""
        out.append(run + " " + unit if unit in UNITS else run)
    return tuple(dict.fromkeys(out))


def identifiers(text: str) -> Tuple[str, ...]:
    """The code-like names in ``text``, in order: paths (``/cart/merge``),
    snake_case and dotted names (``retry_limit``, ``settings.timeout``).
    Two texts that name different routes or settings say different things
    however many other words they share ("sandbox returned 76 errors of type
    /refunds" is not "... of type /checkout/confirm")."""
    names = (token.strip(".,;:!?()[]{}'\"`") for token in normalise_text(text).split())
    return tuple(dict.fromkeys(name.strip("/") for name in names if _NAME_MARK.search(name) and name.strip("/_.")))


def _values_in_order(text: str) -> Tuple[Tuple[str, ...], FrozenSet[str]]:
    """`key_tokens` as a shelf key: the `value_tokens` and the
    `identifiers`, in the order they come (once each), then the
    negations, linkers and qualifiers as a set. Order matters for values:
    "port 80 forwards to 443" and "port 443 forwards to 80" share every word
    and mean the opposite."""
    return tuple(dict.fromkeys(value_tokens(text) + identifiers(text))), _guard_words(text)


@functools.lru_cache(maxsize=1 << 11)
def _compared(text: str) -> Tuple[FrozenSet[str], Tuple[Tuple[str, ...], FrozenSet[str]]]:
    """What a kept or candidate text is compared by: its `content_words`
    and its key tokens (`_values_in_order`), both pure functions of the
    text, cached: a store's write path builds a finder over the new
    entry's stored neighbours on every write, and the same neighbours come
    back turn after turn (measured: two fifths of an agent turn's time on a
    long conversation went to reading them again)."""
    return content_words(text), _values_in_order(text)


def _same_words(a: Any, b: Any) -> bool:
    """Whether two texts are the same words in the same order, punctuation
    aside ("deploy deploy deploy!" and "Deploy deploy deploy"): the short
    texts MIN_NEAR_WORDS leaves to exact matching ("keep this" is not "keep
    that": a stopword differs)."""
    return pair_words(normalise_text(str(a.entry["content"]))) == pair_words(normalise_text(str(b.entry["content"])))


def word_overlap(a: FrozenSet[str], b: FrozenSet[str]) -> float:
    """Shared words over the words of the smaller set, or 0.0 when the
    Jaccard similarity is under `JACCARD_FLOOR` or the smaller set has
    fewer than `MIN_NEAR_WORDS` words."""
    if min(len(a), len(b)) < MIN_NEAR_WORDS:
        return 0.0
    shared = len(a & b)
    if shared < JACCARD_FLOOR * len(a | b):
        return 0.0
    return shared / min(len(a), len(b))


def shared_needed(n: int, m: int, threshold: float = OVERLAP_THRESHOLD) -> Optional[int]:
    """The fewest content words two texts with ``n`` and ``m`` of them must
    share to be near duplicates by words at ``threshold``, or None when no
    number can: what an index may filter on without missing a repeat.

    Below `MIN_NEAR_WORDS` on either side only the same words match
    (``n == m``, all shared); else the smallest ``s`` that passes
    `word_overlap`'s own comparisons, the Jaccard floor and the
    threshold (both only grow easier as ``s`` grows).

    Example:
        >>> shared_needed(6, 6), shared_needed(6, 3), shared_needed(2, 2), shared_needed(2, 3), shared_needed(3, 9)
        (6, 3, 2, None, None)
    """
    least = min(n, m)
    if least < MIN_NEAR_WORDS:
        return n if n == m and n > 0 else None
    for shared in range(1, least + 1):
        if shared < JACCARD_FLOOR * (n + m - shared):
            continue
        if shared / least >= threshold:
            return shared
    return None


def swapped(a: FrozenSet[str], b: FrozenSet[str]) -> bool:
    """Whether each of two texts' content-word sets has a word the other
    lacks: a word swapped, not added or dropped. Such texts are never near
    duplicates, whatever their overlap or cosine: in a long sentence one
    swapped word ("... the report to alice ..." / "... to bob ...") left
    11 of 12 words shared, and the second turn was folded into the first,
    its recipient lost. A repeat may wrap or trim a text (filler, a
    shorter form); a swap is another claim. Measured by
    ``benchmarks/duplicates.py``: on its labelled set word overlap keeps
    precision 1.00 and recall 0.96 / 0.94 (its synonym repeats swap a
    stopword or a form the stemmer folds), cosine goes from precision 0.99
    / recall 0.91 to 1.00 / 0.90.

    Example:
        >>> swapped(frozenset({"send", "report", "alice"}), frozenset({"send", "report", "bob"}))
        True
        >>> swapped(frozenset({"send", "report"}), frozenset({"send", "report", "today"}))
        False
    """
    return not a <= b and not b <= a


def jaccard(a: FrozenSet[str], b: FrozenSet[str]) -> float:
    """Shared words over all words of both (0.0 if both are empty)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = math.fsum(x * y for x, y in zip(a, b))
    na, nb = math.sqrt(math.fsum(x * x for x in a)), math.sqrt(math.fsum(y * y for y in b))
    return dot / (na * nb) if na > 0.0 and nb > 0.0 else 0.0


class DuplicateKind(str, Enum):
    """How a candidate repeats a kept entry."""

    #: the same normalised text
    EXACT = "exact"
    #: the same claim in other words (overlap or cosine at the threshold)
    NEAR = "near"


@dataclass(frozen=True)
class Duplicate:
    """A candidate's match among the kept entries.

    Attributes:
        kept: the stored entry it repeats (the same object the finder was given).
        kind: exact or near.
        similarity: 1.0 for exact; the word overlap or cosine for near.

    Example:
        >>> d = DuplicateFinder([{"id": "a", "content": "Hi"}]).find({"content": "  hi "})
        >>> d.kept["id"], d.kind.value, d.similarity
        ('a', 'exact', 1.0)
    """

    kept: Mapping[str, Any]
    kind: DuplicateKind
    similarity: float


@dataclass(frozen=True)
class _Indexed:
    entry: Mapping[str, Any]
    words: FrozenSet[str]
    keys: Tuple[Tuple[str, ...], FrozenSet[str]]
    vector: Optional[Sequence[float]]


#: (namespace, type, always-scope?, session): what a repeat must share with
#: what it repeats. Scope is part of it so that nothing contextual (a model's
#: note) is ever folded into, or recorded on, an always-scope correction; the
#: ``session`` an entry belongs to (LlamaIndex's flushed chat) so that two
#: sessions' identical lines stay two memories, each recalled by its session.
#: A part of a split message (`turns`) adds its
#: exchange and position: it is a piece of one message, not a claim, so it
#: repeats only itself (a retried write), never a sibling with the same text.
_Bucket = Tuple[str, str, bool, str]


def bucket(entry: Mapping[str, Any]) -> _Bucket:
    """What a repeat must share with the entry it repeats: namespace, type
    (default ``"note"``), whether it is always-scope, and its ``session``
    (with, for a part of a split message, its exchange and position)."""
    namespace = entry.get("namespace")
    kind = entry.get("type", "note")
    session = entry.get("session")
    place = "" if session is None else str(session)
    if entry.get("parts") is not None:
        place += "\x00%s\x00%s" % (entry.get("exchange"), entry.get("part"))
    return (
        "" if namespace is None else str(namespace),
        "note" if kind is None else str(kind),
        entry.get("scope") == "always",
        place,
    )


def verbatim(entry: Mapping[str, Any]) -> bool:
    """Whether ``entry`` is a record of what was said (a side of an
    exchange, with a ``role``: `turns`), which
    repeats only exactly: the same words in another order may say the
    opposite ("should the fetcher depend on the parser" / "should the
    parser depend on the fetcher"), and a message folded into its twin would
    be in neither the store nor the working set."""
    return entry.get("role") is not None


def _content(entry: Any, index: Optional[int]) -> str:
    if not isinstance(entry, Mapping):
        raise entry_error(entry, index, None, "is not a mapping (%s)" % type(entry).__name__)
    text = entry.get("content")
    if not isinstance(text, str):
        raise entry_error(entry, index, "content", "must be a string, got %s" % type(text).__name__)
    return text


class _Shelf:
    """The kept rows of one bucket that share the same key tokens (only those
    can be near duplicates of each other), with a word index by word count,
    so a candidate is compared with the rows that can share enough of its
    words, not all."""

    def __init__(self) -> None:
        self.rows: Dict[int, _Indexed] = {}
        self.postings: Dict[Tuple[int, str], Set[int]] = {}
        self.sizes: Dict[int, int] = {}  # word count -> rows

    def put(self, seq: int, row: _Indexed) -> None:
        self.rows[seq] = row
        size = len(row.words)
        self.sizes[size] = self.sizes.get(size, 0) + 1
        for word in row.words:
            self.postings.setdefault((size, word), set()).add(seq)

    def drop(self, seq: int) -> None:
        row = self.rows.pop(seq)
        size = len(row.words)
        self.sizes[size] -= 1
        if not self.sizes[size]:
            del self.sizes[size]
        for word in row.words:
            found = self.postings.get((size, word))
            if found is not None:
                found.discard(seq)
                if not found:
                    del self.postings[(size, word)]

    def sharing(self, words: FrozenSet[str], threshold: float) -> List[int]:
        """The rows that can be near duplicates of ``words`` by overlap at
        ``threshold``, in kept order: among the rows of each word count
        ``m``, those holding one of the ``|words| - shared_needed(|words|,
        m) + 1`` rarest of ``words`` (any row sharing the ``shared_needed``
        words must hold one of them: prefix filtering). Rows of the
        candidate's own size at 0.9 need every word: one posting read."""
        found: Set[int] = set()
        for size in self.sizes:
            need = shared_needed(len(words), size, threshold)
            if need is None:
                continue
            ranked = sorted(words, key=lambda w: (len(self.postings.get((size, w), ())), w))
            for word in ranked[: len(words) - need + 1]:
                found |= self.postings.get((size, word), set())
        return sorted(found)


def _first_seen(entry: Mapping[str, Any]) -> Tuple[str, str]:
    """The order among kept entries with one text (two live ones: a version
    beside an older entry, writers at once): a repeat is recorded on the
    first written (``created``, then ``id``), whatever order a store lists
    them in, or its finder kept them (each store, each restart, the same)."""
    return str(entry.get("created") or ""), str(entry.get("id") or "")


class DuplicateFinder:
    """An incremental index of kept entries that tells whether a candidate
    repeats one of them (exact or near), within namespace, type and scope
    (a contextual entry never repeats an always-scope one).

    Args:
        entries: the kept entries to start from (inactive ones are skipped).
        embed: a batch embedding function for near duplicates by cosine;
            None (default) compares words instead.
        threshold: the near-duplicate threshold; default
            `OVERLAP_THRESHOLD` for words, `COSINE_THRESHOLD` with
            ``embed``.
        is_active: which entries may be kept (default: the core's).

    [`find`][] only reads; [`add`][] records an entry once it is written,
    [`discard`][] forgets one (deleted, superseded); [`admit`][] finds
    and adds for a batch, so a batch that repeats itself writes its first
    copy only. The finder keeps the entries it was given (the same objects)
    and never changes them.

    Cost: an exact match is one dictionary lookup; a near match by words
    compares the candidate with the kept rows of its bucket that carry the
    same values, negations, linkers and qualifiers and share one of its
    rarer words (a word index), never with the whole store. With ``embed`` every row of that
    shelf is compared (a cosine can be high without a shared word).

    Example:
        >>> from poolsplit_adapters.memory.hash_embedding import HashEmbedder
        >>> finder = DuplicateFinder(embed=HashEmbedder().embed_documents)
        >>> [d if d is None else d.kind.value for d in finder.admit([
        ...     {"id": "a", "content": "Deploys go through the release checklist"},
        ...     {"id": "b", "content": "deploys go through the release checklist!"},
        ...     {"id": "c", "content": "Deploys skip the release checklist on Fridays"}])]
        [None, 'near', None]
    """

    def __init__(
        self,
        entries: Iterable[Mapping[str, Any]] = (),
        *,
        embed: Optional[Embed] = None,
        threshold: Optional[float] = None,
        is_active: IsActive = default_is_active,
    ) -> None:
        if threshold is None:
            threshold = COSINE_THRESHOLD if embed is not None else OVERLAP_THRESHOLD
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 < threshold <= 1.0:
            raise ValueError("DuplicateFinder threshold must be a number in (0, 1], got %r" % (threshold,))
        self.embed = embed
        self.threshold = float(threshold)
        self.is_active = is_active
        self._exact: Dict[Tuple[str, str, bool, str, str], int] = {}
        self._shelves: Dict[Tuple[_Bucket, Any], _Shelf] = {}
        self._rows: Dict[int, Tuple[Tuple[_Bucket, Any], str, _Indexed]] = {}
        self._by_id: Dict[str, List[int]] = {}
        self._by_bucket: Dict[_Bucket, Set[int]] = {}
        self._seq = 0
        self.extend(entries)

    def __repr__(self) -> str:
        return "DuplicateFinder(%d kept, %s >= %.2f)" % (
            len(self),
            "cosine" if self.embed is not None else "word overlap",
            self.threshold,
        )

    def __len__(self) -> int:
        return len(self._rows)

    def _vectors(self, texts: List[str]) -> List[Optional[Sequence[float]]]:
        if self.embed is None or not texts:
            return [None] * len(texts)
        # Plain float tuples: an embedder may return numpy rows or lists.
        vectors: List[Optional[Sequence[float]]] = [tuple(float(x) for x in v) for v in self.embed(texts)]
        if len(vectors) != len(texts):
            raise ValueError("embed returned %d vectors for %d texts" % (len(vectors), len(texts)))
        return vectors

    def _indexed(self, entries: Sequence[Mapping[str, Any]]) -> List[_Indexed]:
        texts = [_content(entry, index) for index, entry in enumerate(entries)]
        vectors = self._vectors(texts)
        return [_Indexed(entry, *_compared(text), vector) for entry, text, vector in zip(entries, texts, vectors)]

    def add(self, entry: Mapping[str, Any]) -> None:
        """Keep ``entry`` (after it was written); an inactive one is ignored."""
        self.extend([entry])

    def extend(self, entries: Iterable[Mapping[str, Any]]) -> None:
        """Keep several entries (one embedding batch)."""
        live = [entry for entry in entries if self._keeps(entry)]
        for row in self._indexed(live):
            self._keep(row)

    def discard(self, entry_id: str) -> None:
        """Forget every kept entry with this ``id`` (it was deleted,
        superseded or retired): it can no longer be repeated."""
        for seq in self._by_id.pop(entry_id, ()):
            shelf_key, exact, _ = self._rows.pop(seq)
            self._by_bucket[shelf_key[0]].discard(seq)
            self._shelves[shelf_key].drop(seq)
            if self._exact.get(shelf_key[0] + (exact,)) == seq:
                del self._exact[shelf_key[0] + (exact,)]
                # another kept row with the same text takes over, the first seen
                same = [other for other in self._shelves[shelf_key].rows if self._rows[other][1] == exact]
                if same:
                    self._exact[shelf_key[0] + (exact,)] = min(
                        same, key=lambda other: (_first_seen(self._rows[other][2].entry), other)
                    )

    def replace(self, entry: Mapping[str, Any]) -> None:
        """Keep ``entry`` in place of the kept one with the same ``id`` (e.g.
        after its ``seen`` grew); an inactive one is only discarded."""
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            self.discard(entry_id)
        self.add(entry)

    def _keeps(self, entry: Mapping[str, Any]) -> bool:
        return isinstance(entry, Mapping) and bool(self.is_active(entry))

    def _keep(self, row: _Indexed) -> None:
        self._seq += 1
        seq = self._seq
        where = bucket(row.entry)
        shelf_key = (where, row.keys)
        exact = normalise_text(str(row.entry["content"]))
        held = self._exact.get(where + (exact,))
        if held is None or _first_seen(row.entry) < _first_seen(self._rows[held][2].entry):
            self._exact[where + (exact,)] = seq
        self._shelves.setdefault(shelf_key, _Shelf()).put(seq, row)
        self._rows[seq] = (shelf_key, exact, row)
        entry_id = row.entry.get("id")
        if isinstance(entry_id, str):
            self._by_id.setdefault(entry_id, []).append(seq)
        self._by_bucket.setdefault(where, set()).add(seq)

    def kept_in(self, candidate: Mapping[str, Any]) -> AbstractSet[int]:
        """The positions of the kept entries of ``candidate``'s bucket
        (namespace, type, scope, session), a live view: what a change of one
        of them may be compared with (`changes`,
        which reads each with [`kept_entry`][])."""
        return self._by_bucket.get(bucket(candidate), frozenset())

    def kept_entry(self, seq: int) -> Mapping[str, Any]:
        """The kept entry at position ``seq`` (one of [`kept_in`][]'s)."""
        return self._rows[seq][2].entry

    def find(self, candidate: Mapping[str, Any]) -> Optional[Duplicate]:
        """The kept entry ``candidate`` repeats, or None.

        An exact match wins over a near one; among near matches the most
        similar, the first kept on a tie.

        Raises:
            EntryError: ``candidate`` has no string ``content``.
        """
        return self._find(self._indexed([candidate])[0])

    def _find(self, row: _Indexed) -> Optional[Duplicate]:
        where = bucket(row.entry)
        exact = self._exact.get(where + (normalise_text(str(row.entry["content"])),))
        if exact is not None:
            return Duplicate(self._rows[exact][2].entry, DuplicateKind.EXACT, 1.0)
        shelf = self._shelves.get((where, row.keys))
        if shelf is None or verbatim(row.entry):
            return None
        near = list(shelf.rows) if row.vector is not None else shelf.sharing(row.words, self.threshold)
        best: Optional[Tuple[Tuple[float, float], Mapping[str, Any]]] = None
        for seq in near:
            kept = shelf.rows[seq]
            rank = self._near(row, kept)
            if rank[0] >= self.threshold and (best is None or rank > best[0]):
                best = (rank, kept.entry)
        return None if best is None else Duplicate(best[1], DuplicateKind.NEAR, best[0][0])

    def _near(self, a: _Indexed, b: _Indexed) -> Tuple[float, float]:
        """(the similarity the threshold judges, the tie-break): cosine twice,
        or word overlap then Jaccard (of two kept texts that both contain the
        candidate, the closer in length wins); (0, 0) for a swap
        (`swapped`), by either measure."""
        if swapped(a.words, b.words):
            return 0.0, 0.0
        if a.vector is not None and b.vector is not None:
            cosine = _cosine(a.vector, b.vector)
            return cosine, cosine
        if min(len(a.words), len(b.words)) < MIN_NEAR_WORDS and _same_words(a, b):
            return 1.0, 1.0  # too short for overlap, but every word, stopwords too, in the same order
        return word_overlap(a.words, b.words), jaccard(a.words, b.words)

    def _related(self, a: _Indexed, b: _Indexed) -> float:
        """How related two texts are, unguarded: cosine, or Jaccard."""
        if a.vector is not None and b.vector is not None:
            return _cosine(a.vector, b.vector)
        return jaccard(a.words, b.words)

    def nearest(
        self, candidate: Mapping[str, Any], k: int = 5, *, any_type: bool = False
    ) -> List[Tuple[Mapping[str, Any], float]]:
        """The ``k`` kept entries most related to ``candidate`` in its
        namespace (and type, unless ``any_type``), most related first, with
        the cosine (``embed``) or the Jaccard similarity of their words; no
        threshold and no guard. What a consolidator is shown beside a
        candidate: the updates the duplicate guards keep apart are exactly
        the neighbours it must see.
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError("nearest k must be an int >= 0, got %r" % (k,))
        row = self._indexed([candidate])[0]
        namespace, kind = bucket(candidate)[:2]
        scored: List[Tuple[float, int, Mapping[str, Any]]] = []
        for seq in sorted(self._rows):
            space, bucket_type = self._rows[seq][0][0][:2]
            if space != namespace or (not any_type and bucket_type != kind):
                continue
            kept = self._rows[seq][2]
            scored.append((self._related(row, kept), seq, kept.entry))
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [(entry, similarity) for similarity, _, entry in scored[:k]]

    def admit(self, candidates: Sequence[Mapping[str, Any]]) -> List[Optional[Duplicate]]:
        """For each candidate, in order, the entry it repeats (a kept one or an
        earlier candidate of the batch), or None; every candidate without a
        match is kept, as it is about to be written."""
        out: List[Optional[Duplicate]] = []
        for row in self._indexed(list(candidates)):
            hit = self._find(row)
            out.append(hit)
            if hit is None and self._keeps(row.entry):
                self._keep(row)
        return out


def seen_rows(entry: Mapping[str, Any], index: Optional[int] = None) -> List[Dict[str, Any]]:
    """Copies of ``entry``'s ``seen`` rows (none when it has no ``seen``):
    the one rule of that field, asked on every write
    (`check_write`) and by
    [`record_repeat`][].

    Raises:
        EntryError: ``seen`` is not a list of ``{source, at}`` mappings of
            strings (naming the entry and the field).
    """
    seen = entry.get(SEEN)
    if seen is None:
        return []
    if isinstance(seen, (list, tuple)) and all(
        isinstance(row, Mapping) and isinstance(row.get("source"), str) and isinstance(row.get("at"), str)
        for row in seen
    ):
        return [dict(row) for row in seen]
    raise entry_error(entry, index, SEEN, "must be a list of {source, at} mappings of strings, got %r" % (seen,))


def record_repeat(kept: Mapping[str, Any], *, source: str, at: str) -> Dict[str, Any]:
    """A copy of ``kept`` whose ``seen`` list ends with the repeat's
    provenance ``{"source": source, "at": at}``.

    Idempotent: a repeat already recorded (same source and time, e.g. a
    retried write) is not added twice. Nothing else changes: not the content,
    the priority, the times nor any field a scorer reads.

    Raises:
        EntryError: ``kept`` has a ``seen`` that is not a list of
            ``{source, at}`` mappings.
        ValueError / TypeError: ``source`` is not a non-empty string, or
            ``at`` is not an ISO-8601 string.
    """
    if not isinstance(source, str) or not source:
        raise TypeError("record_repeat source must be a non-empty string, got %r" % (source,))
    if not isinstance(at, str):
        raise TypeError("record_repeat at must be an ISO-8601 string, got %s" % type(at).__name__)
    moment_of(at, "record_repeat at")
    rows = seen_rows(kept)
    sighting = {"source": source, "at": at}
    copy = dict(kept)
    if sighting not in rows:
        rows.append(sighting)
    copy[SEEN] = rows
    return copy
