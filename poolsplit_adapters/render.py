"""Turn a selection into text a model can cite, and a report a person can read.

Seed 004 (memorypipe) names what every memory injection needs whatever the
host's policy: **provenance** (an entry without a source reads like the
model's own guess), **per-entry markers** carrying id, source and time so the
model can cite what it used, and **explicit truncation** (silent cutting
makes the model believe "that is all there is"). `render_context` does
all three; `explain` is the why-not table for people.

Marker syntax cannot be forged from data: ``&``, ``<`` and ``>`` in content
are escaped, attribute values are escaped including quotes and line breaks,
and pool names written into an omission line are escaped the same way (plus
the line's own brackets), so no content and no pool name can close a marker,
open one that parses as another entry, or end the omission line early.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .memory.progressive import shown_summary
from .notes import OUTSIDE_NOTE
from .poolsplit import BUDGET_REASONS, Chosen, Reason, Selection

# At least one attribute: LlamaIndex's Memory wraps all blocks in a bare
# <memory>...</memory>, which is not an entry marker.
_MARKER = re.compile(r'<memory((?:\s+[a-z]+="[^"]*")+)>\n(.*?)\n</memory>', re.S)
_ATTR = re.compile(r'([a-z]+)="([^"]*)"')


def _attr(value: Any) -> str:
    text = "" if value is None else str(value)
    return html.escape(text, quote=True).replace("\n", "&#10;").replace("\r", "&#13;")


def _body(text: str) -> str:
    return html.escape(text, quote=False)


def goal_line(goal: str) -> str:
    """The goal block of an agent's memory message: ``Current goal: ...``,
    escaped like every rendered string, so a goal that carries a marker
    cannot forge an always-scope entry that `parse_markers` would
    read as real."""
    return "Current goal: " + _body(goal)


def _inline(text: str) -> str:
    # A pool name inside ``[... left out ...: <name> 3]``: an attribute's
    # escaping, plus the brackets that delimit the line.
    return _attr(text).replace("[", "&#91;").replace("]", "&#93;")


@dataclass(frozen=True)
class RenderedContext:
    """Injectable text plus what the host needs to act on it.

    Attributes:
        text: the markers, always-scope first, then the omission line.
        included_ids: ids of the rendered entries, in order.
        omitted_by_pool: pool name -> how many entries its budget cut.
        omitted_ids: (a property) ids of the entries a budget cut (token
            budget or entry cap), so a host can offer to fetch them; read
            from the selection's rows when asked, so rendering itself
            builds no row per entry.

    Example:
        ```python
        rendered = render_context(select(entries, pools))
        prompt = "Memory:\n" + rendered.text
        ```
    """

    text: str
    included_ids: List[Optional[str]]
    omitted_by_pool: Dict[str, int]
    selection: Optional[Selection] = field(default=None, repr=False, compare=False)

    @property
    def omitted_ids(self) -> List[Optional[str]]:
        if self.selection is None:
            return []
        return [d.entry.get("id") for d in self.selection.dropped if d.reason in BUDGET_REASONS]

    def __str__(self) -> str:
        return self.text


def marker(entry: Mapping[str, Any], pool: Optional[str] = None, layer: str = "full") -> str:
    """One entry as ``<memory id=".." source=".." at=".." pool="..">text</memory>``.

    An attribute whose value is empty (missing, None or ``""``) is left out:
    ``source="" at=""`` tells the model nothing and costs tokens on every
    entry, and an absent ``source`` says "unsourced" just as plainly. A
    marker left with no attribute at all keeps ``id=""``, so that it stays
    an entry marker (`parse_markers` reads it) and never looks like the
    bare ``<memory>`` that LlamaIndex's ``Memory`` wraps its blocks in.

    ``layer`` other than ``"full"`` (progressive loading) renders the
    entry's ``summary`` as the text and says so in a ``layer`` attribute: a
    summary reads like the whole memory unless the model is told there is
    more, and can ask for it by id.

    Raises:
        ValueError: a lighter layer asked for an entry without a summary.
    """
    attrs = [("id", entry.get("id")), ("source", entry.get("source")), ("at", entry.get("created"))]
    if pool is not None:
        attrs.append(("pool", pool))
    if entry.get("scope") == "always":
        attrs.append(("scope", "always"))
    text = entry.get("content", "")
    layer = str(layer)
    if layer != "full":
        summary = shown_summary(entry)
        if summary is None:
            raise ValueError("entry %r has no summary to render at layer %r" % (entry.get("id"), layer))
        attrs.append(("layer", layer))
        text = summary
    shown = [(key, _attr(value)) for key, value in attrs if value is not None and str(value) != ""]
    head = " ".join('%s="%s"' % pair for pair in shown or [("id", "")])
    return "<memory %s>\n%s\n</memory>" % (head, _body(str(text)))


#: What a typical marker carries, for `marker_tokens`: an id of the form the
#: write path derives (``<type>-<24 hex>``), a thread's source and a time.
MARKER_SAMPLE: Mapping[str, str] = {
    "id": "instruction-6f5a4803c4a14cc60ebd3f30",
    "source": "thread:t1",
    "created": "2026-01-01T09:00:00Z",
    "summary": "x",
    "content": "x",
}


def marker_tokens(counter: Callable[[str], int], pool: Optional[str] = None, layer: str = "full") -> int:
    """The tokens a marker adds to its entry's text (``counter``'s count of
    a `MARKER_SAMPLE` marker less its one-letter text): what the adapters
    that render markers into a prompt count beside each entry's text
    (`RenderedCounter`), so that the block a model gets keeps to the
    budget. A host's longer ids or sources cost a few tokens more."""
    return max(0, counter(marker(MARKER_SAMPLE, pool, layer)) - counter("x"))


