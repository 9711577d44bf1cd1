"""MemoryIndex: a prepared memory store for the per-turn hot path.

An agent queries its memory on every turn, but most of what selection needs
from an entry does not change between turns: its cost (a tokenizer call),
its parsed creation time, its significant words, tags, project, type and
activeness. [`MemoryIndex`][] reads those once, when an entry is added,
into typed columns, and answers ``select`` / ``retrieve_pools`` with output
identical to the stateless functions over ``index.entries``.

It holds no selection rule of its own. Per query it computes only what
depends on the query — visibility, score and cost order — as columns, and
hands them to the core's one fill, [`fill_pools`][poolsplit_adapters.poolsplit.fill_pools],
through a candidate source; the fill and the report are the core's.

With the default scorer and numpy installed, the score is vectorised: the
spec's factors are applied element-wise in the spec's order, so every score
is bit-identical to [`default_scorer`][];
the message and tag factors come from compact postings (word -> positions)
instead of re-reading every text; and each pool ranks only the top slice of
its candidates exactly, widening it only if the budget is not yet full.
With a [`RelevanceScorer`][poolsplit_adapters.relevance.RelevanceScorer] (the
adapters' default) the BM25 relevance is vectorised too: term postings kept
as entries come and go (`poolsplit_adapters.relevance.columns`), the
document frequencies those of every entry the index holds, the bounded
boosts over the columns; bit-identical to the scorer's per-entry score over
the same statistics (``RelevanceScorer.with_corpus``), which is what the
index hands the generic path. With another custom scorer, or without numpy,
the stateless path's candidates
(`BestFirstCandidates`) run with the
cached costs and activeness, so the tokenizer is still never asked
twice about an unchanged entry.

**Layout.** [`MemoryIndex`][] holds the entries and their typed columns;
what an entry puts in them is `_ColumnValues`', what the caller's counter
and predicate say of a batch `_EntryFacts`', what column scoring keeps
beside them (texts, BM25 postings, entry vectors) `_ScorerColumns`'.
`_query_source` picks a query's candidate source from the scorer's
capabilities: `_ColumnSource` (steps 1 and 3 over the columns, step 2 in
its `_ColumnScores`, step 4's counts in its `_ColumnReport`), or the
best-first stateless source.

**Threads.** Queries and mutations take one lock: every mutation
(``add``, ``extend``, ``remove``, ``remove_id``, ``replace``, ``refresh``,
``refresh_all``) is atomic, so a concurrent query sees the index before or
after it, never in between.

**Mutation.** The index caches what it read from each dict when the dict was
added. If you change an indexed dict in place, call [`refresh`][poolsplit_adapters.index.MemoryIndex.refresh] with it
(or [`refresh_all`][poolsplit_adapters.index.MemoryIndex.refresh_all]); until then the index ranks it by the old values,
while returning the same, now changed, dict. [`replace`][poolsplit_adapters.index.MemoryIndex.replace] swaps one entry
for another (the new one goes to the end, as with remove + add). Every
mutation bumps [`version`][poolsplit_adapters.index.MemoryIndex.version], so caches keyed on it are never stale.
"""

from __future__ import annotations

import array
import datetime
import functools
import itertools
import operator
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Callable, Optional, TypeVar

from .fastpath import BestFirstCandidates, plain_entry_ok
from .notes import OUTSIDE_NOTE, note_fallback
from .poolsplit import (
    DEFAULT_PRIORITY,
    MAX_COST,
    MESSAGE_THRESHOLD,
    MESSAGE_WEIGHT,
    MIN_WORD_LENGTH,
    PROJECT_OTHER,
    PROJECT_SAME,
    RECENCY_DROP,
    RECENCY_FLOOR,
    RECENCY_HORIZON_DAYS,
    STOPWORDS,
    TAG_WEIGHT,
    Candidates,
    IsActive,
    Layering,
    Pool,
    Reason,
    Scorer,
    ScorerCall,
    ScoringContext,
    Selection,
    TokenCounter,
    Visibility,
    active_visibility,
    as_utc,
    check_entry,
    check_pools,
    default_is_active,
    default_scorer,
    default_token_counter,
    describe_entry,
    entry_cost,
    entry_list,
    entry_time,
    fill_pools,
    given_token_count,
    parse_created,
    prepare_scorer,
    significant_words,
)
from .relevance.batch import SEPARATOR, byte_runs, join_texts
from .relevance.bm25 import Query
from .relevance.capabilities import RanksByWords, capabilities, note_query_cap
from .relevance.columns import TermPostings
from .relevance.feedback import SETTLE_STEP, expansion
from .relevance.modifiers import combine_columns
from .relevance.words import cache_key

try:  # numpy is optional: without it the generic path serves every query.
    import numpy as np

    from .ties import TieKeys
except ImportError:  # pragma: no cover - exercised only without numpy
    np = None  # type: ignore[assignment]

__all__ = ["MemoryIndex"]

_F = TypeVar("_F", bound=Callable[..., Any])


def _locked(method: _F) -> _F:
    """Run ``method`` under the index's lock."""

    @functools.wraps(method)
    def wrapper(self: MemoryIndex, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


_EPOCH = datetime.datetime(1, 1, 1)
_MICRO = datetime.timedelta(microseconds=1)


def _micros(moment: datetime.datetime) -> int:
    return (moment - _EPOCH) // _MICRO


def _expiry(entry: Mapping[str, Any]) -> int:
    """The ``expires`` column value: the core's ``entry_time`` in microseconds, -1 when it never expires."""
    moment = entry_time(entry, "expires")
    return -1 if moment is None else _micros(moment)


def _expiries(chunk: Sequence[Mapping[str, Any]]) -> Any:
    """The ``expires`` column of a chunk: -1 throughout when no entry has one
    (the common case, read in one ``map``), else `_expiry` per entry."""
    if not any(map(operator.methodcaller("get", "expires"), chunk)):
        return np.full(len(chunk), -1, dtype=np.int64)
    return np.fromiter(map(_expiry, chunk), dtype=np.int64, count=len(chunk))


_CHUNK = 16384  # entries whose column values are staged at once
_CONTENT = operator.itemgetter("content")
_STR_OR_NONE = frozenset((str, type(None)))
#: The numpy type each array typecode the columns use is read as (`_np`; a
#: "b" column holds flags), and the one its bytes are written from (copied as is).
_DTYPES = {"b": "bool", "q": "int64", "i": "int32", "d": "float64"}
_BYTES = {**_DTYPES, "b": "int8"}


def _created_micros(values: list[Optional[str]]) -> Any:
    """Twin of ``parse_created`` then ``_micros`` (-1 for None) over a chunk
    of strings and Nones: every text parsed by ``fromisoformat`` in one
    ``map``; any text it refuses or any offset sends the chunk to the core's
    rule, entry by entry."""
    size = len(values)
    dated = np.fromiter(map(bool, values), dtype=bool, count=size)
    try:
        stripped = map(str.rstrip, itertools.compress(values, dated), itertools.repeat("Z"))  # type: ignore[arg-type]
        moments = list(map(datetime.datetime.fromisoformat, stripped))
    except ValueError:
        moments = None
    if moments is None or not all(
        map(operator.is_, map(operator.attrgetter("tzinfo"), moments), itertools.repeat(None))
    ):
        parsed = map(parse_created, values)
        return np.fromiter((-1 if c is None else _micros(c) for c in parsed), dtype=np.int64, count=size)
    found = np.full(size, -1, dtype=np.int64)
    since_epoch = map(operator.sub, moments, itertools.repeat(_EPOCH))
    found[dated] = np.fromiter(
        map(operator.floordiv, since_epoch, itertools.repeat(_MICRO)), dtype=np.int64, count=len(moments)
    )
    return found


class _Codes(dict[Any, int]):
    """Names -> small ints (types, projects, namespaces, words, tags); None
    is -1. A lookup of an unseen name assigns the next code, so a chunk of
    names is coded by one ``map(codes.__getitem__, names)`` that stays in C
    for every name already seen."""

    def __init__(self, reserved: Iterable[Any] = ()) -> None:
        super().__init__({None: -1})
        for name in reserved:
            self[name]

    def __missing__(self, name: Any) -> int:
        code = self[name] = len(self) - 1
        return code

    def known(self, name: Optional[str]) -> Optional[int]:
        return self.get(name)


#: The per-entry columns: name -> array typecode (read by numpy as its
#: `_DTYPES`). One registry, so a new column is one line here and one in
#: ``_values``.
_COLUMNS: dict[str, str] = {
    "alive": "b",
    "active": "b",
    "always": "b",
    "cost": "q",
    "counted": "b",  # the cost was counted (no token_count given): a marker_cost applies to it
    "type": "i",
    "priority": "d",
    "created": "q",  # microseconds since year 1; -1 when absent or unparseable
    "project": "i",
    "namespace": "i",
    "has_source": "b",
    "ntags": "d",  # distinct tags, at least 1 (a divisor)
    "expires": "q",  # microseconds since year 1 (naive UTC, core.entry_time); -1 when it never expires
}


class _Identities:
    """id(entry) -> position, compactly: a sorted base of (id, position)
    pairs (16 bytes an entry, binary search; numpy path) plus a dict of
    recent additions, merged into the base once it grows. A plain dict of a
    million int keys costs ~90 MB; this costs ~16 MB."""

    def __init__(self, compact: bool) -> None:
        self.compact = compact
        self.ids = np.zeros(0, dtype=np.int64) if compact else None
        self.where = np.zeros(0, dtype=np.int64) if compact else None
        self.recent: dict[int, int] = {}
        self.gone: set[int] = set()  # ids removed from the base, until the next rebuild
        self.size = 0

    def get(self, key: int) -> Optional[int]:
        found = self.recent.get(key)
        if found is not None or self.ids is None or not len(self.ids) or key in self.gone:
            return found
        at = int(np.searchsorted(self.ids, key))
        if at < len(self.ids) and int(self.ids[at]) == key:
            return int(self.where[at])  # type: ignore[index]
        return None

    def keys(self, entries: Sequence[Mapping[str, Any]]) -> Any:
        """The identities of ``entries``: an int64 array when compact (8 bytes
        a key, where a list of a million ids holds ~40 MB), else a list."""
        if self.compact:
            return np.fromiter(map(id, entries), dtype=np.int64, count=len(entries))
        return [id(entry) for entry in entries]

    def known(self, keys: Sequence[int]) -> Optional[int]:
        """The offset of the first of ``keys`` already present (or repeated
        within ``keys``), else None; one vectorised lookup for a batch (no
        Python set of a million keys)."""
        if not self.compact:
            seen: set[int] = set()
            for offset, key in enumerate(keys):
                if key in seen or key in self.recent:
                    return offset
                seen.add(key)
            return None
        wanted = keys if isinstance(keys, np.ndarray) else np.fromiter(keys, dtype=np.int64, count=len(keys))
        hit = np.zeros(len(wanted), dtype=bool)
        order = np.argsort(wanted, kind="stable")  # a repeat is hit at its later offsets
        ordered = wanted[order]
        hit[order[1:][ordered[1:] == ordered[:-1]]] = True
        recent = self.recent
        if len(wanted) < len(recent):  # a few keys (a turn's writes): a lookup each, not a pass over recent
            hit |= np.fromiter(map(recent.__contains__, wanted.tolist()), dtype=bool, count=len(wanted))
        elif recent:
            hit |= np.isin(wanted, np.fromiter(recent, dtype=np.int64, count=len(recent)))
        if self.ids is not None and len(self.ids):
            at = np.minimum(np.searchsorted(self.ids, wanted), len(self.ids) - 1)
            based = self.ids[at] == wanted
            if self.gone:
                based &= ~np.isin(wanted, np.fromiter(self.gone, dtype=np.int64, count=len(self.gone)))
            hit |= based
        found = np.flatnonzero(hit)
        return int(found[0]) if len(found) else None

    def put_many(self, keys: Sequence[int], start: int) -> None:
        """Record ``keys[k]`` at position ``start + k``. A big batch goes
        straight into the sorted base (16 bytes an entry); a small one into
        the recent dict, folded in once it outgrows the base: O(n log n)
        overall either way."""
        self.size += len(keys)
        if self.compact and len(keys) >= 65536:
            fresh = keys if isinstance(keys, np.ndarray) else np.fromiter(keys, dtype=np.int64, count=len(keys))
            self.rebuild(None, (fresh, np.arange(start, start + len(keys), dtype=np.int64)))
            return
        keys = keys.tolist() if self.compact and isinstance(keys, np.ndarray) else keys
        self.recent.update(zip(keys, range(start, start + len(keys))))
        if self.compact and len(self.recent) > max(65536, len(self.ids) if self.ids is not None else 0):
            self.rebuild(None)

    def pop(self, key: int) -> None:
        if self.recent.pop(key, None) is None:
            self.gone.add(key)
        self.size -= 1

    def rebuild(self, slots: Optional[Sequence[Optional[Mapping[str, Any]]]], fresh: Any = None) -> None:
        """Fold the recent additions (and ``fresh``, an (ids, positions) pair
        of arrays) into the base, or, given ``slots``, rebuild from them
        after a compaction."""
        if slots is not None:
            pairs = {id(e): n for n, e in enumerate(slots) if e is not None}
            self.size = len(pairs)
            self.gone = set()
            if not self.compact:
                self.recent = pairs
                return
            self.ids, self.where, self.recent = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), pairs
        assert self.ids is not None and self.where is not None
        keep = ~np.isin(self.ids, np.fromiter(self.gone, dtype=np.int64, count=len(self.gone)))
        extra_ids, extra_where = fresh if fresh is not None else (np.zeros(0, np.int64), np.zeros(0, np.int64))
        recent_ids = np.fromiter(self.recent.keys(), np.int64, len(self.recent))
        ids = np.concatenate([self.ids[keep], recent_ids, extra_ids])
        recent_where = np.fromiter(self.recent.values(), np.int64, len(self.recent))
        where = np.concatenate([self.where[keep], recent_where, extra_where])
        order = np.argsort(ids, kind="stable")
        self.ids, self.where, self.recent, self.gone = ids[order], where[order], {}, set()


