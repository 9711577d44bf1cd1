"""Progressive loading: summaries for breadth, full text only where it pays
(seed 003's three layers).

Loading every selected entry in full spends most of a budget on detail the
model does not need, and the budget then holds fewer entries. With
progressive loading an entry may carry a ``summary`` (a string), and a pool
is filled in layers:

1. **Breadth (layer 1, "summary").** In rank order, each entry loads its
   cheapest form: its summary when it has one that is cheaper than its
   content, else its content ("full"; an entry without a summary loads
   exactly as in plain selection). Greedy within ``max_tokens`` and
   ``max_entries``, as the plain fill is.
2. **Timeline (layer 2, "timeline").** The recent history of the best-ranked
   entry's topic: the most recent other entries that share one of its
   ``tags`` and have a summary. The layer holds at most
   `TIMELINE_SHARE` of the pool's entries, and the same share of its
   tokens is held back from step 1 to make room for it; whatever the
   timeline does not use goes back to breadth (step 1 resumes in rank
   order). With no tags, or no such entry, there is no timeline and nothing
   is held back.
3. **Depth (layer 3, "full").** Only when the context is not yet
   sufficient (`needs_full_text`): loaded summaries are upgraded to
   full content in rank order while the extra tokens fit; an upgrade that
   does not fit is skipped (the entry keeps its summary: nothing is dropped
   for being long) and the scan goes on.

"Sufficient context" is seed 003's rule, decided once for the whole
selection (not per pool): three or more loaded entries are enough, unless
the query asks for detail ([`wants_detail`][]). A pool of two skills is
not "insufficient" while ten other entries loaded beside it.

Always-scope entries are outside all of this: they load in full, first, as
in plain selection (a summarised correction could lose the instruction).
Which layer loaded is rendered into the marker (``layer="summary"``) so the
model knows there is more, and [`expand`][poolsplit_adapters.memory.expand.expand]
(an agent tool) fetches the full text by id.

The fill ([`progressive_fill`][]) is pure. [`ProgressiveLayers`][] is
the core's `Layering`: the core's fill
asks it for each pool's picks (breadth and timeline), then lets it settle
(depth, once sufficiency is known for the whole selection).
[`progressive_select`][] runs the whole selection on the core's public
[`select`][poolsplit_adapters.poolsplit.select].
"""

from __future__ import annotations

import datetime
import math
from enum import Enum
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Collection,
    Dict,
    FrozenSet,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    TypedDict,
)

from ..poolsplit import (
    Candidates,
    CountedSelection,
    Layering,
    Pool,
    Selection,
    Visibility,
    default_token_counter,
    entry_error,
    parse_created,
    select,
)
from ._words import contains, words
from .metrics import TokenMetrics, token_metrics
from .write_gate import blank

if TYPE_CHECKING:  # annotations only: no runtime dependency
    from typing_extensions import Unpack

__all__ = [
    "DETAIL_WORDS",
    "SUFFICIENT_ITEMS",
    "TIMELINE_SHARE",
    "Candidate",
    "Layer",
    "Pick",
    "ProgressiveLayers",
    "ProgressiveSelection",
    "SelectOptions",
    "candidate",
    "needs_full_text",
    "progressive_fill",
    "progressive_notes",
    "progressive_select",
    "shown_summary",
    "summary_of",
    "wants_detail",
]

#: Seed 003's sufficiency threshold: this many loaded entries are enough
#: context unless the query asks for detail.
SUFFICIENT_ITEMS = 3
#: The timeline layer's share of a pool (entries and tokens, rounded down):
#: enough for the recent history of the top topic, never most of the pool.
TIMELINE_SHARE = 0.25
#: Words that ask for detail (whole words, case-insensitive, as task
#: signals): a query that contains one gets full text even when summaries
#: would count as sufficient.
DETAIL_WORDS: FrozenSet[str] = frozenset(
    {
        "exact",
        "exactly",
        "precise",
        "precisely",
        "detail",
        "details",
        "detailed",
        "full",
        "fully",
        "verbatim",
        "complete",
        "entire",
        "specific",
        "specifically",
        "specifics",
        "step by step",
        "word for word",
        "quote",
    }
)


class Layer(str, Enum):
    """Which form of an entry reached the model."""

    SUMMARY = "summary"  #: layer 1: the entry's ``summary``
    TIMELINE = "timeline"  #: layer 2: the summary, as recent history of the top topic
    FULL = "full"  #: layer 3: the entry's ``content``

    def __str__(self) -> str:
        return self.value


