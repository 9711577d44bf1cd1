"""poolsplit: pool-split retrieval for agent memory (the core selector).

One scorer filling one budget starves low-priority types and lets fresh content crowd a standing correction out.
**Pools** (token and entry budgets per group of types, filled independently) and **always-scope entries** (loaded
first, outside every budget) fix both. Stdlib only (Python 3.9+): copy this file alone; its twins are tested on it.
Entries are plain mappings; every key but ``content`` is optional, a malformed one an [`EntryError`][]:

    content        str            the payload text (required)
    type           str            entry type; default "note"
    scope          str | None     "always" loads unconditionally; anything else competes for a pool's budget
    tags           list[str]      topical tags (list or tuple of strings)
    project        str | None     owning project; None means "general"
    created        str | None     ISO-8601 (UTC); drives recency; unparseable text counts as age 0
    token_count    int            the cost when a positive int (not bool; above MAX_COST refused); else counted
    base_priority  int | float    ranking weight; default 5; finite, at most MAX_PRIORITY in magnitude
    status         str            "active" (default) loads; anything else drops
    superseded_by  any            when truthy, the entry is retired and drops
    id             str | None     stable identifier (sort tiebreak, reports)
    source         str | None     provenance (see Visibility.require_source)
    namespace      str | None     tenant, matched exactly by Visibility.namespace
    summary        str | None     a short form of content (progressive loading)
    expires        str | None     ISO-8601; from then on (inclusive) the entry drops as 'expired'
    valid_from     str | None     ISO-8601; when it became valid (default: ``created``), read by Visibility.as_of
    valid_until    str | None     ISO-8601, exclusive; when a superseded or retired entry closed, read by as_of

The algorithm ([`select`][]; [`retrieve_pools`][] and [`retrieve`][] are the same without the report), one fill,
[`fill_pools`][], over a [`Candidates`][] source (steps 1 and 2; the plain list source is [`ListCandidates`][], the
package's index and best-first sources are faster ones) with an optional [`Layering`][] (another step 3c):

1. **Admit** the active entries (``is_active``, not expired) the query may see ([`Visibility`][]), read once.
2. **Score** each admitted contextual entry a pool ranks, once per call, by the call's scorer: the spec's function
   ``scorer(entry, context, *, now=None)`` or a [`PreparingScorer`][] (``prepare(context, now)``, then ``score`` and
   ``relevance`` per entry), read through one [`ScorerCall`][] that answers its optional capabilities.
3. **Fill each pool** in order, from the admitted entries of its types that no earlier pool took (by identity):

    - a. every always-scope entry first, in input order, outside both caps;
    - b. contextual entries below the pool's ``min_relevance`` are set aside;
    - c. the rest in the total order ``(-score, created or "", id or "", input index)``, taken greedily: an entry
      that overflows the tokens is skipped and scanning goes on; the entry cap counts contextual entries only;
    - d. what loaded is claimed: an entry lands in one pool at most.
4. **Report** what loaded, each pool's budget use, and why the rest did not.
"""

from __future__ import annotations

import collections.abc
import datetime
import difflib
import enum
import functools
import itertools
import math
import numbers
import re
import types
import unicodedata
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Protocol, Sequence, Union, runtime_checkable

# fmt: off
__all__ = [
    "Pool", "Visibility", "Selection", "Chosen", "Dropped", "PoolStats", "Reason", "EntryError", "ScoringContext",
    "UnadmittedCorrectionWarning", "default_token_counter", "default_is_active", "default_scorer", "prepare_scorer",
    "Scorer", "PreparedScorer", "PreparingScorer", "ScorerCall",
    "check_entry", "check_pools", "MAX_COST", "MAX_PRIORITY", "near_miss_scope", "one_slip_from", "visible", "active_visibility", "entry_cost", "given_token_count", "entry_error", "tally",
    "describe_entry", "entry_list", "significant_words", "parse_created", "as_utc", "parse_time", "entry_time", "lifecycle_reason",
    "checked_score", "first_per_key", "check_argument", "select", "retrieve_pools", "retrieve", "STOPWORDS", "MIN_WORD_LENGTH",
    "BUDGET_REASONS", "Candidates", "Counting", "Layering", "ListCandidates", "CountedSelection", "fill_pools",
]
# fmt: on
__version__ = "0.3.0.dev0"

Entry = Mapping[str, Any]
Context = Optional[Mapping[str, Any]]
Moment = Optional[datetime.datetime]
TokenCounter = Callable[[str], int]
IsActive = Callable[[Entry], bool]
Loaded = dict[str, list[Any]]  # pool name -> the entries it loaded
_NOW = "now must be a datetime.datetime or None"
Text = Optional[str]
Index = Optional[int]


# The scorer protocol, declared once. A scorer is the spec's function ``scorer(entry, context, *, now=None)`` or a
# PreparingScorer; prepare_scorer turns either into the one shape every caller reads, a ScorerCall.
class PreparedScorer(Protocol):
    """One call's scorer, what a [`PreparingScorer`][]'s ``prepare`` returns: ``score(entry)`` ranks (a finite
    number), ``relevance(entry)`` is the part ``Pool.min_relevance`` thresholds. Optional capabilities, each asked
    in one place ([`ScorerCall`][]): ``warm(entries)`` (a pool's candidates, before they are ranked: embed them in
    one batch), ``admitted(entries)`` (once a call, its admitted contextual entries, before any ranking) and
    ``fallback_reason`` (None, or why this call ranked another way than asked: the selection notes it).
    Example: ``class Prepared: score = relevance = staticmethod(lambda entry: len(entry["content"]))``."""

    def score(self, entry: Entry) -> float: ...
    def relevance(self, entry: Entry) -> float: ...


@runtime_checkable
class PreparingScorer(Protocol):
    """A scorer that digests a call's context once (embeds the query, splits its words) for many entries:
    ``prepare(context, now)`` returns that call's [`PreparedScorer`][]. Implementing it is all a scorer needs
    (no base class), here and in every adapter; the spec's function form is accepted as well.
    Example: ``select(entries, pools, context, scorer=MyScorer())``, ``MyScorer`` having ``prepare``."""

    def prepare(self, context: Context, now: Moment) -> PreparedScorer: ...


#: What every ``scorer=`` takes: the spec's function ``(entry, context, *, now=None) -> float`` or a preparing one.
Scorer = Union[Callable[..., float], PreparingScorer]

# The default scorer's factors, named once (the index's vectorised twin reproduces them bit for bit).
RECENCY_HORIZON_DAYS, RECENCY_DROP, RECENCY_FLOOR = 90.0, 0.7, 0.3
TAG_WEIGHT, PROJECT_SAME, PROJECT_OTHER = 0.5, 1.5, 0.5
MESSAGE_THRESHOLD, MESSAGE_WEIGHT, DEFAULT_PRIORITY = 0.15, 1.5, 5


class EntryError(ValueError):
    """A malformed entry: ``index``, ``entry_id``, ``field`` locate it; ``problem`` is the message without the
    entry's name, for adapters to re-word. Example: ``except EntryError as err: print(err.entry_id, err.field)``."""

    def __init__(
        self, message: str, *, index: Index = None, entry_id: Text = None, field: Text = None, problem: Text = None
    ) -> None:
        super().__init__(message)
        self.index, self.entry_id, self.field = index, entry_id, field
        self.problem = problem if problem is not None else message


class UnadmittedCorrectionWarning(UserWarning):
    """An active always-scope entry no pool admits: the silent loss pools exist to prevent, never only a report."""