class _Rows:
    """Entry vectors by position (a float matrix grown by doubling) and
    their norms, for an embedding scorer's one matrix-vector product."""

    def __init__(self) -> None:
        self.matrix: Any = None
        self.norms: Any = None
        self.broken = False

    def put(self, start: int, rows: Any) -> None:
        from .relevance.similarity import norms_of

        rows = np.asarray(rows)
        end = start + len(rows)
        if self.matrix is None:
            self.matrix = np.zeros((max(end, 64), rows.shape[1]), dtype=rows.dtype)
            self.norms = np.zeros(len(self.matrix), dtype=np.float64)
        elif end > len(self.matrix):
            grown = max(end, 2 * len(self.matrix))
            self.matrix = np.concatenate(
                [self.matrix, np.zeros((grown - len(self.matrix), self.matrix.shape[1]), self.matrix.dtype)]
            )
            self.norms = np.concatenate([self.norms, np.zeros(grown - len(self.norms))])
        self.matrix[start:end] = rows
        self.norms[start:end] = norms_of(rows)

    def keep(self, positions: Sequence[int]) -> None:
        if self.matrix is not None:
            self.matrix = self.matrix[positions]
            self.norms = self.norms[positions]


class _Postings:
    """Key -> positions holding it, one typed array per key code (4 bytes a
    position, appended in position order: adding entries is O(their keys),
    with no merge step), plus overrides for positions re-read in place
    (their arrays still list the old keys; the override wins).

    Keys arrive a chunk at a time as parallel code/position arrays: one
    numpy sort groups them by key, so the Python work is per distinct key
    of the chunk, not per (entry, key) pair."""

    def __init__(self, codes: _Codes) -> None:
        self.codes = codes
        self.lists: list[array.array[int]] = [array.array("i") for _ in range(len(codes) - 1)]
        self.overrides: dict[int, frozenset[str]] = {}

    def add(self, codes: Any, positions: Any) -> Any:
        """Record key ``codes[k]`` at ``positions[k]`` (a key repeated at one
        position counts once); return the positions recorded, one per
        distinct (key, position)."""
        # One sort of (code, position) pairs packed in an int64 groups them
        # by key with positions ascending, and drops repeats.
        pairs = np.sort((codes.astype(np.int64) << 32) | positions.astype(np.int64))
        if len(pairs) > 1:
            pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]
        codes, positions = (pairs >> 32).astype(np.int32), (pairs & 0xFFFFFFFF).astype(np.int32)
        self.lists.extend(array.array("i") for _ in range(len(self.codes) - 1 - len(self.lists)))
        bounds = (np.flatnonzero(codes[1:] != codes[:-1]) + 1).tolist()
        starts, ends = [0, *bounds], [*bounds, len(codes)]
        lists = self.lists
        for code, first, end in zip(codes[starts].tolist() if len(codes) else (), starts, ends):
            lists[code].frombytes(positions[first:end].tobytes())
        return positions

    def add_sets(self, start: int, keysets: Sequence[Iterable[str]]) -> Any:
        """Record ``keysets[k]`` at position ``start + k``; return how many
        distinct keys each position holds."""
        flat = list(itertools.chain.from_iterable(keysets))
        codes = np.fromiter(map(self.codes.__getitem__, flat), dtype=np.int32, count=len(flat))
        lengths = np.fromiter(map(len, keysets), dtype=np.int64, count=len(keysets))  # type: ignore[arg-type]
        recorded = self.add(codes, np.repeat(np.arange(start, start + len(keysets), dtype=np.int32), lengths))
        return np.bincount(recorded - start, minlength=len(keysets)) if len(keysets) else np.zeros(0, dtype=np.int64)

    def code(self, key: str) -> Optional[int]:
        return self.codes.get(key)

    def override(self, position: int, keys: Iterable[str]) -> None:
        self.overrides[position] = frozenset(keys)

    def remap(self, keep: Any, new_position: Any) -> None:
        """Drop removed positions and renumber the rest (compaction)."""
        for code, found in enumerate(self.lists):
            old = _np(found, "int32")
            renumbered = new_position[old[keep[old]]].astype(np.int32)
            self.lists[code] = array.array("i", renumbered.tobytes())
        self.overrides = {int(new_position[p]): ks for p, ks in self.overrides.items() if keep[p]}

    def count(self, keys: Iterable[str], size: int) -> Any:
        """How many of ``keys`` each position holds (each key at most once)."""
        wanted = set(keys)
        counts = np.zeros(size, dtype=np.float64)
        for key in wanted:
            code = self.code(key)
            if code is not None and code < len(self.lists):
                counts[_np(self.lists[code], "int32")] += 1.0
        for position, own in self.overrides.items():
            if position < size:
                counts[position] = float(len(own & wanted))
        return counts


class _WordCodes(_Codes):
    """Word codes keyed by ASCII bytes, each with a flag: dropped (the
    separator, a stopword, a run shorter than a word), and as text
    (``words``): a `Vocabulary`,
    so the BM25 postings code the tokens this reader split."""

    def __init__(self) -> None:
        self.dropped = array.array("b")
        self.words: list[str] = []
        super().__init__([SEPARATOR.encode()])

    def __missing__(self, name: Any) -> int:
        self.dropped.append(len(name) < MIN_WORD_LENGTH or name in _STOP_BYTES)
        self.words.append(name.decode("ascii"))
        return super().__missing__(name)


#: The word reader's twin of ``significant_words``: a word is a maximal run
#: of at least MIN_WORD_LENGTH of WORD_CHARACTERS in the lower-cased text.
WORD_CHARACTERS = "abcdefghijklmnopqrstuvwxyz0123456789"
_STOP_BYTES = frozenset(word.encode() for word in STOPWORDS)


class _Words(_Postings):
    """The postings of content words: exactly the words of
    `significant_words` per text, found
    for a whole chunk of texts at once. The texts are joined by a separator
    and lower-cased, non-ASCII characters become ``?`` and every byte that
    cannot be part of a word a space; a split then yields the maximal runs
    of WORD_CHARACTERS (shorter ones and stopwords flagged dropped by their
    code), all in C. A test checks this against
    ``significant_words`` on arbitrary text."""

    def __init__(self) -> None:
        self.words = _WordCodes()
        super().__init__(self.words)

    def add_texts(self, start: int, texts: Sequence[str]) -> Any:
        """Post the words of ``texts`` at positions from ``start``; return
        the codes of every token split (the separators included) when the
        texts are all ASCII, for the BM25 postings to reuse, else None."""
        joined = join_texts(texts)
        # Lower-casing works per character for every character that lowers
        # to ASCII, so lowering the joined text lowers each text.
        tokens = byte_runs(joined)
        codes = np.fromiter(map(self.codes.__getitem__, tokens), dtype=np.int32, count=len(tokens))
        positions = np.cumsum(codes == 0, dtype=np.int32) + np.int32(start)
        dropped = np.frombuffer(self.words.dropped, dtype=np.int8)[codes] != 0
        self.add(codes[~dropped], positions[~dropped])
        return codes if joined.isascii() else None

    def code(self, key: str) -> Optional[int]:
        try:
            return self.codes.get(key.encode("ascii"))
        except UnicodeEncodeError:  # not a word: no entry holds it
            return None


