"""The core's fill with its seams: any source of candidates, another step 3c.

[`poolsplit_adapters.poolsplit.select`][] is the plain fill (admit once, score once, sort, greedy fill), as the
spec reads. The index, progressive loading, the adapters' call and fastpath's best-first source need the same
steps with seams, and this module is that twin: `fill_pools` mirrors the core ``select``'s steps 3 and 4
(same step numbers) over a `Candidates` (``MemoryIndex``'s columns,
``fastpath.BestFirstCandidates`` or `ListCandidates`, which mirrors the core's steps 1 and 2 over a list),
with an optional `Layering` (progressive loading) and a
`Counting` source's counts. ``tests/unit/test_twins.py`` checks that the plain
fill and every seamed path give the same selection, report included.
"""

from __future__ import annotations

import datetime
import functools
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Optional

from .poolsplit import (
    Chosen,
    Context,
    Counts,
    Dropped,
    Entry,
    IsActive,
    Loaded,
    Moment,
    Pool,
    PoolStats,
    Reason,
    ScoringContext,
    Selection,
    TokenCounter,
    UnadmittedCorrectionWarning,
    Visibility,
    active_visibility,
    as_utc,
    check_argument,
    check_entry,
    check_pools,
    checked_score,
    default_is_active,
    default_scorer,
    default_token_counter,
    describe_entry,
    entry_cost,
    first_per_key,
    lifecycle_reason,
    prepare_scorer,
    tally,
)
from .seams import Candidates, Counting, Filled, Layering, Left, Pick

__all__ = ["CountedSelection", "ListCandidates", "fill_pools", "select", "retrieve_pools"]

NOW_PROBLEM = "now must be a datetime.datetime or None"


