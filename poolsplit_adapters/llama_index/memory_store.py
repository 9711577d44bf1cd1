"""The long-term memory behind the memory blocks: per-session recall,
flushed chat written back through the one write gate, and the pooled block's
text kept structured so truncation never re-reads it.

[`PoolSplitMemoryStore`][] satisfies the store contract
([`MemoryStore`][poolsplit_adapters.stores.MemoryStore]): its verbs are
[`StoreVerbs`][]', over its index, or
over the durable ``store`` it was given (the engine,
``stores.chat_memory.ChatMemoryEntries``); this module translates: chat
messages to lines, the blocks' selection and its event, the pooled text.
"""

from __future__ import annotations

import dataclasses
import datetime
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock

from ..call import AdapterCall, cap, record_selection
from ..memory.turns import USER, Provenance, Said, exchange_id, exchange_proposals
from ..memory.write_gate import Proposal, utc_stamp
from ..poolsplit import Chosen, Selection
from ..recall import VisibleEntries
from ..render import marker, omission_line, omitted_by_pool, selected_line
from ..stores.chat_memory import SESSION_KEY as SESSION_KEY
from ..stores.chat_memory import ChatMemoryEntries, session_text
from .events import announce

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


class PoolSplitMemoryStore(ChatMemoryEntries):
    """Long-term memory shared by the two memory blocks of one ``Memory``.

    Holds the entries in a [`MemoryIndex`][poolsplit_adapters.index.MemoryIndex]
    (``index``), selects for a message, and turns flushed chat messages into
    entries (written to ``store`` when one is given).

    Args:
        entries: curated long-term entries (dicts), shared by every session.
        pools: the pool plan.
        store: optional durable long-term store (any
            [`MemoryStore`][poolsplit_adapters.stores.MemoryStore]). Flushed chat
            and the contract's writes go there (durable when they return),
            and every selection recalls from its ``entries`` as well.
        share_chat: let every session recall every session's flushed chat.
            Default False: a session recalls its own flushed chat plus the
            shared curated entries, so one user's conversation never reaches
            another user's prompt by accident.
        episode_type: ``type`` given to flushed chat messages.
        episode_priority: their ``base_priority`` (default 2, below the
            default 5): a raw transcript line is worth less than a curated
            memory, and a long chat would otherwise flood its pool with
            fresh lines that outrank every older, curated episode.
        flush_filter: which flushed messages are candidates (default: user
            and assistant messages with text). Raw transcripts persisted
            indiscriminately pollute later recall.
        write_gate: the [`WriteGate`][poolsplit_adapters.memory.WriteGate] every
            candidate then passes, as the agent middleware's writes do
            (refuses empty, oversized and duplicate lines; stamps
            ``created``); default ``WriteGate()``. What it refused is
            counted in ``gate_report``. (A callable on a message here
            is the deprecated spelling of ``flush_filter``.)
        consolidator: the host's own model (a LangChain chat model, a
            LlamaIndex ``LLM`` or a
            `Decider`) to
            consolidate flushed lines with what is stored (add, update =
            supersede, retire, noop; every operation validated, see
            [`StoreVerbs.consolidate`][poolsplit_adapters.stores.StoreVerbs.consolidate]
            ); default
            None: off. The result is kept in ``last_consolidation``.
        **settings: the selection settings of
            `AdapterSettings`
            (``token_counter`` defaults to LlamaIndex's tokenizer, which is
            ``Memory``'s default; ``scope=`` is a deprecated alias of
            ``visibility=``; ``pools="auto"`` with ``total_tokens`` /
            ``total_entries`` and ``goal``/``action_type``/``phase``;
            ``progressive=True``, whose summaries the pooled block renders
            with ``layer="summary"`` and [`expand_tool`][] expands;
            ``embeddings=`` a LlamaIndex ``BaseEmbedding``). Flushed messages get the visibility's own
            namespace (its first link), ``source = "session:<id>"`` and
            ``session = <id>``.

    Example:
        ```python
        store = PoolSplitMemoryStore(curated, pools, visibility=Visibility(namespace="team-a"))
        blocks = [CorrectionsMemoryBlock(store=store), PooledMemoryBlock(store=store)]
        memory = Memory.from_defaults(session_id="alice", memory_blocks=blocks)
        ```
    """

    @staticmethod
    def _default_filter(message: Any) -> bool:
        return _default_filter(message)

    # -- recall ---------------------------------------------------------------------

    def select_for(self, message: str, session_id: Optional[str] = None) -> Selection:
        """The selection for ``message`` in ``session_id``.

        The two blocks of one ``Memory.aget`` ask for the same message and
        share one selection: it is kept until the message, the session or
        the content changes (the index's and the store's ``version``), so an
        edit is seen on the very next call, whatever the clock says.
        """
        if session_id:
            session_text(session_id)
        key = (message, session_id, self.index.version, self._long_term_version())
        memo = self._memo
        if memo is not None and memo[0] == key:
            return record_selection(self.settings, memo[1])
        call = AdapterCall(self.settings, message, entry_types=self._entry_types)
        if self.long_term is None and (self.share_chat or self._sessions_in_index() <= {session_id}):
            selection = call.select_in(self.index)  # nothing to hide: the prepared index
        else:
            selection = call.select_in(self._candidate_index(session_id))
        self._memo = (key, selection)
        announce("memory", selection)
        return call.record(selection)

    def expand_tool(self, session_id: Optional[str] = None) -> Any:
        """A LlamaIndex ``FunctionTool`` ``expand_memory(entry_id)`` that loads
        the full text of an entry the pooled block showed as a summary
        (``progressive=True``). It answers only for what ``session_id`` may
        recall: the curated entries and the long-term store's within the
        visibility, and that session's own flushed chat (any session's with
        ``share_chat``).

        Example:
            ```python
            agent = FunctionAgent(tools=[store.expand_tool("alice")], llm=llm)
            ```
        """
        from ..memory.expand_tools import llama_index_expand_tool

        store = self

        class _Entries:
            def __iter__(self) -> Any:
                return iter(store._candidate_index(session_id).entries)

        return llama_index_expand_tool(
            VisibleEntries(_Entries(), self.settings.visibility, lambda e: self._visible(e, session_id))
        )

    # -- write-back -----------------------------------------------------------------

    def flush(self, messages: Sequence[ChatMessage]) -> List[Dict[str, Any]]:
        """Write flushed chat messages to long-term memory through the write
        gate; return the entries written.

        A message `flush_filter` accepts becomes a candidate (type
        ``episode_type``, ``base_priority`` ``episode_priority``, ``content``
        ``"<role>: <text>"``, ``source`` ``"session:<id>"`` (else
        ``"chat"``), the session as ``session``, the visibility's own
        namespace, ``created`` stamped now, or at the settings' ``now``).
        The gate then refuses empty and oversized lines; the rest go to
        ``store`` when given (durable when this returns), else to
        `index`, through the store's duplicate check: a line that
        repeats a stored one of the same session and namespace (exactly, or
        in other words) is kept once, its provenance added to the kept
        entry's ``seen``. Refusals, duplicates included, are counted in
        ``gate_report``. With a `consolidator`, a line its
        ``noop`` folds into a stored entry is kept too, closed (its text in
        the store, the kept entry's ``seen`` naming it) and counted a
        duplicate of that entry; a ``noop`` naming no entry writes the line.

        **A failed write is retried, not lost.** LlamaIndex's ``Memory``
        archives the lines out of its chat queue *before* it hands them to
        the block, so when the write raises (the store is down, the disk is
        full) the lines are in neither place. They are kept here, in order,
        and written first by the next flush (``unflushed`` counts them);
        the error is raised all the same. A line the gate or the checks
        refuse (a session id no store can hold) is not kept: it raises at
        once and would fail again.
        """
        return self._write_pending(self._flush_candidates(messages))

    def _flush_candidates(self, messages: Sequence[ChatMessage]) -> List[Proposal]:
        """The gate's judgement of each line `flush_filter` accepts, stamped now."""
        stamp = utc_stamp(self.settings.now or datetime.datetime.now(datetime.timezone.utc))
        visibility = self.settings.visibility
        namespace = visibility.chain[0] if visibility is not None and visibility.chain else None
        proposals: List[Proposal] = []
        exchange: Optional[str] = None
        for n, message in enumerate(messages):
            if not self.flush_filter(message):
                continue
            session = message.additional_kwargs.get("session_id")
            owner = session_text(session) if session else None
            role, text = message.role.value, message_text(message)
            source = "session:%s" % session if session else "chat"
            if role == USER:  # a user's line opens an exchange; the answers after it join it
                exchange = exchange_id(namespace, owner or "", stamp, str(n), text)
            where = Provenance(source, namespace, stamp, exchange=exchange, owner=owner)
            proposals.extend(exchange_proposals(self.write_gate, [Said(role, text)], self.episode_type, where))
        return proposals

    def remember(self, messages: Sequence[ChatMessage]) -> List[Dict[str, Any]]:
        """Deprecated name of [`flush`][] (``remember`` is the agent's tool)."""
        warnings.warn("PoolSplitMemoryStore.remember is deprecated: use flush", DeprecationWarning, stacklevel=2)
        return self.flush(messages)

    # -- the pooled block's text ----------------------------------------------------

    def render_pooled(self, selection: Selection) -> PooledRender:
        """The pooled (contextual) part of ``selection``, remembered so that
        [`truncate_pooled`][] can cut it entry by entry. Both blocks ask
        for the same selection on one ``get``: it is rendered once."""
        with self._lock:
            last: Optional[Tuple[Selection, PooledRender]] = self._last_render
        if last is not None and last[0] is selection:
            return last[1]
        returned = cap(selection, self.settings.k)
        rendered = PooledRender(
            items=tuple((c, marker(c.entry, c.pool, c.layer)) for c in returned if not c.always),
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

    def truncate_pooled(self, content: str, tokens_to_truncate: int) -> str:
        """``content`` (a text [`render_pooled`][] made) at least
        ``tokens_to_truncate`` tokens shorter where it can be, entries
        dropped from the least relevant end; the result always ends with
        the explicit omission lines (budget, and the context limit)."""
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


def message_text(message: ChatMessage) -> str:
    """The text of a chat message (its text blocks, stripped)."""
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock)).strip()


def _default_filter(message: ChatMessage) -> bool:
    return message.role in (MessageRole.USER, MessageRole.ASSISTANT) and bool(message_text(message))
