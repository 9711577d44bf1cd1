"""Memory blocks for ``llama_index.core.memory.Memory``: corrections on every
turn, the pooled rest truncatable entry by entry, flushed chat written back."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Callable, Optional

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import BaseMemoryBlock
from pydantic import ConfigDict, Field

from ..checks import ArgumentError, BlockList, check_given, check_positive_int
from ..poolsplit import Pool, Selection
from ..render import marker
from ..stores.vectorstores.llama_index_messages import chat_messages, last_user_text
from ..tokens import counter_from
from .memory_store import PoolSplitMemoryStore

_BUILT = "poolsplit_memory_blocks(entries, pools, store=...) builds the blocks on one"


class StoreMemoryBlock(BaseMemoryBlock[str]):
    """A memory block that renders part of one [`PoolSplitMemoryStore`][]
    selection (the base of the two blocks below).

    Example:
        ```python
        class Everything(StoreMemoryBlock):
            name: str = "everything"
            async def _aget(self, messages=None, **kw):
                return "\\n".join(marker(c.entry, c.pool) for c in self.selection(messages, kw).chosen)
            async def _aput(self, messages):
                return None
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: PoolSplitMemoryStore = Field(exclude=True, description="The long-term memory both blocks share.")

    def __init__(self, **data: Any) -> None:
        check_given(data.get("store"), PoolSplitMemoryStore, "store", _BUILT)  # before pydantic's 4-line error
        super().__init__(**data)

    def selection(self, messages: Optional[list[ChatMessage]], block_kwargs: Mapping[str, Any]) -> Selection:
        """The store's selection for the last user message of this call;
        ``session_id`` arrives per call and is used, never stored on the
        block (one block serves every session)."""
        return self.store.select_for(last_user_text(messages), block_kwargs.get("session_id"))

    async def aput(
        self, messages: list[ChatMessage], from_short_term_memory: bool = False, session_id: Optional[str] = None
    ) -> None:
        """``BaseMemoryBlock.aput`` with ``messages`` checked first; it stamps copies with the session, never the caller's."""
        await super().aput(
            [m.model_copy(update={"additional_kwargs": {**m.additional_kwargs}}) for m in chat_messages(messages)],
            from_short_term_memory,
            session_id,
        )


class CorrectionsMemoryBlock(StoreMemoryBlock):
    """The always-scope entries, rendered as cite-able markers.

    Priority 0: ``Memory`` never truncates a priority-0 block, so the
    corrections survive every flood. List it first in ``memory_blocks`` so
    they come first in the context. With a [`PooledMemoryBlock`][] on
    the same store it ends with one line about that block, which follows
    it: how many entries it holds per pool and what budgets left out, and
    that if it is missing the context limit left it out. ``Memory`` may
    drop the pooled block whole, and the model must still read that they
    exist (`render.selected_line`).

    Example:
        ```python
        store = PoolSplitMemoryStore(entries, pools)
        memory = Memory.from_defaults(memory_blocks=[CorrectionsMemoryBlock(store=store), PooledMemoryBlock(store=store)])
        ```
    """

    name: str = "corrections"
    description: Optional[str] = "Behavioural corrections that always apply."
    priority: int = 0
    accept_short_term_memory: bool = False

    async def _aget(self, messages: Optional[list[ChatMessage]] = None, **block_kwargs: Any) -> str:
        selection = self.selection(messages, block_kwargs)
        lines = [marker(c.entry, c.pool) for c in selection.chosen if c.always]
        if self.store.pooled_block is not None:
            lines.append(self.store.render_pooled(selection).ledger(self.store.pooled_block))
        return "\n".join(line for line in lines if line)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        return None  # corrections are curated, never written from chat


class PooledMemoryBlock(StoreMemoryBlock):
    """The pooled long-term memory for the last user message.

    Truncatable (priority >= 1): when ``Memory`` needs room it calls
    `atruncate`, which drops entries from the least relevant end (the
    lowest-ranked entry of the pool that holds the most) instead of the whole
    block, and always leaves an explicit line saying how many entries the
    context limit left out, per pool. What budgets left out is stated after
    the entries too. Flushed chat messages become long-term entries through
    ``_aput``.

    Example:
        ```python
        corrections, pooled = poolsplit_memory_blocks(entries, pools)
        memory = Memory.from_defaults(session_id="alice", token_limit=1500, memory_blocks=[corrections, pooled])
        ```
    """

    name: str = "long_term_memory"
    description: Optional[str] = "Long-term memory selected for this message."
    priority: int = 1
    accept_short_term_memory: bool = True

    def model_post_init(self, __context: Any) -> None:
        self.store.pooled_block = self.name

    async def _aget(self, messages: Optional[list[ChatMessage]] = None, **block_kwargs: Any) -> str:
        return self.store.render_pooled(self.selection(messages, block_kwargs)).text

    async def _aput(self, messages: list[ChatMessage]) -> None:
        self.store.flush(messages, keep_failed=True)  # a failed write warns; the turn answers

    async def atruncate(self, content: str, tokens_to_truncate: int) -> Optional[str]:
        if not content:
            return None
        return self.store.truncate_pooled(content, tokens_to_truncate)


def poolsplit_memory_blocks(
    entries: Iterable[Mapping[str, Any]],
    pools: Sequence[Pool],
    *,
    tokenizer_fn: Optional[Callable[[str], list[Any]]] = None,
    priority: int = 1,
    **store_options: Any,
) -> list[BaseMemoryBlock[str]]:
    """The two blocks to give ``Memory.from_defaults(memory_blocks=...)``:
    a priority-0 [`CorrectionsMemoryBlock`][] (first) and a truncatable
    [`PooledMemoryBlock`][] sharing one [`PoolSplitMemoryStore`][].

    Pass the same ``tokenizer_fn`` you give ``Memory`` (default: LlamaIndex's
    tokenizer, which is also ``Memory``'s default) so budgets and ``Memory``
    count alike. ``store_options`` go to [`PoolSplitMemoryStore`][]
    (``store=``, ``share_chat=``, the selection settings, ...).

    Why two blocks: in llama-index-core 0.14 ``Memory`` never truncates
    priority 0 and truncates priority 1 before 2; a correction must never be
    truncated, and the pooled rest must be truncatable entry by entry.
    """
    check_positive_int(priority, "priority", "the pooled block must be truncatable")
    if tokenizer_fn is not None:
        if store_options.get("token_counter") is not None:
            raise ArgumentError("give tokenizer_fn= or token_counter=, not both")
        store_options["token_counter"] = counter_from(tokenizer_fn)
    store = PoolSplitMemoryStore(entries, pools, **store_options)
    blocks = [CorrectionsMemoryBlock(store=store), PooledMemoryBlock(store=store, priority=priority)]
    return BlockList(blocks, "poolsplit_memory_blocks()", "memory_blocks")  # nested in a list: says so
