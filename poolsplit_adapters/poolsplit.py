"""poolsplit: pool-split retrieval for agent memory (the core selector).

One scorer ranking a mixed-type memory store into one token budget starves the
low-priority types (they never load) and lets a burst of fresh content crowd a
standing behavioural correction out of the context. This module fixes both
structurally:

* **Pools** are reserved budgets (tokens and entries) for groups of types,
  filled independently, so one type group cannot eat another's room.
* **Always-scope entries** (``scope == "always"``, behavioural corrections)
  load first, outside every budget, so no amount of new content can push them
  out.

This file is the whole algorithm and depends on the Python standard library
only (3.9+): copy it into another project and ``import poolsplit`` works.

Entries are plain mappings. Recognised keys (every key but ``content`` is
optional):

    content        str            the payload text (required)
    type           str            entry type; default "note"
    scope          str | None     "always" loads unconditionally; anything else
                                  competes for a pool's budget
    tags           list[str]      topical tags (list or tuple of strings)
    project        str | None     owning project; None means "general"
    created        str | None     ISO-8601 timestamp (UTC); drives recency.
                                  Unparseable text counts as age 0, as in the
                                  original module.
    token_count    int            precomputed cost, used when it is a positive
                                  int (not bool); otherwise the token counter
                                  measures ``content``
    base_priority  int | float    ranking weight; default 5
    status         str            "active" (default) loads; anything else drops
    superseded_by  any            when truthy, the entry is retired and drops
    id             str | None     stable identifier (sort tiebreak, reports)
    source         str | None     provenance: rendered into markers; required
                                  only under ``Visibility(require_source=True)``
    namespace      str | None     tenant/project scope, matched exactly by
                                  ``Visibility(namespace=...)``; ignored otherwise
    summary        str | None     a short form of ``content`` (used only by
                                  progressive loading; never scored)

A malformed value of one of the typed keys above raises :class:`EntryError`
naming the entry (id or index) and the key, instead of producing a silently
wrong ranking (a string ``tags`` would otherwise be read as a set of letters).

The algorithm (:func:`select`; :func:`retrieve_pools` and :func:`retrieve`
are the same without the report), in the order the code below follows:

1. **Admit**: keep the active entries (``is_active``) the query may see
   (:class:`Visibility`), each entry checked and read once.
2. **Score** every admitted contextual entry at most once per call.
3. **Fill each pool** in order, from the admitted entries of its types that no
   earlier pool took (identity, ``id()``):

   a. every always-scope entry first, in input order, outside both caps;
   b. contextual entries below the pool's ``min_relevance`` are set aside;
   c. the rest in the total order ``(-score, created or "", id or "", input
      index)``, taken greedily: an entry that overflows the tokens is skipped
      and scanning goes on; the entry cap counts contextual entries only.
4. **Report** what loaded and why each other entry did not.
"""

from __future__ import annotations

