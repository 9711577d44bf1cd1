"""LlamaIndex adapters: retriever, node postprocessor and memory blocks.

Data flows one way: node -> entry (metadata + text + node id) -> recall
plan (vector-store mode) -> core selector -> selection -> new
``NodeWithScore`` objects, always-scope corrections first. The caller's
nodes are never mutated: returned nodes are copies whose metadata gains one
key, ``"poolsplit"`` (pool, score, always), excluded from the embedding view
and, unless ``show_selection_to_llm``, from the LLM view.

Entry points:

* [`PoolSplitRetriever`][] over nodes, or per-pool recall over a
  ``VectorStoreIndex`` ([`PoolSplitRetriever.from_vector_store_index`][]);
  [`PoolSplitRetriever.retrieve_with_selection`][] returns a call's own
  selection with the nodes.
* [`PoolSplitNodePostprocessor`][]: pool budgets for any pipeline; put it
  last.
* [`poolsplit_memory_blocks`][]: two blocks for
  ``llama_index.core.memory.Memory`` that keep corrections in the context on
  every turn and pool the rest, per session, optionally over a durable
  long-term ``store=``.

Every selection emits a [`PoolSplitSelectionEvent`][] through LlamaIndex
instrumentation and is collected by
[`capture_selections`][]; ``last_selection``
is the call that finished last.

`create_search_memory_tool` gives a `FunctionAgent` a `search_memory(query)`
tool over the same memory, scoped as its blocks are.

[`HashEmbedding`][poolsplit_adapters.llama_index.embeddings.HashEmbedding] is a deterministic ``BaseEmbedding`` with real
similarity, for tests and demos.
"""

from typing import Any

from ..convert import SELECTION_KEY
from ..reports import capture_selections
from ..stores.vectorstores.llama_index_search import IndexRecall, metadata_filters
from .events import PoolSplitSelectionEvent
from .memory import CorrectionsMemoryBlock, PooledMemoryBlock, StoreMemoryBlock, poolsplit_memory_blocks
from .memory_store import SESSION_KEY, PooledRender, PoolSplitMemoryStore, UnflushedWarning, message_text
from .nodes import node_to_entry, nodes_from
from .postprocessor import PoolSplitNodePostprocessor
from .retriever import PoolSplitRetriever
from .search_tool import create_search_memory_tool
from .vector_memory import VectorIndexMemory


def __getattr__(name: str) -> Any:
    if name == "HashEmbedding":  # imported on first use, like the LangChain twin
        from .embeddings import HashEmbedding

        return HashEmbedding
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


__all__ = [
    "HashEmbedding",
    "CorrectionsMemoryBlock",
    "IndexRecall",
    "PoolSplitMemoryStore",
    "PoolSplitNodePostprocessor",
    "PoolSplitRetriever",
    "PoolSplitSelectionEvent",
    "PooledMemoryBlock",
    "PooledRender",
    "SELECTION_KEY",
    "SESSION_KEY",
    "StoreMemoryBlock",
    "UnflushedWarning",
    "VectorIndexMemory",
    "capture_selections",
    "create_search_memory_tool",
    "message_text",
    "metadata_filters",
    "node_to_entry",
    "nodes_from",
    "poolsplit_memory_blocks",
]
