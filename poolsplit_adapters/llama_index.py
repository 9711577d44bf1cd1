"""LlamaIndex adapters: retriever, node postprocessor and memory blocks.

Data flows one way: node -> entry (metadata + text + node id) -> core
selector -> selection -> new ``NodeWithScore`` objects, always-scope
corrections first. The caller's nodes are never mutated: returned nodes are
copies whose metadata gains one key, ``"poolsplit"`` (pool, score, always),
excluded from the embedding view and, unless ``show_selection_to_llm``, from
the LLM view.

Entry points:

* :class:`PoolSplitRetriever` over nodes, or per-pool recall over a
  ``VectorStoreIndex`` (:meth:`PoolSplitRetriever.from_vector_store_index`).
* :class:`PoolSplitNodePostprocessor`: pool budgets for any pipeline; put it
  last.
* :func:`poolsplit_memory_blocks`: two blocks for
  ``llama_index.core.memory.Memory`` that keep corrections in the context on
  every turn and pool the rest.

Every call records its selection report as ``last_selection`` and emits a
:class:`PoolSplitSelectionEvent` through LlamaIndex instrumentation.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import itertools
import re
import time
import uuid
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock
from llama_index.core.indices.vector_store.base import VectorStoreIndex
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.memory import BaseMemoryBlock
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters
from llama_index_instrumentation.base import BaseEvent
from pydantic import ConfigDict, Field, PrivateAttr

from ._frameworks import (
    SELECTION_KEY,
    cap_round_robin,
    check_pools,
    entry_from,
    select_with,
    selection_digest,
    selection_metadata,
)
from .index import MemoryIndex
from .poolsplit import Chosen, Pool, Visibility, Scorer, Selection, TokenCounter, default_scorer
from .render import BUDGET_REASONS, explain, marker

__all__ = [
    "PoolSplitRetriever",
    "PoolSplitNodePostprocessor",
    "PoolSplitMemoryStore",
    "CorrectionsMemoryBlock",
    "PooledMemoryBlock",
    "PoolSplitSelectionEvent",
    "poolsplit_memory_blocks",
    "node_to_entry",
    "SELECTION_KEY",
]

dispatcher = get_dispatcher(__name__)
AnyNode = Union[BaseNode, NodeWithScore]


class PoolSplitSelectionEvent(BaseEvent):
    """Emitted once per selection: who selected (``source``) and a
    JSON-friendly digest of what loaded and why the rest did not."""

    source: str
    summary: Dict[str, Any]

    @classmethod
    def class_name(cls) -> str:
        return "PoolSplitSelectionEvent"


def _announce(source: str, selection: Selection) -> None:
    dispatcher.event(PoolSplitSelectionEvent(source=source, summary=selection_digest(selection)))


def node_to_entry(node: AnyNode, position: int = 0) -> Dict[str, Any]:
    """The entry for a node: its metadata, ``content`` = its text (no
    metadata), ``id`` = its node id.

    Raises:
        EntryError: malformed metadata, naming the node and the field.
    """
    base = node.node if isinstance(node, NodeWithScore) else node
    text = base.get_content(metadata_mode=MetadataMode.NONE)
    return entry_from(text, base.metadata, base.node_id, kind="node", position=position)


def _llama_counter() -> TokenCounter:
    """Counts with LlamaIndex's global tokenizer, the one ``Memory`` uses by
    default, so budgets and ``Memory``'s own arithmetic agree."""
    from llama_index.core.utils import get_tokenizer

    return _counter_from(get_tokenizer())


def _counter_from(tokenizer_fn: Callable[[str], List[Any]]) -> TokenCounter:
    """A never-0 counter over ``tokenizer_fn``, cached by text with a bound:
    a long chat would otherwise grow the cache by every line it flushes."""

    @functools.lru_cache(maxsize=100_000)
    def count(text: str) -> int:
        return max(1, len(tokenizer_fn(text)))

    return count


class _NodeSelector:
    """Shared by the retriever and the postprocessor: nodes in, nodes out."""

    def __init__(self, show_selection_to_llm: bool) -> None:
        self.show = show_selection_to_llm

    @staticmethod
    def entries(
        nodes: Sequence[AnyNode], *, recalled: bool = False
    ) -> Tuple[List[Dict[str, Any]], Dict[int, BaseNode]]:
        """Entries and the way back to each node. ``recalled``: nodes come
        from several recalls of one index; one id is one node, and id order
        replaces similarity order (which changes with every query)."""
        items = [n.node if isinstance(n, NodeWithScore) else n for n in nodes]
        if recalled:
            items = sorted({n.node_id: n for n in items}.values(), key=lambda n: n.node_id)
        entries, source = [], {}
        for position, node in enumerate(items):
            entry = node_to_entry(node, position)
            entries.append(entry)
            source[id(entry)] = node
        return entries, source

    def to_nodes(self, chosen: Sequence[Chosen], source: Mapping[int, BaseNode]) -> List[NodeWithScore]:
        scores = [c.score for c in chosen if c.score is not None]
        # Never None: several postprocessors drop score=None. Always-scope
        # nodes rank above everything returned with them.
        always_score = (max(scores) if scores else 0.0) + 1.0
        out = []
        for c in chosen:
            original = source[id(c.entry)]
            node = original.model_copy()
            node.metadata = {**original.metadata, SELECTION_KEY: selection_metadata(c)}
            node.excluded_embed_metadata_keys = [*original.excluded_embed_metadata_keys, SELECTION_KEY]
            if not self.show:
                node.excluded_llm_metadata_keys = [*original.excluded_llm_metadata_keys, SELECTION_KEY]
            out.append(NodeWithScore(node=node, score=always_score if c.always else float(c.score or 0.0)))
        return out


