"""Memory blocks for ``llama_index.core.memory.Memory``: corrections on every
turn, the pooled rest truncatable entry by entry, flushed chat written back."""

from __future__ import annotations

import datetime
import itertools
import re
import time
import uuid
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock
from llama_index.core.memory import BaseMemoryBlock
from pydantic import ConfigDict, Field

from .._frameworks import (
    check_pools,
)
from ..index import MemoryIndex
from ..poolsplit import Pool, Scorer, Selection, TokenCounter, Visibility, default_scorer
from ..render import BUDGET_REASONS, marker
from .events import announce
from .nodes import counter_from, llama_counter


class PoolSplitMemoryStore:
    """Long-term entries shared by the two memory blocks.

    Holds the entries in a :class:`~poolsplit_adapters.MemoryIndex`,
    selects for a message, and turns flushed chat messages into entries.

    Args:
        entries: initial long-term entries (dicts).
        pools: the pool plan.
        token_counter: counts with the tokenizer ``Memory`` uses (default:
            LlamaIndex's global tokenizer, which is ``Memory``'s default).
        episode_type: ``type`` given to flushed chat messages.
        episode_priority: their ``base_priority`` (default 2, below the
            default 5): a raw transcript line is worth less than a curated
            memory, and a long chat would otherwise flood its pool with
            fresh lines that outrank every older, curated episode.
        write_gate: which flushed messages become entries (default: user and
            assistant messages with text). Raw transcripts persisted
            indiscriminately pollute later recall.
        scorer, project, now, scope: as for the retriever. Provenance is
            not required by default (a dropped correction is worse than one
            shown with an empty ``source``); flushed chat messages always get
            ``source = "session:<id>"``.
    """

    def __init__(
        self,
        entries: Iterable[Mapping[str, Any]],
        pools: Sequence[Pool],
        *,
        token_counter: Optional[TokenCounter] = None,
        episode_type: str = "episode",
        episode_priority: float = 2,
        write_gate: Optional[Callable[[ChatMessage], bool]] = None,
        scorer: Scorer = default_scorer,
        project: Optional[str] = None,
        now: Optional[datetime.datetime] = None,
        visibility: Optional[Visibility] = None,
    ) -> None:
        self.pools = check_pools(pools)
        self.visibility = visibility
        self.token_counter = token_counter or llama_counter()
        self.index = MemoryIndex(entries, token_counter=self.token_counter)
        self.episode_type = episode_type
        self.episode_priority = episode_priority
        self.write_gate = write_gate or _default_gate
        self.scorer = scorer
        self.project = project
        self.now = now
        self.last_selection: Optional[Selection] = None
        self._memo: Optional[Tuple[Tuple[str, Optional[str], int], Selection, float]] = None
        self._serial = itertools.count()

    def select_for(self, message: str, session_id: Optional[str] = None) -> Selection:
        """The selection for ``message``; the two blocks of one ``Memory.aget``
        ask for the same message, and share one selection."""
        key = (message, session_id, len(self.index))
        clock = time.monotonic()
        if self._memo is not None and self._memo[0] == key and (self.now is not None or clock - self._memo[2] < 1.0):
            return self._memo[1]
        context = {"message": message, "project": self.project}
        selection = self.index.select(self.pools, context, now=self.now, scorer=self.scorer, visibility=self.visibility)
        self._memo = (key, selection, clock)
        self.last_selection = selection
        announce("memory", selection)
        return selection

    def remember(self, messages: Sequence[ChatMessage]) -> List[Dict[str, Any]]:
        """Turn flushed chat messages into long-term entries (type
        ``episode_type``, ``source`` = the message's session)."""
        added = []
        stamp = (self.now or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
        for message in messages:
            if not self.write_gate(message):
                continue
            session = message.additional_kwargs.get("session_id")
            added.append(
                {
                    "id": "%s-%d-%s" % (self.episode_type, next(self._serial), uuid.uuid4().hex[:8]),
                    "type": self.episode_type,
                    "base_priority": self.episode_priority,
                    "content": "%s: %s" % (message.role.value, _text(message)),
                    "source": "session:%s" % session if session else "chat",
                    "created": stamp,
                }
            )
        self.index.extend(added)
        return added


_MARKER_SPAN = re.compile(r"<memory [^\n]*>\n.*?\n</memory>", re.S)


_POOL_ATTR = re.compile(r' pool="([^"]*)"')


def _pool_of(marker_text: str) -> str:
    found = _POOL_ATTR.search(marker_text)
    return found.group(1) if found else ""


def _text(message: ChatMessage) -> str:
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock)).strip()


def _default_gate(message: ChatMessage) -> bool:
    return message.role in (MessageRole.USER, MessageRole.ASSISTANT) and bool(_text(message))