class _ColumnValues:
    """What selection reads from an entry, as the index's column values
    (one per column of the registry ``_COLUMNS``), its type, project and
    namespace codes, its word and tag postings and its tie-break strings:
    read entry by entry, or key by key for a chunk of plain dicts. Writes
    into the index's own columns, codes, postings and tie keys (shared, not
    copied): appended (`append`), re-read in place (`rewrite`), and the
    survivors kept when the index compacts (`keep`)."""

    def __init__(
        self,
        columns: dict[str, Any],
        codes: tuple[_Codes, _Codes, _Codes],
        words: Optional[_Words],
        tags: Optional[_Postings],
        ties: Optional[TieKeys],
    ) -> None:
        self.columns = columns
        self.types, self.projects, self.namespaces = codes
        self.words, self.tags, self.ties = words, tags, ties

    def reserve(self, size: int) -> None:
        """Room for ``size`` positions in the tie keys (a batch about to be appended)."""
        if self.ties is not None:
            self.ties.reserve(size)

    def append(
        self,
        chunk: Sequence[Mapping[str, Any]],
        texts: list[str],
        costs: Sequence[int],
        active: Sequence[bool],
        start: int,
        plain: bool,
    ) -> Any:
        """Append a chunk at ``start``: key by key when it is all plain dicts
        (`append_plain`, numpy only), else entry by entry. Returns the word
        reader's token codes of ``texts``, or None without a word reader."""
        if self.ties is not None:
            self.ties.extend(chunk)
        if plain:
            return self.append_plain(chunk, texts, costs, active, start)
        for name, values in self.values(chunk, costs, active).items():
            self.columns[name].extend(values)
        return self.post(start, chunk)

    def rewrite(self, position: int, entry: Mapping[str, Any], cost: int, live: bool) -> None:
        """Re-read ``entry``, changed in place, at its ``position``."""
        for name, values in self.values([entry], [cost], [live]).items():
            self.columns[name][position] = values[0]
        self.post(position, [entry], fresh=False)
        if self.ties is not None:
            self.ties.put(position, entry)

    def keep(self, alive: list[int], size: int) -> None:
        """Only the positions ``alive`` of ``size``, in order (the index compacts)."""
        if self.words is not None and self.tags is not None:
            keep = np.zeros(size, dtype=bool)
            keep[alive] = True
            new_position = np.cumsum(keep) - 1
            self.words.remap(keep, new_position)
            self.tags.remap(keep, new_position)
        for name, code in _COLUMNS.items():
            old = self.columns[name]
            self.columns[name] = array.array(code, (old[p] for p in alive))
        if self.ties is not None:
            self.ties.keep(alive)

    def append_plain(
        self, chunk: Sequence[Mapping[str, Any]], texts: list[str], costs: Any, active: Sequence[bool], start: int
    ) -> Any:
        """The column values, words and tags of a chunk of plain dicts (each
        passed ``plain_entry_ok``), key by key: what ``values`` and ``post`` give
        entry by entry, with no Python call per entry. Returns the word
        reader's token codes (see ``_Words.add_texts``)."""
        assert self.words is not None and self.tags is not None
        size = len(chunk)

        def read(key: str, default: Any = None) -> Iterator[Any]:
            return map(dict.get, chunk, itertools.repeat(key), itertools.repeat(default))  # type: ignore[arg-type]

        ids = self.words.add_texts(start, texts)
        # ntags is len(set(tags)) or 1: the distinct tags per position, which
        # the postings count as they drop repeats.
        distinct = self.tags.add_sets(start, [tags or () for tags in read("tags")])
        values = {
            "alive": np.ones(size, dtype=bool),
            "active": np.fromiter(active, dtype=bool, count=size),
            "always": np.fromiter(map(operator.eq, read("scope"), itertools.repeat("always")), dtype=bool, count=size),
            "cost": np.asarray(costs, dtype=np.int64),
            "counted": _counted(chunk, read("token_count")),
            "type": np.fromiter(map(self.types.__getitem__, read("type", "note")), dtype=np.int32, count=size),
            "priority": np.fromiter(map(float, read("base_priority", DEFAULT_PRIORITY)), dtype=np.float64, count=size),
            "created": _created_micros(list(read("created"))),
            "project": np.fromiter(map(self.projects.__getitem__, read("project")), dtype=np.int32, count=size),
            "namespace": np.fromiter(map(self.namespaces.__getitem__, read("namespace")), dtype=np.int32, count=size),
            "has_source": np.fromiter(map(bool, read("source")), dtype=bool, count=size),
            "ntags": np.maximum(distinct, 1).astype(np.float64),
            "expires": _expiries(chunk),
        }
        for name, column in values.items():
            self.columns[name].frombytes(column.astype(_BYTES[_COLUMNS[name]]).tobytes())
        return ids

    def values(
        self, batch: Sequence[Mapping[str, Any]], costs: Sequence[int], active: Sequence[bool]
    ) -> dict[str, list[Any]]:
        """The column values of ``batch`` (what selection reads from an
        entry), column by column: every column of the registry gets one
        value per entry."""
        created = [parse_created(e.get("created")) for e in batch]
        tags = [e.get("tags") for e in batch]
        return {
            "alive": [True] * len(batch),
            "active": list(active),
            "always": [e.get("scope") == "always" for e in batch],
            "cost": list(costs),
            "counted": [given_token_count(e) is None for e in batch],
            "type": list(map(self.types.__getitem__, [e.get("type", "note") for e in batch])),
            "priority": [float(e.get("base_priority", DEFAULT_PRIORITY)) for e in batch],
            "created": [-1 if c is None else _micros(c) for c in created],
            "project": list(map(self.projects.__getitem__, [e.get("project") for e in batch])),
            "namespace": list(map(self.namespaces.__getitem__, [e.get("namespace") for e in batch])),
            "has_source": [bool(e.get("source")) for e in batch],
            "ntags": [float(len(set(t))) if t else 1.0 for t in tags],
            "expires": [_expiry(e) for e in batch],
        }

    def post(self, start: int, batch: Sequence[Mapping[str, Any]], fresh: bool = True) -> Any:
        """Record the words and tags of ``batch`` (at positions from
        ``start``); a fresh batch returns the word reader's token codes."""
        if self.words is None or self.tags is None:
            return None
        if fresh:
            ids = self.words.add_texts(start, [entry["content"] for entry in batch])
            self.tags.add_sets(start, [entry.get("tags") or () for entry in batch])
            return ids
        for offset, entry in enumerate(batch):
            self.words.override(start + offset, significant_words(entry["content"]))
            self.tags.override(start + offset, entry.get("tags") or ())


class _EntryFacts:
    """What the caller's token counter and activeness predicate say of a
    batch of entries, each asked once per batch (the counter once per
    distinct text, or once for all through ``count_many``), with the
    core's rules (``entry_cost``, ``default_is_active``) applied by their
    batch twins where they give the same answers."""

    def __init__(self, counter: TokenCounter, is_active: IsActive, numpy: bool) -> None:
        self.counter, self.is_active, self.numpy = counter, is_active, numpy

    def costs(self, batch: Sequence[Mapping[str, Any]], start: int, plain: bool = False) -> Sequence[int]:
        """Costs of a batch: the counter asked once per distinct text that
        gives no count (a counter with ``count_many`` once for all of them);
        costs are still validated by the core's ``entry_cost``."""
        given: Optional[list[Optional[int]]]
        if plain and set(map(type, map(dict.get, batch, itertools.repeat("token_count")))) == {type(None)}:  # type: ignore[arg-type]
            given = None  # twin of given_token_count: no entry gives a count
        else:
            given = [given_token_count(e) for e in batch]
            given = None if given.count(None) == len(given) else given
        texts = (
            list(map(_CONTENT, batch)) if given is None else [e["content"] for e, g in zip(batch, given) if g is None]
        )
        counted = self.count(texts)
        if given is None:
            costs: Sequence[Any] = counted
        else:
            answers = iter(counted.tolist() if isinstance(counted, np.ndarray) else counted)
            costs = [next(answers) if g is None else g for g in given]
        # The core's entry_cost is the rule; when every answer is already a
        # positive int it would return each unchanged, so it is asked only
        # to name the entry whose cost it refuses.
        if (
            isinstance(costs, list)
            and costs
            and not (set(map(type, costs)) == {int} and min(costs) >= 1 and max(costs) <= MAX_COST)
        ):
            return [entry_cost(e, _answering(c), start + k) for k, (e, c) in enumerate(zip(batch, costs))]
        return costs

    def count(self, texts: list[str]) -> Any:
        """One cost per text (a list, or an int64 array for the default counter)."""
        counter: TokenCounter = self.counter
        if counter is default_token_counter and self.numpy:
            # Twin of default_token_counter, max(1, len(text) // 4), as an array.
            return np.maximum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)) // 4, 1)
        distinct = list(dict.fromkeys(texts))
        many = getattr(counter, "count_many", None)
        answers = list(many(distinct)) if many is not None else list(map(counter, distinct))
        if len(distinct) == len(texts):
            return answers
        return list(map(dict(zip(distinct, answers)).__getitem__, texts))

    def active(self, batch: Sequence[Mapping[str, Any]], plain: bool = False) -> list[bool]:
        # Asked before anything changes: a predicate that raises leaves the
        # index as it was (the other column values cannot fail on a checked
        # entry; a malformed ``expires`` is named here, before any change).
        expiring = map(operator.methodcaller("get", "expires"), batch)
        if any(value is not None for value in expiring):
            for entry in batch:
                if entry.get("expires") is not None:
                    entry_time(entry, "expires")
        if plain and self.is_active is default_is_active:
            # Twin of default_is_active over a batch of plain dicts whose
            # status is a string and superseded_by a string or None.
            status = list(map(dict.get, batch, itertools.repeat("status"), itertools.repeat("active")))  # type: ignore[arg-type]
            newer = list(map(dict.get, batch, itertools.repeat("superseded_by")))  # type: ignore[arg-type]
            if set(map(type, status)) <= {str} and set(map(type, newer)) <= _STR_OR_NONE:
                return list(
                    map(operator.and_, map(operator.eq, status, itertools.repeat("active")), map(operator.not_, newer))
                )
        return [bool(self.is_active(e)) for e in batch]