def describe_entry(entry: Any, index: Optional[int]) -> str:
    """How messages name an entry: by id (and position) when it has one."""
    entry_id = entry.get("id") if isinstance(entry, Mapping) else None
    if isinstance(entry_id, str) and entry_id:
        return "entry %r%s" % (entry_id, "" if index is None else " (index %d)" % index)
    return "entry at index %d" % index if index is not None else "entry without id"


def entry_error(entry: Any, index: Optional[int], field: Optional[str], problem: str) -> EntryError:
    """The one wording of every entry error (here and in the stores)."""
    name, entry_id = describe_entry(entry, index), entry.get("id") if isinstance(entry, Mapping) else None
    message = "%s: %s" % (name, problem) if field is None else "%s: field %r %s" % (name, field, problem)
    entry_id = entry_id if isinstance(entry_id, str) else None
    return EntryError(message, index=index, entry_id=entry_id, field=field, problem=problem)


def _got(value: Any) -> str:
    big = isinstance(value, int) and abs(value) >= 10**50
    text = "<a %d-digit int>" % len(str(value)) if big else repr(value)
    return "got %s %s" % (type(value).__name__, text[:57] + "..." if len(text) > 60 else text)


def check_argument(ok: Any, error: Callable[[str], Exception], message: str, *value: Any) -> None:
    """The one argument guard: ``error(message)`` unless ``ok``, naming ``value`` if given (worded only then)."""
    if not ok:
        raise error(message + "".join(", " + _got(v) for v in value))


_check = check_argument


def _is_number(value: Any, finite: bool = False) -> bool:
    kind = type(value)  # float and int first: the ABC check costs ten times a type test, per entry
    if kind is not float and kind is not int and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
        return False
    try:  # float() of a huge int overflows: as unusable as an infinity
        return not finite or math.isfinite(value)
    except OverflowError:
        return False


def _framework_hint(value: Any) -> str:
    """The converter's name when ``value`` is a framework's document or node
    (by its class name: the core imports no framework)."""
    name = type(value).__name__
    if name == "Document":
        return "; a LangChain Document becomes an entry with poolsplit_adapters.langchain.document_to_entry"
    if name.endswith("Node") or name == "NodeWithScore":
        return "; a LlamaIndex node becomes an entry with poolsplit_adapters.llama_index.node_to_entry"
    return ""


def check_entry(entry: Any, index: Optional[int] = None) -> None:
    """Raise [`EntryError`][] unless the keys the selector reads are well typed (``status``, ``superseded_by``:
    ``is_active``'s; an unusable ``token_count`` is counted instead; lifecycle times: when read)."""
    if not isinstance(entry, collections.abc.Mapping):  # the ABC itself: through typing's alias it costs twice as much
        raise entry_error(entry, index, None, "is not a mapping (%s)%s" % (_got(entry), _framework_hint(entry)))
    get = entry.get
    if "content" not in entry:
        raise entry_error(entry, index, "content", "is missing (every entry needs its text)")
    if not isinstance(get("content"), str):
        raise entry_error(entry, index, "content", "must be a string, %s" % _got(get("content")))
    for key in ("id", "scope", "project", "created", "namespace", "source", "summary"):
        if get(key) is not None and not isinstance(get(key), str):
            raise entry_error(entry, index, key, "must be a string or None, %s" % _got(get(key)))
    if "type" in entry and not isinstance(get("type"), str):
        raise entry_error(entry, index, "type", "must be a string, %s" % _got(get("type")))
    tags = get("tags")
    if tags is not None and not isinstance(tags, (list, tuple)):
        raise entry_error(entry, index, "tags", "must be a list or tuple of strings, %s" % _got(tags))
    for tag in (t for t in tags or () if not isinstance(t, str)):
        raise entry_error(entry, index, "tags", "must contain only strings, %s" % _got(tag))
    # NaN or an infinity would break the total order of scores; so would a
    # finite priority whose score the factors carry past the largest float.
    if "base_priority" in entry:
        priority: Any = get("base_priority")
        if not _is_number(priority, finite=True):
            raise entry_error(entry, index, "base_priority", "must be a finite number, %s" % _got(priority))
        if not -MAX_PRIORITY <= priority <= MAX_PRIORITY:
            raise entry_error(entry, index, "base_priority", "is %r, beyond MAX_PRIORITY (1e300)" % (priority,))
    count = given_token_count(entry)
    if count is not None and count > MAX_COST:
        raise entry_error(entry, index, "token_count", "is %s, above the largest cost, 2**53 - 1" % _short(count))


@dataclass(frozen=True)
class Pool:
    """A reserved budget for a group of entry types: ``max_tokens`` and ``max_entries`` cap contextual entries only;
    ``types`` None admits every type (not a bare string); below ``min_relevance`` (the score's query match) a
    candidate is set aside (it would cost and distract). ``[Pool("c", 0, 0, ("correction",)), Pool("n", 600, 9)]``."""

    name: str
    max_tokens: Union[int, float]
    max_entries: Union[int, float]
    types: Optional[tuple[str, ...]] = None
    min_relevance: Optional[float] = None

    def __post_init__(self) -> None:
        name, types, low = self.name, self.types, self.min_relevance
        _check(isinstance(name, str), TypeError, "Pool name must be a string", name)
        _check(name, ValueError, "Pool name must not be empty")
        where = "Pool %r: " % (name,)
        for attr, value in (("max_tokens", self.max_tokens), ("max_entries", self.max_entries)):
            _check(_is_number(value), TypeError, where + attr + " must be a number", value)
            _check(value == value, ValueError, where + attr + " must not be NaN")
            _check(value >= 0, ValueError, where + "%s must be >= 0, got %r" % (attr, value))
            # an integer past every cost: no text needs it, and a host's state (JSON, msgpack) cannot hold it
            big = isinstance(value, int) and value > MAX_COST
            _check(not big, ValueError, where + "%s must be at most %d or math.inf, got %s" % (attr, MAX_COST, value))
        finite = low is None or _is_number(low, finite=True)
        _check(finite, TypeError, where + "min_relevance must be a finite number or None", low)
        hint = "not the bare string %r (did you mean (%r,)?)" % (types, types)
        _check(not isinstance(types, str), TypeError, where + "types must be a tuple of type names, " + hint)
        known = types is None or isinstance(types, (set, frozenset, list, tuple))
        _check(known, TypeError, where + "types must be a tuple of strings or None", types)
        types = None if types is None else tuple(sorted(types)) if isinstance(types, (set, frozenset)) else tuple(types)
        for bad in (t for t in types or () if not isinstance(t, str)):
            raise TypeError(where + "every type must be a string, " + _got(bad))
        object.__setattr__(self, "types", types)

    def admits(self, entry_type: str) -> bool:
        """Whether entries of ``entry_type`` compete for this pool."""
        return self.types is None or entry_type in self.types

    @property
    def loads_contextual(self) -> bool:
        """Whether a contextual entry can load (a slot and a token: every entry costs 1 or more), not only always."""
        return _loads_contextual(self.max_entries, self.max_tokens)


def _loads_contextual(max_entries: Union[int, float], max_tokens: Union[int, float]) -> bool:
    return max_entries > 0 and max_tokens >= 1  # the one rule: a pool's and its stats' `loads_contextual`


