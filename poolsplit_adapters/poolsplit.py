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

A malformed value of one of the typed keys above raises :class:`EntryError`
naming the entry (id or index) and the key, instead of producing a silently
wrong ranking (a string ``tags`` would otherwise be read as a set of letters).
"""

from __future__ import annotations

import datetime
import heapq
import math
import numbers
import re
import warnings
from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Dict,
    FrozenSet,
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
    "Selection",
    "Chosen",
    "Dropped",
    "PoolStats",
    "Reason",
    "EntryError",
    "UnadmittedCorrectionWarning",
    "default_token_counter",
    "default_is_active",
    "default_scorer",
    "retrieve",
    "retrieve_pools",
    "select",
    "check_entry",
    "Visibility",
    "Scope",
]

__version__ = "0.1.0"

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


# -- Errors and warnings -----------------------------------------------------


class EntryError(ValueError):
    """A memory entry (or what a callback said about it) is malformed.

    Carries ``index`` (position in the caller's input, when known),
    ``entry_id`` (the entry's ``id``, when it has one) and ``field`` so that a
    host can point at the offending record, not just at a stack trace.
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


def warn_unadmitted(entry: Any, index: Optional[int], stacklevel: int = 3) -> None:
    """Emit :class:`UnadmittedCorrectionWarning` for ``entry``."""
    warnings.warn(
        "%s is an always-scope correction of type %r, but no pool admits that type: "
        "it will not load. Add the type to a pool." % (_describe(entry, index), entry.get("type", "note")),
        UnadmittedCorrectionWarning,
        stacklevel=stacklevel,
    )


def _describe(entry: Any, index: Optional[int]) -> str:
    entry_id = entry.get("id") if isinstance(entry, Mapping) else None
    where = "" if index is None else " (index %d)" % index
    if isinstance(entry_id, str) and entry_id:
        return "entry %r%s" % (entry_id, where)
    return "entry at index %d" % index if index is not None else "entry without id"


def _fail(entry: Any, index: Optional[int], field: Optional[str], problem: str) -> EntryError:
    entry_id = entry.get("id") if isinstance(entry, Mapping) else None
    if field is None:
        message = "%s: %s" % (_describe(entry, index), problem)
    else:
        message = "%s: field %r %s" % (_describe(entry, index), field, problem)
    return EntryError(
        message,
        index=index,
        entry_id=entry_id if isinstance(entry_id, str) else None,
        field=field,
        problem=problem,
    )


def _got(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return "got %s %s" % (type(value).__name__, text)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


_STR_OR_NONE = (str, type(None))
_SEQUENCES = (list, tuple)


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
    if type(entry) is dict:
        get = entry.get
        if _plain_values_ok(
            get("content"),
            get("id"),
            get("scope"),
            get("project"),
            get("created"),
            get("type", "note"),
            get("tags"),
            get("base_priority", DEFAULT_PRIORITY),
            get("namespace"),
            get("source"),
        ):
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


def _plain_values_ok(
    content: Any,
    entry_id: Any,
    scope: Any,
    project: Any,
    created: Any,
    entry_type: Any,
    tags: Any,
    priority: Any,
    namespace: Any,
    source: Any,
) -> bool:
    """True when every checked value has exactly the expected built-in type."""
    return (
        type(content) is str
        and type(namespace) in _STR_OR_NONE
        and type(source) in _STR_OR_NONE
        and type(entry_id) in _STR_OR_NONE
        and type(scope) in _STR_OR_NONE
        and type(project) in _STR_OR_NONE
        and type(created) in _STR_OR_NONE
        and type(entry_type) is str
        and (tags is None or (type(tags) in _SEQUENCES and _all_strings(tags)))
        # x - x == 0 rejects NaN and the infinities.
        and (type(priority) is int or (type(priority) is float and priority - priority == 0.0))
    )


def _check_entry_fully(entry: Any, index: Optional[int]) -> None:
    if not isinstance(entry, Mapping):
        raise _fail(entry, index, None, "is not a mapping (%s)" % _got(entry))
    get = entry.get
    if "content" not in entry:
        raise _fail(entry, index, "content", "is missing (every entry needs its text)")
    if not isinstance(get("content"), str):
        raise _fail(entry, index, "content", "must be a string, %s" % _got(get("content")))
    for key in ("id", "scope", "project", "created", "namespace", "source"):
        value = get(key)
        if value is not None and not isinstance(value, str):
            raise _fail(entry, index, key, "must be a string or None, %s" % _got(value))
    if "type" in entry and not isinstance(get("type"), str):
        raise _fail(entry, index, "type", "must be a string, %s" % _got(get("type")))
    tags = get("tags")
    if tags is not None:
        if not isinstance(tags, (list, tuple)):
            raise _fail(entry, index, "tags", "must be a list or tuple of strings, %s" % _got(tags))
        for tag in tags:
            if not isinstance(tag, str):
                raise _fail(entry, index, "tags", "must contain only strings, %s" % _got(tag))
    if "base_priority" in entry:
        # NaN or an infinity would break the total order of scores.
        priority: Any = get("base_priority")
        if not _is_number(priority) or not math.isfinite(float(priority)):
            raise _fail(entry, index, "base_priority", "must be a finite number, %s" % _got(priority))


# -- Pool ----------------------------------------------------------------------


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


def _check_pools(pools: Sequence[Pool]) -> List[Pool]:
    if isinstance(pools, Pool):
        raise TypeError("pools must be a sequence of Pool objects, not a single Pool (wrap it in a list)")
    checked = list(pools)
    seen: Set[str] = set()
    for position, pool in enumerate(checked):
        if not isinstance(pool, Pool):
            raise TypeError("pools[%d] must be a Pool, %s" % (position, _got(pool)))
        if pool.name in seen:
            raise ValueError("duplicate pool name: %r" % (pool.name,))
        seen.add(pool.name)
    return checked


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


_STOPWORDS = frozenset(
    """the and for are but not you all can her was one our out day has had his
    how man new now old see two way who did its let put say she too use that
    this with from they them then than have will your what when were been into
    some more very just over only""".split()
)
_WORD_RE = re.compile(r"[a-z0-9]+")


def significant_words(text: str) -> FrozenSet[str]:
    """Lower-cased ASCII alphanumeric runs longer than two characters, minus
    a short stopword list: the words the message-overlap factor compares."""
    return frozenset(w for w in _WORD_RE.findall(text.lower()) if len(w) > 2 and w not in _STOPWORDS)


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
        return _naive(datetime.datetime.fromisoformat(value.rstrip("Z")))
    except (ValueError, AttributeError):
        return None


def recency_factor(created: Optional[datetime.datetime], ref: datetime.datetime) -> float:
    """Linear decay over 90 days, floored at 0.3; future timestamps count as 0 days."""
    days = 0.0 if created is None else max(0.0, (ref - created).total_seconds() / 86400.0)
    return max(RECENCY_FLOOR, 1.0 - (days / RECENCY_HORIZON_DAYS) * RECENCY_DROP)


class ScoringContext:
    """A retrieval context checked and pre-digested once per call.

    The message's significant words become one compiled pattern that finds
    exactly the entry-content words they share, which gives the same overlap
    as intersecting word sets without building a set per entry.
    """

    __slots__ = ("tags", "project", "words", "nwords", "pattern", "ref")

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
        self.pattern: Optional[re.Pattern[str]] = None
        if self.words:
            alternatives = "|".join(sorted(self.words, key=lambda w: (-len(w), w)))
            self.pattern = re.compile("(?<![a-z0-9])(?:%s)(?![a-z0-9])" % alternatives)

    def shared_words(self, content: str) -> int:
        """How many of the message's significant words occur in ``content``."""
        if self.pattern is None:
            return 0
        return len(set(self.pattern.findall(content.lower())))

    def partial(self, entry: Entry) -> float:
        """Every factor of the default score except the message overlap;
        ``partial * message_factor`` is bit-identical to the spec's score
        because the message factor is the spec's last multiplication."""
        get = entry.get
        return self.factors(get("base_priority", DEFAULT_PRIORITY), get("created"), get("tags"), get("project"))

    def factors(
        self, priority: float, created: Optional[str], tags: Optional[Sequence[str]], project: Optional[str]
    ) -> float:
        """:meth:`partial` from the entry's values (they are already at hand
        on the stateless hot path). Written out flat, in the spec's factor
        order, since it runs once per entry per query."""
        score = float(priority)
        days = 0.0
        if created:
            try:
                stamp = datetime.datetime.fromisoformat(created.rstrip("Z"))
            except ValueError:
                pass
            else:
                if stamp.tzinfo is not None:
                    stamp = stamp.replace(tzinfo=None)
                days = (self.ref - stamp).total_seconds() / 86400.0
                if days < 0.0:
                    days = 0.0
        recency = 1.0 - (days / RECENCY_HORIZON_DAYS) * RECENCY_DROP
        score *= recency if recency > RECENCY_FLOOR else RECENCY_FLOOR
        # With no context tags the factor is exactly 1.0: skip the set work.
        if tags and self.tags:
            own = set(tags)
            score *= 1.0 + (len(own & self.tags) / len(own)) * TAG_WEIGHT
        if project is not None:
            score *= PROJECT_SAME if project == self.project else PROJECT_OTHER
        return score

    def message_factor(self, content: str) -> float:
        """``1 + 1.5 * f`` when the shared fraction ``f`` of the message's
        significant words exceeds 0.15, else exactly 1.0 (so at most 2.5)."""
        if self.pattern is None:
            return 1.0
        overlap = len(set(self.pattern.findall(content.lower()))) / self.nwords
        return 1.0 + overlap * MESSAGE_WEIGHT if overlap > MESSAGE_THRESHOLD else 1.0

    def score(self, entry: Entry) -> float:
        """The default score of a checked entry (see :func:`default_scorer`)."""
        return self.partial(entry) * self.message_factor(entry["content"])


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


def _checked_score(value: Any, entry: Entry, index: Optional[int]) -> float:
    # NaN would break the total order the determinism guarantee rests on, and
    # an infinity makes every tie meaningless; a non-number cannot be sorted.
    if not _is_number(value):
        raise _fail(entry, index, None, "scorer returned %s; a score must be a finite number" % _got(value))
    score = float(value)
    if not math.isfinite(score):
        raise _fail(entry, index, None, "scorer returned %r; a score must be a finite number" % (value,))
    return score


def given_token_count(entry: Entry) -> Optional[int]:
    """The entry's own ``token_count`` when it is a positive int (bool is
    not an int here), else None (the counter must measure the content)."""
    count = entry.get("token_count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return count
    return None


def entry_cost(entry: Entry, token_counter: TokenCounter, index: Optional[int] = None) -> int:
    """Token cost of an entry: a positive-int ``token_count`` (bool is not an
    int here), else ``token_counter(content)``.

    Never 0 for a missing count: a zero default would silently exempt the
    entry from every budget. A counter that answers 0, a negative number or a
    non-integer is reported rather than trusted, for the same reason.
    """
    count = given_token_count(entry)
    if count is not None:
        return count
    measured = token_counter(entry.get("content", ""))
    if not isinstance(measured, numbers.Integral) or isinstance(measured, bool) or measured < 1:
        raise _fail(
            entry,
            index,
            "token_count",
            "has no positive count and token_counter returned %s; costs must be "
            "positive integers (0 would exempt the entry from every budget)" % _got(measured),
        )
    return int(measured)


# -- Scope filters ----------------------------------------------------------------


@dataclass(frozen=True)
class Visibility:
    """Which entries a query may see at all, before any pool or budget.

    Attributes:
        namespace: None (no namespace filter), one namespace, or an explicit
            ordered chain such as ``("project-a", "global")``. Matching is
            exact: an entry is seen only if its ``namespace`` is the query's
            or a link of the chain. There is no implicit fallback to a parent
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
    """

    namespace: Union[None, str, Tuple[str, ...]] = None
    chain_penalty: float = 0.9
    require_tags: Tuple[str, ...] = ()
    require_source: bool = False

    def __post_init__(self) -> None:
        namespace = self.namespace
        if isinstance(namespace, (list, tuple)):
            if not namespace or not all(isinstance(n, str) and n for n in namespace):
                raise TypeError("Visibility namespace chain must be non-empty strings, got %r" % (namespace,))
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
        if isinstance(tags, str) or not all(isinstance(t, str) for t in tags):
            raise TypeError("Visibility require_tags must be a list of strings, %s" % _got(tags))
        object.__setattr__(self, "require_tags", tuple(tags))

    @property
    def chain(self) -> Tuple[str, ...]:
        """The namespaces in order (empty when there is no namespace filter)."""
        if self.namespace is None:
            return ()
        return self.namespace if isinstance(self.namespace, tuple) else (self.namespace,)

    @property
    def active(self) -> bool:
        return bool(self.chain or self.require_tags or self.require_source)

    def judge(self, entry: Entry) -> Tuple[Optional[str], float]:
        """(reason code or None when the entry is in scope, score factor)."""
        factor = 1.0
        chain = self.chain
        if chain:
            link = chain.index(entry.get("namespace")) if entry.get("namespace") in chain else -1
            if link < 0:
                return Reason.NAMESPACE, factor
            factor = self.chain_penalty**link
        if self.require_tags:
            own = entry.get("tags") or ()
            if not all(tag in own for tag in self.require_tags):
                return Reason.TAGS, factor
        if self.require_source and not entry.get("source"):
            return Reason.NO_SOURCE, factor
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


# -- Selection report ------------------------------------------------------------


class Reason:
    """Reason codes in :attr:`Selection.dropped`; each names one cause."""

    INACTIVE = "inactive"  #: ``is_active`` said no (status, superseded_by)
    NO_POOL = "no_pool"  #: no pool admits the entry's type
    ALWAYS_NO_POOL = "always_no_pool"  #: an always-scope entry no pool admits (also warned)
    NAMESPACE = "namespace"  #: its namespace is not the query's (nor in its chain)
    TAGS = "tags"  #: it lacks one of the tags the query requires
    NO_SOURCE = "no_source"  #: provenance required and it has no ``source``
    TOKEN_BUDGET = "token_budget"  #: its cost is more than the room its pool had left
    ENTRY_CAP = "entry_cap"  #: it would have fitted, but its pool's entry cap came first


@dataclass(frozen=True)
class Chosen:
    """One selected entry: which pool took it, its score (None for an
    always-scope entry, which is never scored) and its token cost."""

    entry: Entry
    index: int
    pool: str
    always: bool
    score: Optional[float]
    cost: int


@dataclass(frozen=True)
class Dropped:
    """One entry that did not load, with the one reason why.

    ``pool`` is the pool that last considered it (None for ``inactive`` and
    ``no_pool``), and ``cost`` its token cost there. ``score`` is filled when
    it was computed: the stateless path does not score entries that ranked
    too low to matter.
    """

    entry: Entry
    index: int
    reason: str
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


@dataclass(frozen=True)
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
        dropped: every entry that did not load, in input order.
        stats: pool name -> :class:`PoolStats`.
    """

    pools: Dict[str, List[Any]]
    chosen: List[Chosen]
    dropped: List[Dropped]
    stats: Dict[str, PoolStats]

    def entries(self) -> List[Any]:
        """Selected entries in render order (always-scope first)."""
        return [c.entry for c in self.chosen]

    def dropped_by_reason(self) -> Dict[str, List[Dropped]]:
        """Dropped entries grouped by reason code."""
        grouped: Dict[str, List[Dropped]] = {}
        for item in self.dropped:
            grouped.setdefault(item.reason, []).append(item)
        return grouped


# -- The algorithm ----------------------------------------------------------------


MAX_MESSAGE_FACTOR = 1.0 + 1.0 * MESSAGE_WEIGHT
PRUNE_AFTER_SKIPS = 8

_Key = Tuple[float, str, str, int]


class _Ranking:
    """A pool's contextual candidates, handed out in exact rank order.

    ``ready`` holds exact sort keys; ``bounds`` holds ``(-upper_bound,
    position)`` for candidates not scored yet. The best ready key is final
    once no pending bound can reach it, so entries far down the order are
    never scored at all.
    """

    __slots__ = ("ready", "bounds", "exact")

    def __init__(self, ready: List[_Key], bounds: List[Tuple[float, int]], exact: Callable[[int], _Key]) -> None:
        heapq.heapify(ready)
        heapq.heapify(bounds)
        self.ready = ready
        self.bounds = bounds
        self.exact = exact

    def pop(self) -> Optional[_Key]:
        ready, bounds = self.ready, self.bounds
        while bounds and (not ready or bounds[0][0] <= ready[0][0]):
            heapq.heappush(ready, self.exact(heapq.heappop(bounds)[1]))
        return heapq.heappop(ready) if ready else None

    def prune(self, keep: Callable[[int], bool]) -> List[int]:
        """Drop the candidates ``keep`` rejects; return their positions."""
        gone: List[int] = []
        bounds: List[Tuple[float, int]] = []
        ready: List[_Key] = []
        for bound in self.bounds:
            (bounds if keep(bound[1]) else gone).append(bound)  # type: ignore[arg-type]
        for key in self.ready:
            (ready if keep(key[3]) else gone).append(key)  # type: ignore[arg-type]
        if gone:
            heapq.heapify(bounds)
            heapq.heapify(ready)
            self.bounds, self.ready = bounds, ready
        return [item[-1] for item in gone]  # type: ignore[index]


def _run(
    entries: Sequence[Entry],
    pools: Sequence[Pool],
    context: Optional[Mapping[str, Any]],
    *,
    scorer: Scorer,
    token_counter: TokenCounter,
    is_active: IsActive,
    now: Optional[datetime.datetime],
    report: bool,
    warn: bool,
    cost_of: Optional[Callable[[int, Entry], int]] = None,
    checked: bool = False,
    view: Optional[Visibility] = None,
) -> Selection:
    """Fill ``pools`` from ``entries``; the single implementation behind
    :func:`retrieve`, :func:`retrieve_pools`, :func:`select` and the generic
    path of ``MemoryIndex``.

    Work the result does not need is not done: each entry is checked, tested
    for activeness and scored at most once per call (not once per pool);
    costs are measured only for entries the greedy scan reaches; a pool with
    a zero budget scores nothing; and with the default scorer the expensive
    message-overlap factor is computed lazily, only for entries whose upper
    bound (every other factor x 2.5) can still reach the ranks being filled.
    """
    pool_list = _check_pools(pools)
    items: Sequence[Entry] = entries if isinstance(entries, (list, tuple)) else list(entries)
    prepared: Optional[ScoringContext] = None
    if scorer is default_scorer:
        prepared = ScoringContext(context, now)
    # Costs from a caller (MemoryIndex caches them) or from the default
    # counter are cheap; a custom counter (a real tokenizer) is only asked
    # about entries the greedy scan actually reaches.
    cheap_costs = cost_of is not None or token_counter is default_token_counter
    if cost_of is None:
        cost_of = lambda index, entry: entry_cost(entry, token_counter, index)  # noqa: E731

    # 1. Filter to active entries, grouped by type, keeping input order. With
    # the default scorer, every factor but the message overlap is computed in
    # the same pass (the pools need it for every candidate anyway).
    wanted: Optional[Set[str]] = None
    if all(pool.types is not None for pool in pool_list):
        wanted = {t for pool in pool_list for t in (pool.types or ())}
    n = len(items)
    by_type: Dict[str, List[int]] = {}
    active = [False] * n
    out_of_scope: Dict[int, str] = {}  # position -> Reason.NAMESPACE / TAGS / NO_SOURCE
    penalties: Dict[int, float] = {}  # position -> namespace-chain factor, when not 1
    is_always = [False] * n
    partials: List[float] = [0.0] * n
    default_active = is_active is default_is_active
    factors = prepared.factors if prepared is not None else None
    append_to = by_type.setdefault
    for index, entry in enumerate(items):
        # Each value is read once and serves the check, the activeness test
        # and the score: this loop is the stateless path's hot spot.
        if type(entry) is not dict and not checked:
            check_entry(entry, index)
        get = entry.get
        entry_type = get("type", "note")
        priority = get("base_priority", DEFAULT_PRIORITY)
        created = get("created")
        tags = get("tags")
        project = get("project")
        scope = get("scope")
        if (
            not checked
            and not _plain_values_ok(
                get("content"),
                get("id"),
                scope,
                project,
                created,
                entry_type,
                tags,
                priority,
                get("namespace"),
                get("source"),
            )
            and type(entry) is dict
        ):
            _check_entry_fully(entry, index)
        if default_active:
            live = get("status", "active") == "active" and not get("superseded_by")
        else:
            live = bool(is_active(entry))
        if live and view is not None:
            reason, factor = view.judge(entry)
            if reason is not None:
                out_of_scope[index] = reason
                continue
            if factor != 1.0:
                penalties[index] = factor
        if live:
            active[index] = True
            is_always[index] = scope == "always"
            append_to(entry_type, []).append(index)
            # Always-scope entries are never scored: they load unconditionally.
            if factors is not None and scope != "always" and (wanted is None or entry_type in wanted):
                partials[index] = factors(priority, created, tags, project)
    all_active = [i for i in range(n) if active[i]]

    scores: List[Optional[float]] = [None] * n
    costs: List[int] = [0] * n  # 0: not measured yet (a real cost is >= 1)

    def score_at(i: int) -> float:
        score = scores[i]
        if score is None:
            if prepared is None:
                score = _checked_score(scorer(items[i], context, now=now), items[i], i)
            else:
                score = partials[i] * prepared.message_factor(items[i]["content"])
            if penalties:
                score *= penalties.get(i, 1.0)
            scores[i] = score
        return score

    def cost_at(i: int) -> int:
        cost = costs[i]
        if not cost:
            cost = costs[i] = cost_of(i, items[i])
        return cost

    def sort_key(i: int) -> _Key:
        entry = items[i]
        return (-score_at(i), entry.get("created") or "", entry.get("id") or "", i)

    def ranking(positions: List[int]) -> _Ranking:
        # 4. The total order (-score, created, id, input index). Ranking
        # positions instead of the pool-local index the spec names gives the
        # same order: both follow input order.
        if prepared is None or prepared.pattern is None:
            return _Ranking([sort_key(i) for i in positions], [], sort_key)
        # Best-first: an entry's exact score is at most its upper bound, so
        # the best scored entry is final once no unscored bound can reach it.
        top = MAX_MESSAGE_FACTOR
        bounds = [(-(partials[i] * top) if partials[i] > 0.0 else -partials[i], i) for i in positions]
        if penalties:  # a chain factor is in (0, 1]: applying it keeps every bound a bound
            bounds = [(b * penalties.get(i, 1.0), i) for b, i in bounds]
        return _Ranking([], bounds, sort_key)

    claimed: Set[int] = set()  # id() of every dict placed by an earlier pool
    result: Dict[str, List[Any]] = {}
    always_chosen: List[Chosen] = []
    contextual_chosen: List[Chosen] = []
    last_word: Dict[int, Dropped] = {}
    stats: Dict[str, PoolStats] = {}

    for pool in pool_list:
        if pool.types is None:
            positions = all_active
        else:
            # Concatenated, not merged: only the always-scope list needs input
            # order, and the contextual ranking is a total order of its own.
            positions = [i for t in set(pool.types) for i in by_type.get(t, ())]
        if claimed:
            positions = [i for i in positions if id(items[i]) not in claimed]

        # 2-3. Always-scope entries load first, in input order, outside both caps.
        always = sorted(i for i in positions if is_always[i])
        contextual = [i for i in positions if not is_always[i]]

        # 5. Greedy fill: skip what overflows the tokens (a smaller,
        #    lower-ranked entry may still fit); stop at the entry cap, or
        #    when not even a 1-token entry could fit. When costs are cheap to
        #    know, entries that can no longer fit are pruned in bulk instead
        #    of being ranked one by one only to be skipped.
        taken: List[Tuple[int, float, int]] = []
        used = 0
        if pool.max_entries > 0 and pool.max_tokens >= 1:
            order = ranking(contextual)
            skips = 0
            while True:
                key = order.pop()
                if key is None:
                    break
                i = key[3]
                cost = cost_at(i)
                if used + cost > pool.max_tokens:
                    skips += 1
                    if cheap_costs and skips >= PRUNE_AFTER_SKIPS:
                        skips = 0

                        def fits(j: int, room: float = pool.max_tokens - used) -> bool:
                            return cost_at(j) <= room

                        order.prune(fits)
                    continue
                taken.append((i, -key[0], cost))
                used += cost
                if len(taken) >= pool.max_entries or used + 1 > pool.max_tokens:
                    break
        if report:
            # Why each contextual candidate of this pool was left out: its
            # cost is more than the room the pool had left (it could never
            # have fitted), or it would have fitted but the entry cap came
            # first. Decided from the final room, so the reason does not
            # depend on how far the scan had to go.
            room = pool.max_tokens - used
            taken_at = {i for i, _, _ in taken}
            for i in contextual:
                if i not in taken_at:
                    cost = cost_at(i)
                    code = Reason.TOKEN_BUDGET if cost > room else Reason.ENTRY_CAP
                    last_word[i] = Dropped(items[i], i, code, pool.name, scores[i], cost)

        result[pool.name] = [items[i] for i in always] + [items[i] for i, _, _ in taken]
        claimed.update(id(items[i]) for i in always)
        claimed.update(id(items[i]) for i, _, _ in taken)
        if report:
            always_tokens = 0
            for i in always:
                cost = cost_at(i)
                always_tokens += cost
                always_chosen.append(Chosen(items[i], i, pool.name, True, None, cost))
            for i, score, cost in taken:
                contextual_chosen.append(Chosen(items[i], i, pool.name, False, score, cost))
                last_word.pop(i, None)  # an earlier pool may have left it out
            stats[pool.name] = PoolStats(
                pool.name,
                pool.max_tokens,
                pool.max_entries,
                used,
                len(taken),
                len(always),
                always_tokens,
                len(always) + len(contextual),
            )

    lost = [
        i
        for entry_type, run in by_type.items()
        if not any(pool.admits(entry_type) for pool in pool_list)
        for i in run
        if items[i].get("scope") == "always"
    ]
    if warn:
        for i in sorted(lost):
            warn_unadmitted(items[i], i, stacklevel=4)
    if not report:
        return Selection(result, [], [], {})

    chosen_at = {c.index for c in always_chosen} | {c.index for c in contextual_chosen}
    lost_at = set(lost)
    dropped: List[Dropped] = []
    for i, entry in enumerate(items):
        if i in chosen_at:
            continue
        if i in out_of_scope:
            dropped.append(Dropped(entry, i, out_of_scope[i]))
        elif not active[i]:
            dropped.append(Dropped(entry, i, Reason.INACTIVE))
        elif i in last_word:
            dropped.append(last_word[i])
        elif i in lost_at:
            dropped.append(Dropped(entry, i, Reason.ALWAYS_NO_POOL))
        else:
            dropped.append(Dropped(entry, i, Reason.NO_POOL))
    return Selection(result, always_chosen + contextual_chosen, dropped, stats)


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
    """Fill one pool; return the admitted entries in render order.

    The algorithm, in order:

    1. **Filter** to active entries (``is_active``), then to the pool's types
       (``pool.types is None`` accepts every type).
    2. **Split** into always-scope entries (``scope == "always"``) and the
       contextual rest.
    3. **Load every always-scope entry first**, in input order, bypassing both
       ``max_tokens`` and ``max_entries``: a correction is never crowded out.
    4. **Score** the contextual entries and sort by the total key
       ``(-score, created or "", id or "", input index)``, so input order only
       ever breaks otherwise complete ties.
    5. **Greedily fill**: an entry is taken when ``used + cost <= max_tokens``
       and fewer than ``max_entries`` contextual entries are taken; one that
       overflows the tokens is skipped and scanning continues.

    Returns the same dict objects (no copies); never mutates an entry.

    Raises:
        EntryError: a malformed entry, a non-finite or non-numeric score, or a
            token counter that returns a non-positive cost.
    """
    if not isinstance(pool, Pool):
        raise TypeError("pool must be a Pool, %s" % _got(pool))
    return _run(
        entries,
        [pool],
        context,
        scorer=scorer,
        token_counter=token_counter,
        is_active=is_active,
        now=now,
        report=False,
        warn=False,
    ).pools[pool.name]


def retrieve_pools(
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
) -> Dict[str, List[Any]]:
    """Fill several pools from one entry set, each entry in at most one pool.

    Pools are filled in order; an entry taken by an earlier pool is excluded
    from later ones. Dedupe is by object identity (``id()``), so entries
    without an ``id`` key still dedupe. Emits
    :class:`UnadmittedCorrectionWarning` for an active always-scope entry that
    no pool admits.

    Raises:
        ValueError: two pools share a name (:class:`EntryError`, a subclass,
            for a malformed entry; see :func:`retrieve`).
    """
    return _run(
        entries,
        pools,
        context,
        scorer=scorer,
        token_counter=token_counter,
        is_active=is_active,
        now=now,
        report=False,
        warn=True,
        view=resolve_visibility(visibility, scope),
    ).pools


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
) -> Selection:
    """Like :func:`retrieve_pools`, plus the report: what loaded, what did
    not and why, and per-pool budget use.

    Silent truncation makes a model believe "that is all there is"; the
    report is what lets a host (and a person) see why an entry did or did not
    load. ``selection.pools`` equals ``retrieve_pools(...)`` exactly.

    ``visibility`` limits which entries the query may see at all; the
    entries it excludes are reported as ``namespace`` / ``tags`` /
    ``no_source``. See :class:`Visibility`. Both functions take it.
    """
    return _run(
        entries,
        pools,
        context,
        scorer=scorer,
        token_counter=token_counter,
        is_active=is_active,
        now=now,
        report=True,
        warn=True,
        view=resolve_visibility(visibility, scope),
    )