class _ScorerColumns:
    """What the index keeps for column scoring beyond its own columns
    (`capabilities`): the text each position was counted with (what
    removing or re-reading it takes out of the BM25 statistics), the BM25
    statistics per analyzer of a words scorer, and entry vectors per
    embedding model (model id -> the scorer that embeds them and its rows
    by position, with their norms), so a query costs one matrix-vector
    product. Each is built for the index's own scorer from the start, for
    another when it first queries, and kept in step with every mutation
    after that. A broken set of vectors (an embedder failure made its rows
    incomplete) sends its queries to the core's per-entry path."""

    def __init__(self, numpy: bool) -> None:
        self.numpy = numpy
        self.texts: list[Optional[str]] = []
        self.terms: dict[tuple[Any, ...], TermPostings] = {}
        self.vectors: dict[str, tuple[Any, _Rows]] = {}

    def keep_vectors(self, embedder: Any) -> None:
        """Keep ``embedder``'s entry vectors from the first entry on."""
        if self.numpy:
            self.vectors[embedder.model_id] = (embedder, _Rows())

    def add(self, start: int, texts: list[str], ids: Any) -> None:
        """Texts appended at ``start`` (``ids``: the word reader's codes of their split, coded once for both)."""
        self.texts.extend(texts)
        for terms in self.terms.values():
            terms.add(start, texts, ids)

    def remove(self, position: int) -> None:
        text, self.texts[position] = self.texts[position], None
        for terms in self.terms.values():
            terms.remove(text)  # type: ignore[arg-type]

    def replace(self, position: int, text: str) -> None:
        old, self.texts[position] = self.texts[position], text
        for terms in self.terms.values():
            terms.replace(position, old, text)  # type: ignore[arg-type]

    def keep(self, alive: list[int]) -> None:
        """Only the positions ``alive``, in order (the index compacts)."""
        for _embedder, rows in self.vectors.values():
            rows.keep(alive)
        self.texts = [self.texts[p] for p in alive]
        for terms in self.terms.values():
            terms.rebuild(self.texts)  # type: ignore[arg-type]

    def terms_for(self, scorer: RanksByWords, vocabulary: Any) -> TermPostings:
        """The BM25 statistics of the texts for ``scorer``'s analyzer, built
        on first use (O(store) once; ``vocabulary``: the index's own word
        codes, shared)."""
        key = cache_key(scorer.analyzer)
        terms = self.terms.get(key)
        if terms is None:
            terms = self.terms[key] = TermPostings(scorer.analyzer, columns=self.numpy, vocabulary=vocabulary)
            # Removed slots still hold a position: postings of the texts as
            # they stand, the dead ones read as empty.
            terms.load(self.texts)
        return terms

    def embed(self, start: int, batch: Sequence[Mapping[str, Any]]) -> None:
        """Entry vectors for ``batch`` (one batched embedder call per model
        for the texts its cache lacks), at positions from ``start``."""
        for embedder, rows in self.vectors.values():
            if rows.broken:
                continue
            try:
                matrix = embedder.vectors_of([e["content"] for e in batch])
            except Exception:  # noqa: BLE001 - the scorer reports its own fallback per query
                rows.broken = True
                continue
            rows.put(start, matrix)

    def rows_for(self, embedder: Any) -> Optional[_Rows]:
        """The entry vectors of ``embedder``'s model (an ``EmbeddingScorer``),
        built on its first query (one batched embedding of the texts its
        cache lacks, O(store) once); None when they cannot be had (then the
        per-entry path reports the fallback)."""
        if not self.numpy:
            return None
        key = embedder.model_id
        held = self.vectors.get(key)
        if held is None:
            rows = _Rows()
            alive = [p for p, text in enumerate(self.texts) if text is not None]
            try:
                found = embedder.vectors_of([self.texts[p] for p in alive])
            except Exception:  # noqa: BLE001 - the scorer reports its own fallback per query
                rows.broken = True
            else:
                if alive:
                    full = np.zeros((len(self.texts), found.shape[1]), dtype=found.dtype)
                    full[alive] = found
                    rows.put(0, full)
            held = self.vectors[key] = (embedder, rows)
        rows = held[1]
        return None if rows.broken else rows


