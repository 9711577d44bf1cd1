"""The long-term memory behind the memory blocks: per-session recall,
flushed chat written back through the one write gate, and the pooled block's
text kept structured so truncation never re-reads it.

[`PoolSplitMemoryStore`][] satisfies the store contract
([`MemoryStore`][poolsplit_adapters.stores.MemoryStore]): its verbs are
[`StoreVerbs`][]', over its index, or
over the durable ``store`` it was given (the engine,
``stores.chat_memory.ChatMemoryEntries``, which also keeps the pooled
block's text, [`PooledRender`][]); this module translates: chat messages to
lines, the selection's event, the expand tool.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from llama_index.core.base.llms.types import ChatMessage

from ..memory.write_gate import Proposal
from ..poolsplit import Selection
from ..stores.chat_flush import UnflushedWarning as UnflushedWarning
from ..stores.chat_memory import SESSION_KEY as SESSION_KEY
from ..stores.chat_memory import ChatMemoryEntries
from ..stores.chat_memory import PooledRender as PooledRender
from ..stores.vectorstores.llama_index_messages import chat_messages, default_flush_filter
from ..stores.vectorstores.llama_index_messages import message_text as message_text
from .events import announce


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
            counted in ``gate_report``.
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
            ``Memory``'s default; ``pools="auto"`` with ``total_tokens`` /
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
        return default_flush_filter(message)

    # -- recall ---------------------------------------------------------------------

    def select_for(self, message: str, session_id: Optional[str] = None) -> Selection:
        """The selection for ``message`` in ``session_id``.

        The two blocks of one ``Memory.aget`` ask for the same message and
        share one selection: it is kept until the message, the session or
        the content changes (the index's and the store's ``version``), so an
        edit is seen on the very next call, whatever the clock says.
        """
        selection, call = self._selected(message, session_id)
        if call is None:  # the kept selection, recorded again
            return selection
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

        return llama_index_expand_tool(self._readable(session_id))

    # -- write-back -----------------------------------------------------------------

    def flush(self, messages: Sequence[ChatMessage], *, keep_failed: bool = False) -> List[Dict[str, Any]]:
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
        the error is raised all the same. A line whose session id no store
        can hold is not kept (it would fail again): the batch's other lines
        are written, then an ``ArgumentError`` names the message refused (so
        for a message ``flush_filter`` raises on).
        With ``keep_failed`` (the pooled block's, in a ``Memory`` turn) a failed
        write is an `UnflushedWarning` and ``notes["unflushed"]``: the turn answers.
        """
        refused: List[str] = []
        write = self._write_or_keep if keep_failed else self._write_pending
        return write(self._flush_candidates(chat_messages(messages), refused), refused)

    def _flush_candidates(self, messages: Sequence[ChatMessage], refused: List[str]) -> List[Proposal]:
        """The gate's judgement of each line `flush_filter` accepts, stamped now."""
        lines = [
            (n, m.role.value, message_text(m), m.additional_kwargs.get("session_id"))
            for n, m in self._filtered(messages, refused)
        ]
        return self._line_proposals(lines, refused)