class Candidate(NamedTuple):
    """One contextual candidate of a pool, as the core hands it to the fill.

    Candidates come in the core's exact rank order, best first.

    Attributes:
        position: the entry's position in the caller's input.
        entry: the entry itself.
        score: its score (reported for entries left out).
        full_cost: tokens of its ``content`` (the core's cost).
        summary_cost: tokens of its ``summary``, None when it has none.
        tags: its tags (the timeline layer's topics).
    """

    position: int
    entry: Mapping[str, Any]
    score: float
    full_cost: int
    summary_cost: Optional[int]
    tags: Tuple[str, ...]

    def cheapest(self) -> Tuple[Layer, int]:
        """Layer 1's form: the summary when it is cheaper than the content."""
        if self.summary_cost is not None and self.summary_cost < self.full_cost:
            return Layer.SUMMARY, self.summary_cost
        return Layer.FULL, self.full_cost


class Pick(NamedTuple):
    """One loaded candidate: its input position, the layer, and that layer's cost."""

    position: int
    layer: Layer
    cost: int


def wants_detail(message: Optional[str], detail_words: Collection[str] = DETAIL_WORDS) -> bool:
    """Whether the query asks for detail: it contains one of ``detail_words``
    as whole words, case-insensitively ("give me the *exact* command",
    "*Full* text of the runbook"; not "fullscreen", not "details-page"... which
    *does* match: ``-`` separates words)."""
    if not message:
        return False
    if not isinstance(message, str):
        raise TypeError("the message must be a string, got %s" % type(message).__name__)
    haystack = words(message)
    return any(contains(haystack, word) for word in detail_words)


def needs_full_text(loaded: int, *, detail: bool, sufficient: int = SUFFICIENT_ITEMS) -> bool:
    """Seed 003's sufficiency rule, the switch for the depth layer: full text
    is loaded when the query asks for detail, or when fewer than
    ``sufficient`` contextual entries loaded across all pools."""
    return detail or loaded < sufficient


def shown_summary(entry: Mapping[str, Any]) -> Optional[str]:
    """The entry's ``summary`` when it is a string that shows something,
    else None (never raises): the one rule of "has a summary", for the
    selection (`summary_of`), a marker, and a returned or foreign document
    that claims a lighter layer. A summary that shows nothing (`blank`:
    empty, whitespace, zero-width characters) counts as none: it would tell
    the model nothing."""
    value = entry.get("summary")
    return value if isinstance(value, str) and not blank(value) else None


def summary_of(entry: Mapping[str, Any], index: Optional[int] = None) -> Optional[str]:
    """The entry's summary (`shown_summary`), or None when it has none.

    Raises:
        EntryError: ``summary`` is present but not a string.
    """
    value = entry.get("summary")
    if value is not None and not isinstance(value, str):
        raise entry_error(entry, index, "summary", "must be a string or None, got %s" % type(value).__name__)
    return shown_summary(entry)


def candidate(
    position: int,
    entry: Mapping[str, Any],
    score: float,
    full_cost: int,
    token_counter: Callable[[str], int] = default_token_counter,
) -> Candidate:
    """Build a `Candidate`, measuring the summary with ``token_counter``.

    Raises:
        EntryError: a malformed ``summary``, or a counter that returns a
            non-positive cost for it.
    """
    summary = summary_of(entry, position)
    summary_cost: Optional[int] = None
    if summary is not None:
        measured = token_counter(summary)
        if isinstance(measured, bool) or not isinstance(measured, int) or measured < 1:
            raise entry_error(
                entry,
                position,
                "summary",
                "has no positive cost: token_counter returned %r for its summary; costs must be positive ints"
                % (measured,),
            )
        summary_cost = measured
    return Candidate(position, entry, score, full_cost, summary_cost, tuple(entry.get("tags") or ()))


def _recency_key(item: Candidate, rank: int) -> Tuple[int, float, int]:
    # Most recent first; entries without a parseable ``created`` last; rank
    # order breaks ties. Timestamps as seconds since year 1 (naive, as the
    # core compares them).
    stamp = parse_created(item.entry.get("created"))
    if stamp is None:
        return (1, 0.0, rank)
    return (0, -(stamp - datetime.datetime.min).total_seconds(), rank)