class MemoryIndex:
    """A prepared, mutable memory store answering pool-split queries fast.

    Args:
        entries: initial entries (plain dicts, checked on the way in).
        token_counter: cost of an entry without a positive ``token_count``;
            called once per added entry (a counter with ``count_many``, such
            as [`TiktokenCounter`][poolsplit_adapters.tokens.TiktokenCounter], is called
            once per batch).
        is_active: activeness predicate, evaluated when an entry is added or
            refreshed.
        use_numpy: set False to force the pure-Python generic path.
        scorer: the index's own scorer (default: the spec's
            ``default_scorer``); ``select(scorer=...)`` overrides it per call.
            With a [`RelevanceScorer`][poolsplit_adapters.relevance.RelevanceScorer]
            (the adapters' default) the BM25 postings are built with the
            index instead of on its first query.
        prepare_for: scorers whose structures are built with the entries:
            what [`prepare_for`][] builds after construction, built while
            the entries are read (a RelevanceScorer's postings then code the
            words the index splits for its own word column, one split for
            both), without making any of them the index's own scorer.

    Example:
        ```python
        index = MemoryIndex(entries)
        selection = index.select(pools, {"message": "deploy checkout"})
        index.add({"id": "n9", "type": "note", "content": "..."})
        ```

    Raises:
        EntryError: a malformed entry (named by id and position).
        ValueError: the same dict object added twice.
    """

    def __init__(
        self,
        entries: Iterable[Mapping[str, Any]] = (),
        *,
        token_counter: TokenCounter = default_token_counter,
        is_active: IsActive = default_is_active,
        use_numpy: bool = True,
        scorer: Scorer = default_scorer,
        prepare_for: Iterable[Scorer] = (),
    ) -> None:
        self._lock = threading.RLock()
        self._scorer = scorer
        self._version = 0
        # No entry ever cost more (removals do not lower it): whether a
        # float64 sum of costs can round (see _ColumnReport.tally).
        self._max_cost = 0
        self._numpy = bool(use_numpy and np is not None)
        self._facts = _EntryFacts(token_counter, is_active, self._numpy)
        self._slots: list[Optional[Mapping[str, Any]]] = []  # position -> entry (None: removed)
        # Whether a detached selection holds _slots: the next in-place change
        # (a removal) then works on a copy. Appends are harmless (a selection
        # reads only the positions it had).
        self._slots_lent = False
        self._where = _Identities(compact=self._numpy)
        self._columns = {name: array.array(code) for name, code in _COLUMNS.items()}
        self._types, self._projects, self._namespaces = _Codes(), _Codes(), _Codes()
        # A pool's types -> ((version, size), its positions' mask): the same
        # pools on every call of an unchanged store read one mask, not a
        # gather over the store per pool (a few plans: bounded below).
        self._type_masks: dict[tuple[str, ...], tuple[tuple[int, int], Any]] = {}
        # ((version, size, priority weight), the boost's priority term of every position).
        self._priority_terms: Optional[tuple[tuple[int, int, float], Any]] = None
        self._project_terms: Optional[tuple[tuple[Any, ...], Any]] = None
        self._words: Optional[_Words] = _Words() if self._numpy else None
        # Per position, the strings the core's order reads after the score
        # (created, id): ties are broken in C, not entry by entry.
        self._ties: Optional[TieKeys] = TieKeys() if self._numpy else None
        self._tags: Optional[_Postings] = _Postings(_Codes()) if self._numpy else None
        codes = (self._types, self._projects, self._namespaces)
        self._reader = _ColumnValues(self._columns, codes, self._words, self._tags, self._ties)
        # BM25 statistics and entry vectors for column scoring (and the texts they are kept from).
        self._scoring = _ScorerColumns(self._numpy)
        own = capabilities(scorer).vectors
        if own is not None:
            self._scoring.keep_vectors(own)
        for prepared in (scorer, *prepare_for):
            words = capabilities(prepared).words
            if words is not None:
                self._terms_for(words)
        self.extend(entries)

    # -- contents ---------------------------------------------------------------

    def __len__(self) -> int:
        return self._where.size

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return iter(self.entries)

    def __contains__(self, entry: object) -> bool:
        return self._where.get(id(entry)) is not None

    @property
    def version(self) -> int:
        """Mutation counter: bumped by every mutation, so a cache keyed on it
        is never stale."""
        return self._version

    @property
    def entries(self) -> list[Mapping[str, Any]]:
        """The indexed entries in index order (the order the stateless
        functions must be given to return identical results)."""
        with self._lock:
            return [e for e in self._slots if e is not None]

    def add(self, entry: Mapping[str, Any]) -> None:
        """Index one entry (appended at the end)."""
        self.extend([entry])

    @_locked
    def extend(self, entries: Iterable[Mapping[str, Any]]) -> None:
        """Index several entries; their costs are counted in one batch. All
        or nothing: a bad entry leaves the index unchanged."""
        batch = list(entry_list(entries))
        size = len(self)
        plain = _checked(batch, size)
        identities = self._where.keys(batch)
        known = self._where.known(identities)
        if known is not None:
            raise ValueError("%s is already in the index" % describe_entry(batch[known], size + known))
        costs = self._facts.costs(batch, len(self), plain)
        active = self._facts.active(batch, plain)
        if not batch:
            return
        self._version += 1
        self._max_cost = max(
            self._max_cost, int(costs.max() if np is not None and isinstance(costs, np.ndarray) else max(costs))
        )
        # In chunks: the per-column Python lists of a million-entry batch
        # would otherwise hold ~150 MB of temporary objects.
        self._where.put_many(identities, len(self._slots))
        del identities
        self._reader.reserve(len(self._slots) + len(batch))
        for first in range(0, len(batch), _CHUNK):
            chunk, start = batch[first : first + _CHUNK], len(self._slots)
            self._slots.extend(chunk)
            span = slice(first, first + _CHUNK)
            texts = list(map(_CONTENT, chunk))
            ids = self._reader.append(chunk, texts, costs[span], active[span], start, plain and self._numpy)
            self._scoring.add(start, texts, ids)
        self._scoring.embed(len(self._slots) - len(batch), batch)

    def _position(self, entry: Mapping[str, Any]) -> int:
        position = self._where.get(id(entry))
        if position is None:
            raise KeyError("%s is not in the index" % describe_entry(entry, None))
        return position

    @_locked
    def remove(self, entry: Mapping[str, Any]) -> None:
        """Remove an indexed entry (by identity). Raises KeyError, naming the
        entry, if it is not in the index."""
        position = self._position(entry)
        self._version += 1
        self._where.pop(id(entry))
        if self._slots_lent:  # a selection reads this list: it keeps it as it was
            self._slots, self._slots_lent = list(self._slots), False
        self._slots[position] = None
        self._columns["alive"][position] = False
        self._scoring.remove(position)
        if len(self._slots) > 64 and self._where.size < len(self._slots) // 2:
            self._compact()

    @_locked
    def remove_id(self, entry_id: str) -> list[Mapping[str, Any]]:
        """Remove every entry whose ``id`` is ``entry_id``; return them."""
        gone = [e for e in self._slots if e is not None and e.get("id") == entry_id]
        for entry in gone:
            self.remove(entry)
        return gone

    @_locked
    def replace(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """Swap ``old`` for ``new`` atomically (``new`` goes to the end of the
        order): a concurrent query sees one of the two, never neither."""
        self._position(old)
        check_entry(new)
        if self._where.get(id(new)) is not None:
            raise ValueError("%s is already in the index" % describe_entry(new, None))
        before = self._version
        self.remove(old)
        self.add(new)
        self._version = before + 1  # one mutation, one version

    def refresh(self, entry: Mapping[str, Any]) -> None:
        """Re-read an entry that was changed in place (keeps its position)."""
        self.refresh_all([entry])

    @_locked
    def refresh_all(self, entries: Optional[Iterable[Mapping[str, Any]]] = None) -> None:
        """Re-read the given entries (default: every entry); only these are
        re-counted. Raises KeyError naming an entry that is not indexed."""
        targets = [e for e in self._slots if e is not None] if entries is None else list(entries)
        positions = [self._position(e) for e in targets]
        for entry, position in zip(targets, positions):
            check_entry(entry, position)
        costs = self._facts.costs(targets, 0)
        active = self._facts.active(targets)
        self._version += 1
        self._max_cost = max([self._max_cost, *costs])
        for entry, position, cost, live in zip(targets, positions, costs, active):
            self._reader.rewrite(position, entry, cost, live)
            self._scoring.replace(position, entry["content"])
            self._scoring.embed(position, [entry])

    def _compact(self) -> None:
        """Drop removed slots, keeping the order of the rest."""
        alive = [p for p, e in enumerate(self._slots) if e is not None]
        self._reader.keep(alive, len(self._slots))
        self._slots, self._slots_lent = [self._slots[p] for p in alive], False
        self._scoring.keep(alive)
        self._where.rebuild(self._slots)

    def _terms_for(self, scorer: RanksByWords) -> TermPostings:
        """The BM25 statistics of this index's texts for ``scorer``'s analyzer (`_ScorerColumns.terms_for`)."""
        return self._scoring.terms_for(scorer, None if self._words is None else self._words.words)

    def prepare_for(self, scorer: Scorer) -> MemoryIndex:
        """Build now what the first query ranked by ``scorer`` would build
        on first use: a [`RelevanceScorer`][poolsplit_adapters.relevance.RelevanceScorer]'s
        BM25 postings (O(store), once; kept in step with every mutation
        after that). Other scorers have nothing to build (an embedding
        scorer's entry vectors stay lazy: embedding a store is a cost the
        host may not want at construction). An adapter calls it when it is
        built, so its first call costs what every later one does, and its
        construction time is what the memory really costs to hold.

        Example:
            ```python
            index = MemoryIndex(entries).prepare_for(RelevanceScorer())
            ```
        """
        words = capabilities(scorer).words
        if words is not None:
            with self._lock:
                self._terms_for(words)
        return self

    # -- queries ----------------------------------------------------------------

    def retrieve_pools(
        self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any
    ) -> dict[str, list[Any]]:
        """Same result as ``retrieve_pools(index.entries, pools, context, ...)``
        (the keywords of [`select`][])."""
        return self.select(pools, context, _report=False, **options).pools

    def select(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        now: Optional[datetime.datetime] = None,
        scorer: Optional[Scorer] = None,
        visibility: Optional[Visibility] = None,
        layering: Optional[Layering] = None,
        marker_cost: int = 0,
        _report: bool = True,
    ) -> Selection:
        """Same result as ``select(index.entries, pools, context, ...)``;
        ``scorer`` defaults to the index's own.

        ``marker_cost`` is added to each cost the index counted (an entry's
        own ``token_count`` stays as given), for this call only: the tokens
        a marker adds to each entry rendered into a prompt
        (``render.RenderedCounter.overhead``). The selection is then the
        core's with ``token_counter=RenderedCounter(...)`` over the index's
        counter: what a store's agent middleware passes, so the block the
        model reads keeps to the budgets on every store.

        Raises:
            ValueError: ``marker_cost`` is not an int >= 0.
        """
        if not (isinstance(marker_cost, int) and not isinstance(marker_cost, bool) and marker_cost >= 0):
            raise ValueError(
                "marker_cost must be an int >= 0 (tokens added to each counted cost), got %r" % (marker_cost,)
            )
        view = active_visibility(visibility)
        used = self._scorer if scorer is None else scorer
        return self._query(pools, context, now, used, view, report=_report, layering=layering, marker_cost=marker_cost)

    @_locked
    def _query(
        self,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]],
        now: Optional[datetime.datetime],
        scorer: Scorer,
        view: Optional[Visibility],
        report: bool,
        layering: Optional[Layering] = None,
        marker_cost: int = 0,
    ) -> Selection:
        pool_list = check_pools(pools)
        if marker_cost and self._max_cost + marker_cost > MAX_COST:
            # The core's rule names the entry whose cost, its marker added, is past the largest.
            for position, entry in enumerate(self._slots):
                if entry is not None and self._columns["counted"][position]:
                    entry_cost(entry, _answering(self._columns["cost"][position] + marker_cost), position)
        source, call = _query_source(self, context, now, scorer, view, report, marker_cost)
        # Frames: caller -> [retrieve_pools ->] select -> _locked wrapper -> _query -> fill_pools.
        selection = fill_pools(pool_list, source, report=report, layering=layering, stacklevel=4 if report else 5)
        note_fallback(selection, call)
        note_query_cap(selection, scorer, context)
        if report and isinstance(source, _ColumnSource):
            selection.notes[OUTSIDE_NOTE] = source.always_outside_namespace()
            source.detach()
        return selection

    def _view(self, name: str) -> Any:
        """A numpy view of a column (valid until the column next grows)."""
        return _np(self._columns[name], _DTYPES[_COLUMNS[name]])


def _query_source(
    index: MemoryIndex,
    context: Optional[Mapping[str, Any]],
    now: Optional[datetime.datetime],
    scorer: Scorer,
    view: Optional[Visibility],
    report: bool,
    marker_cost: int = 0,
) -> tuple[Candidates, Optional[ScorerCall]]:
    """The candidate source of one query of ``index`` (under its lock), and
    the call's scorer whose fallback the selection notes (None: none to
    note): the columns when the scorer's column scoring applies (the
    default's, a words scorer's, an embedding scorer's: `capabilities`),
    else the stateless best-first source over the index's cached costs and
    activeness, ranked by the scorer itself (time travel, no numpy, any
    other scorer). Either source costs each entry as the index counted it
    plus ``marker_cost`` (an entry's own ``token_count`` as given)."""
    source: Candidates
    found = capabilities(scorer)  # what the scorer can do beyond the core's protocol, asked once
    vectors, by_words = found.vectors, found.words
    # Rows of entry vectors, unless a store's similarities stand in for some (they would differ).
    rows = index._scoring.rows_for(vectors) if vectors is not None and not vectors.known else None
    embedding: Any = None  # the embedding scorer's own prepared scorer: its cosines over the rows
    if vectors is not None and rows is not None and by_words is None:
        embedding = vectors.prepare(context, now)  # vectors is the scorer itself here
    # An embedding scorer that fell back for this query ranks with its
    # lexical scorer, entry by entry: the generic path, same prepared scorer.
    vectorised = embedding is not None and not embedding.fallback_reason
    words: Optional[tuple[RanksByWords, TermPostings, Query]] = None
    fused: Any = None  # a words scorer's prepared embedder: its cosines, fused over the columns
    if by_words is not None:
        # Ranked against this index's statistics (unless the scorer
        # brings a corpus of its own): the per-entry path through the
        # same view, so both give the same bits.
        terms = index._terms_for(by_words)
        corpus = by_words.corpus if by_words.corpus is not None and len(by_words.corpus) else terms.corpus
        if index._numpy and by_words.embedding is None and not by_words.known:
            ctx = ScoringContext(context, now)  # checks the context first, as prepare would
            words = (by_words, terms, corpus.query((context or {}).get("message") or ""))
        elif index._numpy and rows is not None:
            ctx = ScoringContext(context, now)
            words = (by_words, terms, corpus.query((context or {}).get("message") or ""))
            # One query embedding; when it failed the relevance is BM25
            # alone, as PreparedRelevance.relevance says (fuse(x, None)).
            embedding = by_words.embedding.prepare(context, now)
            fused = embedding if embedding.fallback_reason is None else None
        if corpus is not by_words.corpus:  # what the generic path ranks by
            scorer = by_words.with_corpus(corpus)
    # Time travel (Visibility.as_of) reads validity times the columns do not hold: the generic path.
    columns = view is None or view.at is None
    call = ScorerCall(embedding) if embedding is not None else None  # what notes the scorer's fallback
    if words is not None and columns:
        source = _ColumnSource(
            index, ctx, view, report, words=words, fused=fused, rows=rows, now=now, marker_cost=marker_cost
        )
    elif index._numpy and columns and (scorer is default_scorer or vectorised):
        ctx = ScoringContext(context, now)
        source = _ColumnSource(index, ctx, view, report, embedding, rows=rows, now=now, marker_cost=marker_cost)
    else:
        if call is None or by_words is not None:  # a words scorer's own call, not its embedder's
            call = prepare_scorer(scorer, context, now)
        alive = [p for p, e in enumerate(index._slots) if e is not None]
        active = {id(index._slots[p]): bool(index._columns["active"][p]) for p in alive}
        cost, counted = index._columns["cost"], index._columns["counted"]
        source = BestFirstCandidates(
            [index._slots[p] for p in alive],  # type: ignore[misc]
            call,
            is_active=lambda entry: active[id(entry)],
            visibility=view,
            costs=[cost[p] + marker_cost if counted[p] else cost[p] for p in alive],
            now=now,
        )
    return source, call