import datetime
import enum
import heapq
import math
import numbers
import sys
import warnings
from dataclasses import dataclass, field
from typing import (
    Any,
    Callable,
    Dict,
    FrozenSet,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

__all__ = [
    "Pool",
    "Visibility",
    "Scope",
    "Selection",
    "Chosen",
    "Dropped",
    "PoolStats",
    "Reason",
    "EntryError",
    "UnadmittedCorrectionWarning",
    "ScoringContext",
    "CandidateSource",
    "default_token_counter",
    "default_is_active",
    "default_scorer",
    "prepare_scorer",
    "check_entry",
    "entry_cost",
    "significant_words",
    "STOPWORDS",
    "WORD_CHARACTERS",
    "MIN_WORD_LENGTH",
    "parse_created",
    "fill_pools",
    "entry_error",
    "note_fallback",
    "check_pools",
    "given_token_count",
    "describe_entry",
    "resolve_visibility",
    "BUDGET_REASONS",
    "EntrySource",
    "Layering",
    "retrieve",
    "retrieve_pools",
    "select",
]

__version__ = "0.2.0"

Entry = Mapping[str, Any]
Scorer = Callable[..., float]
TokenCounter = Callable[[str], int]
IsActive = Callable[[Entry], bool]

# Sizes of the default scorer's factors. Named once here because the fast
# vectorised path (poolsplit_adapters.index) must reproduce them bit for bit.
RECENCY_HORIZON_DAYS = 90.0
RECENCY_DROP = 0.7
RECENCY_FLOOR = 0.3
TAG_WEIGHT = 0.5
PROJECT_SAME = 1.5
PROJECT_OTHER = 0.5
MESSAGE_THRESHOLD = 0.15
MESSAGE_WEIGHT = 1.5
DEFAULT_PRIORITY = 5
#: The message factor's largest value (every message word shared).
MAX_MESSAGE_FACTOR = 1.0 + MESSAGE_WEIGHT
#: Consecutive entries too costly for a pool's room before the ranking drops
#: every such entry at once.
PRUNE_AFTER_SKIPS = 8
PRUNE_SHARE = 32


# -- Errors and warnings -----------------------------------------------------


class EntryError(ValueError):
    """A memory entry (or what a callback said about it) is malformed.

    Carries ``index`` (position in the caller's input, when known),
    ``entry_id`` (the entry's ``id``, when it has one) and ``field`` so that a
    host can point at the offending record, not just at a stack trace.

    Example::

        try:
            select(entries, pools)
        except EntryError as err:
            print(err.entry_id, err.field, err.problem)
    """

    def __init__(
        self,
        message: str,
        *,
        index: Optional[int] = None,
        entry_id: Optional[str] = None,
        field: Optional[str] = None,
        problem: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.index = index
        self.entry_id = entry_id
        self.field = field
        #: What is wrong, without the entry's name (adapters re-word it as
        #: "document 'x': metadata field 'tags' ...").
        self.problem = problem if problem is not None else message


class UnadmittedCorrectionWarning(UserWarning):
    """An always-scope entry is active but no pool admits its type.

    That is the silent loss of a behavioural correction, the exact failure
    pools exist to prevent, so it is never only a line in a report.
    """


def describe_entry(entry: Any, index: Optional[int]) -> str:
    """How messages name an entry: by id (and position) when it has one."""
    entry_id = entry.get("id") if isinstance(entry, Mapping) else None
    where = "" if index is None else " (index %d)" % index
    if isinstance(entry_id, str) and entry_id:
        return "entry %r%s" % (entry_id, where)
    return "entry at index %d" % index if index is not None else "entry without id"


def entry_error(entry: Any, index: Optional[int], field: Optional[str], problem: str) -> EntryError:
    """An :class:`EntryError` naming ``entry`` (id or index) and ``field``:
    the one wording of every entry error, here and in the stores."""
    entry_id = entry.get("id") if isinstance(entry, Mapping) else None
    if field is None:
        message = "%s: %s" % (describe_entry(entry, index), problem)
    else:
        message = "%s: field %r %s" % (describe_entry(entry, index), field, problem)
    return EntryError(
        message,
        index=index,
        entry_id=entry_id if isinstance(entry_id, str) else None,
        field=field,
        problem=problem,
    )


def _got(value: Any) -> str:
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**50 else "<a %d-digit int>" % len(str(value))
    if len(text) > 60:
        text = text[:57] + "..."
    return "got %s %s" % (type(value).__name__, text)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_finite_number(value: Any) -> bool:
    # float() of a huge int raises OverflowError; such a priority is as
    # unusable as an infinity, so it is refused the same way.
    if not _is_number(value):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


# -- Entry checks ----------------------------------------------------------------

_STR_OR_NONE = (str, type(None))
_SEQUENCES = (list, tuple)
_FLOAT_MAX = sys.float_info.max


def check_entry(entry: Any, index: Optional[int] = None) -> None:
    """Raise :class:`EntryError` if ``entry`` is not a well-formed entry.

    Checks the keys whose type the selector relies on. ``status`` and
    ``superseded_by`` are left to ``is_active`` (a custom predicate may give
    them other meanings), and ``token_count`` follows the spec: anything but a
    positive int falls back to the token counter.
    """
    # Fast path for the overwhelmingly common case, a plain dict of plain
    # values: exact type tests only. Anything else (subclasses, mappings,
    # errors) takes the full check, which names the field at fault.
    if type(entry) is dict and _plain_values_ok(entry):
        return
    _check_entry_fully(entry, index)


def _all_strings(values: Sequence[Any]) -> bool:
    # str.join accepts only strings and runs in C: far cheaper than a
    # generator over type() on the per-entry hot path.
    try:
        "".join(values)
    except TypeError:
        return False
    return True


def _plain_values_ok(entry: Dict[str, Any]) -> bool:
    """True when every checked value of a plain dict has exactly the expected
    built-in type (the stateless path's per-entry hot spot)."""
    get = entry.get
    tags = get("tags")
    priority = get("base_priority", DEFAULT_PRIORITY)
    return (
        type(get("content")) is str
        and type(get("type", "note")) is str
        and type(get("id")) in _STR_OR_NONE
        and type(get("scope")) in _STR_OR_NONE
        and type(get("project")) in _STR_OR_NONE
        and type(get("created")) in _STR_OR_NONE
        and type(get("namespace")) in _STR_OR_NONE
        and type(get("source")) in _STR_OR_NONE
        and type(get("summary")) in _STR_OR_NONE
        and (tags is None or (type(tags) in _SEQUENCES and _all_strings(tags)))
        # x - x == 0 rejects NaN and the infinities; the int bound, ints too
        # large for a float.
        and (
            (type(priority) is int and -_FLOAT_MAX <= priority <= _FLOAT_MAX)
            or (type(priority) is float and priority - priority == 0.0)
        )
    )


def _check_entry_fully(entry: Any, index: Optional[int]) -> None:
    if not isinstance(entry, Mapping):
        raise entry_error(entry, index, None, "is not a mapping (%s)" % _got(entry))
    get = entry.get
    if "content" not in entry:
        raise entry_error(entry, index, "content", "is missing (every entry needs its text)")
    if not isinstance(get("content"), str):
        raise entry_error(entry, index, "content", "must be a string, %s" % _got(get("content")))
    for key in ("id", "scope", "project", "created", "namespace", "source", "summary"):
        value = get(key)
        if value is not None and not isinstance(value, str):
            raise entry_error(entry, index, key, "must be a string or None, %s" % _got(value))
    if "type" in entry and not isinstance(get("type"), str):
        raise entry_error(entry, index, "type", "must be a string, %s" % _got(get("type")))
    tags = get("tags")
    if tags is not None:
        if not isinstance(tags, (list, tuple)):
            raise entry_error(entry, index, "tags", "must be a list or tuple of strings, %s" % _got(tags))
        for tag in tags:
            if not isinstance(tag, str):
                raise entry_error(entry, index, "tags", "must contain only strings, %s" % _got(tag))
    # NaN or an infinity would break the total order of scores.
    if "base_priority" in entry and not _is_finite_number(get("base_priority")):
        raise entry_error(entry, index, "base_priority", "must be a finite number, %s" % _got(get("base_priority")))


# -- Pool --------------------------------------------------------------------------


@dataclass(frozen=True)
class Pool:
    """A reserved retrieval budget for a group of entry types.

    Attributes:
        name: Unique, non-empty key under which the pool's results come back.
        max_tokens: Token ceiling for contextual (non-always) entries. 0 admits
            only always-scope entries.
        max_entries: Cap on the number of contextual entries; always-scope
            entries do not use these slots. 0 admits only always-scope entries.
        types: Entry types this pool draws from (a tuple; a list or set is
            normalised to a tuple). ``None`` accepts every type.
        min_relevance: Optional threshold on the scorer's *relevance* (the
            query-match part of the score: the lexical overlap fraction for
            the default scorer, the cosine for an embedding scorer).
            Contextual candidates below it are set aside before the greedy
            fill and reported as ``below_relevance``: marginal memories cost
            budget and distract the model, so "threshold, then truncate".
            Always-scope entries are never subject to it.

    Example::

        plan = [Pool("corrections", 0, 0, ("correction",)),
                Pool("content", 600, 10, ("note", "task", "fact"))]

    Raises:
        ValueError: negative or NaN budget, empty name.
        TypeError: a budget that is not a number, a name that is not a string,
            or ``types`` given as a bare string (``"skill"`` would otherwise be
            read as the types ``"s"``, ``"k"``, ...).
    """

    name: str
    max_tokens: Union[int, float]
    max_entries: Union[int, float]
    types: Optional[Tuple[str, ...]] = None
    min_relevance: Optional[float] = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError("Pool name must be a string, %s" % _got(self.name))
        if not self.name:
            raise ValueError("Pool name must not be empty")
        for attr in ("max_tokens", "max_entries"):
            value = getattr(self, attr)
            if not _is_number(value):
                raise TypeError("Pool %r: %s must be a number, %s" % (self.name, attr, _got(value)))
            if value != value:
                raise ValueError("Pool %r: %s must not be NaN" % (self.name, attr))
            if value < 0:
                raise ValueError("Pool %r: %s must be >= 0, got %r" % (self.name, attr, value))
        if self.min_relevance is not None and not _is_finite_number(self.min_relevance):
            raise TypeError(
                "Pool %r: min_relevance must be a finite number or None, %s" % (self.name, _got(self.min_relevance))
            )
        types = self.types
        if types is None:
            return
        if isinstance(types, str):
            raise TypeError(
                "Pool %r: types must be a tuple of type names, not the bare string %r "
                "(did you mean (%r,)?)" % (self.name, types, types)
            )
        if isinstance(types, (set, frozenset)):
            normalised = tuple(sorted(types))
        elif isinstance(types, (list, tuple)):
            normalised = tuple(types)
        else:
            raise TypeError("Pool %r: types must be a tuple of strings or None, %s" % (self.name, _got(types)))
        for name in normalised:
            if not isinstance(name, str):
                raise TypeError("Pool %r: every type must be a string, %s" % (self.name, _got(name)))
        object.__setattr__(self, "types", normalised)

    def admits(self, entry_type: str) -> bool:
        """Whether entries of ``entry_type`` compete for this pool."""
        return self.types is None or entry_type in self.types

    @property
    def loads_contextual(self) -> bool:
        """Whether any contextual entry can load: at least one entry slot and
        one token (every entry costs at least 1). A pool with no room still
        loads its always-scope entries; recall asks it for no candidates."""
        return self.max_entries > 0 and self.max_tokens >= 1


def check_pools(pools: Sequence[Pool]) -> List[Pool]:
    """``pools`` as a list; raises for anything but distinct :class:`Pool` s."""
    if isinstance(pools, Pool):
        raise TypeError("pools must be a sequence of Pool objects, not a single Pool (wrap it in a list)")
    if isinstance(pools, (str, bytes, Mapping)) or not isinstance(pools, Iterable):
        raise TypeError("pools must be a sequence of Pool objects, %s" % _got(pools))
    checked = list(pools)
    seen: Set[str] = set()
    for position, pool in enumerate(checked):
        if not isinstance(pool, Pool):
            raise TypeError("pools[%d] must be a Pool, %s" % (position, _got(pool)))
        if pool.name in seen:
            raise ValueError("duplicate pool name: %r" % (pool.name,))
        seen.add(pool.name)
    return checked


# -- Why an entry did not load ------------------------------------------------------


class Reason(str, enum.Enum):
    """Reason codes in :attr:`Selection.dropped`; each names one cause.

    A ``str`` enum: ``Reason.INACTIVE == "inactive"``, and it serialises as
    its value.
    """

    #: ``is_active`` said no (status, superseded_by)
    INACTIVE = "inactive"
    #: its namespace is not the query's (nor in its explicit chain)
    NAMESPACE = "namespace"
    #: it lacks one of the tags the query requires
    TAGS = "tags"
    #: provenance required and it has no ``source``
    NO_SOURCE = "no_source"
    #: a time bound was given and its ``created`` is missing or unparseable
    UNDATED = "undated"
    #: its ``created`` is outside the query's time bound
    OUT_OF_TIME = "out_of_time"
    #: no pool admits the entry's type
    NO_POOL = "no_pool"
    #: an always-scope entry no pool admits (also warned)
    ALWAYS_NO_POOL = "always_no_pool"
    #: its relevance is below its pool's ``min_relevance``
    BELOW_RELEVANCE = "below_relevance"
    #: its cost is more than the room its pool had left
    TOKEN_BUDGET = "token_budget"
    #: it would have fitted, but its pool's entry cap came first
    ENTRY_CAP = "entry_cap"

    def __str__(self) -> str:
        return str(self.value)


#: The reasons that mean "a budget cut it" (what an omission line counts).
BUDGET_REASONS = frozenset((Reason.TOKEN_BUDGET, Reason.ENTRY_CAP))


# -- Time ---------------------------------------------------------------------------


def _naive(moment: datetime.datetime) -> datetime.datetime:
    # The spec compares naive to naive, dropping (not converting) any offset:
    # stores are expected to hold UTC.
    return moment.replace(tzinfo=None) if moment.tzinfo is not None else moment


def parse_created(value: Optional[str]) -> Optional[datetime.datetime]:
    """``created`` as a naive datetime, or None when empty or unparseable
    (which the spec scores as age 0, i.e. brand new)."""
    if not value:
        return None
    try:
        moment = datetime.datetime.fromisoformat(value.rstrip("Z"))
    except (ValueError, AttributeError):
        return None
    return moment if moment.tzinfo is None else _naive(moment)


def _time_bound(name: str, value: Any) -> Optional[datetime.datetime]:
    if value is None or isinstance(value, datetime.datetime):
        moment = value
    elif isinstance(value, str):
        moment = parse_created(value)
        if moment is None:
            raise ValueError("Visibility %s must be an ISO-8601 time, got %r" % (name, value))
    else:
        raise TypeError("Visibility %s must be a datetime, an ISO-8601 string or None, %s" % (name, _got(value)))
    if moment is not None and moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return moment


# -- Visibility ------------------------------------------------------------------------


@dataclass(frozen=True)
class Visibility:
    """Which entries a query may see at all, before any pool or budget.

    Attributes:
        namespace: None (no namespace filter), one namespace, or an explicit
            ordered chain such as ``("project-a", "global")``. Matching is
            exact: an entry is seen only if its ``namespace`` is the query's
            or a link of the chain. A ``None`` link names the entries without
            a namespace (shared corrections usually have none), e.g.
            ``("tenant-a", None)``. There is no implicit fallback to a parent
            or global namespace; widening happens only when the caller names
            the chain, because a silent fallback makes a project-only memory
            apply everywhere while every report looks normal.
        chain_penalty: score factor per link after the first (link ``i``
            scores ``x chain_penalty ** i``), so the query's own namespace
            wins ties against inherited ones.
        require_tags: an entry must carry every one of these tags (AND:
            adding a tag narrows the result, never widens it).
        require_source: drop entries without a non-empty ``source``: an
            entry without provenance reads like the model's own guess.
        since / until: bound ``created`` (inclusive; datetimes or ISO-8601
            strings, aware ones converted to UTC). A contextual entry without
            a parseable ``created`` does not match a bound and is reported as
            ``undated`` (never an error: a malformed timestamp must not
            interrupt retrieval). Always-scope corrections are standing rules
            and are never time-filtered.

    Example::

        select(entries, pools, {"message": "deploy"},
               visibility=Visibility(namespace=("tenant-a", None), since="2026-11-01"))
    """

    namespace: Union[None, str, Tuple[Optional[str], ...]] = None
    chain_penalty: float = 0.9
    require_tags: Tuple[str, ...] = ()
    require_source: bool = False
    since: Union[None, str, datetime.datetime] = None
    until: Union[None, str, datetime.datetime] = None
    _bounds: Tuple[Optional[datetime.datetime], Optional[datetime.datetime]] = field(
        default=(None, None), init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        namespace = self.namespace
        if isinstance(namespace, (list, tuple)):
            if not namespace or not all(n is None or (isinstance(n, str) and n) for n in namespace):
                raise TypeError(
                    "Visibility namespace chain must be non-empty strings (or None for entries "
                    "without a namespace), got %r" % (namespace,)
                )
            if len(set(namespace)) != len(namespace):
                raise ValueError("Visibility namespace chain repeats a link: %r" % (namespace,))
            object.__setattr__(self, "namespace", tuple(namespace))
        elif namespace is not None and not (isinstance(namespace, str) and namespace):
            raise TypeError(
                "Visibility namespace must be a non-empty string, a chain of them, or None, %s" % _got(namespace)
            )
        if not _is_number(self.chain_penalty) or not 0.0 < self.chain_penalty <= 1.0:
            raise ValueError("Visibility chain_penalty must be in (0, 1], got %r" % (self.chain_penalty,))
        tags = self.require_tags
        if isinstance(tags, str) or not isinstance(tags, Iterable) or not all(isinstance(t, str) for t in tags):
            raise TypeError("Visibility require_tags must be a list of strings, %s" % _got(tags))
        object.__setattr__(self, "require_tags", tuple(tags))
        if not isinstance(self.require_source, bool):
            raise TypeError("Visibility require_source must be a bool, %s" % _got(self.require_source))
        since, until = _time_bound("since", self.since), _time_bound("until", self.until)
        if since is not None and until is not None and since > until:
            raise ValueError("Visibility since (%s) is after until (%s)" % (since, until))
        object.__setattr__(self, "_bounds", (since, until))

    @property
    def chain(self) -> Tuple[Optional[str], ...]:
        """The namespaces in order (empty when there is no namespace filter)."""
        if self.namespace is None:
            return ()
        return self.namespace if isinstance(self.namespace, tuple) else (self.namespace,)

    @property
    def bounds(self) -> Tuple[Optional[datetime.datetime], Optional[datetime.datetime]]:
        """``(since, until)`` as naive UTC datetimes (None: unbounded)."""
        return self._bounds

    @property
    def active(self) -> bool:
        """Whether it filters anything at all."""
        return bool(self.chain or self.require_tags or self.require_source or self._bounds != (None, None))

    def judge(self, entry: Entry) -> Tuple[Optional[Reason], float]:
        """(reason the entry is not visible, or None; its score factor).

        Checks in a fixed order: namespace, tags, source, time."""
        factor = 1.0
        chain = self.chain
        if chain:
            own = entry.get("namespace")
            if own not in chain:
                return Reason.NAMESPACE, factor
            factor = self.chain_penalty ** chain.index(own)
        if self.require_tags:
            own_tags = entry.get("tags") or ()
            if not all(tag in own_tags for tag in self.require_tags):
                return Reason.TAGS, factor
        if self.require_source and not entry.get("source"):
            return Reason.NO_SOURCE, factor
        since, until = self._bounds
        if (since is not None or until is not None) and entry.get("scope") != "always":
            created = parse_created(entry.get("created"))
            if created is None:
                return Reason.UNDATED, factor
            if (since is not None and created < since) or (until is not None and created > until):
                return Reason.OUT_OF_TIME, factor
        return None, factor


class Scope(Visibility):
    """Deprecated alias of :class:`Visibility` (kept for one release).

    ``scope`` also names an entry's load tier (``"always"``); one name with
    two meanings is the kind of clash that hides bugs, so the filter was
    renamed.
    """

    def __post_init__(self) -> None:
        warnings.warn("Scope is deprecated; use Visibility", DeprecationWarning, stacklevel=3)
        super().__post_init__()


def resolve_visibility(visibility: Optional[Visibility], scope: Optional[Visibility] = None) -> Optional[Visibility]:
    """The visibility filter a call asked for (``scope=`` is the deprecated
    keyword), or None when it filters nothing."""
    if scope is not None:
        warnings.warn("the scope= keyword is deprecated; use visibility=", DeprecationWarning, stacklevel=3)
        if visibility is not None:
            raise TypeError("give visibility= only (scope= is its deprecated name)")
        visibility = scope
    if visibility is None:
        return None
    if not isinstance(visibility, Visibility):
        raise TypeError("visibility must be a Visibility, %s" % _got(visibility))
    return visibility if visibility.active else None


# -- The report -------------------------------------------------------------------------


@dataclass(frozen=True)
class Chosen:
    """One selected entry: which pool took it, its score (None for an
    always-scope entry, which is never scored), its token cost, and which
    layer of it loaded (``"full"`` unless progressive loading chose a
    ``"summary"``)."""

    entry: Entry
    index: int
    pool: str
    always: bool
    score: Optional[float]
    cost: int
    layer: str = "full"
    #: the full content's cost (equal to ``cost`` unless a lighter layer loaded)
    full_cost: Optional[int] = None


@dataclass(frozen=True)
class Dropped:
    """One entry that did not load, with the one reason why.

    ``pool`` is the pool that last considered it (None when no pool did),
    ``score`` and ``cost`` its score and token cost there.
    """

    entry: Entry
    index: int
    reason: Reason
    pool: Optional[str] = None
    score: Optional[float] = None
    cost: Optional[int] = None


@dataclass(frozen=True)
class PoolStats:
    """Budget use of one pool; contextual figures only in ``tokens_used`` and
    ``entries_used`` (always-scope entries are outside the budget and counted
    separately)."""

    name: str
    max_tokens: Union[int, float]
    max_entries: Union[int, float]
    tokens_used: int
    entries_used: int
    always_count: int
    always_tokens: int
    candidates: int


class Selection:
    """What :func:`select` chose and why the rest did not load.

    Every input position is accounted for exactly once: in ``chosen`` or in
    ``dropped``.

    Attributes:
        pools: pool name -> entries, exactly what :func:`retrieve_pools`
            returns (same dict objects, same order).
        chosen: every selected entry in render order: always-scope entries of
            all pools first (pool order, then input order), then each pool's
            contextual entries in pool order and rank order.
        dropped: every entry that did not load, in input order. Built on
            first access: a million-entry store's report costs nothing until
            someone reads it.
        stats: pool name -> :class:`PoolStats`.
        notes: what else a host may want to show, e.g. ``task_type`` or
            ``scorer_fallback`` (JSON-friendly values).

    Example::

        sel = select(entries, pools, {"message": "deploy"})
        for d in sel.dropped:
            print(d.entry.get("id"), d.reason, d.pool)
        json.dumps(sel.to_dict())
    """

    __slots__ = ("pools", "chosen", "stats", "notes", "_dropped", "_build")

    def __init__(
        self,
        pools: Dict[str, List[Any]],
        chosen: List[Chosen],
        dropped: Union[List[Dropped], Callable[[], List[Dropped]]],
        stats: Dict[str, PoolStats],
        notes: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.pools = pools
        self.chosen = chosen
        self.stats = stats
        self.notes: Dict[str, Any] = dict(notes or {})
        if callable(dropped):
            self._dropped: Optional[List[Dropped]] = None
            self._build: Optional[Callable[[], List[Dropped]]] = dropped
        else:
            self._dropped, self._build = list(dropped), None

    @property
    def dropped(self) -> List[Dropped]:
        if self._dropped is None:
            assert self._build is not None
            self._dropped, self._build = self._build(), None
        return self._dropped

    def __repr__(self) -> str:
        return "Selection(pools=%r, chosen=%d, stats=%r)" % (
            {name: len(got) for name, got in self.pools.items()},
            len(self.chosen),
            list(self.stats),
        )

    def entries(self) -> List[Any]:
        """Selected entries in render order (always-scope first)."""
        return [c.entry for c in self.chosen]

    def dropped_by_reason(self) -> Dict[Reason, List[Dropped]]:
        """Dropped entries grouped by reason code."""
        grouped: Dict[Reason, List[Dropped]] = {}
        for item in self.dropped:
            grouped.setdefault(item.reason, []).append(item)
        return grouped

    def to_dict(self) -> Dict[str, Any]:
        """The one JSON form of a selection (the CLI's ``--json`` and both
        frameworks' selection events)."""
        return {
            "chosen": [
                {
                    "id": c.entry.get("id"),
                    "type": c.entry.get("type", "note"),
                    "index": c.index,
                    "pool": c.pool,
                    "always": c.always,
                    "score": c.score,
                    "tokens": c.cost,
                    "layer": str(c.layer),
                }
                for c in self.chosen
            ],
            "dropped": [
                {
                    "id": d.entry.get("id"),
                    "type": d.entry.get("type", "note"),
                    "index": d.index,
                    "reason": d.reason.value,
                    "pool": d.pool,
                    "score": d.score,
                    "tokens": d.cost,
                }
                for d in self.dropped
            ],
            "stats": {
                name: {
                    "max_tokens": s.max_tokens,
                    "max_entries": s.max_entries,
                    "tokens_used": s.tokens_used,
                    "entries_used": s.entries_used,
                    "always_count": s.always_count,
                    "always_tokens": s.always_tokens,
                    "candidates": s.candidates,
                }
                for name, s in self.stats.items()
            },
            "notes": dict(self.notes),
        }


# -- Defaults: token counting, activeness, scoring -----------------------------


def default_token_counter(text: str) -> int:
    """Estimate tokens as ``max(1, len(text) // 4)``.

    Crude on purpose (pluggable: see ``poolsplit_adapters.tokens`` for a real
    tokenizer) and never 0: a zero cost would exempt an entry from every
    budget.
    """
    return max(1, len(text) // 4)


def default_is_active(entry: Entry) -> bool:
    """True when ``status`` is "active" (the default when missing) and there
    is no ``superseded_by`` pointer.

    A missing status counts as active: requiring the literal key silently
    excluded every entry that never set it in the system this comes from.
    """
    return entry.get("status", "active") == "active" and not entry.get("superseded_by")


def given_token_count(entry: Entry) -> Optional[int]:
    """The entry's own ``token_count`` when it is a positive int (bool is
    not an int here), else None (the counter must measure the content)."""
    count = entry.get("token_count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return count
    return None


def entry_cost(entry: Entry, token_counter: TokenCounter, index: Optional[int] = None) -> int:
    """Token cost of an entry: a positive-int ``token_count``, else
    ``token_counter(content)``.

    Never 0 for a missing count: a zero default would silently exempt the
    entry from every budget. A counter that answers 0, a negative number or a
    non-integer is reported rather than trusted, for the same reason.
    """
    count = entry.get("token_count")
    if type(count) is int and count > 0:  # the common case, without the general checks
        return count
    if count is not None:
        count = given_token_count(entry)
        if count is not None:
            return count
    measured = token_counter(entry.get("content", ""))
    if type(measured) is int and measured > 0:
        return measured
    if not isinstance(measured, numbers.Integral) or isinstance(measured, bool) or measured < 1:
        raise entry_error(
            entry,
            index,
            "token_count",
            "is not a positive integer and token_counter returned %r for its content; costs must be "
            "positive integers (0 would exempt the entry from every budget)" % (measured,),
        )
    return int(measured)


#: Words too common to count as shared (public for vectorised readers such
#: as MemoryIndex, which must find exactly the same words).
STOPWORDS = frozenset(
    """the and for are but not you all can her was one our out day has had his
    how man new now old see two way who did its let put say she too use that
    this with from they them then than have will your what when were been into
    some more very just over only""".split()
)
#: A word is a maximal run of at least MIN_WORD_LENGTH of these characters
#: in the lower-cased text (public, like STOPWORDS, so that a vectorised
#: reader finds exactly the same words).
WORD_CHARACTERS = "abcdefghijklmnopqrstuvwxyz0123456789"
MIN_WORD_LENGTH = 3
# Every byte that cannot be part of a word becomes a space.
_RUNS_TABLE = bytes(c if chr(c) in WORD_CHARACTERS else 32 for c in range(256))


def _word_runs(text: str) -> List[bytes]:
    """The maximal runs of WORD_CHARACTERS in the lower-cased ``text``, as
    ASCII bytes: a non-ASCII character is never a word character, so it
    becomes ``?`` and then a space like every other separator. All in C:
    three passes over the text and a split."""
    return text.lower().encode("ascii", "replace").translate(_RUNS_TABLE).split()


def significant_words(text: str) -> FrozenSet[str]:
    """Lower-cased ASCII alphanumeric runs longer than two characters, minus
    a short stopword list: the words the message-overlap factor compares."""
    return frozenset(run.decode() for run in _word_runs(text) if len(run) >= MIN_WORD_LENGTH).difference(STOPWORDS)


class ScoringContext:
    """The default scorer prepared for one call: the context is checked and
    digested once, then :meth:`score` runs per entry.

    The message's significant words are kept as bytes, so an entry's overlap
    is one set intersection with the raw word runs of its content (a run
    that is short or a stopword can never equal a significant word).

    Example::

        prepared = ScoringContext({"message": "deploy checkout"}, now)
        prepared.score(entry), prepared.relevance(entry)
    """

    __slots__ = ("tags", "project", "words", "nwords", "runs", "ref")

    def __init__(self, context: Optional[Mapping[str, Any]], now: Optional[datetime.datetime]) -> None:
        if context is None:
            context = {}
        if not isinstance(context, Mapping):
            raise TypeError("context must be a mapping or None, %s" % _got(context))
        tags = context.get("tags") or ()
        if isinstance(tags, str) or not isinstance(tags, (list, tuple, set, frozenset)):
            raise TypeError("context['tags'] must be a list of strings, %s" % _got(tags))
        if not all(isinstance(t, str) for t in tags):
            raise TypeError("context['tags'] must contain only strings, got %r" % (tags,))
        project = context.get("project")
        if project is not None and not isinstance(project, str):
            raise TypeError("context['project'] must be a string or None, %s" % _got(project))
        message = context.get("message") or ""
        if not isinstance(message, str):
            raise TypeError("context['message'] must be a string, %s" % _got(message))
        if now is None:
            now = datetime.datetime.now(datetime.timezone.utc)
        elif not isinstance(now, datetime.datetime):
            raise TypeError("now must be a datetime.datetime or None, %s" % _got(now))
        self.tags: FrozenSet[str] = frozenset(tags)
        self.project: Optional[str] = project
        self.words: FrozenSet[str] = significant_words(message)
        self.nwords = len(self.words)
        self.ref: datetime.datetime = _naive(now)
        self.runs: FrozenSet[bytes] = frozenset(word.encode() for word in self.words)

    def partial(self, entry: Entry) -> float:
        """Every factor of the default score but the message overlap, in the
        spec's order: ``partial * message_factor`` is bit-identical to the
        spec's score because the message factor is its last multiplication."""
        get = entry.get
        score = float(get("base_priority", DEFAULT_PRIORITY))
        created = parse_created(get("created"))
        if created is not None:
            days = (self.ref - created).total_seconds() / 86400.0
            # Age 0 (no date, or not older than now) is a factor of exactly
            # 1.0: nothing to multiply.
            if days > 0.0:
                recency = 1.0 - (days / RECENCY_HORIZON_DAYS) * RECENCY_DROP
                score *= recency if recency > RECENCY_FLOOR else RECENCY_FLOOR
        tags = get("tags")
        # With no context tags the factor is exactly 1.0: skip the set work.
        if tags and self.tags:
            own = set(tags)
            score *= 1.0 + (len(own & self.tags) / len(own)) * TAG_WEIGHT
        project = get("project")
        if project is not None:
            score *= PROJECT_SAME if project == self.project else PROJECT_OTHER
        return score

    def relevance(self, entry: Entry) -> float:
        """The fraction of the message's significant words found in the
        content (0 without a message): the query-match part of the score."""
        if not self.nwords:
            return 0.0
        return len(self.runs.intersection(_word_runs(entry["content"]))) / self.nwords

    def message_factor(self, entry: Entry) -> float:
        """``1 + 1.5 * f`` when the shared fraction ``f`` exceeds 0.15, else
        exactly 1.0 (so at most 2.5)."""
        overlap = self.relevance(entry)
        return 1.0 + overlap * MESSAGE_WEIGHT if overlap > MESSAGE_THRESHOLD else 1.0

    def score(self, entry: Entry) -> float:
        """The default score of a checked entry (see :func:`default_scorer`)."""
        return self.partial(entry) * self.message_factor(entry)


def default_scorer(
    entry: Entry,
    context: Optional[Mapping[str, Any]],
    *,
    now: Optional[datetime.datetime] = None,
) -> float:
    """Score one entry against a retrieval context; higher is more relevant.

    The product of independent factors:

    * **base priority**: ``base_priority`` (default 5);
    * **recency**: ``1 - 0.7 * days / 90`` from ``created``, floored at 0.3
      (a same-day entry 1.0, 90 days or older 0.3); ``now`` is injectable so
      tests need no clock;
    * **tags**: ``1 + 0.5 * f`` where ``f`` is the fraction of the entry's
      distinct tags found in ``context["tags"]`` (only when it has tags);
    * **project**: x1.0 for an entry without project ("general", neutral
      against any context), x1.5 when it equals ``context["project"]``, x0.5
      otherwise;
    * **message**: ``1 + 1.5 * f`` where ``f`` is the fraction of the
      message's significant words found in the content, applied only when
      ``f > 0.15``.

    There is deliberately no access-count or retrieval-frequency term: in the
    system this comes from, "retrieved, so scored higher, so retrieved again"
    made about 97% of the store unreachable on ordinary queries.
    """
    check_entry(entry)
    return ScoringContext(context, now).score(entry)


class _PlainScorer:
    """A spec-form scorer function, prepared: its scores are checked, and its
    relevance is its score (it has no separate query-match part). Each entry
    is scored once per call: a pool's ``min_relevance`` and its ranking read
    the same answer (by identity: the entries outlive the call)."""

    __slots__ = ("scorer", "context", "now", "answers")

    def __init__(self, scorer: Scorer, context: Optional[Mapping[str, Any]], now: Optional[datetime.datetime]) -> None:
        self.scorer, self.context, self.now = scorer, context, now
        self.answers: Dict[int, Any] = {}

    def score(self, entry: Entry) -> float:
        key = id(entry)
        if key not in self.answers:
            self.answers[key] = self.scorer(entry, self.context, now=self.now)
        return self.answers[key]  # type: ignore[no-any-return]

    def relevance(self, entry: Entry) -> float:
        return self.score(entry)


def prepare_scorer(scorer: Scorer, context: Optional[Mapping[str, Any]], now: Optional[datetime.datetime]) -> Any:
    """The per-call form of ``scorer``: an object with ``score(entry)`` and
    ``relevance(entry)``.

    The default scorer becomes a :class:`ScoringContext`; a scorer object
    with ``prepare(context, now)`` (e.g. an embedding scorer, which embeds the
    query once per call) is asked for its own; a plain spec-form function is
    wrapped."""
    if scorer is default_scorer:
        return ScoringContext(context, now)
    prepare = getattr(scorer, "prepare", None)
    if prepare is not None:
        return prepare(context, now)
    if not callable(scorer):
        raise TypeError("scorer must be callable, %s" % _got(scorer))
    return _PlainScorer(scorer, context, now)


def _checked_score(value: Any, entry: Entry, index: Optional[int], what: str = "scorer") -> float:
    # NaN would break the total order the determinism guarantee rests on, and
    # an infinity makes every tie meaningless; a non-number cannot be sorted.
    if not _is_finite_number(value):
        raise entry_error(entry, index, None, "%s must return a finite number, %s" % (what, _got(value)))
    return float(value)


# -- The algorithm ------------------------------------------------------------------------
#
# select() = fill_pools(pools, EntrySource(entries, ...)). fill_pools holds
# the rules of steps 3 and 4 once; a candidate source holds the entries and
# answers the per-call questions (who is admitted, in what rank order, at
# what cost). EntrySource below answers them for a plain list of entries;
# poolsplit_adapters.index.MemoryIndex answers them from cached columns.


class CandidateSource:
    """What :func:`fill_pools` asks of the entries (the interface
    :class:`EntrySource` and ``MemoryIndex`` implement).

    Positions are the source's own handles for entries; a group of positions
    (``members``' contextual part, ``split_below``'s parts) may be any sized
    collection :meth:`positions` can list (a list, a numpy array).
    """

    def members(self, pool: Pool) -> Tuple[List[int], Any]:
        """(always-scope positions in input order, contextual positions) of
        the admitted entries of ``pool``'s types that no earlier pool took."""
        raise NotImplementedError

    def split_below(self, group: Any, threshold: float) -> Tuple[Any, Any]:
        """(positions whose relevance is >= threshold, the rest)."""
        raise NotImplementedError

    def ranked(self, group: Any, room: _Room) -> Iterator[Tuple[int, float, int]]:
        """``(position, score, cost)`` in the total order ``(-score, created
        or "", id or "", input index)``. May leave out an entry whose cost is
        more than ``room.left`` (the fill would skip it anyway)."""
        raise NotImplementedError

    def claim(self, positions: Iterable[int]) -> None:
        """Exclude these entries (by identity) from every later pool."""
        raise NotImplementedError

    def positions(self, group: Any) -> Iterable[int]:
        raise NotImplementedError

    def entry(self, position: int) -> Entry:
        raise NotImplementedError

    def input_index(self, position: int) -> int:
        """The entry's index in the caller's order (what reports show)."""
        raise NotImplementedError

    def cost(self, position: int) -> int:
        raise NotImplementedError

    def score(self, position: int) -> float:
        raise NotImplementedError

    def not_admitted(self, position: int) -> Optional[Reason]:
        """Why the entry was not admitted at all (inactive, not visible), or None."""
        raise NotImplementedError

    def all_positions(self) -> Iterable[int]:
        """Every position, in input order."""
        raise NotImplementedError

    def unadmitted_always(self, pools: Sequence[Pool]) -> List[int]:
        """Admitted always-scope entries whose type no pool admits."""
        raise NotImplementedError


class _Room:
    """A pool's token room during its fill (read by a source's ranking to
    skip entries that can no longer fit)."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: Union[int, float]) -> None:
        self.limit = limit
        self.used = 0

    @property
    def left(self) -> float:
        return self.limit - self.used


_Key = Tuple[float, str, str, int]


class EntrySource(CandidateSource):
    """Candidates from a sequence of entries, for one call (the stateless
    path). Step 1 runs here: each entry is checked, tested for activeness and
    visibility once. Step 2 is split by cost: with the default scorer the
    cheap factors (priority, recency, tags, project) are read in the same
    pass, the message overlap (a scan of the content) lazily, the first time
    a ranking needs it; every entry is scored at most once.

    Args:
        entries: the entries (any iterable of mappings).
        prepared: the call's scorer, prepared for its context and time by
            :func:`prepare_scorer` (the one place a scorer meets a context).
        token_counter: cost of an entry without a positive ``token_count``;
            asked only about entries the fill reaches (a real tokenizer is
            the expensive part of a call).
        is_active: activeness predicate.
        visibility: what the query may see (None: everything).
        costs: known costs by position (``MemoryIndex`` caches them); when
            given, entries are taken as already checked.

    Example::

        prepared = prepare_scorer(default_scorer, {"message": "deploy"}, now)
        selection = fill_pools(pools, EntrySource(entries, prepared))
    """

    def __init__(
        self,
        entries: Iterable[Entry],
        prepared: Any,
        *,
        token_counter: TokenCounter = default_token_counter,
        is_active: IsActive = default_is_active,
        visibility: Optional[Visibility] = None,
        costs: Optional[Sequence[int]] = None,
    ) -> None:
        if entries is None or isinstance(entries, (str, bytes, Mapping)) or not isinstance(entries, Iterable):
            raise TypeError("entries must be a sequence of entry mappings, %s" % _got(entries))
        items: Sequence[Entry] = entries if isinstance(entries, (list, tuple)) else list(entries)
        if not callable(getattr(prepared, "score", None)):
            raise TypeError(
                "EntrySource takes the call's prepared scorer, prepare_scorer(scorer, context, now), %s"
                % _got(prepared)
            )
        self.items = items
        self.prepared = prepared
        # The default scorer ranks best-first against an upper bound (below).
        self.lexical = self.prepared if isinstance(self.prepared, ScoringContext) else None
        self.counter = token_counter
        self.known_costs = costs
        # Costs known without a tokenizer call let the ranking skip entries
        # that can no longer fit before scoring them.
        self.cheap_costs = costs is not None or token_counter is default_token_counter
        self.reason: Dict[int, Reason] = {}  # position -> why not admitted
        self.penalty: Dict[int, float] = {}  # position -> namespace-chain factor, when not 1
        self.by_type: Dict[str, List[int]] = {}
        self.always: Set[int] = set()
        self.scores: Dict[int, float] = {}
        self.cost_cache: Dict[int, int] = {}
        self.claimed: Set[int] = set()  # id() of every dict an earlier pool took
        # With the default scorer, the cheap part of an admitted entry's
        # score (every factor but the message overlap) and its cost (when no
        # tokenizer is involved) are read in the admission pass, while the
        # entry is at hand: another pass over a million dicts would cost as
        # much again in memory traffic. The message overlap, the expensive
        # part, stays lazy.
        size = len(items)
        self.partials: Optional[List[float]] = None if self.lexical is None else [0.0] * size
        self.admitted_costs: Optional[List[int]] = [0] * size if self.cheap_costs and costs is None else None
        self._admit(is_active, visibility, checked=costs is not None)

    # 1. Admit ---------------------------------------------------------------------------

    def _admit(self, is_active: IsActive, view: Optional[Visibility], checked: bool) -> None:
        default_active = is_active is default_is_active
        reason, by_type, always = self.reason, self.by_type, self.always
        partials, partial = self.partials, self.lexical.partial if self.lexical is not None else None
        costs = self.admitted_costs
        for index, entry in enumerate(self.items):
            if not checked and not (type(entry) is dict and _plain_values_ok(entry)):
                _check_entry_fully(entry, index)
            get = entry.get
            if default_active:
                live = get("status", "active") == "active" and not get("superseded_by")
            else:
                live = bool(is_active(entry))
            if not live:
                reason[index] = Reason.INACTIVE
                continue
            if view is not None:
                why, factor = view.judge(entry)
                if why is not None:
                    reason[index] = why
                    continue
                if factor != 1.0:
                    self.penalty[index] = factor
            entry_type = get("type", "note")
            run = by_type.get(entry_type)
            if run is None:
                run = by_type[entry_type] = []
            run.append(index)
            if get("scope") == "always":
                always.add(index)
            if partials is not None:
                partials[index] = partial(entry)  # type: ignore[misc]
            if costs is not None:
                costs[index] = entry_cost(entry, default_token_counter, index)

    # 2. Score (lazily, at most once per entry) -------------------------------------------

    def score(self, position: int) -> float:
        score = self.scores.get(position)
        if score is None:
            entry = self.items[position]
            if self.partials is not None:
                # Admitted entries had their partial read in the admission
                # pass; a report may ask about one that was not admitted.
                admitted = position not in self.reason
                partial = self.partials[position] if admitted else self.lexical.partial(entry)  # type: ignore[union-attr]
                score = self._lexical_score(position, partial)
            else:
                score = _checked_score(self.prepared.score(entry), entry, position)
                score *= self.penalty.get(position, 1.0)
                self.scores[position] = score
        return score

    def _lexical_score(self, position: int, partial: float) -> float:
        # The default score from its partial (often already computed for a
        # bound), times the namespace-chain penalty; recorded once.
        assert self.lexical is not None
        score = partial * self.lexical.message_factor(self.items[position])
        score *= self.penalty.get(position, 1.0)
        self.scores[position] = score
        return score

    def _key(self, position: int) -> _Key:
        entry = self.items[position]
        return (-self.score(position), entry.get("created") or "", entry.get("id") or "", position)

    def cost(self, position: int) -> int:
        if self.known_costs is not None:
            return self.known_costs[position]
        if self.admitted_costs is not None and self.admitted_costs[position]:
            return self.admitted_costs[position]
        cost = self.cost_cache.get(position)
        if cost is None:
            cost = self.cost_cache[position] = entry_cost(self.items[position], self.counter, position)
        return cost

    def _cheap_costs(self, positions: Sequence[int]) -> Optional[List[int]]:
        """The costs of ``positions`` (in that order) when they are known
        without a tokenizer call (given, or the default counter's arithmetic,
        in one pass), else None: the ranking then never skips ahead of the
        fill."""
        known = self.known_costs if self.known_costs is not None else self.admitted_costs
        return None if known is None else list(map(known.__getitem__, positions))

    def ranked(self, group: Any, room: _Room) -> Iterator[Tuple[int, float, int]]:
        positions: List[int] = group
        lexical = self.lexical
        if lexical is None:
            self._warm(positions)
        if lexical is None or not lexical.nwords:
            # Every score is needed to know the best one; a heap hands out
            # only as many as the fill takes.
            keys = [self._key(i) for i in positions]
            heapq.heapify(keys)
            while keys:
                key = heapq.heappop(keys)
                yield key[3], -key[0], self.cost(key[3])
            return
        # Best-first: the message factor is at most 2.5 (at least 1), so
        # partial x 2.5 bounds an entry's score from above. The best exact
        # key is final once no pending bound can reach it, so entries far
        # down the order never have their content searched at all.
        penalty = self.penalty
        costs = self._cheap_costs(positions)
        assert self.partials is not None
        partials = list(map(self.partials.__getitem__, positions))
        # Heap items are (-bound, k), k indexing ``positions``, ``partials``
        # and ``costs``. The bound multiplies in the score's own order
        # (partial x factor, then the penalty): rounding is monotone, so it
        # can never fall below the exact score, even at overflow or in
        # subnormals.
        if penalty:
            bounds = [
                (-((p * MAX_MESSAGE_FACTOR if p > 0.0 else p) * penalty.get(positions[k], 1.0)), k)
                for k, p in enumerate(partials)
            ]
        else:
            bounds = [(-(p * MAX_MESSAGE_FACTOR) if p > 0.0 else -p, k) for k, p in enumerate(partials)]
        heapq.heapify(bounds)
        ready: List[_Key] = []
        skipped, prune_after = 0, max(PRUNE_AFTER_SKIPS, len(bounds) // PRUNE_SHARE)
        while bounds or ready:
            while bounds and (not ready or bounds[0][0] <= ready[0][0]):
                k = heapq.heappop(bounds)[1]
                i = positions[k]
                if costs is not None and costs[k] > room.left:
                    # Cannot fit any more: the fill would skip it. Once the
                    # room is small most entries are like it: drop them all
                    # in one pass instead of popping them one by one.
                    skipped += 1
                    if skipped >= prune_after:
                        # A pass is O(remaining) but ~20x cheaper per entry
                        # than a pop: it runs once a 1/PRUNE_SHARE of the
                        # remaining entries were skipped one by one (a fill
                        # that ends soon never pays for it).
                        left = room.left
                        bounds = [b for b in bounds if costs[b[1]] <= left]
                        heapq.heapify(bounds)
                        skipped, prune_after = 0, max(PRUNE_AFTER_SKIPS, len(bounds) // PRUNE_SHARE)
                    continue
                self._lexical_score(i, partials[k])
                heapq.heappush(ready, self._key(i))
            if ready:
                key = heapq.heappop(ready)
                yield key[3], -key[0], self.cost(key[3])

    # 3. What each pool may take -------------------------------------------------------------

    def members(self, pool: Pool) -> Tuple[List[int], Any]:
        if pool.types is None:
            found = sorted(i for run in self.by_type.values() for i in run)
        else:
            # Concatenated, not merged: only the always-scope part needs
            # input order, and the ranking is a total order of its own.
            found = [i for t in dict.fromkeys(pool.types) for i in self.by_type.get(t, ())]
        if self.claimed:
            items, claimed = self.items, self.claimed
            found = [i for i in found if id(items[i]) not in claimed]
        always = self.always
        return sorted(i for i in found if i in always), [i for i in found if i not in always]

    def _warm(self, positions: Sequence[int]) -> None:
        # A scorer that embeds entries (``warm``) gets the pool's candidates
        # in one batch, instead of one embedder call per entry.
        warm = getattr(self.prepared, "warm", None)
        if warm is not None:
            warm([self.items[i] for i in positions])

    def split_below(self, group: Any, threshold: float) -> Tuple[Any, Any]:
        kept: List[int] = []
        below: List[int] = []
        self._warm(group)
        for i in group:
            entry = self.items[i]
            relevance = _checked_score(self.prepared.relevance(entry), entry, i, "relevance")
            (kept if relevance >= threshold else below).append(i)
        return kept, below

    def claim(self, positions: Iterable[int]) -> None:
        self.claimed.update(id(self.items[i]) for i in positions)

    # 4. What the report needs -----------------------------------------------------------------

    def positions(self, group: Any) -> Iterable[int]:
        return group  # type: ignore[no-any-return]

    def entry(self, position: int) -> Entry:
        return self.items[position]

    def input_index(self, position: int) -> int:
        return position

    def not_admitted(self, position: int) -> Optional[Reason]:
        return self.reason.get(position)

    def all_positions(self) -> Iterable[int]:
        return range(len(self.items))

    def unadmitted_always(self, pools: Sequence[Pool]) -> List[int]:
        return sorted(
            i
            for entry_type, run in self.by_type.items()
            if not any(pool.admits(entry_type) for pool in pools)
            for i in run
            if i in self.always
        )


class Layering:
    """A fill that loads lighter layers of entries (progressive loading).

    The core calls :meth:`fill` per pool instead of its greedy fill, with the
    pool's candidates in exact rank order, then, once every pool is filled,
    :meth:`deepen` with how many contextual entries loaded; when it says yes,
    :meth:`fill` runs again per pool with ``deepen=True`` on the same
    candidates (it must pick the same entries; only their layers may
    change). ``poolsplit_adapters.memory.progressive.ProgressiveLayers`` is
    the implementation; this class only states the contract.
    """

    def fill(self, pool: Pool, ranked: List[Tuple[int, Entry, float, int]], deepen: bool) -> List[Tuple[int, str, int]]:
        """``(position, layer, cost)`` picks, in rank order, from ``ranked``
        ``(position, entry, score, full cost)``, within the pool's caps."""
        raise NotImplementedError

    def deepen(self, loaded: int) -> bool:
        """Whether the loaded context is not yet sufficient."""
        raise NotImplementedError


_Pick = Tuple[int, float, int, str]  # position, score, cost, layer


def fill_pools(
    pools: Sequence[Pool],
    source: CandidateSource,
    *,
    report: bool = True,
    warn: bool = True,
    notes: Optional[Dict[str, Any]] = None,
    layering: Optional[Layering] = None,
    stacklevel: int = 2,
) -> Selection:
    """Steps 3 and 4: fill ``pools`` in order from ``source``, and report.

    The one implementation of the fill rules, whatever the source: the
    stateless functions (:class:`EntrySource`) and ``MemoryIndex`` (cached
    columns) both end here. ``report=False`` skips the report (what
    :func:`retrieve_pools` returns is ``selection.pools``). ``layering``
    replaces the greedy fill by a progressive one (see :class:`Layering`).
    """
    pool_list = check_pools(pools)
    filled: List[Tuple[Pool, List[int], Any, Any, List[_Pick]]] = []
    rankings: List[List[_Ranked]] = []  # each pool's candidates in rank order, for a layering's second pass
    for pool in pool_list:
        # 3a. Always-scope entries load first, in input order, outside both caps.
        always, contextual = source.members(pool)
        # 3b. Threshold, then budgets: marginal candidates are set aside first.
        below = None
        if pool.min_relevance is not None:
            contextual, below = source.split_below(contextual, pool.min_relevance)
        # 3c. The greedy fill (or the layered one).
        if layering is None:
            taken = _greedy(pool, source, contextual)
        else:
            rankings.append(_rank_all(pool, source, contextual))
            taken = _layered(pool, rankings[-1], layering, deepen=False)
        source.claim(always)
        source.claim(i for i, _, _, _ in taken)
        filled.append((pool, always, contextual, below, taken))
    if layering is not None and layering.deepen(sum(len(taken) for *_, taken in filled)):
        filled = [
            (pool, always, contextual, below, _layered(pool, ranked, layering, deepen=True))
            for (pool, always, contextual, below, _), ranked in zip(filled, rankings)
        ]
    result = {
        pool.name: [source.entry(i) for i in always] + [source.entry(i) for i, _, _, _ in taken]
        for pool, always, _, _, taken in filled
    }
    lost = source.unadmitted_always(pool_list)
    if warn:
        for i in lost:
            entry = source.entry(i)
            warnings.warn(
                "%s is an always-scope correction of type %r, but no pool admits that type: "
                "it will not load. Add the type to a pool."
                % (describe_entry(entry, source.input_index(i)), entry.get("type", "note")),
                UnadmittedCorrectionWarning,
                stacklevel=stacklevel + 1,
            )
    if not report:
        return Selection(result, [], [], {}, notes)
    # 4. The report: always-scope entries of every pool first, then each
    # pool's contextual entries; every other entry once, with its reason.
    always_chosen: List[Chosen] = []
    contextual_chosen: List[Chosen] = []
    stats: Dict[str, PoolStats] = {}
    considered: List[Tuple[str, Any, Any, float, Set[int]]] = []
    chosen_at: Set[int] = set()
    for pool, always, contextual, below, taken in filled:
        always_tokens = 0
        for i in always:
            cost = source.cost(i)
            always_tokens += cost
            always_chosen.append(
                Chosen(source.entry(i), source.input_index(i), pool.name, True, None, cost, "full", cost)
            )
        for i, score, cost, layer in taken:
            contextual_chosen.append(
                Chosen(source.entry(i), source.input_index(i), pool.name, False, score, cost, layer, source.cost(i))
            )
        used = sum(cost for _, _, cost, _ in taken)
        taken_at = {i for i, _, _, _ in taken}
        chosen_at.update(always)
        chosen_at.update(taken_at)
        considered.append((pool.name, contextual, below, pool.max_tokens - used, taken_at))
        n_contextual = len(contextual)  # a group is a sized collection (list, array)
        n_below = 0 if below is None else len(below)
        stats[pool.name] = PoolStats(
            pool.name,
            pool.max_tokens,
            pool.max_entries,
            used,
            len(taken),
            len(always),
            always_tokens,
            len(always) + n_contextual + n_below,
        )

    def dropped() -> List[Dropped]:
        return _dropped_rows(source, considered, chosen_at, set(lost))

    return Selection(result, always_chosen + contextual_chosen, dropped, stats, notes)


_Ranked = Tuple[int, Entry, float, int]  # position, entry, score, full cost


def _rank_all(pool: Pool, source: CandidateSource, contextual: Any) -> List[_Ranked]:
    """Every candidate of a pool in rank order (a layering sees them all,
    on both of its passes)."""
    if not pool.loads_contextual:
        return []  # nothing contextual can load: rank nothing
    return [(i, source.entry(i), score, cost) for i, score, cost in source.ranked(contextual, _Room(math.inf))]


def _layered(pool: Pool, ranked: List[_Ranked], layering: Layering, deepen: bool) -> List[_Pick]:
    """3c with a :class:`Layering`: the pool's ranked candidates to its fill."""
    if not pool.loads_contextual:
        return []
    score_at = {i: score for i, _, score, _ in ranked}
    return [(i, score_at[i], cost, layer) for i, layer, cost in layering.fill(pool, ranked, deepen)]


def _greedy(pool: Pool, source: CandidateSource, contextual: Any) -> List[_Pick]:
    """3c: take entries in rank order while they fit; skip one that overflows
    the tokens (a smaller, lower-ranked entry may still fit); stop at the
    entry cap, or when not even a 1-token entry could fit."""
    taken: List[_Pick] = []
    if not pool.loads_contextual:
        return taken  # nothing contextual can load: rank nothing
    room = _Room(pool.max_tokens)
    for i, score, cost in source.ranked(contextual, room):
        if room.used + cost > pool.max_tokens:
            continue
        taken.append((i, score, cost, "full"))
        room.used += cost
        if len(taken) >= pool.max_entries or room.used + 1 > pool.max_tokens:
            break
    return taken


def _dropped_rows(
    source: CandidateSource,
    considered: List[Tuple[str, Any, Any, float, Set[int]]],
    chosen_at: Set[int],
    lost: Set[int],
) -> List[Dropped]:
    """4. One row per entry that did not load, in input order, with one
    reason. A candidate a pool left out was cut by the token budget when its
    cost is more than the room the pool had left at the end (it could never
    have fitted), else by the entry cap; decided from the final room, so the
    reason does not depend on how far the fill had to scan. The last pool
    that considered an entry has the last word."""
    last: Dict[int, Tuple[str, Reason]] = {}
    for name, contextual, below, room, taken_at in considered:
        if below is not None:
            for i in source.positions(below):
                last[i] = (name, Reason.BELOW_RELEVANCE)
        for i in source.positions(contextual):
            if i not in taken_at:
                last[i] = (name, Reason.TOKEN_BUDGET if source.cost(i) > room else Reason.ENTRY_CAP)
    rows: List[Dropped] = []
    for i in source.all_positions():
        if i in chosen_at:
            continue
        entry, index = source.entry(i), source.input_index(i)
        why = source.not_admitted(i)
        if why is not None:
            rows.append(Dropped(entry, index, why))
        elif i in last:
            name, code = last[i]
            rows.append(Dropped(entry, index, code, name, source.score(i), source.cost(i)))
        else:
            rows.append(Dropped(entry, index, Reason.ALWAYS_NO_POOL if i in lost else Reason.NO_POOL))
    return rows


# -- The entry points -------------------------------------------------------------------------


def select(
    entries: Sequence[Entry],
    pools: Sequence[Pool],
    context: Optional[Mapping[str, Any]] = None,
    *,
    scorer: Scorer = default_scorer,
    token_counter: TokenCounter = default_token_counter,
    is_active: IsActive = default_is_active,
    now: Optional[datetime.datetime] = None,
    visibility: Optional[Visibility] = None,
    scope: Optional[Visibility] = None,
    layering: Optional[Layering] = None,
    _report: bool = True,
) -> Selection:
    """Fill several pools from one entry set and report what loaded, what did
    not and why, and each pool's budget use.

    Pools are filled in order; an entry taken by an earlier pool is excluded
    from later ones (by identity, ``id()``, so entries without an ``id`` key
    still dedupe). ``selection.pools`` equals :func:`retrieve_pools` exactly.
    ``visibility`` limits which entries the query may see at all; see
    :class:`Visibility` (``scope=`` is its deprecated keyword). ``layering``
    turns on progressive loading (off: exactly seed 001). Silent
    truncation makes a model believe "that is all there is": the report is
    what lets a host (and a person) see why an entry did or did not load.

    Emits :class:`UnadmittedCorrectionWarning` for an active always-scope
    entry that no pool admits.

    Raises:
        EntryError: a malformed entry, a non-finite or non-numeric score, or
            a token counter that returns a non-positive cost.
        ValueError: two pools share a name.
        TypeError: ``entries``, ``pools``, ``context`` or ``visibility`` of
            the wrong kind.
    """
    pool_list = check_pools(pools)
    view = resolve_visibility(visibility, scope)
    prepared = prepare_scorer(scorer, context, now)
    source = EntrySource(entries, prepared, token_counter=token_counter, is_active=is_active, visibility=view)
    selection = fill_pools(pool_list, source, report=_report, layering=layering, stacklevel=2 if _report else 3)
    note_fallback(selection, source.prepared)
    return selection


def note_fallback(selection: Selection, prepared: Any) -> None:
    """Record in the report that a scorer fell back (e.g. an embedding
    scorer whose embedder failed ranks lexically): said once as a warning by
    the scorer, and on every selection it affected."""
    reason = getattr(prepared, "fallback_reason", None)
    if reason:
        selection.notes["scorer_fallback"] = reason


def retrieve_pools(
    entries: Sequence[Entry],
    pools: Sequence[Pool],
    context: Optional[Mapping[str, Any]] = None,
    **options: Any,
) -> Dict[str, List[Any]]:
    """:func:`select` without the report (same keywords): pool name -> the
    same dict objects, always-scope entries first (input order), then the
    pool's ranked rest."""
    return select(entries, pools, context, _report=False, **options).pools


def retrieve(
    entries: Sequence[Entry],
    pool: Pool,
    context: Optional[Mapping[str, Any]] = None,
    *,
    scorer: Scorer = default_scorer,
    token_counter: TokenCounter = default_token_counter,
    is_active: IsActive = default_is_active,
    now: Optional[datetime.datetime] = None,
) -> List[Any]:
    """Fill one pool (the spec's ``retrieve``): active entries of the pool's
    types; always-scope ones first in input order outside both caps; the rest
    by ``(-score, created or "", id or "", input index)``, taken greedily.
    Returns the same dict objects; never mutates an entry."""
    if not isinstance(pool, Pool):
        raise TypeError("pool must be a Pool, %s" % _got(pool))
    source = EntrySource(
        entries, prepare_scorer(scorer, context, now), token_counter=token_counter, is_active=is_active
    )
    return fill_pools([pool], source, report=False, warn=False).pools[pool.name]