class RenderedCounter:
    """A token counter that counts an entry's text and its marker: ``inner``'s
    count plus `marker_tokens` for a marker in ``pool`` at ``layer``.

    The core fills each pool by the entries' costs, and a cost is the
    entry's text (seed 001). Where the selection is rendered into a prompt
    (the agent middleware, the LlamaIndex memory blocks) each entry also
    costs its marker, some 50-60 tokens, often more than a short
    instruction's text: counted apart, a 1,024-token budget injected twice
    that. A ``token_count`` a host gives is taken as given (the core's
    rule). The marker is counted on the first count, not when the counter
    is made: building an adapter loads no tokenizer. ``overhead``, when
    given, is that count already made (a store passes on the one its caller
    counted: ``marker_cost``).

    Example:
        ```python
        counter = RenderedCounter(default_counter(), "notes")
        counter("Quote amounts in integer cents.")  # the text's tokens + a marker's
        ```
    """

    def __init__(
        self,
        inner: Callable[[str], int],
        pool: Optional[str] = None,
        layer: str = "full",
        overhead: Optional[int] = None,
    ) -> None:
        self.inner = inner
        self.pool = pool
        self.layer = layer
        self._overhead: Optional[int] = overhead

    @property
    def overhead(self) -> int:
        """The tokens each count adds: `marker_tokens` (counted once)."""
        if self._overhead is None:
            self._overhead = marker_tokens(self.inner, self.pool, self.layer)
        return self._overhead

    def __call__(self, text: str) -> int:
        return self.inner(text) + self.overhead

    def count_many(self, texts: Iterable[str]) -> List[int]:
        """One count per text, through ``inner``'s ``count_many`` when it has one."""
        texts = list(texts)
        if not texts:
            return []  # an empty memory's index counts nothing: no tokenizer loads
        many = getattr(self.inner, "count_many", None)
        counts = many(texts) if many is not None else map(self.inner, texts)
        overhead = self.overhead
        return [count + overhead for count in counts]

    def __repr__(self) -> str:
        return "RenderedCounter(%r, pool=%r, layer=%r)" % (self.inner, self.pool, self.layer)