def _counted(chunk: Sequence[Mapping[str, Any]], given: Iterable[Any]) -> Any:
    """Twin of ``given_token_count(e) is None`` over a chunk of plain dicts:
    True where the cost was counted. Only an entry with some ``token_count``
    (rare) asks the core's rule."""
    counted = np.fromiter(map(operator.is_, given, itertools.repeat(None)), dtype=bool, count=len(chunk))
    for k in np.flatnonzero(~counted).tolist():
        counted[k] = given_token_count(chunk[k]) is None
    return counted


def _checked(batch: Sequence[Mapping[str, Any]], start: int) -> bool:
    """Check every entry of ``batch`` (at positions from ``start``); True
    when each is a plain dict of built-in values. The twin answers for
    those (most of a big batch); anything else, or anything it doubts, gets
    the core's check, which names the entry and the field. A batch of plain
    dicts only is then read key by key, in C (the batch twins)."""
    plain = True
    for offset, entry in enumerate(batch):
        if not (type(entry) is dict and plain_entry_ok(entry)):
            plain = False
            check_entry(entry, start + offset)
    return plain


def _answering(answer: Any) -> TokenCounter:
    """A counter that gives the answer already obtained for one text."""
    return lambda _text: answer  # type: ignore[no-any-return]


def _np(column: Any, dtype: str) -> Any:
    return np.frombuffer(column, dtype=dtype) if len(column) else np.zeros(0, dtype=dtype)


class _ColumnSource:
    """The index's columns as the core's `Candidates`,
    for one query with the default (or the index's embedding) scorer: twin
    of `ListCandidates`, with visibility
    and score vectorised over every position and ranking by top slices.
    Built and used under the index's lock."""

    def __init__(
        self,
        index: MemoryIndex,
        ctx: ScoringContext,
        view: Optional[Visibility],
        report: bool,
        embedding: Any = None,
        words: Optional[tuple[RanksByWords, TermPostings, Query]] = None,
        now: Optional[datetime.datetime] = None,
        fused: Any = None,
        rows: Optional[_Rows] = None,
        marker_cost: int = 0,
    ) -> None:
        self.owner, self.embedding, self.words, self.fused, self.rows = index, embedding, words, fused, rows
        self.slots: Sequence[Optional[Mapping[str, Any]]] = index._slots
        assert index._ties is not None
        self.ties: TieKeys = index._ties
        size = self.size = len(self.slots)
        self.max_cost = index._max_cost + marker_cost
        # Views of the index's columns, valid while the query holds the lock
        # (see detach).
        col = {name: index._view(name) for name in _COLUMNS}
        if marker_cost:  # this call's costs: each counted one plus the marker (a copy, the index's stay)
            col["cost"] = col["cost"] + np.where(col["counted"], marker_cost, 0)
        self.col = col
        self.ctx = ctx
        self.visible = col["alive"] & col["active"]
        self.why = np.zeros(size, dtype=np.int8)  # index into _WHY; 0: admitted (or removed)
        self.claimed = np.zeros(size, dtype=bool)
        self._logical: Optional[Any] = None  # each position's logical index; () when nothing is removed
        # (the visible always-scope positions, the visible contextual mask), once visibility is settled
        self._split_visible: Optional[tuple[Any, Any]] = None
        self._penalty: Optional[Any] = None
        # Twin of lifecycle_reason at the call's time (its as_of branch is the generic path's).
        moment = (
            as_utc(now, "now") if now is not None else datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        )
        expires = col["expires"]
        self._exclude(self.visible & (expires >= 0) & (expires <= _micros(moment)), Reason.EXPIRED)
        if view is not None:
            self._judge(view)
        # Scored once the admitted candidates are known (feedback reads them).
        # Its two helpers hold it weakly: a source dropped without detach
        # (no report) frees the column views at once, as the index's next
        # append needs (an array with a live view cannot grow).
        self.scores, self.report = _ColumnScores(self), _ColumnReport(self)
        # A product past the float range is inf, silently, as on the
        # stateless path (Python floats do not warn).
        with np.errstate(over="ignore"):
            self.score_all = self.scores.column()
        if self._penalty is not None:
            self.score_all = self.score_all * self._penalty

    def always_outside_namespace(self) -> int:
        """Twin of `always_outside_namespace`:
        the always-scope entries the namespace kept out, from the columns."""
        kept_out = self.why == _WHY.index(Reason.NAMESPACE)
        return int(np.count_nonzero(kept_out & self.col["always"]))

    def detach(self) -> None:
        """Keep only private copies of what a lazy report reads, so the
        selection stays exact after later mutations and the index's column
        buffers are free to grow again."""
        keep = ("alive", "active", "cost")
        self.col = {name: self.col[name].copy() for name in keep}
        # The entries list is shared, not copied (an O(store) copy per
        # query): the index copies it before its next in-place change.
        self.owner._slots_lent = True
        self.owner = None  # type: ignore[assignment]

    # Step 1: admit, vectorised (the checks of Visibility.judge, same order).

    def _judge(self, view: Visibility) -> None:
        col, visible = self.col, self.visible
        chain = view.chain
        if chain:
            link = np.full(self.size, -1, dtype=np.int64)
            for number, name in enumerate(chain):
                code = self.owner._namespaces.known(name)
                if code is not None:
                    link[col["namespace"] == code] = number
            self._exclude(visible & (link < 0), Reason.NAMESPACE)
            if len(chain) > 1:
                factors = np.array([view.chain_penalty**n for n in range(len(chain))], dtype=np.float64)
                penalty = np.where(link >= 0, factors[np.maximum(link, 0)], 1.0)
                if (penalty[self.visible] != 1.0).any():
                    self._penalty = penalty
        if view.require_tags:
            assert self.owner._tags is not None
            wanted = set(view.require_tags)
            has_all = self.owner._tags.count(wanted, self.size) == float(len(wanted))
            self._exclude(self.visible & ~has_all, Reason.TAGS)
        if view.require_source:
            self._exclude(self.visible & ~col["has_source"], Reason.NO_SOURCE)
        since, until = view.bounds
        if since is not None or until is not None:
            dated = col["created"] >= 0
            contextual = self.visible & ~col["always"]
            self._exclude(contextual & ~dated, Reason.UNDATED)
            outside = np.zeros(self.size, dtype=bool)
            if since is not None:
                outside |= col["created"] < _micros(since)
            if until is not None:
                outside |= col["created"] > _micros(until)
            self._exclude(self.visible & ~col["always"] & dated & outside, Reason.OUT_OF_TIME)

    def _exclude(self, mask: Any, reason: Reason) -> None:
        self.why[mask] = _WHY.index(reason)
        self.visible &= ~mask

    # Step 3: what each pool may take, and in what order.

    def members(self, pool: Pool) -> tuple[list[int], Any]:
        if self._split_visible is None:  # visibility is settled: split once per query
            always = self.col["always"]
            self._split_visible = (np.flatnonzero(self.visible & always), self.visible & ~always)
        fixes, contextual = self._split_visible
        # The always-scope positions are few: checked one by one in numpy, not as a mask over the store.
        admitted = ~self.claimed[fixes]
        contextual = contextual & ~self.claimed
        if pool.types is not None:
            types = self._type_mask(pool.types)
            admitted &= types[fixes]
            contextual &= types
        return fixes[admitted].tolist(), np.flatnonzero(contextual)

    def _type_mask(self, types: tuple[str, ...]) -> Any:
        """Positions whose type is one of ``types`` (a lookup table indexed
        by type code; the extra last slot is for code -1, never allowed),
        kept by the index while it does not change (read-only)."""
        owner, stamp = self.owner, (self.owner._version, self.size)
        kept = owner._type_masks.get(types)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        allowed = np.zeros(len(owner._types), dtype=bool)
        allowed[[c for c in (owner._types.known(t) for t in types) if c is not None and c >= 0]] = True
        mask = allowed[self.col["type"]]
        mask.flags.writeable = False
        if len(owner._type_masks) >= _KEPT_MASKS:
            owner._type_masks.clear()
        owner._type_masks[types] = (stamp, mask)
        return mask

    def split_below(self, group: Any, threshold: float) -> tuple[Any, Any]:
        keep = self.scores.relevance()[group] >= threshold
        return group[keep], group[~keep]

    def ranked(self, group: Any, left: Callable[[], float]) -> Iterator[tuple[int, float, int]]:
        score, cost = self.score_all, self.col["cost"]
        pending = group
        want = 32
        while pending.size:
            # Whatever costs more than the room left can never be taken.
            pending = pending[cost[pending] <= left()]
            if not pending.size:
                return
            want *= 2  # a slice twice the last: few partitions whatever the cap
            if want < pending.size:
                values = score[pending]
                cut = np.partition(values, pending.size - want)[pending.size - want]
                top_mask = values >= cut  # every tie at the cut comes along
                top, pending = pending[top_mask], pending[~top_mask]
            else:
                top, pending = pending, pending[:0]
            for neg_score, _created, _id, i in self.ties.ordered(score[top], top):
                yield i, -neg_score, int(cost[i])

    def claim(self, positions: Iterable[int]) -> None:
        self.claimed[list(positions)] = True

    # Step 4: what the report needs.

    def tally(self, filled: list[Any], lost: set[int]) -> dict[tuple[Optional[str], Reason], tuple[int, int]]:
        """The report's counts (`_ColumnReport.tally`)."""
        return self.report.tally(filled, lost)

    def sample(self, filled: list[Any], lost: set[int], per_key: int) -> list[tuple[int, Reason, Optional[str]]]:
        """The report's sample (`_ColumnReport.sample`)."""
        return self.report.sample(filled, lost, per_key)

    def entry(self, position: int) -> Mapping[str, Any]:
        return self.slots[position]  # type: ignore[return-value]

    def index(self, position: int) -> int:
        if self._logical is None:
            alive = self.col["alive"]
            # Nothing removed (the usual case): each position is its own logical index.
            self._logical = () if alive.all() else np.cumsum(alive) - 1
        logical = self._logical
        return int(position) if isinstance(logical, tuple) else int(logical[position])

    def cost(self, position: int) -> int:
        return int(self.col["cost"][position])

    def score(self, position: int) -> float:
        return float(self.score_all[position])

    def verdicts(self) -> Iterator[tuple[int, Optional[Reason]]]:
        alive = np.flatnonzero(self.col["alive"])
        codes = np.where(self.col["active"][alive], self.why[alive], _WHY.index(Reason.INACTIVE))
        return ((p, _WHY[c]) for p, c in zip(alive.tolist(), codes.tolist()))


