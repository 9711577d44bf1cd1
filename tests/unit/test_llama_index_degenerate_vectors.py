"""Vector recall over a LlamaIndex index when similarity says nothing: an
empty query (LlamaIndex gives it no vector) and a text that embeds to the
zero vector (whose cosine a ``SimpleVectorStore`` returns as NaN). Each
failed the whole call before, from inside the vector store or on the first
NaN score; now each recalls and ranks like any other query or node."""

from __future__ import annotations

import datetime

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode

from poolsplit_adapters import Pool
from poolsplit_adapters.llama_index import HashEmbedding, PoolSplitRetriever, VectorIndexMemory

NOW = datetime.datetime(2026, 7, 7)
POOLS = [Pool("corrections", 0, 0, ("correction",)), Pool("facts", 200, 5, ("fact",))]

pytestmark = pytest.mark.filterwarnings(
    "ignore:invalid value encountered:RuntimeWarning"
)  # numpy, in SimpleVectorStore


def _memory() -> VectorIndexMemory:
    memory = VectorIndexMemory(VectorStoreIndex([], embed_model=HashEmbedding()), now=NOW)
    memory.add([{"id": "fix-1", "type": "correction", "scope": "always", "content": "Amounts in cents."}])
    memory.add([{"id": "f1", "type": "fact", "content": "Refunds round half-even."}])
    return memory


async def test_a_selection_with_no_message_recalls_from_a_vector_index_sync_and_async():
    # Before: TypeError "unsupported operand type(s) for *: 'NoneType' and 'float'" in SimpleVectorStore.
    memory = _memory()
    assert [c.entry["id"] for c in memory.select(POOLS).chosen] == ["fix-1", "f1"]
    retriever = memory.retriever(POOLS)
    assert [n.node.node_id for n in retriever.retrieve("")] == ["fix-1", "f1"]
    assert [n.node.node_id for n in await retriever.aretrieve("")] == ["fix-1", "f1"]
    with_vectors = memory.retriever(POOLS, embeddings=HashEmbedding())
    assert [n.node.node_id for n in with_vectors.retrieve("")] == ["fix-1", "f1"]


@pytest.mark.parametrize("scoring", [{}, {"embeddings": HashEmbedding()}], ids=["default", "embeddings"])
async def test_a_node_whose_text_embeds_to_the_zero_vector_is_ranked_not_fatal(scoring):
    # "..." has no word the hash embedding counts: its vector is zero, and
    # SimpleVectorStore's cosine of it is NaN. Before: ValueError "a vector
    # store returned the score nan" for the whole retrieval.
    embed = HashEmbedding()
    assert not any(embed.get_text_embedding("..."))
    nodes = [TextNode(text=t, id_=i) for i, t in [("a", "hello world"), ("z", "..."), ("b", "other hello"), ("c", "x")]]
    index = VectorStoreIndex(nodes, embed_model=embed)
    retriever = PoolSplitRetriever.from_vector_store_index(index, [Pool("all", 1000, 10)], now=NOW, **scoring)
    for found in (retriever.retrieve("hello"), await retriever.aretrieve("hello")):
        assert [n.node.node_id for n in found] == ["a", "b", "c", "z"]
        scores = {n.node.node_id: n.score for n in found}
        assert scores["z"] == scores["c"] < scores["a"] == scores["b"]  # no similarity: none of the query's words