def _last_user_text(messages: Optional[List[ChatMessage]]) -> str:
    for message in reversed(messages or []):
        if message.role == MessageRole.USER:
            return _text(message)
    return ""


class CorrectionsMemoryBlock(BaseMemoryBlock[str]):
    """The always-scope entries, rendered as cite-able markers.

    Priority 0: ``Memory`` never truncates a priority-0 block, so the
    corrections survive every flood. List it first in ``memory_blocks`` so
    they come first in the context.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = "corrections"
    description: Optional[str] = "Behavioural corrections that always apply."
    priority: int = 0
    accept_short_term_memory: bool = False
    store: PoolSplitMemoryStore = Field(exclude=True)

    async def _aget(self, messages: Optional[List[ChatMessage]] = None, **block_kwargs: Any) -> str:
        # session_id arrives per call; it is used, never stored on the block.
        selection = self.store.select_for(_last_user_text(messages), block_kwargs.get("session_id"))
        return "\n".join(marker(c.entry, c.pool) for c in selection.chosen if c.always)

    async def _aput(self, messages: List[ChatMessage]) -> None:
        return None  # corrections are curated, never written from chat


class PooledMemoryBlock(BaseMemoryBlock[str]):
    """The pooled long-term memory for the last user message.

    Truncatable (priority >= 1): when ``Memory`` needs room it calls
    :meth:`atruncate`, which drops entries from the least relevant end (the
    lowest-ranked entry of the pool that holds the most) instead of the whole
    block, and says how many it dropped. Flushed chat messages become
    long-term entries through ``_aput``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = "long_term_memory"
    description: Optional[str] = "Long-term memory selected for this message."
    priority: int = 1
    accept_short_term_memory: bool = True
    store: PoolSplitMemoryStore = Field(exclude=True)

    async def _aget(self, messages: Optional[List[ChatMessage]] = None, **block_kwargs: Any) -> str:
        selection = self.store.select_for(_last_user_text(messages), block_kwargs.get("session_id"))
        blocks = [marker(c.entry, c.pool) for c in selection.chosen if not c.always]
        cut = sum(1 for d in selection.dropped if d.reason in BUDGET_REASONS)
        if cut:
            blocks.append("[%d more entries left out by budget]" % cut)
        return "\n".join(blocks)

    async def _aput(self, messages: List[ChatMessage]) -> None:
        self.store.remember(messages)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> Optional[str]:
        if not content:
            return None
        spans = [(m.group(0), _pool_of(m.group(0))) for m in _MARKER_SPAN.finditer(content)]
        count = self.store.token_counter
        budget_line = re.search(r"\[(\d+) more entries left out by budget\]", content)
        cut = int(budget_line.group(1)) if budget_line else 0
        saved = dropped = 0
        while spans and saved < tokens_to_truncate:
            sizes: Dict[str, int] = {}
            for _, pool in spans:
                sizes[pool] = sizes.get(pool, 0) + 1
            largest = max(sizes.values())
            victim_pool = [p for p in sizes if sizes[p] == largest][-1]
            victim = max(i for i, (_, pool) in enumerate(spans) if pool == victim_pool)
            saved += count(spans[victim][0])
            del spans[victim]
            dropped += 1
        if not spans:
            return None
        tail = "[%d more entries left out: %d by budget, %d by the context limit]" % (cut + dropped, cut, dropped)
        return "\n".join([text for text, _ in spans] + [tail])


def poolsplit_memory_blocks(
    entries: Iterable[Mapping[str, Any]],
    pools: Sequence[Pool],
    *,
    tokenizer_fn: Optional[Callable[[str], List[Any]]] = None,
    priority: int = 1,
    **store_options: Any,
) -> List[BaseMemoryBlock[str]]:
    """The two blocks to give ``Memory.from_defaults(memory_blocks=...)``:
    a priority-0 :class:`CorrectionsMemoryBlock` (first) and a truncatable
    :class:`PooledMemoryBlock` sharing one :class:`PoolSplitMemoryStore`.

    Pass the same ``tokenizer_fn`` you give ``Memory`` (default: LlamaIndex's
    tokenizer, which is also ``Memory``'s default) so budgets and ``Memory``
    count alike. ``store_options`` go to :class:`PoolSplitMemoryStore`.

    Why two blocks: in llama-index-core 0.14 ``Memory`` never truncates
    priority 0 and truncates priority 1 before 2; a correction must never be
    truncated, and the pooled rest must be truncatable entry by entry.
    """
    if priority < 1:
        raise ValueError("the pooled block must be truncatable: priority >= 1, got %r" % (priority,))
    counter = counter_from(tokenizer_fn) if tokenizer_fn is not None else None
    store = PoolSplitMemoryStore(entries, pools, token_counter=counter, **store_options)
    return [CorrectionsMemoryBlock(store=store), PooledMemoryBlock(store=store, priority=priority)]