class _ColumnScores:
    """Step 2 of a `_ColumnSource`, vectorised: the score of every position
    for the query's scorer (the spec's default, bit-identical to
    ``ScoringContext.score``; a words scorer's BM25, fused with its
    embedder's cosines; an embedding scorer's cosines) and the relevance
    column ``min_relevance`` thresholds. Built once the source's visibility
    is settled (feedback reads the admitted candidates)."""

    def __init__(self, src: _ColumnSource) -> None:
        self.src = weakref.proxy(src)  # no cycle: see _ColumnSource.__init__
        self._relevance: Optional[Any] = None
        self._lexical: Optional[Any] = None

    def column(self) -> Any:
        """The score of every position, the query's scorer's (step 2)."""
        col, ctx, index = self.src.col, self.src.ctx, self.src.owner
        code = index._projects.known(ctx.project) if ctx.project is not None else None
        project = col["project"]
        embedding = self.src.embedding
        relevance_first = self.src.words[0] if self.src.words is not None else None
        if relevance_first is None and embedding is not None and embedding.fallback_reason is None:
            relevance_first = embedding.scorer
        if relevance_first is not None:
            # The relevance-first scorers (RelevanceScorer's BM25, the
            # embedding scorer's cosine): their bounded boost
            # (Modifiers.boost_columns, the twin of Modifiers.boost) over the
            # relevance column, combined as relevance.combine does per entry.
            assert index._tags is not None
            shared = index._tags.count(ctx.tags, self.src.size) if ctx.tags else None
            modifiers = relevance_first.modifiers
            boost = modifiers.boost_columns(
                col["priority"],
                None,
                None,
                shared,
                col["ntags"],
                None,
                priority_term=self._priority_term(modifiers),
                recency_term=modifiers.recency_columns(col["created"], _micros(ctx.ref)),
                project_term=self._project_term(modifiers, code),
            )
            return combine_columns(self.relevance(), boost, relevance_first.floor)
        seconds = (_micros(ctx.ref) - col["created"]).astype(np.float64) / 1e6
        score = col["priority"].copy()
        days = np.where(col["created"] >= 0, seconds / 86400.0, 0.0)
        days = np.where(days < 0.0, 0.0, days)
        recency = 1.0 - (days / RECENCY_HORIZON_DAYS) * RECENCY_DROP
        score *= np.where(recency > RECENCY_FLOOR, recency, RECENCY_FLOOR)
        if ctx.tags:
            assert index._tags is not None
            shared = index._tags.count(ctx.tags, self.src.size)
            score *= 1.0 + (shared / col["ntags"]) * TAG_WEIGHT
        same = project == (code if code is not None else -2)
        score *= np.where(project < 0, 1.0, np.where(same, PROJECT_SAME, PROJECT_OTHER))
        if ctx.nwords:
            overlap = self.relevance()
            score *= np.where(overlap > MESSAGE_THRESHOLD, 1.0 + overlap * MESSAGE_WEIGHT, 1.0)
        return score

    def _priority_term(self, modifiers: Any) -> Any:
        """``modifiers``' priority term of every position
        ([`priority_columns`][poolsplit_adapters.relevance.Modifiers.priority_columns]), kept by the
        index while it does not change: it depends on no query."""
        owner = self.src.owner
        stamp = (owner._version, self.src.size, modifiers.priority_weight)
        kept = owner._priority_terms
        if kept is None or kept[0] != stamp:
            term = modifiers.priority_columns(self.src.col["priority"])
            term.flags.writeable = False
            kept = owner._priority_terms = (stamp, term)
        return kept[1]

    def _project_term(self, modifiers: Any, code: Optional[int]) -> Any:
        """``modifiers``' project term of every position
        ([`project_columns`][poolsplit_adapters.relevance.Modifiers.project_columns]) for the
        context's project ``code``, kept by the index while neither it nor
        the project changes (an agent's calls name one project)."""
        owner = self.src.owner
        stamp = (owner._version, self.src.size, code, modifiers.project_weight)
        kept = owner._project_terms
        if kept is None or kept[0] != stamp:
            # The project code (0 another, 1 none, 2 the context's) by one
            # gather from a table indexed by project code (None, -1, is its last slot).
            table = np.zeros(len(owner._projects), dtype=np.int8)
            table[-1] = 1
            if code is not None and code >= 0:
                table[code] = 2
            term = modifiers.project_columns(table[self.src.col["project"]])
            term.flags.writeable = False
            kept = owner._project_terms = (stamp, term)
        return kept[1]

    def relevance(self) -> Any:
        """The relevance column: RelevanceScorer's normalised BM25, the
        embedding scorer's (cosine, or its hybrid mix) when it ranks by
        vectors, else the lexical overlap."""
        if self._relevance is None and self.src.words is not None:
            scorer, terms, query = self.src.words
            self._relevance = terms.relevance(query, self.src.size)
            if self.src.fused is not None:
                # fuse() over the columns, the same float64 operations:
                # (1 - w) * max(0, cosine) + w * BM25.
                cosine = self._cosines(self.src.fused)
                w = scorer.lexical_weight
                self._relevance = (1.0 - w) * np.where(cosine > 0.0, cosine, 0.0) + w * self._relevance
            if scorer.expansion is not None:
                self._relevance = self._expanded(scorer, terms, self._relevance)
        embedding = self.src.embedding
        if self._relevance is None and embedding is not None and embedding.fallback_reason is None:
            self._relevance = self._cosines(embedding)
        return self._lexical_overlap() if self._relevance is None else self._relevance

    def _expanded(self, scorer: RanksByWords, terms: TermPostings, first: Any) -> Any:
        """Twin of PreparedRelevance's feedback (relevance.feedback): the
        best admitted contextual positions (visible, not always-scope) of
        ``first`` above 0, ties by the core's key (created, id, position),
        expand the query."""
        feedback = scorer.expansion
        assert feedback is not None
        sources = np.flatnonzero(self.src.visible & ~self.src.col["always"] & (first > 0.0))
        if not len(sources):
            return first
        ties = sources[:0]
        if len(sources) > feedback.top:  # the best values: fewer than top above the cut, the rest from its ties
            values = first[sources]
            cut = _kth_largest(values, feedback.top)
            ties = sources[values == cut]
            sources = sources[values > cut]
        # Ties by the core's order after the score (created, id, position).
        best = [key[3] for key in self.src.ties.ordered(first[sources], sources)[: feedback.top]]
        # Many entries can share the cut's value (one template, one length):
        # the few wanted are picked from them by comparisons in C, none sorted.
        best += self.src.ties.smallest(ties, feedback.top - len(best))
        corpus = scorer.corpus if scorer.corpus is not None and len(scorer.corpus) else terms.corpus
        second = expansion(corpus, [self.src.slots[p]["content"] for p in best], feedback)  # type: ignore[index]
        found = terms.relevance(second, self.src.size)
        found = np.floor(found / SETTLE_STEP + 0.5) * SETTLE_STEP  # twin of relevance.feedback.settled
        return (1.0 - feedback.weight) * first + feedback.weight * found

    def _cosines(self, embedding: Any) -> Any:
        """An embedding scorer's relevance of every row (cosine, or its
        hybrid mix); zeros without a query vector (no message)."""
        vectors = self.src.rows
        if embedding.query_vector is None or vectors is None or vectors.matrix is None:
            return np.zeros(self.src.size, dtype=np.float64)
        lexical = self._lexical_overlap() if embedding.scorer.lexical_weight else None
        return embedding.relevance_of_matrix(
            vectors.matrix[: self.src.size], vectors.norms[: self.src.size], overlap=lexical
        )

    def _lexical_overlap(self) -> Any:
        if self._lexical is None:
            if not self.src.ctx.nwords:
                self._lexical = np.zeros(self.src.size, dtype=np.float64)
            else:
                assert self.src.owner._words is not None
                self._lexical = self.src.owner._words.count(self.src.ctx.words, self.src.size) / self.src.ctx.nwords
        return self._lexical


def _kth_largest(values: Any, k: int) -> Any:
    """The ``k``-th largest of ``values`` (counting ties), what
    ``np.partition(values, n - k)[n - k]`` gives. For the few sources of a
    query expansion (``k`` 2 by default) by maxima: a partition copies and
    reorders every value (0.3 ms for 40k matching entries), a maximum and
    a count per distinct value at the top read them (0.014 ms)."""
    import numpy as np

    if k > 4:
        return np.partition(values, len(values) - k)[len(values) - k]
    while True:
        top = values.max()
        ties = int(np.count_nonzero(values == top))
        if ties >= k:
            return top
        k -= ties
        values = values[values < top]