def omitted_by_pool(
    selection: Selection,
    returned: Optional[Sequence[Chosen]] = None,
    reasons: Collection[Reason] = BUDGET_REASONS,
) -> Dict[str, int]:
    """Per pool, in pool order, how many entries ``reasons`` (default: a
    budget) left out of ``selection``, plus (when ``returned`` is given) the
    chosen entries that were not returned (cut by an adapter's ``k``): the
    counts an explicit omission line must state."""
    counts: Dict[str, int] = {}
    for (pool, reason), (count, _) in selection.counts.items():  # no row per entry
        if reason in reasons and pool is not None:
            counts[pool] = counts.get(pool, 0) + count
    if returned is not None:
        kept = {id(c) for c in returned}
        for c in selection.chosen:
            if id(c) not in kept:
                counts[c.pool] = counts.get(c.pool, 0) + 1
    return {name: counts[name] for name in selection.stats if name in counts}


def _tally(counts: Mapping[str, int]) -> Tuple[int, str, str]:
    # (total, noun, "pool n, pool n"), pool names escaped: a pool name is
    # data, and a raw one could end the line and forge a marker after it.
    total = sum(counts.values())
    detail = ", ".join("%s %d" % (_inline(name), count) for name, count in counts.items())
    return total, "entry" if total == 1 else "entries", detail


def omission_line(omitted: Mapping[str, int], cause: str = "") -> str:
    """``[7 more entries left out by budget: content 4, skills 3]`` for
    ``omitted`` = pool -> count (empty string when nothing was left out)."""
    total, noun, detail = _tally(omitted)
    if not total:
        return ""
    return "[%d more %s left out%s: %s]" % (total, noun, " " + cause if cause else "", detail)


def selected_line(selected: Mapping[str, int], place: str, budget: Optional[Mapping[str, int]] = None) -> str:
    """``[below, long_term_memory: 6 entries selected for this message
    (content 4, skills 2), as many as the context limit allows; budgets
    left out 36 more (content 36); if it is missing, the context limit left
    it out]``: what a block that is never cut says about a truncatable
    block (``place``) rendered after it.

    A host such as LlamaIndex's ``Memory`` may cut that block, or drop it
    whole with its own omission lines when even they do not fit; this
    line, written before anyone knows, holds true in every case, and
    ``budget`` (pool -> entries budgets left out) is stated in it so that
    count survives the drop too. Empty when there is nothing to announce.
    """
    total, noun, detail = _tally(selected)
    cut, _, cut_detail = _tally(budget or {})
    if not total and not cut:
        return ""
    if total:
        held = "%d %s selected for this message (%s), as many as the context limit allows" % (total, noun, detail)
    else:
        held = "no entry selected for this message"
    left = "; budgets left out %d%s (%s)" % (cut, " more" if total else "", cut_detail) if cut else ""
    return "[below, %s: %s%s; if it is missing, the context limit left it out]" % (_inline(place), held, left)


#: The hint after the markers when some entries loaded as summaries.
EXPAND_HINT = (
    '[1 entry shown as a summary (layer="summary" or "timeline"); its full text is available by id]',
    '[%d entries shown as summaries (layer="summary" or "timeline"); their full text is available by id]',
)


def expand_hint(short: int) -> str:
    """The hint after the markers when ``short`` entries loaded as
    summaries (progressive loading)."""
    return EXPAND_HINT[0] if short == 1 else EXPAND_HINT[1] % short


def recall_line(selection: Selection) -> str:
    """``[recall stopped at 1000 candidates while budget was left: facts]``
    when a vector store's per-pool recall stopped (at ``max_fetch_k``, or
    after rounds that loaded nothing more) with room left in those pools
    (``notes["recall"]["capped"]``): more matching
    entries may exist than were considered, and the model must not read
    the context as all there is. Empty otherwise (a pool the store ran out
    for loaded all there is)."""
    recall = selection.notes.get("recall")
    capped = list(recall.get("capped") or ()) if isinstance(recall, Mapping) else []
    if not capped:
        return ""
    reached = recall.get("fetch_k") or {}  # type: ignore[union-attr]
    most = max((int(reached.get(name, 0)) for name in capped), default=0)
    names = ", ".join(_inline(str(name)) for name in capped)
    return "[recall stopped at %d candidates per search while budget was left: %s]" % (most, names)