class PoolSplitRetriever(BaseRetriever):
    """Retrieve nodes into reserved per-type budgets, corrections first.

    Args:
        pools: the pool plan.
        nodes: the memory (nodes or documents), held in a ``MemoryIndex``.
        k: cap on contextual nodes, dealt round-robin across pools;
            always-scope nodes come on top of it. None: the pools' caps.
        token_counter: cost of a node without ``token_count`` metadata
            (default: LlamaIndex's tokenizer).
        scorer: ranking function (default: the spec's lexical scorer).
        tags / project: scoring context for every query.
        now: fixed reference time (default: each call's time).
        scope: a :class:`~poolsplit_adapters.Visibility` (exact namespace or
            explicit chain, required tags, required source); default none.
        show_selection_to_llm: keep the ``poolsplit`` metadata in the LLM view.

    Use :meth:`from_vector_store_index` to recall per pool from an index.
    """

    def __init__(
        self,
        pools: Sequence[Pool],
        nodes: Optional[Sequence[AnyNode]] = None,
        *,
        k: Optional[int] = None,
        token_counter: Optional[TokenCounter] = None,
        scorer: Scorer = default_scorer,
        tags: Sequence[str] = (),
        project: Optional[str] = None,
        now: Optional[datetime.datetime] = None,
        visibility: Optional[Visibility] = None,
        show_selection_to_llm: bool = False,
        _recall: Optional[_Recall] = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.pools = check_pools(pools)
        if (nodes is None) == (_recall is None):
            raise ValueError("PoolSplitRetriever needs nodes=, or use PoolSplitRetriever.from_vector_store_index(...)")
        if k is not None and k < 0:
            raise ValueError("k must be >= 0, got %r" % (k,))
        self.k = k
        self.token_counter = token_counter or _llama_counter()
        self.scorer = scorer
        self.context_tags = list(tags)
        self.project = project
        self.now = now
        self.visibility = visibility
        self._selector = _NodeSelector(show_selection_to_llm)
        self._recall = _recall
        self._index: Optional[MemoryIndex] = None
        self._source: Dict[int, BaseNode] = {}
        self.last_selection: Optional[Selection] = None
        if nodes is not None:
            entries, self._source = _NodeSelector.entries(nodes)
            self._index = MemoryIndex(entries, token_counter=self.token_counter)

    @classmethod
    def from_vector_store_index(
        cls,
        index: VectorStoreIndex,
        pools: Sequence[Pool],
        *,
        fetch_k: int = 20,
        always_k: int = 1000,
        type_key: str = "type",
        **kwargs: Any,
    ) -> PoolSplitRetriever:
        """Recall candidates per pool from ``index``, then select.

        Each pool's similarity search runs with ``MetadataFilters`` on
        ``type_key`` (the pool's types, ``IN``), so rare low-priority types
        get candidates even when other types dominate the index; always-scope
        nodes are fetched with a ``scope == "always"`` filter (up to
        ``always_k``), independent of similarity. Nodes need an explicit
        ``type`` in their metadata for the filters to see them.
        """
        plan = check_pools(pools)
        recalls: List[Tuple[str, BaseRetriever]] = []
        scope = kwargs.get("visibility")
        # A namespace scope is pushed down as well: filtered only after
        # recall, a small tenant would lose its candidates to the others.
        tenant = (
            [MetadataFilter(key="namespace", value=list(scope.chain), operator=FilterOperator.IN)]
            if scope is not None and scope.chain
            else []
        )
        for pool in plan:
            if pool.max_entries <= 0 or pool.max_tokens < 1:
                continue
            clauses: List[Union[MetadataFilter, MetadataFilters]] = list(tenant)
            if pool.types is not None:
                clauses.append(MetadataFilter(key=type_key, value=list(pool.types), operator=FilterOperator.IN))
            filters = MetadataFilters(filters=clauses) if clauses else None
            recalls.append(("pool:%s" % pool.name, index.as_retriever(similarity_top_k=fetch_k, filters=filters)))
        always = MetadataFilters(
            filters=[MetadataFilter(key="scope", value="always", operator=FilterOperator.EQ), *tenant]
        )
        recalls.append(("always", index.as_retriever(similarity_top_k=always_k, filters=always)))
        return cls(plan, _recall=_Recall(recalls), **kwargs)

    def explain(self) -> str:
        """The why/why-not table of the most recent call."""
        return "no call yet" if self.last_selection is None else explain(self.last_selection)

    def _context(self, query: QueryBundle) -> Dict[str, Any]:
        return {"message": query.query_str, "tags": self.context_tags, "project": self.project}

    def _choose(self, candidates: Optional[List[NodeWithScore]], query: QueryBundle) -> List[NodeWithScore]:
        if candidates is None:
            assert self._index is not None
            selection = self._index.select(
                self.pools, self._context(query), now=self.now, scorer=self.scorer, visibility=self.visibility
            )
            source = self._source
        else:
            entries, source = _NodeSelector.entries(candidates, recalled=True)
            selection = select_with(self, entries, self._context(query))
        self.last_selection = selection
        _announce("retriever", selection)
        return self._selector.to_nodes(cap_round_robin(selection, self.k), source)

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        candidates = self._recall.retrieve(query_bundle) if self._recall is not None else None
        return self._choose(candidates, query_bundle)

    async def _aretrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        candidates = await self._recall.aretrieve(query_bundle) if self._recall is not None else None
        return self._choose(candidates, query_bundle)


class _Recall:
    """The per-pool sub-retrievals of a vector-store-backed retriever."""

    def __init__(self, recalls: List[Tuple[str, BaseRetriever]]) -> None:
        self.recalls = recalls

    def retrieve(self, query: QueryBundle) -> List[NodeWithScore]:
        return [n for _, r in self.recalls for n in r.retrieve(query)]

    async def aretrieve(self, query: QueryBundle) -> List[NodeWithScore]:
        results = await asyncio.gather(*(r.aretrieve(query) for _, r in self.recalls))
        return [n for batch in results for n in batch]


class PoolSplitNodePostprocessor(BaseNodePostprocessor):
    """Re-apply pool budgets to the nodes an earlier stage produced.

    **Put it last.** A similarity cutoff or a reranker placed after it can
    remove the corrections it puts first; placed before it, they can remove
    them before it sees them. For the second case, give ``always_nodes``:
    always-scope nodes (the corrections) that are added back whenever an
    earlier stage dropped them.

    Fields: ``pools``, ``k``, ``token_counter``, ``scorer``, ``project``,
    ``now``, ``always_nodes``, ``show_selection_to_llm``; ``last_selection``
    holds the report of the last call.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    pools: List[Pool]
    k: Optional[int] = None
    token_counter: Optional[Callable[[str], int]] = Field(default=None, exclude=True)
    scorer: Callable[..., float] = Field(default=default_scorer, exclude=True)
    project: Optional[str] = None
    now: Optional[datetime.datetime] = None
    always_nodes: List[BaseNode] = Field(default_factory=list)
    visibility: Optional[Visibility] = None
    show_selection_to_llm: bool = False

    _last: Optional[Selection] = PrivateAttr(default=None)

    def model_post_init(self, __context: Any) -> None:
        self.pools = check_pools(self.pools)
        for position, node in enumerate(self.always_nodes):
            if node_to_entry(node, position).get("scope") != "always":
                raise ValueError("always_nodes[%d] (node %r) is not scope 'always'" % (position, node.node_id))
        if self.token_counter is None:
            self.token_counter = _llama_counter()

    @classmethod
    def class_name(cls) -> str:
        return "PoolSplitNodePostprocessor"

    @property
    def last_selection(self) -> Optional[Selection]:
        return self._last

    def _postprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]:
        present = {n.node.node_id for n in nodes}
        restored = [NodeWithScore(node=n) for n in self.always_nodes if n.node_id not in present]
        entries, source = _NodeSelector.entries([*restored, *nodes])
        context = {"message": query_bundle.query_str if query_bundle else "", "project": self.project}
        assert self.token_counter is not None
        selection = select_with(self, entries, context)
        self._last = selection
        _announce("postprocessor", selection)
        return _NodeSelector(self.show_selection_to_llm).to_nodes(cap_round_robin(selection, self.k), source)


# -- Memory blocks ------------------------------------------------------------------

_MARKER_SPAN = re.compile(r"<memory [^\n]*>\n.*?\n</memory>", re.S)
_POOL_ATTR = re.compile(r' pool="([^"]*)"')


def _pool_of(marker_text: str) -> str:
    found = _POOL_ATTR.search(marker_text)
    return found.group(1) if found else ""


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
        self.token_counter = token_counter or _llama_counter()
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
        _announce("memory", selection)
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
    counter = _counter_from(tokenizer_fn) if tokenizer_fn is not None else None
    store = PoolSplitMemoryStore(entries, pools, token_counter=counter, **store_options)
    return [CorrectionsMemoryBlock(store=store), PooledMemoryBlock(store=store, priority=priority)]


def nodes_from(entries: Iterable[Mapping[str, Any]]) -> List[TextNode]:
    """Entries as ``TextNode``s (metadata = every key but content and id),
    e.g. to build a ``VectorStoreIndex`` from a JSONL store."""
    out = []
    for entry in entries:
        metadata = {k: v for k, v in entry.items() if k not in ("content", "id")}
        node = TextNode(text=entry["content"], metadata=metadata)
        if entry.get("id"):
            node.id_ = entry["id"]
        out.append(node)
    return out