class _ColumnReport:
    """The [`Counting`][poolsplit_adapters.poolsplit.Counting] part of a
    `_ColumnSource`: the report's counts and sample of what one query left
    out, from the source's columns with no row per entry (step 4). Reads
    the source when asked, so a report made after ``detach`` reads its
    private copies."""

    def __init__(self, src: _ColumnSource) -> None:
        self.src = weakref.proxy(src)  # no cycle: see _ColumnSource.__init__
        self._left: Optional[tuple[Any, Any, Any]] = None  # (filled, key, keys) of the report's left-out keys
        self._counted: Optional[tuple[Any, Any]] = None  # (key, how many positions hold each of its keys)
        # (filled, _parts) of the report: its keys when the pool types are disjoint, else None
        self._by_group: Optional[tuple[Any, Optional[list[tuple[Any, int, int, Any]]]]] = None

    def tally(self, filled: list[Any], lost: set[int]) -> dict[tuple[Optional[str], Reason], tuple[int, int]]:
        """Twin of the core's ``_left_out`` rule, counted with arrays (see
        `_left_keys`, or `_parts` when the pools' types are
        disjoint), with no row per entry."""
        parts = self._parts(filled, lost)
        if parts is not None:
            return {k: (n, tokens if k[0] is not None else 0) for k, n, tokens, _ in parts if n}
        key, keys = self._left_keys(filled, lost)
        found = self._left_counts(filled, lost)
        tokens: Any
        if self.src.max_cost * self.src.size < 2**53:  # every sum of costs is exact in float64
            tokens = np.bincount(
                key, weights=self.src.col["cost"], minlength=len(keys) + 1
            )  # the last bin: what loaded
        else:  # costs near MAX_COST: summed as Python ints
            tokens = [0] * (len(keys) + 1)
            for n, cost in zip(key.tolist(), self.src.col["cost"].tolist()):
                tokens[n] += cost
        return {k: (int(found[n]), int(tokens[n]) if k[0] is not None else 0) for n, k in enumerate(keys) if found[n]}

    def sample(self, filled: list[Any], lost: set[int], per_key: int) -> list[tuple[int, Reason, Optional[str]]]:
        """The first ``per_key`` positions of each (pool, reason) left out,
        in input order: the core's sample, from the same keys as the counts."""
        parts = self._parts(filled, lost)
        if parts is not None:
            per_key = max(0, per_key)
            rows = [(p, k[1], k[0]) for k, n, _, first in parts if n and per_key for p in first(per_key)]
            return sorted(rows, key=lambda row: row[0])
        key, keys = self._left_keys(filled, lost)
        per_key = max(0, min(per_key, len(key)))  # a key never holds more rows than there are positions
        # Read from the front in slices, each twice the last, only for the
        # keys still short of their rows: the rows of a key most of the
        # store shares are in the first slice, one pass finds the rare ones.
        wanting = np.minimum(self._left_counts(filled, lost), per_key)
        wanting = np.append(wanting, 0)  # the slot of what loaded (key len(keys)): never wanted
        found: list[tuple[int, Reason, Optional[str]]] = []
        start, width = 0, 512
        while wanting.any() and start < len(key):
            piece = key[start : start + width]
            offsets = np.flatnonzero(wanting[piece] > 0)
            left = wanting.tolist()
            for offset, n in zip(offsets.tolist(), piece[offsets].tolist()):
                if left[n] > 0:
                    left[n] -= 1
                    found.append((start + offset, keys[n][1], keys[n][0]))
            wanting = np.array(left)
            start, width = start + width, width * 2
        return found

    def _parts(self, filled: list[Any], lost: set[int]) -> Optional[list[tuple[Any, int, int, Any]]]:
        """The left-out keys of `_left_keys` as ``(key, entries,
        tokens, first)`` (``first(n)``: the key's first ``n`` positions, in
        input order), in its key order, without a key per position: when
        every pool names its types and no two share one, no pool can
        consider what another did (a pool's group is exactly the visible
        contextual entries of its types, an always-scope entry of its types
        is loaded by it), so each key is one pool's group cut by cost, or a
        mask; else None (the general rule, `_left_keys`). Computed
        once per selection (the counts and the sample share it)."""
        cached = self._by_group
        if cached is not None and cached[0] is filled:
            return cached[1]
        parts = self._split_keys(filled, lost)
        self._by_group = (filled, parts)
        return parts

    def _split_keys(self, filled: list[Any], lost: set[int]) -> Optional[list[tuple[Any, int, int, Any]]]:
        named: set[str] = set()
        for f in filled:
            types = f[0].types
            if types is None or named.intersection(types):
                return None
            named.update(types)
        if self.src.max_cost * self.src.size >= 2**62:  # sums of costs past int64: the general rule sums Python ints
            return None
        cost, alive, active, why = self.src.col["cost"], self.src.col["alive"], self.src.col["active"], self.src.why
        parts: list[tuple[Any, int, int, Any]] = []

        def positions(where: Any) -> Any:
            return lambda n: where[:n].tolist()

        def masked(mask: Callable[[], Any]) -> Any:
            return lambda n: _first(mask(), n)

        inactive = alive & ~active
        parts.append(((None, Reason.INACTIVE), int(np.count_nonzero(inactive)), 0, masked(lambda: inactive)))
        # Visibility: a code in ``why`` marks only visible positions it took out (one reason each).
        codes = np.bincount(why.view(np.uint8), minlength=len(_WHY)) if why.any() else np.zeros(len(_WHY), np.intp)
        for code, reason in enumerate(_WHY[1:-1], start=1):
            parts.append(((None, reason), int(codes[code]), 0, masked(lambda c=code: why == c)))  # type: ignore[misc]
        grouped = 0
        for pool, always, contextual, below, picks in filled:
            below = below if below is not None else contextual[:0]
            picked = np.fromiter((p[0] for p in picks), dtype=np.intp, count=len(picks))
            room = pool.max_tokens - sum(p[2] for p in picks)
            grouped += len(always) + len(contextual) + len(below)
            paid, spent = cost[contextual], cost[picked]
            over, picked_over = paid > room, spent > room
            # Loaded picks are part of the group's costs: taken out of the side each falls on.
            budget = (
                int(np.count_nonzero(over)) - int(np.count_nonzero(picked_over)),
                int(np.sum(paid, where=over)) - int(np.sum(spent, where=picked_over)),
            )
            everything = (len(contextual) - len(picked), int(paid.sum()) - int(spent.sum()))
            cap = (everything[0] - budget[0], everything[1] - budget[1])
            taken = set(picked.tolist())

            def side(group: Any, over: Any, skip: set[int] = taken) -> Any:
                # the first n positions of the group on one side of the room, the picks skipped
                return lambda n: [p for p in group[_first(over, n + len(skip))].tolist() if p not in skip][:n]

            parts.append(((pool.name, Reason.BELOW_RELEVANCE), len(below), int(cost[below].sum()), positions(below)))
            parts.append(((pool.name, Reason.TOKEN_BUDGET), *budget, side(contextual, over)))
            parts.append(((pool.name, Reason.ENTRY_CAP), *cap, side(contextual, ~over)))
        unpooled = sorted(lost)
        parts.append(((None, Reason.ALWAYS_NO_POOL), len(unpooled), 0, lambda n: unpooled[:n]))
        # The rest of the visible entries: contextual, of no pool's types
        # (the index's type column is not kept past the query: by elimination).
        rest = int(np.count_nonzero(self.src.visible)) - grouped - len(unpooled)

        def unclaimed() -> Any:
            mask = self.src.visible & ~self.src.claimed
            for _, _, contextual, below, _ in filled:
                mask[contextual] = False
                if below is not None:
                    mask[below] = False
            mask[unpooled] = False
            return mask

        parts.append(((None, Reason.NO_POOL), rest, 0, masked(unclaimed)))
        return parts

    def _left_counts(self, filled: list[Any], lost: set[int]) -> Any:
        """How many positions hold each key of `_left_keys` (the counts
        and the sample share one count)."""
        key, keys = self._left_keys(filled, lost)
        if self._counted is None or self._counted[0] is not key:
            self._counted = (key, np.bincount(key, minlength=len(keys) + 1)[:-1])
        return self._counted[1]

    def _left_keys(self, filled: list[Any], lost: set[int]) -> tuple[Any, list[tuple[Optional[str], Reason]]]:
        """Twin of the core's ``_left_out`` rule, with arrays: per position,
        the number of its (pool or None, reason) in the returned list,
        ``len(keys)`` for what loaded (or was removed, or is hidden). The
        last pool that considered a candidate it did not load names the
        reason (token budget when it costs more than the pool's final room,
        else the entry cap). Computed once per selection (the counts and the
        sample share it)."""
        cached = self._left
        if cached is not None and cached[0] is filled:
            return cached[1], cached[2]
        size, cost = self.src.size, self.src.col["cost"]
        # Keys: inactive, the visibility reasons by their code in ``why``,
        # each pool's three reasons, then the unpooled always-scope and others.
        keys: list[tuple[Optional[str], Reason]] = [(None, Reason.INACTIVE)]
        keys += [(None, reason) for reason in _WHY[1:-1]]  # type: ignore[misc]
        keys += [(f[0].name, reason) for f in filled for reason in _POOL_REASONS]
        keys += [(None, Reason.ALWAYS_NO_POOL), (None, Reason.NO_POOL)]
        # Visible and left out: the key of the pool that last considered it,
        # else no pool (an unclaimed always-scope entry is in no pool's group).
        # A pool's members exclude what earlier pools took, and what it took
        # itself is keyed as loaded below, so its whole group is keyed here.
        loaded = len(keys)
        key = np.full(size, len(keys) - 1, dtype=np.intp)
        chosen = np.zeros(size, dtype=bool)
        for k, (pool, always, contextual, below, picks) in enumerate(filled):
            chosen[always] = True
            chosen[np.fromiter((p[0] for p in picks), dtype=np.intp, count=len(picks))] = True
            first = len(_WHY) - 1 + k * len(_POOL_REASONS)  # this pool's BELOW_RELEVANCE
            if below is not None and len(below):
                key[below] = first
            room = pool.max_tokens - sum(p[2] for p in picks)
            # The token budget when it costs more than the final room, else the entry cap.
            key[contextual] = np.where(cost[contextual] > room, first + 1, first + 2)
        # Then, each overriding the last, what is not visible or loaded,
        # hidden by visibility (its code in ``why``) and inactive (0): the
        # four cases are disjoint.
        alive, active, why = self.src.col["alive"], self.src.col["active"], self.src.why
        key[list(lost)] = len(keys) - 2
        key[chosen | ~self.src.visible] = loaded
        np.copyto(key, why, where=alive & active & (why > 0) & (why < len(_WHY) - 1))
        key[alive & ~active] = 0
        self._left = (filled, key, keys)
        return key, keys


def _first(mask: Any, n: int) -> list[int]:
    """The first ``n`` positions where ``mask`` holds, read from the front
    in slices, each twice the last (a sample of a few rows does not pass
    over the whole mask when its rows come early)."""
    found: list[int] = []
    start, width = 0, 256
    while len(found) < n and start < len(mask):
        found += (np.flatnonzero(mask[start : start + width]) + start).tolist()
        start, width = start + width, width * 2
    return found[:n]


#: How many pools' type masks an index keeps (one per distinct ``types``).
_KEPT_MASKS = 64

#: The reasons a pool gives a candidate it did not load, by code in ``tally``.
_POOL_REASONS = [Reason.BELOW_RELEVANCE, Reason.TOKEN_BUDGET, Reason.ENTRY_CAP]

#: Visibility reasons by code in ``_ColumnSource.why`` (0: none).
_WHY: list[Optional[Reason]] = [
    None,
    Reason.NAMESPACE,
    Reason.TAGS,
    Reason.NO_SOURCE,
    Reason.UNDATED,
    Reason.OUT_OF_TIME,
    Reason.EXPIRED,
    Reason.INACTIVE,
]
