"""Priority, recency, tags and project as bounded modifiers of relevance.

The spec's scorer multiplies relevance (at most x2.5) by a recency factor
that falls to x0.3 after 90 days, so on a months-long store any entry of
the last month outranks any older match. Seed 003 ranks relevance first
(``base_score x task_weight x (0.7 + 0.3 x importance)``) and *adds* a
linear boost for entries of the last 30 days. Here every such signal is a
boost in [0, its weight]:

* **priority**: ``priority_weight * clamp(base_priority, 0, 10) / 10``;
* **recency**: ``recency_weight * max(0, 1 - age_days / recency_horizon_days)``
  (an entry older than the horizon, or undated, gets no boost: it is not
  penalised, only not helped);
* **tags**: ``tag_weight * f``, ``f`` the share of the entry's distinct tags
  named in ``context["tags"]``;
* **project**: ``project_weight`` for the context's project, half of it for
  an entry without project, nothing for another project.

The score is then ([`combine`][]):

```text
score = (relevance + floor) * (1 + boost),   boost in [0, m]
```

with ``m`` = [`Modifiers.bound`][], the sum of the four weights (0.3 by
default). ``floor`` (0.01) lets the modifiers order entries that match
nothing (a query without words, an unrelated tail that still fits the
budget) instead of leaving them to the tie-break.

**The bound.** ``score`` lies in ``[relevance + floor, (relevance + floor)(1 + m)]``,
so an entry of relevance ``r`` never outranks one of relevance
``r' > (r + floor)(1 + m) - floor``; as relevance is at most 1, **δ =
(1 + floor) · m** is enough whatever ``r`` (0.303 with the defaults): an
entry of relevance ``r`` never outranks one of relevance ``r + δ``,
whatever their ages, priorities, tags and projects.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass
from typing import Any, FrozenSet, Mapping, Optional

from ..poolsplit import DEFAULT_PRIORITY, parse_created

__all__ = ["Modifiers", "combine", "combine_columns", "DEFAULT_FLOOR"]

#: ``floor`` in ``(relevance + floor) * (1 + boost)``.
DEFAULT_FLOOR = 0.01


def _weight(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < math.inf:
        raise ValueError("Modifiers %s must be a finite number >= 0, got %r" % (name, value))
    return float(value)


@dataclass(frozen=True)
class Modifiers:
    """The bounded boosts of a relevance-first score (module docstring).

    Example:
        >>> mods = Modifiers()
        >>> mods.bound
        0.3
        >>> now = datetime.datetime(2026, 7, 1)
        >>> mods.boost({"content": "x", "created": "2026-06-16T00:00:00Z"}, frozenset(), None, now)
        0.125
    """

    #: Weight of ``base_priority`` (clamped to [0, 10], divided by 10).
    priority_weight: float = 0.1
    #: Boost of a brand-new entry, falling linearly to 0 at the horizon.
    recency_weight: float = 0.1
    #: Days after which an entry gets no recency boost (seed 003: 30).
    recency_horizon_days: float = 30.0
    #: Boost when every tag of the entry is in ``context["tags"]``.
    tag_weight: float = 0.05
    #: Boost of an entry of the context's project (half for no project).
    project_weight: float = 0.05

    def __post_init__(self) -> None:
        for name in ("priority_weight", "recency_weight", "tag_weight", "project_weight"):
            _weight(getattr(self, name), name)
        horizon = self.recency_horizon_days
        if isinstance(horizon, bool) or not isinstance(horizon, (int, float)) or not 0.0 < horizon < math.inf:
            raise ValueError("Modifiers recency_horizon_days must be a finite number > 0, got %r" % (horizon,))

    @property
    def bound(self) -> float:
        """``m``: the largest boost any entry can get."""
        return self.priority_weight + self.recency_weight + self.tag_weight + self.project_weight

    def delta(self, floor: float = DEFAULT_FLOOR) -> float:
        """δ of the module docstring: a relevance lead that no boost undoes."""
        return (1.0 + floor) * self.bound

    def boost(
        self,
        entry: Mapping[str, Any],
        tags: FrozenSet[str],
        project: Optional[str],
        now: datetime.datetime,
    ) -> float:
        """The entry's boost in [0, [`bound`][]]; ``now`` naive UTC (as
        the core's ``ScoringContext.ref``)."""
        get = entry.get
        priority = float(get("base_priority", DEFAULT_PRIORITY))
        priority = 0.0 if not priority > 0.0 else (10.0 if priority > 10.0 else priority)
        total = self.priority_weight * priority / 10.0
        created = parse_created(get("created"))
        if created is not None and self.recency_weight:
            days = (now - created).total_seconds() / 86400.0
            days = days if days > 0.0 else 0.0
            if days < self.recency_horizon_days:
                total += self.recency_weight * (1.0 - days / self.recency_horizon_days)
        own = get("tags")
        if own and tags and self.tag_weight:
            distinct = set(own)
            total += self.tag_weight * len(distinct & tags) / len(distinct)
        entry_project = get("project")
        if entry_project is None:
            total += self.project_weight / 2.0
        elif project is not None and entry_project == project:
            total += self.project_weight
        return total

    def priority_columns(self, priority: Any) -> Any:
        """The priority term of [`boost_columns`][] (``base_priority`` as
        float64, clamped to [0, 10], weighted): the boost's one part that no
        query changes, so an index keeps it."""
        import numpy as np

        # Finite inputs: maximum/minimum clamp as the per-entry comparisons
        # do (a zero's sign may differ, and the additions below make it +0).
        return self.priority_weight * np.minimum(np.maximum(priority, 0.0), 10.0) / 10.0

    def recency_columns(self, created: Any, ref: int) -> Any:
        """The recency term of [`boost_columns`][] from a store's
        ``created`` column (int64 microseconds since a fixed epoch, negative
        when undated) and the reference moment in the same unit: float64,
        0.0 past the horizon or undated, bit-identical to the term computed
        from ``days`` and ``dated``.

        Why: only entries younger than the horizon get a term, and on a
        store of months most are older. One integer comparison finds a
        superset of them (a second's margin past the horizon, far wider
        than any rounding of the float days), and the float operations run
        on those positions only, each the same operation in the same order
        as over the whole column."""
        import numpy as np

        term = np.zeros(len(created), dtype=np.float64)
        if not self.recency_weight:
            return term
        horizon = self.recency_horizon_days
        # Past this many microseconds every entry is at least a second older than the horizon.
        reach = int(horizon * 86_400_000_000.0) + 1_000_000
        near = np.flatnonzero(created > max(ref - reach, -1))  # undated (negative) never near
        if not len(near):
            return term
        # In place, each step the operation of the whole-column form:
        # ((ref - created) / 1e6) / 86400, max(., 0), then w * (1 - age / horizon) below the horizon.
        age = np.subtract(ref, created[near]).astype(np.float64)
        age /= 1e6
        age /= 86400.0
        np.maximum(age, 0.0, out=age)
        young = age < horizon
        age /= horizon
        np.subtract(1.0, age, out=age)
        age *= self.recency_weight
        age[~young] = 0.0
        term[near] = age
        return term

    def project_columns(self, project: Any) -> Any:
        """The project term of [`boost_columns`][] from the int8 project
        codes (0 another, 1 none, 2 the context's): one lookup each. It
        depends on the query's project only, so an index keeps it."""
        import numpy as np

        return np.array([0.0, self.project_weight / 2.0, self.project_weight])[project]

    def boost_columns(
        self,
        priority: Any,
        days: Any,
        dated: Any,
        tags_shared: Any,
        tags_distinct: Any,
        project: Any,
        *,
        priority_term: Any = None,
        recency_term: Any = None,
        project_term: Any = None,
    ) -> Any:
        """[`boost`][] of many entries at once, from numpy columns (what a
        vectorised index keeps), bit-identical to the per-entry one: the
        same float operations in the same order (adding 0.0 where the
        per-entry path adds nothing is exact).

        Args:
            priority: ``base_priority`` as float64.
            days: age in days, ``(now - created) in microseconds / 1e6 / 86400``
                (the per-entry path's ``total_seconds() / 86400``); unread
                when ``recency_term`` is given.
            dated: bool, whether ``created`` parsed; unread when
                ``recency_term`` is given.
            tags_shared: float64, the entry's distinct tags named in the
                context (0 when either has none), or None when the context
                names no tag (no entry shares one).
            tags_distinct: float64, the entry's distinct tags (1 when none).
            project: int8, 2 for the context's project, 1 for no project,
                0 for another; unread when ``project_term`` is given.
            priority_term: [`priority_columns`][] of ``priority``, when
                the caller keeps it (it depends on no query).
            recency_term: [`recency_columns`][], when the caller has the
                ``created`` column (cheaper than ``days`` and ``dated``).
            project_term: [`project_columns`][] of ``project``, when the
                caller keeps it (it depends on the query's project only).
        """
        import numpy as np  # the per-entry path needs no numpy

        total = self.priority_columns(priority) if priority_term is None else priority_term
        if recency_term is not None:
            total = total + recency_term
        elif self.recency_weight:
            age = np.maximum(days, 0.0)
            fresh = dated & (age < self.recency_horizon_days)
            total = total + np.where(fresh, self.recency_weight * (1.0 - age / self.recency_horizon_days), 0.0)
        if self.tag_weight and tags_shared is not None:  # None: the context names no tag (0 for every entry)
            total = total + np.where(tags_shared > 0.0, self.tag_weight * tags_shared / tags_distinct, 0.0)
        return total + (self.project_columns(project) if project_term is None else project_term)


def combine(relevance: float, boost: float, floor: float = DEFAULT_FLOOR) -> float:
    """``(max(0, relevance) + floor) * (1 + boost)``: relevance first."""
    base = relevance if relevance > 0.0 else 0.0
    return (base + floor) * (1.0 + boost)


def combine_columns(relevance: Any, boost: Any, floor: float = DEFAULT_FLOOR) -> Any:
    """[`combine`][] element-wise on numpy arrays, bit-identical."""
    import numpy as np

    return (np.where(relevance > 0.0, relevance, 0.0) + floor) * (1.0 + boost)
