"""Vector recall over a LlamaIndex index when similarity says nothing: a
text that embeds to the zero vector (whose cosine a ``SimpleVectorStore``
returns as NaN). It failed the whole call on the first NaN score; now it
ranks like any other node."""

from __future__ import annotations

import datetime

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode

from poolsplit_adapters import Pool
from poolsplit_adapters.llama_index import HashEmbedding, PoolSplitRetriever

NOW = datetime.datetime(2026, 7, 7)

pytestmark = pytest.mark.filterwarnings(
    "ignore:invalid value encountered:RuntimeWarning"
)  # numpy, in SimpleVectorStore


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