def progressive_fill(
    candidates: Sequence[Candidate],
    pool: Pool,
    *,
    deepen: bool,
    timeline_share: float = TIMELINE_SHARE,
) -> List[Pick]:
    """Fill one pool progressively; return the picks in rank order.

    ``candidates`` are the pool's contextual candidates in the core's rank
    order (best first), always-scope entries excluded. The steps (module
    docstring): breadth with each entry's cheapest layer, the timeline of the
    top entry's topic within ``timeline_share`` of the pool, breadth resumed,
    then, when ``deepen`` (`needs_full_text` for the whole selection),
    upgrades to full text in rank order while they fit.

    Guarantees: the picks' costs add up to at most ``pool.max_tokens``; at
    most ``pool.max_entries`` picks; which candidates are picked does not
    depend on ``deepen`` (only their layers do), so a caller can decide
    ``deepen`` after filling every pool; with no summaries among the
    candidates the picks are exactly the plain greedy fill's, all "full".
    """
    if not 0.0 <= timeline_share <= 1.0:
        raise ValueError("timeline_share must be in [0, 1], got %r" % (timeline_share,))
    max_tokens, max_entries = pool.max_tokens, pool.max_entries
    layers: Dict[int, Tuple[Layer, int]] = {}  # rank -> (layer, cost)
    used = 0

    def breadth(token_limit: float, entry_limit: float) -> None:
        nonlocal used
        for rank, item in enumerate(candidates):
            if len(layers) >= entry_limit:
                return
            if rank in layers:
                continue
            layer, cost = item.cheapest()
            if used + cost <= token_limit:
                layers[rank] = (layer, cost)
                used += cost

    # Layer 2's candidates: the top entry's topic, recent first.
    timeline: List[int] = []
    if candidates and candidates[0].tags and timeline_share > 0:
        topic = set(candidates[0].tags)
        timeline = [
            rank
            for rank in range(1, len(candidates))
            if candidates[rank].cheapest()[0] is Layer.SUMMARY and topic.intersection(candidates[rank].tags)
        ]
        timeline.sort(key=lambda rank: _recency_key(candidates[rank], rank))
    slots = len(timeline) if math.isinf(max_entries) else min(int(max_entries * timeline_share), len(timeline))
    held = 0.0 if not slots or math.isinf(max_tokens) else float(math.floor(max_tokens * timeline_share))

    breadth(max_tokens - held, max_entries - slots)
    if slots:
        taken = 0
        for rank in timeline:
            if taken >= slots or len(layers) >= max_entries:
                break
            cost = candidates[rank].cheapest()[1]
            if rank not in layers and used + cost <= max_tokens:
                layers[rank] = (Layer.TIMELINE, cost)
                used += cost
                taken += 1
        breadth(max_tokens, max_entries)  # what the timeline left goes back to breadth

    if deepen:
        for rank in sorted(layers):
            layer, cost = layers[rank]
            extra = candidates[rank].full_cost - cost
            if layer is not Layer.FULL and used + extra <= max_tokens:
                layers[rank] = (Layer.FULL, candidates[rank].full_cost)
                used += extra
    return [Pick(candidates[rank].position, *layers[rank]) for rank in sorted(layers)]


# -- The whole selection: the core's, with this fill ---------------------------------


class ProgressiveLayers(Layering):
    """Progressive loading as the core's `Layering`:
    give it to ``select(..., layering=...)`` (or ``MemoryIndex.select``).

    Args:
        token_counter: measures summaries (use the one that measures content).
        detail: whether the query asks for detail (see [`wants_detail`][]).
        sufficient: seed 003's "enough items" count.
        timeline_share: the share of a pool held for the timeline layer.

    Example:
        ```python
        layers = ProgressiveLayers(detail=wants_detail("retry policy"))
        sel = select(entries, pools, {"message": "retry policy"}, layering=layers)
        [(c.entry["id"], c.layer) for c in sel.chosen]
        ```
    """

    def __init__(
        self,
        token_counter: Callable[[str], int] = default_token_counter,
        *,
        detail: bool = False,
        sufficient: int = SUFFICIENT_ITEMS,
        timeline_share: float = TIMELINE_SHARE,
    ) -> None:
        self.token_counter = token_counter
        self.detail = detail
        self.sufficient = sufficient
        self.timeline_share = timeline_share
        self.deepened = False
        # pool name -> its candidates in rank order, from the breadth pass:
        # the deepening pass re-fills the same list, its summaries counted.
        self._offered: Dict[str, List[Candidate]] = {}

    def pick(self, pool: Pool, candidates: Candidates, group: Any) -> List[Tuple[int, float, int, str]]:
        """The pool's picks without depth (the core's step 3c)."""
        if not pool.loads_contextual:
            return []
        ranked = candidates.ranked(group, lambda: math.inf)
        offered = [candidate(i, candidates.entry(i), s, c, self.token_counter) for i, s, c in ranked]
        self._offered[pool.name] = offered
        return self._picks(pool, offered, deepen=False)

    def settle(
        self, pools: List[Pool], picks: List[List[Tuple[int, float, int, str]]]
    ) -> List[List[Tuple[int, float, int, str]]]:
        """Every pool filled: decide sufficiency for the whole selection,
        and when it is not sufficient fill each pool again with depth (the
        same entries; only their layers and costs change)."""
        offered, self._offered = self._offered, {}
        self.deepened = needs_full_text(sum(map(len, picks)), detail=self.detail, sufficient=self.sufficient)
        if not self.deepened:
            return picks
        return [self._picks(p, offered[p.name], deepen=True) if p.loads_contextual else [] for p in pools]

    def _picks(self, pool: Pool, offered: List[Candidate], deepen: bool) -> List[Tuple[int, float, int, str]]:
        score = {item.position: item.score for item in offered}
        picks = progressive_fill(offered, pool, deepen=deepen, timeline_share=self.timeline_share)
        return [(pick.position, score[pick.position], pick.cost, pick.layer.value) for pick in picks]


