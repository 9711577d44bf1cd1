"""The pooled (contextual) block's text of LlamaIndex's memory blocks:
[`PooledRender`][] (a selection's pooled part, rendered with its omission
lines, cut entry by entry from the least relevant end) and the renders
remembered so that LlamaIndex's truncation call is answered from the
structured selection, never by cutting text blindly.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple

from ..call import cap
from ..errors import argument_error
from ..poolsplit import Chosen, Selection, given_token_count
from ..render import RenderedCounter, marker, omission_line, omitted_by_pool, selected_line
from ..settings import AdapterSettings

__all__ = ["PooledRender", "PooledRenders"]

# How many recent renders of the pooled block are remembered, so that
# Memory's truncation call can be answered from the structured selection.
_RENDERS_KEPT = 256


@dataclass(frozen=True)
class PooledRender:
    """The pooled block's text for one selection, with what it is made of.

    Truncation works on ``items`` (never by re-reading the text, where an
    entry's content could imitate an omission line).

    Attributes:
        items: (chosen entry, its marker), in render order.
        budget: pool -> entries left out by a budget or ``k``.
        budget_cause: how the budget line names its cause.
        pools: the pool order, which the omission lines follow.
        cut: pool -> entries the context limit left out (after truncation).

    Example:
        ```python
        rendered = store.render_pooled(store.select_for("deploy", "alice"))
        rendered.without_lowest().text   # one entry fewer, and a line that says so
        ```
    """

    items: Tuple[Tuple[Chosen, str], ...]
    budget: Mapping[str, int]
    budget_cause: str
    pools: Tuple[str, ...]
    cut: Mapping[str, int] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The entries, then what was left out of them: by budget (or
        ``k``), then by the context limit; no line for a cause that left
        nothing out."""
        lines = [text for _, text in self.items]
        lines.append(omission_line(self.budget, self.budget_cause))
        lines.append(omission_line(self.cut, "by the context limit"))
        return "\n".join(line for line in lines if line)

    def ledger(self, place: str) -> str:
        """What the never-truncated corrections block says about this text
        (`render.selected_line`): how many entries
        it holds per pool and what budgets left out, true whether or not
        the text survives.

        ``Memory`` drops a truncatable block whole when even its omission
        lines do not fit (measured: 6 of 40 turns of the LlamaIndex
        notebook); stated in a priority-0 block, the counts survive that.
        """
        return selected_line(self.per_pool(), place, self.budget)

    def without_lowest(self) -> PooledRender:
        """One entry fewer: the lowest-ranked of the pool holding the most
        (the last such pool on a tie), so every pool keeps what it can."""
        sizes = self.per_pool()
        largest = max(sizes.values())
        pool = [p for p in sizes if sizes[p] == largest][-1]
        victim = max(i for i, (chosen, _) in enumerate(self.items) if chosen.pool == pool)
        counts = dict(self.cut)
        counts[pool] = counts.get(pool, 0) + 1
        cut = {name: counts[name] for name in self.pools if name in counts}
        return dataclasses.replace(self, items=self.items[:victim] + self.items[victim + 1 :], cut=cut)

    def per_pool(self) -> Dict[str, int]:
        """pool -> how many entries this text holds, in pool order."""
        sizes: Dict[str, int] = {}
        for chosen, _ in self.items:
            sizes[chosen.pool] = sizes.get(chosen.pool, 0) + 1
        return sizes


class PooledRenders:
    """The pooled block's renders of [`ChatMemoryEntries`][poolsplit_adapters.stores.chat_memory.ChatMemoryEntries]
    (see the module docstring)."""

    settings: AdapterSettings
    token_counter: Callable[[str], int]
    _lock: threading.Lock
    _renders: collections.OrderedDict[str, Any]
    _last_render: Optional[Tuple[Selection, Any]]

    def render_pooled(self, selection: Selection) -> PooledRender:
        """The pooled (contextual) part of ``selection``, remembered so that
        [`truncate_pooled`][] can cut it entry by entry. Both blocks ask
        for the same selection on one ``get``: it is rendered once."""
        with self._lock:
            last: Optional[Tuple[Selection, PooledRender]] = self._last_render
        if last is not None and last[0] is selection:
            return last[1]
        returned = cap(selection, self.settings.k)
        marks = {id(c): marker(c.entry, c.pool, c.layer) for c in returned if not c.always}  # rendered once
        returned = self._within_budgets(selection, returned, marks)
        rendered = PooledRender(
            items=tuple((c, marks[id(c)]) for c in returned if not c.always),
            budget=omitted_by_pool(selection, returned),
            budget_cause="by budget" if self.settings.k is None else "by budget or k",
            pools=tuple(selection.stats),
        )
        text = rendered.text
        with self._lock:
            self._renders[text] = rendered
            self._renders.move_to_end(text)
            while len(self._renders) > _RENDERS_KEPT:
                self._renders.popitem(last=False)
            self._last_render = (selection, rendered)
        return rendered

    def _within_budgets(self, selection: Selection, returned: List[Chosen], marks: Dict[int, str]) -> List[Chosen]:
        """``returned`` less, per pool, its lowest-ranked entries while the
        markers the model reads cost more than the pool's ``max_tokens``
        (those left out are said by the budget line). Why: each counted
        entry is charged a typical marker's tokens (`RenderedCounter`), and
        a real marker can cost more: flushed chat's ``source`` is
        ``"session:<id>"``, and ``Memory``'s default session id, a UUID,
        put 500 tokens of markers in a 400-token plan. A ``token_count``
        a host gives is taken as given (the core's rule)."""
        counter = self.token_counter
        text = counter.inner if isinstance(counter, RenderedCounter) else counter
        left_out: Set[int] = set()
        for name, stats in selection.stats.items():
            mine = [c for c in returned if c.pool == name and not c.always]
            costs = [c.cost if given_token_count(c.entry) is not None else text(marks[id(c)]) for c in mine]
            while mine and sum(costs) > stats.max_tokens:
                left_out.add(id(mine.pop()))
                costs.pop()
        return [c for c in returned if id(c) not in left_out]

    def truncate_pooled(self, content: str, tokens_to_truncate: int) -> str:
        """``content`` (a text [`render_pooled`][] made) at least
        ``tokens_to_truncate`` tokens shorter where it can be, entries
        dropped from the least relevant end; the result always ends with
        the explicit omission lines (budget, and the context limit).

        Raises:
            ArgumentError: ``content`` not a string, ``tokens_to_truncate``
                not an int (they failed inside with "unhashable type" and
                "'<' not supported").
        """
        if not isinstance(content, str):
            raise argument_error("content", "a string (the pooled block's text)", content)
        if isinstance(tokens_to_truncate, bool) or not isinstance(tokens_to_truncate, int):
            raise argument_error("tokens_to_truncate", "an int", tokens_to_truncate)
        with self._lock:
            rendered: Optional[PooledRender] = self._renders.get(content)
        if rendered is None:
            # Not a text this store made (or one long gone): nothing to
            # cut entry by entry, but never silently.
            return "[long-term memory left out by the context limit]"
        size = self.token_counter(content)
        while rendered.items and size - self.token_counter(rendered.text) < tokens_to_truncate:
            rendered = rendered.without_lowest()
        return rendered.text