class ListCandidates:
    """The plain list source (``seams.Candidates``): step 1 at once, step 2 and costs (a tokenizer is a call's
    dear part) only for what the fill reaches; given ``costs``, entries count as checked.
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
        listed = isinstance(entries, Iterable) and not isinstance(entries, (str, bytes, Mapping))
        check_argument(listed, TypeError, "entries must be a sequence of entry mappings", entries)
        hint = "give the call's prepared scorer, prepare_scorer(scorer, context, now)"
        check_argument(callable(getattr(prepared, "score", None)), TypeError, hint, prepared)
        check_argument(now is None or isinstance(now, datetime.datetime), TypeError, NOW_PROBLEM, now)
        self.items: Sequence[Entry] = entries if isinstance(entries, (list, tuple)) else list(entries)
        self.prepared, self.counter = prepared, token_counter
        self.now = as_utc(now) if now is not None else datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        self.costs: dict[int, int] = dict(enumerate(costs)) if costs is not None else {}
        self.reason: dict[int, Reason] = {}  # position -> why not admitted
        self.penalty: dict[int, float] = {}  # position -> namespace-chain factor, when not 1
        self.by_type: dict[str, list[int]] = {}
        self.always: set[int] = set()
        self.scores: dict[int, float] = {}
        self.claimed: set[int] = set()  # id() of every entry an earlier pool took
        self.admit(is_active, visibility, checked=costs is not None)
        if getattr(prepared, "admitted", None) is not None:  # a scorer that reads the call's candidates first
            contextual = sorted(i for run in self.by_type.values() for i in run if i not in self.always)
            prepared.admitted([self.items[i] for i in contextual])

    def admit(self, is_active: IsActive, visibility: Optional[Visibility], checked: bool) -> None:
        """1. Admit: checked, live and visible entries, grouped by type."""
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
            self.by_type.setdefault(entry.get("type", "note"), []).append(index)
            if entry.get("scope") == "always":
                self.always.add(index)

    def score(self, position: int) -> float:
        """2. Score, once, times the chain factor (the default score is not re-checked: an overflow ranks as inf)."""
        if position not in self.scores:
            entry = self.items[position]
            score = self.prepared.score(entry)
            if not isinstance(self.prepared, ScoringContext):
                score = checked_score(score, entry, position, "scorer")
            self.scores[position] = score * self.penalty.get(position, 1.0)
        return self.scores[position]

    def cost(self, position: int) -> int:
        if position not in self.costs:
            self.costs[position] = entry_cost(self.items[position], self.counter, position)
        return self.costs[position]

    def members(self, pool: Pool) -> tuple[list[int], list[int]]:
        runs = [run for entry_type, run in self.by_type.items() if pool.admits(entry_type)]
        found = sorted(i for run in runs for i in run if id(self.items[i]) not in self.claimed)
        return [i for i in found if i in self.always], [i for i in found if i not in self.always]

    def warm(self, group: list[int]) -> None:
        if getattr(self.prepared, "warm", None) is not None:  # a scorer that embeds entries: one batch per pool
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
        self.claimed.update(id(self.items[i]) for i in positions)

    def entry(self, position: int) -> Entry:
        return self.items[position]

    def index(self, position: int) -> int:
        return position

    def verdicts(self) -> Iterator[tuple[int, Optional[Reason]]]:
        return ((i, self.reason.get(i)) for i in range(len(self.items)))


_EVERY_TYPE = Pool("every type", 0, 0)


def fill_pools(
    pools: Sequence[Pool],
    candidates: Candidates,
    *,
    report: bool = True,
    warn: bool = True,
    notes: Optional[dict[str, Any]] = None,
    layering: Optional[Layering] = None,
    stacklevel: int = 2,
) -> Selection:
    """Steps 3 and 4 of the module docstring over ``candidates``: the one fill, whatever holds the entries."""
    pool_list, filled = check_pools(pools), []
    for pool in pool_list:
        # 3a. Always-scope entries first, in input order, outside both caps.
        always, contextual = candidates.members(pool)
        # 3b. Threshold, then budgets: marginal candidates are set aside first.
        low, below = pool.min_relevance, None
        if low is not None:
            contextual, below = candidates.split_below(contextual, low)
        # 3c. The greedy fill in rank order (or the layering's).
        picks = (_greedy if layering is None else layering.pick)(pool, candidates, contextual)
        # 3d. What loaded is claimed: an entry lands in one pool at most.
        candidates.claim(always + [p[0] for p in picks])
        filled.append((pool, always, contextual, below, picks))
    if layering is not None:  # every pool filled: the layering may change layers and costs, not entries
        filled = [f[:4] + (p,) for f, p in zip(filled, layering.settle(pool_list, [f[4] for f in filled]))]
    at, index, cost = candidates.entry, candidates.index, candidates.cost
    result = {f[0].name: [at(i) for i in f[1] + [p[0] for p in f[4]]] for f in filled}
    # 4. Report. Every pool claimed its types' always-scope entries (3a, 3d): those left, no pool admits. Such a
    # correction is never only a report line.
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

    # Counts and sample without a row per entry left out: a column source's (seams.Counting), else from the rule.
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


class CountedSelection(Selection):
    """A [`Selection`][] whose ``counts`` and ``dropped_sample`` come from the
    fill's source (a column source's `Counting`, else the left-out rule's
    triples): what an omission line and an event need, without a ``Dropped`` row per entry left out (the core's
    ``Selection`` builds every row first). Once ``dropped`` is built the sample is read from it.

    Example:
        ```python
        picked = fill_pools(pools, ListCandidates(entries, prepare_scorer(default_scorer, ctx, now)))
        picked.counts                # {(pool, Reason.TOKEN_BUDGET): (entries, tokens), ...}, no row built
        picked.dropped_sample(3)     # the first three rows of each (pool, reason)
        ```
    """

    def __init__(
        self, *selection: Any, counts: Callable[[], Counts], sample: Callable[[int], list[Dropped]], **named: Any
    ) -> None:
        """``selection`` (and ``named``): the core ``Selection``'s arguments; ``counts``, ``sample``: the source's."""
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


def _greedy(pool: Pool, candidates: Candidates, contextual: Any) -> list[Pick]:
    """3c: in rank order, skip what overflows the tokens (a smaller one may fit); stop at the entry cap or when full."""
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
    layering: Optional[Layering] = None,
    candidates: Callable[..., Candidates] = ListCandidates,
    _report: bool = True,
    _stacklevel: int = 2,
    **options: Any,
) -> Selection:
    """Twin of [`poolsplit_adapters.poolsplit.select`][] (its keywords in ``options``: ``scorer``,
    ``token_counter``, ``is_active``, ``now``, ``visibility``; the same selection), with the seams: ``layering``
    (progressive loading) and ``candidates``, what holds the entries (see docs/core.md)."""
    scorer, now = options.pop("scorer", default_scorer), options.get("now")
    pool_list, options["visibility"] = check_pools(pools), active_visibility(options.get("visibility"))
    # 1. Admit and 2. score (once each, when a pool ranks the entry).
    source = candidates(entries, prepare_scorer(scorer, context, now), **options)
    # 3. Fill each pool and 4. report.
    return fill_pools(pool_list, source, report=_report, layering=layering, stacklevel=_stacklevel)


def retrieve_pools(entries: Sequence[Entry], pools: Sequence[Pool], context: Context = None, **options: Any) -> Loaded:
    """Twin of [`poolsplit_adapters.poolsplit.retrieve_pools`][] (the keywords of `select`)."""
    return select(entries, pools, context, _report=False, _stacklevel=3, **options).pools