def check_pools(pools: Sequence[Pool]) -> list[Pool]:
    """``pools`` as a list; raises for anything but distinct [`Pool`][] s."""
    whole = "pools must be a sequence of Pool objects"
    _check(not isinstance(pools, Pool), TypeError, whole + ", not a single Pool (wrap it in a list)")
    auto = "poolsplit_adapters.memory.task_pools(context, total_tokens=..., total_entries=...)"  # "auto"'s Pools
    auto = ", got str 'auto' ('auto' is the adapters' task plan; here give the Pools it makes: %s)" % auto
    _check(not isinstance(pools, str) or pools != "auto", TypeError, whole + auto)
    _check(isinstance(pools, Iterable) and not isinstance(pools, (str, bytes, Mapping)), TypeError, whole, pools)
    checked, seen = list(pools), set()
    for position, pool in enumerate(checked):
        _check(isinstance(pool, Pool), TypeError, "pools[%d] must be a Pool" % position, pool)
        _check(pool.name not in seen, ValueError, "duplicate pool name: %r" % (pool.name,))
        seen.add(pool.name)
    return checked


class Reason(str, enum.Enum):
    """Why an entry did not load, one cause each; a ``str`` enum (``Reason.INACTIVE == "inactive"``)."""

    INACTIVE = "inactive"  #: ``is_active`` said no (status, superseded_by), or closed by ``as_of``
    EXPIRED = "expired"  #: its ``expires`` is at or before the call's time
    NAMESPACE = "namespace"  #: its namespace is not the query's (nor in its explicit chain)
    TAGS = "tags"  #: it lacks one of the tags the query requires
    NO_SOURCE = "no_source"  #: provenance required and it has no ``source``
    UNDATED = "undated"  #: a time bound was given and its ``created`` is missing or unparseable
    OUT_OF_TIME = "out_of_time"  #: its ``created`` is outside the query's time bound (``valid_from`` after as_of)
    NO_POOL = "no_pool"  #: no pool admits the entry's type
    ALWAYS_NO_POOL = "always_no_pool"  #: an always-scope entry no pool admits (also warned)
    BELOW_RELEVANCE = "below_relevance"  #: its relevance is below its pool's ``min_relevance``
    TOKEN_BUDGET = "token_budget"  #: its cost is more than the room its pool had left
    ENTRY_CAP = "entry_cap"  #: it would have fitted, but its pool's entry cap came first

    def __str__(self) -> str:
        return str(self.value)


BUDGET_REASONS = frozenset((Reason.TOKEN_BUDGET, Reason.ENTRY_CAP))  #: "a budget cut it": what an omission line counts
Counts = dict[tuple[Optional[str], Reason], tuple[int, int]]  # (pool or None, reason) -> (entries, tokens)
Rows = Union[list["Dropped"], Callable[[], list["Dropped"]]]  # a report's rows, or how to build them when read
Notes = Optional[Mapping[str, Any]]  # what a call path records beside the selection (recall, task, metrics)


def parse_created(value: Optional[str]) -> Moment:
    """``created`` as naive datetime (an offset dropped: stores hold UTC), None if empty or unparseable (age 0)."""
    try:
        moment = datetime.datetime.fromisoformat(value.rstrip("Z")) if value else None
    except (ValueError, AttributeError):
        return None
    return moment if moment is None or moment.tzinfo is None else moment.replace(tzinfo=None)  # replace is dear


#: What an aware time is when no datetime holds its instant in UTC (``9999-12-31T23:59:59-05:00``).
PAST_UTC = "outside the years 1 to 9999 once converted to UTC"


def as_utc(moment: datetime.datetime, name: str = "the time", given: Any = None) -> datetime.datetime:
    """``moment`` as naive UTC (aware: converted; naive: taken as UTC already); ValueError "``name`` is ``given``
    (default: ``moment``), outside the years 1 to 9999 once converted to UTC" (not the conversion's OverflowError)."""
    if moment.tzinfo is None:
        return moment
    try:
        return moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    except OverflowError:
        shown = moment.isoformat() if given is None else repr(given)
        raise ValueError("%s is %s, %s" % (name, shown, PAST_UTC)) from None


def parse_time(text: str, name: str = "the time") -> Moment:
    """A lifecycle time as naive UTC (``Z`` or an offset converted), or None when not ISO-8601; ISO-8601 but past
    the years 1 to 9999 in UTC, [`as_utc`][]'s ValueError naming ``name``."""
    value = text.strip()
    try:
        moment = datetime.datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)
    except ValueError:
        return None
    return as_utc(moment, name, text)


def entry_time(entry: Entry, key: str, index: Optional[int] = None) -> Moment:
    """``entry[key]`` by `parse_time` (None if missing), strict: a misread one would hide or keep the entry."""
    value = entry.get(key)
    try:
        moment = parse_time(value) if isinstance(value, str) else None
    except ValueError:  # ISO-8601, but no datetime holds it in UTC
        raise entry_error(entry, index, key, "is %r, %s" % (value, PAST_UTC)) from None
    if value is not None and moment is None:
        raise entry_error(entry, index, key, "must be an ISO-8601 time (a string), %s" % _got(value))
    return moment


def _time_bound(name: str, value: Any) -> Moment:
    """A bound as naive UTC: text by `parse_time` as a datetime (an offset converted, never dropped), one instant."""
    where = "Visibility " + name
    moment = parse_time(value, where) if isinstance(value, str) else value
    parsed = not isinstance(value, str) or moment is not None
    _check(parsed, ValueError, "%s must be an ISO-8601 time, got %r" % (where, value))
    known = moment is None or isinstance(moment, datetime.datetime)
    _check(known, TypeError, where + " must be a datetime, an ISO-8601 string or None", value)
    return moment if moment is None else as_utc(moment, where)


@dataclass(frozen=True)
class Visibility:
    """What a query may see, before any pool (docs/core.md): a namespace or an exact chain (a silent fallback makes
    a project memory apply everywhere), required tags, a source (unsourced text reads like the model's guess),
    ``created`` bounds, ``as_of``; derived (no default: unset fails): ``chain`` (the namespaces in order, () for
    none), ``active`` (whether it filters anything). Example: ``Visibility(namespace=("a", None), since="2026-11-01")``."""

    namespace: Union[None, str, tuple[Optional[str], ...]] = None
    chain_penalty: float = 0.9
    require_tags: tuple[str, ...] = ()
    require_source: bool = False
    since: Union[None, str, datetime.datetime] = None
    until: Union[None, str, datetime.datetime] = None
    as_of: Union[None, str, datetime.datetime] = None
    bounds: tuple[Moment, Moment] = field(init=False, repr=False, compare=False)  #: since, until: naive UTC
    at: Moment = field(init=False, repr=False, compare=False)  #: ``as_of``, naive UTC
    chain: tuple[Optional[str], ...] = field(init=False, repr=False, compare=False)
    active: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ns, tags, penalty = self.namespace, self.require_tags, self.chain_penalty
        if isinstance(ns, (list, tuple)):
            links = ns and all(n is None or (isinstance(n, str) and n) for n in ns)
            _check(links, TypeError, "Visibility namespace chain must be non-empty strings or None, got %r" % (ns,))
            _check(len(set(ns)) == len(ns), ValueError, "Visibility namespace chain repeats a link: %r" % (ns,))
            object.__setattr__(self, "namespace", tuple(ns))
        else:
            known = ns is None or (isinstance(ns, str) and ns)
            _check(known, TypeError, "Visibility namespace must be a non-empty string, a chain of them, or None", ns)
        in_range = _is_number(penalty) and 0.0 < penalty <= 1.0
        _check(in_range, ValueError, "Visibility chain_penalty must be in (0, 1], got %r" % (penalty,))
        strings = not isinstance(tags, str) and isinstance(tags, Iterable) and all(isinstance(t, str) for t in tags)
        _check(strings, TypeError, "Visibility require_tags must be a list of strings", tags)
        object.__setattr__(self, "require_tags", tuple(tags))
        flag = self.require_source
        _check(isinstance(flag, bool), TypeError, "Visibility require_source must be a bool", flag)
        since, until = _time_bound("since", self.since), _time_bound("until", self.until)
        ordered = since is None or until is None or since <= until
        _check(ordered, ValueError, "Visibility since (%s) is after until (%s)" % (since, until))
        at, ns = _time_bound("as_of", self.as_of), self.namespace
        chain = () if ns is None else (ns,) if isinstance(ns, str) else ns
        active = bool(chain or self.require_tags or flag or (since, until) != (None, None) or at is not None)
        for name, value in (("bounds", (since, until)), ("at", at), ("chain", chain), ("active", active)):
            object.__setattr__(self, name, value)

    def judge(self, entry: Entry) -> tuple[Optional[Reason], float]:
        """(why the entry is not visible, or None; its score factor), checking namespace, tags, source, time."""
        factor, chain, (since, until) = 1.0, self.chain, self.bounds
        if chain:
            if entry.get("namespace") not in chain:
                return Reason.NAMESPACE, factor
            factor = self.chain_penalty ** chain.index(entry.get("namespace"))
        if self.require_tags and not all(tag in (entry.get("tags") or ()) for tag in self.require_tags):
            return Reason.TAGS, factor
        if self.require_source and not entry.get("source"):
            return Reason.NO_SOURCE, factor
        if (since is not None or until is not None) and entry.get("scope") != "always":
            created = parse_created(entry.get("created"))
            if created is None:
                return Reason.UNDATED, factor
            if (since is not None and created < since) or (until is not None and created > until):
                return Reason.OUT_OF_TIME, factor
        return None, factor