def recall_summary(selection: Selection) -> str:
    """The ``recall:`` line of `explain`: which pools' budgets have
    room because the store ran out, and which because recall was capped."""
    recall = selection.notes.get("recall")
    if not isinstance(recall, Mapping):
        return ""
    parts = []
    if recall.get("store_ran_out"):
        parts.append("the store ran out for %s" % ", ".join(map(str, recall["store_ran_out"])))
    if recall.get("capped"):
        parts.append("stopped before the store ran out for %s" % ", ".join(map(str, recall["capped"])))
    rounds = int(recall.get("rounds", 1))
    return "recall: %s (%d round%s)" % ("; ".join(parts), rounds, "" if rounds == 1 else "s") if parts else ""


def render_context(selection: Selection, *, with_omissions: bool = True, with_hint: bool = True) -> RenderedContext:
    """Render ``selection`` as cite-able markers, always-scope entries first,
    then one explicit line per cause saying how many entries were left out
    and from which pools ("[7 more entries left out by budget: skills 3,
    content 4]", "[2 more entries left out below the relevance threshold:
    notes 2]"; and `recall_line` when a store's recall was capped with
    budget left), then, when some entries loaded as summaries (progressive
    loading), a line saying their full text is available by id."""
    blocks = [marker(c.entry, c.pool, c.layer) for c in selection.chosen]
    by_pool = omitted_by_pool(selection)
    if with_omissions:
        below = omitted_by_pool(selection, reasons=(Reason.BELOW_RELEVANCE,))
        lines = (omission_line(by_pool, "by budget"), omission_line(below, "below the relevance threshold"))
        for line in (*lines, recall_line(selection)):
            if line:
                blocks.append(line)
    short = sum(1 for c in selection.chosen if str(c.layer) != "full")
    if short and with_hint:
        blocks.append(expand_hint(short))
    return RenderedContext(
        text="\n".join(blocks),
        included_ids=[c.entry.get("id") for c in selection.chosen],
        omitted_by_pool=by_pool,
        selection=selection,
    )


def parse_markers(text: str) -> List[Dict[str, str]]:
    """Read rendered markers back (attributes and unescaped content).

    The inverse of `marker`, used to check that what a model sees maps
    to exactly the entries that were selected.
    """
    found = []
    for match in _MARKER.finditer(text):
        attrs = {k: html.unescape(v) for k, v in _ATTR.findall(match.group(1))}
        attrs["content"] = html.unescape(match.group(2))
        found.append(attrs)
    return found


def _fmt(value: Optional[float]) -> str:
    return "-" if value is None else "%.3g" % value


def always_outside_namespace(selection: Selection) -> int:
    """How many always-scope entries the query's namespace kept out (reason
    ``namespace``): corrections that would have loaded first on every call
    had they been stored under this namespace.

    Namespace is exact, so a correction written as ``namespace="ana"`` never
    loads for an agent whose memory is ``("memories", "ana")`` (its entries
    carry ``"memories.ana"``, see
    [`namespace_label`][poolsplit_adapters.stores.langgraph.store.namespace_label]). Only a count
    says so at a glance; `explain` and the agent middleware's selection
    event both show it. It counts every tenant's corrections the store
    showed the selector (a shared store: the other users' too), never their
    content.

    Example:
        >>> from poolsplit_adapters import Pool, Visibility, select
        >>> fix = {"id": "cents", "content": "Use cents.", "scope": "always", "namespace": "ana"}
        >>> always_outside_namespace(select([fix], [Pool("p", 100, 3)], visibility=Visibility("memories.ana")))
        1
    """
    given = selection.notes.get(OUTSIDE_NOTE)
    if isinstance(given, int) and not isinstance(given, bool):
        return given  # counted by the selector, without rows
    if not selection.counts.get((None, Reason.NAMESPACE)):
        return 0  # the namespace kept nothing out: no row is built (the usual case)
    # Rows only when the namespace did keep entries out (a store shared by
    # tenants): the report's counts do not split them by scope yet.
    return sum(1 for d in selection.dropped if d.reason is Reason.NAMESPACE and d.entry.get("scope") == "always")


