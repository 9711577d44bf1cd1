"""Faster twins of core rules for the stateless path (lists of dicts).

The core ([`poolsplit_adapters.poolsplit`][]) states each rule once, plainly:
check every entry, score every candidate, sort, fill. On a large plain list
the same answers come cheaper, and this module holds those shortcuts so the
core stays readable. Each twin names the core rule it mirrors, and
``tests/unit/test_twins.py`` checks every one against that rule:

* `plain_entry_ok` mirrors [`check_entry`][]
  for a plain dict of built-in values (exact type tests, no error wording);
* `word_runs` mirrors `significant_words`
  (byte translation and split, all in C);
* `BestFirstCandidates` mirrors
  `ListCandidates`: same admission, same
  scores, same order, but with the default scorer it ranks best-first against
  an upper bound (the message factor is at most 2.5), so entries far down
  the order never have their content read, and it drops entries that can no
  longer fit in one pass;
* `select` and `retrieve_pools` are the core's one fill
  ([`fill_pools`][poolsplit_adapters.poolsplit.fill_pools]) over `BestFirstCandidates`: a
  candidate source, never a second fill.

``MemoryIndex`` (`poolsplit_adapters.index`) is the hot path; this is
the fast path for callers who hold a list and no index.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import count, repeat
from typing import Any, Optional

from . import poolsplit
from .poolsplit import (
    DEFAULT_PRIORITY,
    MAX_COST,
    MAX_PRIORITY,
    MESSAGE_THRESHOLD,
    MESSAGE_WEIGHT,
    Context,
    Entry,
    IsActive,
    ListCandidates,
    Loaded,
    Pool,
    Reason,
    ScorerCall,
    Selection,
    Visibility,
    check_entry,
    default_is_active,
    default_token_counter,
    entry_cost,
    lifecycle_reason,
)
from .relevance.batch import RUN_BYTES, byte_runs

__all__ = ["BestFirstCandidates", "plain_entry_ok", "word_runs", "select", "retrieve_pools"]

_STR_OR_NONE = (str, type(None))
_SEQUENCES = (list, tuple)
MAX_MESSAGE_FACTOR = 1.0 + MESSAGE_WEIGHT  # every message word shared: the default score's highest message factor
#: Consecutive entries too costly for a pool's room before the ranking
#: drops every such entry at once.
PRUNE_AFTER_SKIPS = 8
PRUNE_SHARE = 32


def _all_strings(values: Sequence[Any]) -> bool:
    # str.join accepts only strings and runs in C.
    try:
        "".join(values)
    except TypeError:
        return False
    return True


def plain_entry_ok(entry: dict[str, Any]) -> bool:
    """Twin of ``check_entry`` for a plain ``dict``: True when every checked
    value has exactly the expected built-in type, so ``check_entry`` would
    pass. False means "ask ``check_entry``" (a subclass, a mapping, or an
    error it will name), never "malformed" by itself."""
    get = entry.get
    tags = get("tags")
    priority = get("base_priority", DEFAULT_PRIORITY)
    count = get("token_count")
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
        # The bound rejects NaN, the infinities and what check_entry refuses as beyond MAX_PRIORITY.
        and (type(priority) is int or type(priority) is float)
        and -MAX_PRIORITY <= priority <= MAX_PRIORITY
        # A given count above the largest cost is refused; an int subclass: ask check_entry.
        and (not isinstance(count, int) or type(count) is bool or (type(count) is int and count <= MAX_COST))
    )


def word_runs(text: str) -> list[bytes]:
    """Twin of ``significant_words``' tokenizer: the maximal runs of ASCII
    letters and digits of the lower-cased ``text``, as bytes (a non-ASCII
    character becomes ``?``, then a space). Short runs and stopwords are
    kept: intersecting with a set of significant words drops them."""
    return byte_runs(text, RUN_BYTES)


_Key = tuple[float, str, str, int]


class BestFirstCandidates(ListCandidates):
    """Twin of `ListCandidates` (same
    arguments, same answers), faster on large lists with the default scorer.

    The admission pass reads, while each entry is at hand, the cheap part of
    its default score (every factor but the message overlap) and, when no
    tokenizer is involved, its cost. The ranking is then best-first: an
    entry's exact score is computed only once its upper bound (partial x 2.5)
    could still beat the best exact key.

    Example:
        ```python
        prepared = prepare_scorer(default_scorer, {"message": "deploy"}, now)
        selection = fill_pools(pools, BestFirstCandidates(entries, prepared))
        ```
    """

    def __init__(self, entries: Iterable[Mapping[str, Any]], prepared: Any, **options: Any) -> None:
        """The arguments of `ListCandidates`."""
        prepared = ScorerCall.of(prepared)
        self.lexical = prepared.default
        self.runs = frozenset(w.encode() for w in self.lexical.words) if self.lexical is not None else frozenset()
        # Costs known without a tokenizer call let the ranking skip what cannot fit.
        counter = options.get("token_counter", default_token_counter)
        self.cheap = options.get("costs") is not None or counter is default_token_counter
        self.partials: dict[int, float] = {}
        super().__init__(entries, prepared, **options)

    def admit(self, is_active: IsActive, visibility: Optional[Visibility], checked: bool) -> None:
        # ListCandidates.admit with the fast checks, the default activeness
        # inline (lifecycle_reason when a lifecycle time is involved), and the
        # partial score and cheap cost read in the same pass.
        default_active = is_active is default_is_active
        as_of = visibility.at if visibility is not None else None
        reason, by_type, always_by_type, costs = self.reason, self.by_type, self.always_by_type, self.costs
        partial, partials = (self.lexical.partial if self.lexical is not None else None), self.partials
        read_cost = self.cheap and not checked
        for index, entry in enumerate(self.items):
            # A plain dict of built-in values: its cost is the given count or
            # len // 4, read inline (entry_cost with the default counter).
            plain = not checked and type(entry) is dict and plain_entry_ok(entry)
            if not checked and not plain:
                check_entry(entry, index)
            get = entry.get
            if as_of is not None or get("expires") is not None:
                why = lifecycle_reason(entry, index, is_active, self.now, as_of)
            elif default_active:
                why = None if get("status", "active") == "active" and not get("superseded_by") else Reason.INACTIVE
            else:
                why = None if is_active(entry) else Reason.INACTIVE
            if why is not None:
                reason[index] = why
                continue
            if visibility is not None:
                why, factor = visibility.judge(entry)
                if why is not None:
                    reason[index] = why
                    continue
                if factor != 1.0:
                    self.penalty[index] = factor
            runs = always_by_type if get("scope") == "always" else by_type
            run = runs.get(get("type", "note"))
            if run is None:
                run = runs[get("type", "note")] = []
            run.append(index)
            if partial is not None:
                partials[index] = partial(entry)
            if read_cost:
                given = get("token_count")
                if not plain:
                    costs[index] = entry_cost(entry, default_token_counter, index)
                elif type(given) is int and given > 0:
                    costs[index] = given
                else:
                    costs[index] = max(1, len(entry["content"]) // 4)

    def _message_factor(self, entry: Mapping[str, Any]) -> float:
        # Twin of ScoringContext.message_factor over byte runs.
        assert self.lexical is not None
        if not self.lexical.nwords:
            return 1.0
        overlap = len(self.runs.intersection(word_runs(entry["content"]))) / self.lexical.nwords
        return 1.0 + overlap * MESSAGE_WEIGHT if overlap > MESSAGE_THRESHOLD else 1.0

    def score(self, position: int) -> float:
        if self.lexical is None or position in self.scores:
            return super().score(position)
        entry = self.items[position]
        partial = self.partials[position] if position in self.partials else self.lexical.partial(entry)
        score = partial * self._message_factor(entry) * self.penalty.get(position, 1.0)
        self.scores[position] = score
        return score

    def _key(self, position: int) -> _Key:
        entry = self.items[position]
        return (-self.score(position), entry.get("created") or "", entry.get("id") or "", position)

    def ranked(self, group: list[int], left: Callable[[], float]) -> Iterator[tuple[int, float, int]]:
        if self.lexical is None or not self.lexical.nwords:
            if self.lexical is None:
                self.warm(group)
            # Every score is needed to know the best; a heap hands out only
            # as many as the fill takes.
            keys = [self._key(i) for i in group]
            heapq.heapify(keys)
            while keys:
                key = heapq.heappop(keys)
                yield key[3], -key[0], self.cost(key[3])
            return
        costs = list(map(self.costs.__getitem__, group)) if self.cheap else None
        partials = list(map(self.partials.__getitem__, group))
        penalty = self.penalty
        # Heap items (-bound, k), k indexing group/partials/costs. The bound
        # multiplies in the score's own order (partial x factor, then the
        # penalty): rounding is monotone, so it never falls below the exact
        # score, even at overflow or in subnormals. (-(p * f) is p * -f
        # exactly: a sign flip is exact.)
        if penalty or not partials or min(partials) <= 0.0:
            bounds = [
                (-((p * MAX_MESSAGE_FACTOR if p > 0.0 else p) * penalty.get(group[k], 1.0)), k)
                for k, p in enumerate(partials)
            ]
        else:
            bounds = list(zip(map(operator.mul, partials, repeat(-MAX_MESSAGE_FACTOR)), count()))
        heapq.heapify(bounds)
        ready: list[_Key] = []
        skipped, prune_after = 0, max(PRUNE_AFTER_SKIPS, len(bounds) // PRUNE_SHARE)
        while bounds or ready:
            while bounds and (not ready or bounds[0][0] <= ready[0][0]):
                k = heapq.heappop(bounds)[1]
                if costs is not None and costs[k] > left():
                    # Cannot fit any more: the fill would skip it. Once the
                    # room is small most entries are like it; a pass that
                    # drops them all (~20x cheaper per entry than a pop) runs
                    # once 1/PRUNE_SHARE of the rest were skipped one by one.
                    skipped += 1
                    if skipped >= prune_after:
                        room = left()
                        bounds = [b for b in bounds if costs[b[1]] <= room]
                        heapq.heapify(bounds)
                        skipped, prune_after = 0, max(PRUNE_AFTER_SKIPS, len(bounds) // PRUNE_SHARE)
                    continue
                heapq.heappush(ready, self._key(group[k]))
            if ready:
                key = heapq.heappop(ready)
                yield key[3], -key[0], self.cost(key[3])


def select(entries: Sequence[Entry], pools: Sequence[Pool], context: Context = None, **options: Any) -> Selection:
    """Twin of [`select`][poolsplit_adapters.poolsplit.select] (the same keywords,
    the same selection): the core's ``select`` over `BestFirstCandidates`."""
    options.setdefault("_stacklevel", 3)  # warnings name the caller of this wrapper
    options.setdefault("candidates", BestFirstCandidates)
    return poolsplit.select(entries, pools, context, **options)


def retrieve_pools(entries: Sequence[Entry], pools: Sequence[Pool], context: Context = None, **options: Any) -> Loaded:
    """Twin of [`retrieve_pools`][poolsplit_adapters.poolsplit.retrieve_pools] (same keywords as `select`)."""
    return select(entries, pools, context, _report=False, _stacklevel=4, **options).pools