def active_visibility(visibility: Optional[Visibility]) -> Optional[Visibility]:
    """The filter a call asked for (checked), or None when it filters nothing."""
    _check(isinstance(visibility, (Visibility, type(None))), TypeError, "visibility must be a Visibility", visibility)
    return visibility if visibility is not None and visibility.active else None


def lifecycle_reason(
    entry: Entry, index: int, is_active: IsActive, now: datetime.datetime, as_of: Moment
) -> Optional[Reason]:
    """1. Why ``entry`` is not live, or None: ``is_active``, then ``expires`` (at ``now``). With ``as_of``, what was
    true then: a closing time (``valid_until``, exclusive) overrides ``is_active`` (today's state); the entry must
    have opened by then (``valid_from``, else ``created``; undated: only always-scope); expiry is judged then."""
    expires = entry_time(entry, "expires", index)
    if as_of is not None:
        until, start = entry_time(entry, "valid_until", index), entry_time(entry, "valid_from", index)
        if (until is None and not is_active(entry)) or (until is not None and until <= as_of):
            return Reason.INACTIVE
        start = start if start is not None else parse_created(entry.get("created"))
        if start is None and entry.get("scope") != "always":
            return Reason.UNDATED
        if start is not None and start > as_of:
            return Reason.OUT_OF_TIME
        now = as_of
    elif not is_active(entry):
        return Reason.INACTIVE
    return Reason.EXPIRED if expires is not None and expires <= now else None


@dataclass(frozen=True)
class Chosen:
    """A selected entry; ``score`` None if always-scope (never scored); ``layer`` "full" or a lighter one."""

    entry: Entry
    index: int
    pool: str
    always: bool
    score: Optional[float]
    cost: int
    layer: str = "full"
    full_cost: Optional[int] = None


@dataclass(frozen=True)
class Dropped:
    """An entry that did not load, with its one reason; ``pool`` (and its score and cost) last considered it."""

    entry: Entry
    index: int
    reason: Reason
    pool: Optional[str] = None
    score: Optional[float] = None
    cost: Optional[int] = None


@dataclass(frozen=True)
class PoolStats:
    """A pool's budget use: ``*_used`` count contextual entries only; always-scope ones are counted apart."""

    name: str
    max_tokens: Union[int, float]
    max_entries: Union[int, float]
    tokens_used: int
    entries_used: int
    always_count: int
    always_tokens: int
    candidates: int  #: every entry the pool considered

    @property
    def loads_contextual(self) -> bool:
        """Its pool's `Pool.loads_contextual`: whether more than always-scope entries can load."""
        return _loads_contextual(self.max_entries, self.max_tokens)


class Selection:
    """What [`select`][] chose (``chosen``: always-scope first, then by pool and rank) and why the rest did not
    (``dropped``, in input order, built only when read). Example: ``[d.reason for d in select(e, p).dropped]``."""

    def __init__(
        self, pools: Loaded, chosen: list[Chosen], dropped: Rows, stats: dict[str, PoolStats], notes: Notes = None
    ) -> None:
        self.pools, self.chosen, self.stats, self.notes, self._rows = pools, chosen, stats, dict(notes or {}), dropped

    @functools.cached_property
    def dropped(self) -> list[Dropped]:
        return list(self._rows() if callable(self._rows) else self._rows)

    @functools.cached_property
    def counts(self) -> Counts:
        """``(pool or None, reason) -> (entries, tokens)`` of what did not load (what an omission line needs)."""
        return tally((d.pool, d.reason, d.cost or 0) for d in self.dropped)

    def dropped_sample(self, per_key: int) -> list[Dropped]:
        """The first ``per_key`` rows of each ``counts`` key: a report bounded by pools and reasons, not the store."""
        return [self.dropped[n] for n in first_per_key(((d.pool, d.reason) for d in self.dropped), per_key)]

    def __repr__(self) -> str:
        counts = {name: len(got) for name, got in self.pools.items()}
        return "Selection(pools=%r, chosen=%d, stats=%r)" % (counts, len(self.chosen), list(self.stats))

    def entries(self) -> list[Any]:
        """Selected entries in render order (always-scope first)."""
        return [c.entry for c in self.chosen]

    def dropped_by_reason(self) -> dict[Reason, list[Dropped]]:
        """Dropped entries grouped by reason code."""
        return {r: [d for d in self.dropped if d.reason == r] for r in dict.fromkeys(d.reason for d in self.dropped)}


def tally(rows: Iterable[tuple[Optional[str], Reason, int]]) -> Counts:
    """``(pool or None, reason, tokens)`` triples as [`Selection.counts`][] holds them (every report's rule)."""
    counted: Counts = {}
    for pool, why, tokens in rows:
        entries, total = counted.get((pool, why), (0, 0))
        counted[(pool, why)] = (entries + 1, total + tokens)
    return counted


def first_per_key(keys: Iterable[Any], per_key: int) -> list[int]:
    """The positions of the first ``per_key`` of each key, in order (every report's sample rule)."""
    numbered: dict[Any, Iterator[int]] = collections.defaultdict(itertools.count)  # the n-th of its key
    return [n for n, key in enumerate(keys) if next(numbered[key]) < per_key]