def outside_namespace_line(count: int) -> str:
    """The line `explain` shows when `always_outside_namespace`
    is not 0 ('' when it is)."""
    if not count:
        return ""
    return "%d always-scope %s outside this namespace (not loaded: reason namespace; namespace is exact)" % (
        count,
        "entry" if count == 1 else "entries",
    )


def explain(selection: Selection, *, limit: Optional[int] = 20) -> str:
    """A readable why/why-not table: per pool, what loaded (score, cost) and
    budget use; the always-scope entries kept out by namespace, counted
    (`always_outside_namespace`); then what did not load and why,
    grouped by reason (at most ``limit`` rows per reason; None for all).

    Columns are as wide as their longest value (at least as wide as a short
    id such as ``fix-001`` needs), so a UUID id or a long pool name never
    pushes the rest of its row out of line."""
    # Per reason: its count from the counts, its first rows from the sample
    # (the first ``limit`` of a reason are among the first ``limit`` of each
    # of its pools), in the order the reasons first occur in the input.
    grouped: Dict[Reason, List[Any]] = {}
    for d in selection.dropped if limit is None else selection.dropped_sample(max(limit, 1)):
        grouped.setdefault(d.reason, []).append(d)
    shown = {reason: items if limit is None else items[:limit] for reason, items in grouped.items()}
    rows = [*selection.chosen, *(d for items in shown.values() for d in items)]

    def ident(row: Any) -> str:
        return str(row.entry.get("id") or "#%d" % row.index)

    def kind(row: Any) -> str:
        return str(row.entry.get("type", "note"))

    id_w = max([14, *(len(ident(r)) for r in rows)])
    type_w = max([11, *(len(kind(r)) for r in rows)])
    pool_w = max([12, *(len(str(name)) for name in selection.stats), *(len(str(c.pool)) for c in selection.chosen)])
    left_out = [d for items in shown.values() for d in items]
    dropped_pool_w = max([11, *(len(str(d.pool or "-")) for d in left_out)])
    lines: List[str] = []
    header = "%-*s %-*s %-*s %8s %6s" % (pool_w, "pool", id_w, "id", type_w, "type", "score", "tokens")
    lines.append(header)
    lines.append("-" * len(header))
    for c in selection.chosen:
        score = "always" if c.always else _fmt(c.score)
        lines.append("%-*s %-*s %-*s %8s %6d" % (pool_w, c.pool, id_w, ident(c), type_w, kind(c), score, c.cost))
    lines.append("")
    for name, stat in selection.stats.items():
        lines.append(
            "%-*s contextual %d/%s entries, %d/%s tokens; always-scope %d (%d tokens)"
            % (
                pool_w,
                name,
                stat.entries_used,
                _cap(stat.max_entries),
                stat.tokens_used,
                _cap(stat.max_tokens),
                stat.always_count,
                stat.always_tokens,
            )
        )
        if not stat.loads_contextual:
            # Recall from a store reads only the always-scope entries of such a pool: one of its
            # types stored without scope "always" is in no row, so the plan says it here.
            lines.append('%-*s budget 0: only scope="always" entries load' % (pool_w, name))
    # Seed 003's token metrics, for every selection (not only progressive
    # ones): tokens per layer and the savings against all in full.
    from .memory.metrics import token_metrics

    lines.append(str(token_metrics(selection.chosen)))
    for key in ("task_type", "scorer_fallback"):
        if selection.notes.get(key):
            lines.append("%s: %s" % (key.replace("_", " "), selection.notes[key]))
    if recall_summary(selection):
        lines.append(recall_summary(selection))
    outside = outside_namespace_line(always_outside_namespace(selection))
    if outside:
        lines.append(outside)
    total: Dict[Reason, int] = {}
    for (_, reason), (count, _) in selection.counts.items():
        total[reason] = total.get(reason, 0) + count
    if shown:
        lines.append("")
        lines.append("not loaded:")
    for reason, items in shown.items():
        lines.append("  %s (%d)" % (reason, total[reason]))
        for d in items:
            lines.append(
                "    %-*s %-*s pool=%-*s score=%-7s cost=%s"
                % (
                    id_w,
                    ident(d),
                    type_w,
                    kind(d),
                    dropped_pool_w,
                    d.pool or "-",
                    _fmt(d.score),
                    "-" if d.cost is None else d.cost,
                )
            )
        if limit is not None and total[reason] > limit:
            lines.append("    ... %d more" % (total[reason] - limit))
    return "\n".join(lines)