def progressive_notes(metrics: TokenMetrics, *, detail: bool, deepened: bool) -> Dict[str, Any]:
    """What a progressive call records in ``Selection.notes``: ``metrics``
    (tokens per layer, savings; [`TokenMetrics.to_dict`][]), ``detail``
    and ``deepened``. One home for their keys and form, shared by
    `ProgressiveSelection` and the adapters' settings, so both report
    a progressive call the same way.

    Example:
        ```python
        selection.notes.update(progressive_notes(token_metrics(selection.chosen), detail=False, deepened=True))
        ```
    """
    return {"metrics": metrics.to_dict(), "detail": detail, "deepened": deepened}


class ProgressiveSelection(CountedSelection):
    """A [`Selection`][] with the token
    metrics and the sufficiency decision (also in ``notes``).

    Attributes:
        metrics: tokens per layer and savings against all in full.
        detail: whether the query asked for detail.
        deepened: whether the depth layer ran (`needs_full_text`).

    Example:
        ```python
        picked = progressive_select(entries, pools, {"message": "retry policy"}, now=NOW)
        [(c.entry["id"], c.layer) for c in picked.chosen]
        print(picked.metrics)   # tokens: 212 (summaries 120, timeline lines 30, full text 62) against ...
        ```
    """

    __slots__ = ("metrics", "detail", "deepened")

    def __init__(self, selection: Selection, *, detail: bool, deepened: bool) -> None:
        metrics = token_metrics(selection.chosen)
        notes = dict(selection.notes, **progressive_notes(metrics, detail=detail, deepened=deepened))
        super().__init__(
            selection.pools,
            selection.chosen,
            lambda: selection.dropped,
            selection.stats,
            notes,
            counts=lambda: selection.counts,
            sample=selection.dropped_sample,
        )
        self.metrics = metrics
        self.detail = detail
        self.deepened = deepened


class SelectOptions(TypedDict, total=False):
    """The core's [`select`][poolsplit_adapters.poolsplit.select] keywords that
    [`progressive_select`][] passes through unchanged (see ``select`` for
    each one's meaning).

    Example:
        ```python
        progressive_select(entries, pools, context, now=NOW, visibility=Visibility(namespace="acme"))
        ```
    """

    scorer: Callable[..., float]
    token_counter: Callable[[str], int]
    is_active: Callable[[Mapping[str, Any]], bool]
    now: Optional[datetime.datetime]
    visibility: Optional[Visibility]


def progressive_select(
    entries: Sequence[Mapping[str, Any]],
    pools: Sequence[Pool],
    context: Optional[Mapping[str, Any]] = None,
    *,
    detail: Optional[bool] = None,
    sufficient: int = SUFFICIENT_ITEMS,
    timeline_share: float = TIMELINE_SHARE,
    **options: Unpack[SelectOptions],
) -> ProgressiveSelection:
    """[`select`][poolsplit_adapters.poolsplit.select] with progressive loading
    ([`ProgressiveLayers`][]): admission, scoring, rank order, the always
    tier, thresholds and drop reasons are the core's; only the fill differs.
    ``options`` are ``select``'s ([`SelectOptions`][]); the layers cost
    summaries with the same ``token_counter``. ``detail`` defaults to
    [`wants_detail`][] of ``context["message"]``. On entries without a
    ``summary`` the result equals ``select``'s."""
    unknown = sorted(set(options) - set(SelectOptions.__annotations__))
    if unknown:
        raise TypeError("progressive_select() got unexpected keyword arguments: %s" % ", ".join(unknown))
    if detail is None:
        detail = wants_detail((context or {}).get("message"))
    counter = options.get("token_counter", default_token_counter)
    layers = ProgressiveLayers(counter, detail=detail, sufficient=sufficient, timeline_share=timeline_share)
    selection = select(entries, pools, context, layering=layers, **options)
    return ProgressiveSelection(selection, detail=detail, deepened=layers.deepened)