def default_token_counter(text: str) -> int:
    """``max(1, len(text) // 4)``: crude on purpose (``.tokens`` has tokenizers), never 0 (exempt from budgets)."""
    return max(1, len(text) // 4)


def default_is_active(entry: Entry) -> bool:
    """``status`` "active" (or missing: requiring it dropped every entry that never set it) and no ``superseded_by``."""
    return entry.get("status", "active") == "active" and not entry.get("superseded_by")


class _Invisible(dict):  # type: ignore[type-arg]
    """``str.translate`` table dropping the format characters (Unicode
    category Cf), filled as characters are met (the whole range would cost
    a second to build)."""

    def __missing__(self, code: int) -> Optional[int]:
        found = None if unicodedata.category(chr(code)) == "Cf" else code
        self[code] = found
        return found


_INVISIBLE = _Invisible()


def visible(text: str) -> str:
    """``text`` without its invisible format characters (Unicode category
    Cf: zero-width space and joiners, soft hyphen, word joiner, byte order
    mark, direction marks). A reader sees none of them, yet each splits the
    word it sits in: ``"n\u200bot"`` reads "not" but is two words that are
    no negation. The one rule of every text comparison beyond the spec's
    ASCII words: the duplicate finder's and write gate's normalised text
    (`normalise_text`), the
    relevance words, task signals and `near_miss_scope`.

    Example:
        >>> visible("Do n\u200bot deploy on Fri\u00addays")
        'Do not deploy on Fridays'
    """
    return text if text.isascii() else text.translate(_INVISIBLE)


def near_miss_scope(scope: Any) -> bool:
    """Whether ``scope`` reads "always" only up to case, spaces, invisible
    characters or compatibility forms (``"Always"``, ``" always"``,
    ``"al\u200bways"``, ``"ａｌｗａｙｓ"``) or one slip of typing
    (``"allways"``, ``"alwyas"``: difflib's ratio above 0.8): scope is
    exact, so such an entry is contextual and never loads first; where
    entries are written or built from metadata, it is refused."""
    if not isinstance(scope, str) or scope == "always":
        return False
    # NFKC: a full-width "ａｌｗａｙｓ" reads "always" as well
    folded = unicodedata.normalize("NFKC", visible(scope)).strip().casefold()
    return folded == "always" or one_slip_from(folded, ("always",)) is not None


def one_slip_from(word: str, known: Sequence[str]) -> Optional[str]:
    """The word of ``known`` that ``word`` is one slip of typing away from
    (difflib's ratio above 0.8: ``"allways"``/``"always"``,
    ``"episodes"``/``"episode"``; not ``"ways"``), the closest first; None
    for none, or when ``word`` is one of them. The one rule of every "did
    you mean" that refuses or warns."""
    if word in known:
        return None
    ratios = [(difflib.SequenceMatcher(None, word, candidate).ratio(), candidate) for candidate in known]
    best = max(ratios, default=(0.0, ""))
    return best[1] if best[0] > 0.8 else None


#: The largest cost an entry may have (given or counted): every cost and
#: every sum of costs a report gives stays an exact integer in the
#: vectorised paths (int64 columns, float64 sums; MemoryIndex sums exactly
#: past 2**53). A larger count is no text's: an error names it.
MAX_COST = 2**53 - 1

#: The largest ``base_priority`` in magnitude: a score is the priority times
#: factors (the default scorer's at most x5.625, an adapter's boosts a few
#: more), so one near the largest float became an infinity, which no order
#: of scores can hold. 1e300 leaves every scorer a factor of 1e8.
MAX_PRIORITY = 1e300


def _short(number: int) -> str:
    """A huge int's digits, abridged for a one-line error."""
    digits = str(number)
    return digits if len(digits) <= 24 else "%s... (%d digits)" % (digits[:12], len(digits))


def given_token_count(entry: Entry) -> Optional[int]:
    """``token_count`` when a positive int (bool is no int here), else None."""
    count = entry.get("token_count")
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else None


def entry_cost(entry: Entry, token_counter: TokenCounter, index: Optional[int] = None) -> int:
    """A positive-int ``token_count``, else ``token_counter(content)``, which must answer one too (0: no budget)."""
    given = given_token_count(entry)
    measured = given if given is not None else token_counter(entry.get("content", ""))
    if not isinstance(measured, numbers.Integral) or isinstance(measured, bool) or measured < 1:
        problem = "is not a positive integer and token_counter returned %r for its content (costs are positive ints)"
        raise entry_error(entry, index, "token_count", problem % (measured,))
    if measured > MAX_COST:
        problem = "is not given and token_counter returned %s for its content, above the largest cost, 2**53 - 1"
        raise entry_error(entry, index, "token_count", problem % _short(int(measured)))
    return int(measured)


#: Words too common to count as shared.
STOPWORDS = frozenset(
    """the and for are but not you all can her was one our out day has had his how man new now old see two way who
    did its let put say she too use that this with from they them then than have will your what when were been into
    some more very just over only""".split()
)
MIN_WORD_LENGTH = 3  #: the shortest run that counts as a word
_RUNS = re.compile("[a-z0-9]+")


def significant_words(text: str) -> frozenset[str]:
    """What the message factor compares: lower-cased ASCII alphanumeric runs, long enough, not stopwords."""
    return frozenset(w for w in _RUNS.findall(text.lower()) if len(w) >= MIN_WORD_LENGTH and w not in STOPWORDS)


class ScoringContext:
    """The default scorer for one call, the context checked and read once: ``ScoringContext(ctx, now).score(entry)``."""

    __slots__ = ("tags", "project", "words", "nwords", "ref")

    def __init__(self, context: Context, now: Moment) -> None:
        context = {} if context is None else context
        _check(isinstance(context, Mapping), TypeError, "context must be a mapping or None", context)
        tags, project, message = context.get("tags") or (), context.get("project"), context.get("message") or ""
        bad = [t for t in tags if not isinstance(t, str)] if isinstance(tags, (list, tuple, set, frozenset)) else [tags]
        _check(not bad, TypeError, "context['tags'] must be a list of strings", *bad[:1])  # names the culprit
        known = project is None or isinstance(project, str)
        _check(known, TypeError, "context['project'] must be a string or None", project)
        _check(isinstance(message, str), TypeError, "context['message'] must be a string", message)
        _check(now is None or isinstance(now, datetime.datetime), TypeError, _NOW, now)
        self.tags, self.project, self.words = frozenset(tags), project, significant_words(message)
        self.nwords = len(self.words)
        self.ref = (now or datetime.datetime.now(datetime.timezone.utc)).replace(tzinfo=None)  # naive, as parse_created

    def partial(self, entry: Entry) -> float:
        """Every factor but the message overlap, in the spec's order (``partial * message factor`` is the score)."""
        score = float(entry.get("base_priority", DEFAULT_PRIORITY))
        created = parse_created(entry.get("created"))
        days = 0.0 if created is None else (self.ref - created).total_seconds() / 86400.0
        if days > 0.0:  # age 0 (undated, or not older than now): a factor of exactly 1
            recency = 1.0 - (days / RECENCY_HORIZON_DAYS) * RECENCY_DROP
            score *= recency if recency > RECENCY_FLOOR else RECENCY_FLOOR
        tags = entry.get("tags")
        if tags and self.tags:  # no context tags: a factor of exactly 1
            score *= 1.0 + (len(set(tags) & self.tags) / len(set(tags))) * TAG_WEIGHT
        if entry.get("project") is not None:  # None ("general") is neutral
            score *= PROJECT_SAME if entry.get("project") == self.project else PROJECT_OTHER
        return score

    def relevance(self, entry: Entry) -> float:
        """The share of the message's significant words in the content: the query-match part of the score."""
        found = self.words.intersection(_RUNS.findall(entry["content"].lower())) if self.nwords else ()
        return len(found) / self.nwords if self.nwords else 0.0

    def score(self, entry: Entry) -> float:
        """The default score of a checked entry (see [`default_scorer`][])."""
        overlap = self.relevance(entry)
        return self.partial(entry) * (1.0 + overlap * MESSAGE_WEIGHT if overlap > MESSAGE_THRESHOLD else 1.0)


def default_scorer(entry: Entry, context: Context, *, now: Moment = None) -> float:
    """The product of **base priority** (default 5); **recency** ``1 - 0.7 * days / 90`` from ``created``,
    floored at 0.3 (``now`` injectable: tests need no clock); **tags** ``1 + 0.5 f``, ``f`` the share of the
    entry's distinct tags in ``context["tags"]``; **project** x1 without one, x1.5 when it is
    ``context["project"]``, else x0.5; **message** ``1 + 1.5 f``, ``f`` the share of the message's significant
    words in the content, when ``f > 0.15``. No access-count or retrieval-frequency term, on purpose: in the
    origin system "retrieved, so scored higher, so retrieved again" made about 97% of the store unreachable."""
    check_entry(entry)
    return ScoringContext(context, now).score(entry)


def prepare_scorer(scorer: Scorer, context: Context, now: Moment) -> ScorerCall:
    """``scorer`` for one call, as a [`ScorerCall`][]: a [`PreparingScorer`][]'s ``prepare(context, now)`` (the
    query digested once), else a spec-form function asked once per entry (by id()), whose one answer is both score
    and relevance (``min_relevance`` thresholds the whole score). The only place a scorer's form is told apart."""
    if scorer is default_scorer:
        return ScorerCall(ScoringContext(context, now))
    prepare = getattr(scorer, "prepare", None)
    if prepare is not None:
        return ScorerCall.of(prepare(context, now))
    _check(callable(scorer), TypeError, "scorer must be callable or have prepare(context, now)", scorer)
    answers: dict[int, Any] = {}

    def score(entry: Entry) -> Any:
        if id(entry) not in answers:
            answers[id(entry)] = scorer(entry, context, now=now)  # type: ignore[operator]
        return answers[id(entry)]

    return ScorerCall(types.SimpleNamespace(score=score, relevance=score))


def _nothing(entries: Sequence[Entry]) -> None:
    """What a prepared scorer without ``warm`` or ``admitted`` does with them."""


class ScorerCall:
    """A scorer prepared for one call as every caller reads it ([`prepare_scorer`][] builds it): ``score`` and
    ``relevance``, and each optional capability of a [`PreparedScorer`][] always there (``warm`` and ``admitted``
    a no-op, ``fallback_reason`` None when the scorer has none), read here once, so no caller asks a scorer what
    it can do. ``prepared`` is the scorer's own prepared object; ``default`` the spec's ``ScoringContext`` when
    the call's scorer is ``default_scorer`` (its answers need no check; a source may bound them), else None.
    Example: ``prepare_scorer(my_scorer, {"message": "deploy"}, None).score(entry)``."""

    __slots__ = ("prepared", "score", "relevance", "warm", "admitted", "default")

    def __init__(self, prepared: PreparedScorer) -> None:
        hint = "give the call's prepared scorer, prepare_scorer(scorer, context, now)"
        _check(callable(getattr(prepared, "score", None)), TypeError, hint, prepared)
        self.prepared = prepared
        self.score: Callable[[Entry], float] = prepared.score
        relevance, warm, admitted = (getattr(prepared, name, None) for name in ("relevance", "warm", "admitted"))
        self.relevance: Callable[[Entry], float] = relevance if relevance is not None else self._no_relevance
        self.warm: Callable[[Sequence[Entry]], None] = warm if warm is not None else _nothing
        self.admitted: Callable[[Sequence[Entry]], None] = admitted if admitted is not None else _nothing
        self.default = prepared if isinstance(prepared, ScoringContext) else None

    @classmethod
    def of(cls, prepared: Any) -> ScorerCall:
        """``prepared`` as a ``ScorerCall`` (itself when it is one)."""
        return prepared if isinstance(prepared, ScorerCall) else cls(prepared)

    @property
    def fallback_reason(self) -> Optional[str]:
        """Why this call ranked another way than asked (read when asked: a batch may fall back late), else None."""
        return getattr(self.prepared, "fallback_reason", None)

    def _no_relevance(self, entry: Entry) -> float:
        raise TypeError(
            "the prepared scorer %s has no relevance(entry), which min_relevance needs" % type(self.prepared).__name__
        )


def checked_score(value: Any, entry: Entry, index: int, what: str) -> float:
    """A scorer's answer as a float; NaN would break the total order, an infinity every tie: the entry's error."""
    if not _is_number(value, finite=True):
        raise entry_error(entry, index, None, "%s must return a finite number, %s" % (what, _got(value)))
    return float(value)


# The seams of the fill: what holds a call's entries (a Candidates: the list source below, the index's columns,
# fastpath's best-first source) and another step 3c (a Layering: progressive loading). One fill runs over them all.
Pick = tuple[int, float, int, str]  #: position, score, cost, layer ("full" unless a layering says otherwise)
Filled = tuple[Pool, list[int], Any, Any, list[Pick]]  #: pool, always, contextual, below, picks
Left = tuple[int, Reason, Optional[str]]  #: position, reason, pool (None: no pool considered it)


class Candidates(Protocol):
    """The entries of one call as [`fill_pools`][] asks about them (steps 1 and 2 happen behind it), by the source's
    positions; a *group* is any sized iterable of them. ``members``: (always-scope positions in input order,
    contextual group) of the pool's types, admitted and unclaimed; ``ranked``: ``(position, score, cost)`` in the
    total order, possibly without what costs more than ``left()``, the room the pool has left; ``verdicts``: every
    position in input order, with why it was not admitted (None: it was); ``index``: its index in the caller's order.
    A source may also be [`Counting`][]. Example: ``fill_pools(pools, ListCandidates(entries, prepared))``."""

    def members(self, pool: Pool) -> tuple[list[int], Any]: ...
    def split_below(self, group: Any, threshold: float) -> tuple[Any, Any]: ...
    def ranked(self, group: Any, left: Callable[[], float]) -> Iterator[tuple[int, float, int]]: ...
    def claim(self, positions: Iterable[int]) -> None: ...
    def entry(self, position: int) -> Entry: ...
    def index(self, position: int) -> int: ...
    def cost(self, position: int) -> int: ...
    def score(self, position: int) -> float: ...
    def verdicts(self) -> Iterable[tuple[int, Optional[Reason]]]: ...


@runtime_checkable
class Counting(Protocol):
    """An optional capability of a [`Candidates`][] that holds columns (the index's): the report's counts
    (``tally``: ``(pool or None, reason) -> (entries, tokens)``) and sample (``sample``: ``(position, reason, pool or
    None)`` of the first ``per_key`` left out per pool and reason, in input order) without a row per entry left out.
    Without it the fill counts and samples the triples of its left-out rule, building only the sample's rows."""

    def tally(self, filled: list[Filled], lost: set[int]) -> Counts: ...
    def sample(self, filled: list[Filled], lost: set[int], per_key: int) -> list[Left]: ...


class Layering(Protocol):
    """Step 3c done another way (progressive loading): ``pick`` a pool's contextual group, as the greedy fill does;
    once every pool is filled, ``settle`` sees every pool's picks and may change their layers and costs, never which
    entries loaded (those are claimed). Example: ``select(entries, pools, context, layering=ProgressiveLayers())``."""

    def pick(self, pool: Pool, candidates: Candidates, group: Any) -> list[Pick]: ...
    def settle(self, pools: list[Pool], picks: list[list[Pick]]) -> list[list[Pick]]: ...


def entry_list(entries: Iterable[Entry]) -> Sequence[Entry]:
    """``entries`` as a list (a list or tuple itself); a single mapping, a string or a non-iterable is a
    ``TypeError``, never read as its keys or characters (entry 0 "is not a mapping (got str 'content')")."""
    listed = isinstance(entries, Iterable) and not isinstance(entries, (str, bytes, Mapping))
    _check(listed, TypeError, "entries must be a sequence of entry mappings", entries)
    return entries if isinstance(entries, (list, tuple)) else list(entries)


class ListCandidates:
    """The plain list source ([`Candidates`][]): step 1 at once, step 2 and costs (a tokenizer is a call's dear part)
    only for what the fill reaches; given ``costs``, entries count as checked.
    Example: ``fill_pools(pools, ListCandidates(entries, prepare_scorer(f, ctx, now)))``."""

    def __init__(
        self,
        entries: Iterable[Entry],
        prepared: Any,
        *,
        token_counter: TokenCounter = default_token_counter,
        is_active: IsActive = default_is_active,
        visibility: Optional[Visibility] = None,
        costs: Optional[Sequence[int]] = None,
        now: Moment = None,
    ) -> None:
        self.items: Sequence[Entry] = entry_list(entries)
        _check(now is None or isinstance(now, datetime.datetime), TypeError, _NOW, now)
        self.prepared, self.counter = ScorerCall.of(prepared), token_counter
        self.now = (
            as_utc(now, "now") if now is not None else datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        )
        self.costs: dict[int, int] = dict(enumerate(costs)) if costs is not None else {}
        self.reason: dict[int, Reason] = {}  # position -> why not admitted
        self.penalty: dict[int, float] = {}  # position -> namespace-chain factor, when not 1
        self.by_type: dict[str, list[int]] = {}  # type -> admitted contextual positions, in input order
        self.always_by_type: dict[str, list[int]] = {}  # type -> admitted always-scope positions, in input order
        self.scores: dict[int, float] = {}
        self.claimed: set[int] = set()  # id() of every entry an earlier pool took
        self.claimed_at: set[int] = set()  # their positions: the same entries while no dict object is listed twice
        self.twice = len(set(map(id, self.items))) != len(self.items)  # one object at two positions: claim by id()
        self.admit(is_active, visibility, checked=costs is not None)
        if self.prepared.admitted is not _nothing:  # a scorer that reads the call's candidates first
            self.prepared.admitted([self.items[i] for i in sorted(itertools.chain(*self.by_type.values()))])

    def admit(self, is_active: IsActive, visibility: Optional[Visibility], checked: bool) -> None:
        """1. Admit: each entry checked, then whether it is live and visible, read once; grouped by type."""
        as_of = visibility.at if visibility is not None else None
        for index, entry in enumerate(self.items):
            if not checked:
                check_entry(entry, index)
            why, factor = lifecycle_reason(entry, index, is_active, self.now, as_of), 1.0
            if why is None and visibility is not None:
                why, factor = visibility.judge(entry)
            if why is not None:
                self.reason[index] = why
                continue
            if factor != 1.0:
                self.penalty[index] = factor
            runs = self.always_by_type if entry.get("scope") == "always" else self.by_type
            runs.setdefault(entry.get("type", "note"), []).append(index)

    def score(self, position: int) -> float:
        """2. Score, once, times the chain factor (the default score is not re-checked: an overflow ranks as inf)."""
        if position not in self.scores:
            entry = self.items[position]
            score = self.prepared.score(entry)
            if self.prepared.default is None:
                score = checked_score(score, entry, position, "scorer")
            self.scores[position] = score * self.penalty.get(position, 1.0)
        return self.scores[position]

    def cost(self, position: int) -> int:
        if position not in self.costs:
            self.costs[position] = entry_cost(self.items[position], self.counter, position)
        return self.costs[position]

    def members(self, pool: Pool) -> tuple[list[int], list[int]]:
        return self.unclaimed(pool, self.always_by_type), self.unclaimed(pool, self.by_type)

    def unclaimed(self, pool: Pool, by_type: dict[str, list[int]]) -> list[int]:
        """The positions of the pool's types in input order, without what an earlier pool claimed."""
        found = sorted(itertools.chain(*(run for entry_type, run in by_type.items() if pool.admits(entry_type))))
        if self.twice:
            return [i for i in found if id(self.items[i]) not in self.claimed]
        return found if self.claimed_at.isdisjoint(found) else [i for i in found if i not in self.claimed_at]

    def warm(self, group: list[int]) -> None:
        if self.prepared.warm is not _nothing:  # a scorer that embeds entries: one batch per pool
            self.prepared.warm([self.items[i] for i in group])

    def split_below(self, group: list[int], threshold: float) -> tuple[list[int], list[int]]:
        self.warm(group)
        at, relevance = self.items, self.prepared.relevance
        kept = {i for i in group if checked_score(relevance(at[i]), at[i], i, "relevance") >= threshold}
        return [i for i in group if i in kept], [i for i in group if i not in kept]

    def ranked(self, group: list[int], left: Callable[[], float]) -> Iterator[tuple[int, float, int]]:
        self.warm(group)
        at = self.items
        keys = sorted((-self.score(i), at[i].get("created") or "", at[i].get("id") or "", i) for i in group)
        return ((i, -negative, self.cost(i)) for negative, _, _, i in keys)

    def claim(self, positions: Iterable[int]) -> None:
        for i in positions:
            self.claimed.add(id(self.items[i]))
            self.claimed_at.add(i)

    def entry(self, position: int) -> Entry:
        return self.items[position]

    def index(self, position: int) -> int:
        return position

    def verdicts(self) -> Iterator[tuple[int, Optional[Reason]]]:
        return ((i, self.reason.get(i)) for i in range(len(self.items)))


class CountedSelection(Selection):
    """A [`Selection`][] whose ``counts`` and ``dropped_sample`` come from the fill's source (a [`Counting`][] one's
    columns, else the left-out rule's triples), without a ``Dropped`` row per entry left out; once ``dropped`` is
    built the sample is read from it. Example: ``fill_pools(pools, source).counts`` builds no row."""

    def __init__(
        self, *selection: Any, counts: Callable[[], Counts], sample: Callable[[int], list[Dropped]], **named: Any
    ) -> None:
        """``selection`` (and ``named``): the ``Selection``'s arguments; ``counts``, ``sample``: the source's."""
        super().__init__(*selection, **named)
        self._counted, self._sample = counts, sample

    @functools.cached_property
    def counts(self) -> Counts:
        """``(pool or None, reason) -> (entries, tokens)`` of what did not load, from the source."""
        return self._counted()

    def dropped_sample(self, per_key: int) -> list[Dropped]:
        """The first ``per_key`` rows of each ``counts`` key; only the sample's rows are built."""
        if "dropped" in self.__dict__:  # the rows are built already: read them
            return super().dropped_sample(per_key)
        return self._sample(per_key)


_EVERY_TYPE = Pool("every type", 0, 0)


def fill_pools(
    pools: Sequence[Pool],
    candidates: Candidates,
    *,
    report: bool = True,
    warn: bool = True,
    notes: Notes = None,
    layering: Optional[Layering] = None,
    stacklevel: int = 2,
) -> Selection:
    """Steps 3 and 4 over ``candidates`` (steps 1 and 2 happen behind it): THE fill, whatever holds the entries (the
    list source, the index's columns, fastpath's best-first source); ``layering`` does step 3c another way."""
    pool_list, filled = check_pools(pools), []
    # 3. Fill each pool in order, from the admitted entries of its types that no earlier pool took (by identity).
    for pool in pool_list:
        # 3a. Every always-scope entry first, in input order, outside both caps.
        always, contextual = candidates.members(pool)
        # 3b. Contextual entries below the pool's min_relevance are set aside.
        low, below = pool.min_relevance, None
        if low is not None:
            contextual, below = candidates.split_below(contextual, low)
        # 3c. The rest in the total order, greedily (or the layering's way).
        picks = (_greedy if layering is None else layering.pick)(pool, candidates, contextual)
        # 3d. What loaded is claimed: an entry lands in one pool at most.
        candidates.claim(always + [p[0] for p in picks])
        filled.append((pool, always, contextual, below, picks))
    if layering is not None:  # every pool filled: the layering may change layers and costs, not entries
        filled = [f[:4] + (p,) for f, p in zip(filled, layering.settle(pool_list, [f[4] for f in filled]))]
    at, index, cost = candidates.entry, candidates.index, candidates.cost
    result = {f[0].name: [at(i) for i in f[1] + [p[0] for p in f[4]]] for f in filled}
    # 4. Report. Every pool claimed its types' always-scope entries: those left, no pool admits (never only a row).
    lost = candidates.members(_EVERY_TYPE)[0]
    for i in lost if warn else ():
        message = "%s is an always-scope correction of type %r, but no pool admits that type: it will not load. "
        message %= (describe_entry(at(i), index(i)), at(i).get("type", "note"))
        warnings.warn(message + "Add the type to a pool.", UnadmittedCorrectionWarning, stacklevel=stacklevel + 1)
    if not report:
        return Selection(result, [], [], {}, notes)
    always_rows, picked_rows, stats, lost_set = [], [], {}, set(lost)
    for pool, always, contextual, below, picks in filled:
        paid, name = [cost(i) for i in always], pool.name
        always_rows += [Chosen(at(i), index(i), name, True, None, c, "full", c) for i, c in zip(always, paid)]
        picked_rows += [Chosen(at(i), index(i), name, False, s, c, layer, cost(i)) for i, s, c, layer in picks]
        seen, used = len(always) + len(contextual) + (len(below) if below is not None else 0), sum(p[2] for p in picks)
        stats[name] = PoolStats(name, pool.max_tokens, pool.max_entries, used, len(picks), len(always), sum(paid), seen)

    def rows(left: Optional[Iterable[Left]] = None) -> list[Dropped]:
        left = _left_out(candidates, filled, lost_set) if left is None else left
        return [Dropped(at(i), index(i), why, *((p, candidates.score(i), cost(i)) if p else ())) for i, why, p in left]

    # Counts and sample without a row per entry left out: a column source's (Counting), else from the rule.
    if isinstance(candidates, Counting):
        counting = candidates

        def counts() -> Counts:
            return counting.tally(filled, lost_set)

        def sample(per_key: int) -> list[Dropped]:
            return rows(counting.sample(filled, lost_set, per_key))

    else:

        def counts() -> Counts:
            return tally((p, why, cost(i) if p else 0) for i, why, p in _left_out(candidates, filled, lost_set))

        def sample(per_key: int) -> list[Dropped]:
            left = list(_left_out(candidates, filled, lost_set))
            return rows([left[n] for n in first_per_key(((p, why) for _, why, p in left), per_key)])

    return CountedSelection(result, always_rows + picked_rows, rows, stats, notes, counts=counts, sample=sample)


def _greedy(pool: Pool, candidates: Candidates, contextual: Any) -> list[Pick]:
    """3c: in rank order, skip what overflows the tokens (a smaller one may fit); stop at the entry cap or when full;
    the entry cap counts contextual entries only."""
    picks: list[Pick] = []
    used = 0

    def left() -> float:  # read as the fill goes: a ranking may leave out what no longer fits
        return pool.max_tokens - used

    for i, score, cost in candidates.ranked(contextual, left) if pool.loads_contextual else ():
        if used + cost > pool.max_tokens:
            continue
        picks.append((i, score, cost, "full"))
        used += cost
        if len(picks) >= pool.max_entries or used + 1 > pool.max_tokens:
            break
    return picks


def _left_out(candidates: Candidates, filled: list[Filled], lost: set[int]) -> Iterator[Left]:
    """4. ``(position, reason, pool or None)`` of each entry that did not load, in input order. The last pool that
    considered an entry decides: token budget if it costs more than that pool's final room (it could never have
    fitted), else the entry cap, whatever how far the fill scanned."""
    last: dict[int, tuple[str, Reason]] = {}
    chosen: set[int] = set()
    for pool, always, contextual, below, picks in filled:
        picked, room = {p[0] for p in picks}, pool.max_tokens - sum(p[2] for p in picks)
        chosen.update(always, picked)
        last.update((int(i), (pool.name, Reason.BELOW_RELEVANCE)) for i in (() if below is None else below))
        for i in (int(i) for i in contextual if i not in picked):
            last[i] = (pool.name, Reason.TOKEN_BUDGET if candidates.cost(i) > room else Reason.ENTRY_CAP)
    for i, why in candidates.verdicts():
        if i not in chosen:
            unpooled = Reason.ALWAYS_NO_POOL if i in lost else Reason.NO_POOL
            yield (i, last[i][1], last[i][0]) if why is None and i in last else (i, why or unpooled, None)


def select(
    entries: Sequence[Entry],
    pools: Sequence[Pool],
    context: Context = None,
    *,
    scorer: Scorer = default_scorer,
    token_counter: TokenCounter = default_token_counter,
    is_active: IsActive = default_is_active,
    now: Moment = None,
    visibility: Optional[Visibility] = None,
    layering: Optional[Layering] = None,
    candidates: Callable[..., Candidates] = ListCandidates,
    _report: bool = True,
    _warn: bool = True,
    _stacklevel: int = 2,
) -> Selection:
    """Steps 1-4 with the report of what did not load and why (silent truncation makes a model believe "that is
    all there is"): [`fill_pools`][] over ``candidates(entries, prepared scorer, **keywords)`` (the list source; any
    source of the same arguments, e.g. fastpath's best-first one), ``layering`` another step 3c."""
    pool_list, view, prepared = check_pools(pools), active_visibility(visibility), prepare_scorer(scorer, context, now)
    # 1. Admit and 2. score (once each, when a pool ranks the entry): the source's.
    source = candidates(entries, prepared, token_counter=token_counter, is_active=is_active, visibility=view, now=now)
    # 3. Fill each pool and 4. report.
    return fill_pools(pool_list, source, report=_report, warn=_warn, layering=layering, stacklevel=_stacklevel)


def retrieve_pools(entries: Sequence[Entry], pools: Sequence[Pool], context: Context = None, **options: Any) -> Loaded:
    """[`select`][] without the report: pool name -> the same dict objects, always-scope first, then ranked."""
    return select(entries, pools, context, _report=False, _stacklevel=3, **options).pools


def retrieve(entries: Sequence[Entry], pool: Pool, context: Context = None, **options: Any) -> list[Any]:
    """Fill one pool, as the spec's ``retrieve`` (steps 1-3, no warning or report; keywords ``scorer``,
    ``token_counter``, ``is_active``, ``now``): the same dict objects, never mutated."""
    _check(isinstance(pool, Pool), TypeError, "pool must be a Pool", pool)
    return select(entries, [pool], context, _report=False, _warn=False, **options).pools[pool.name]