def explain_last(selection: Optional[Selection]) -> str:
    """`explain` of an adapter's ``last_selection``, or ``"no call yet"``
    before its first call (what every adapter's ``explain()`` says)."""
    return "no call yet" if selection is None else explain(selection)


def _cap(value: float) -> str:
    return "%g" % value


#: How many left-out entries the JSON form lists per pool and reason unless
#: asked for all: bounded by the pools and reasons, never by the store's size.
DROPPED_SAMPLE = 5


def dropped_rows(selection: Selection, per_key: Optional[int] = DROPPED_SAMPLE) -> List[Dict[str, Any]]:
    """The left-out entries in the JSON form's shape (id, type, index,
    reason, pool, score, tokens), in input order: the first ``per_key`` of
    each pool and reason (``selection.dropped_sample``, only those rows
    built), or every one for ``per_key=None``."""
    rows = selection.dropped if per_key is None else selection.dropped_sample(per_key)
    return [
        {
            "id": d.entry.get("id"),
            "type": d.entry.get("type", "note"),
            "index": d.index,
            "reason": d.reason.value,
            "pool": d.pool,
            "score": d.score,
            "tokens": d.cost,
        }
        for d in rows
    ]


def dropped_counts(selection: Selection) -> List[Dict[str, Any]]:
    """``selection.counts`` as JSON rows (pool, reason, entries, tokens), by
    reason in [`Reason`][] order, then pool
    order (no pool first): the same order on every path."""
    reasons, pools = list(Reason), list(selection.stats)

    def order(key: Tuple[Optional[str], Reason]) -> Tuple[int, int]:
        pool, reason = key
        return reasons.index(reason), -1 if pool is None or pool not in pools else pools.index(pool)

    return [
        {"pool": pool, "reason": reason.value, "entries": count, "tokens": tokens}
        for (pool, reason), (count, tokens) in sorted(selection.counts.items(), key=lambda item: order(item[0]))
    ]


def selection_dict(selection: Selection, *, dropped: Optional[int] = DROPPED_SAMPLE) -> Dict[str, Any]:
    """The one JSON form of a selection (the CLI's ``--json`` and both
    frameworks' selection events): chosen entries by id, type, index, pool,
    score and tokens; what did not load as counts per pool and reason
    (``dropped_counts``, ``dropped_total``) and as rows (``dropped``: the
    first ``dropped`` of each pool and reason, `DROPPED_SAMPLE` by
    default, or all for ``dropped=None``; ``dropped_complete`` says whether
    the rows list every one); each pool's stats, and the notes.

    Its size follows what loaded, not the store: a report of a million
    entries that did not load lists a few rows and the counts of all.

    Example:
        ```python
        data = selection_dict(selection)
        data["dropped_total"], len(data["dropped"])        # e.g. (99980, 12)
        every = selection_dict(selection, dropped=None)["dropped"]
        ```
    """
    counts = dropped_counts(selection)
    rows = dropped_rows(selection, dropped)
    total = sum(row["entries"] for row in counts)
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
            for c in selection.chosen
        ],
        "dropped": rows,
        "dropped_counts": counts,
        "dropped_total": total,
        "dropped_complete": len(rows) == total,
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
            for name, s in selection.stats.items()
        },
        # A selector's own count of always_outside_namespace is how it was
        # counted, not a note: every path gives the same JSON.
        "notes": {key: value for key, value in selection.notes.items() if key != OUTSIDE_NOTE},
    }
