"""Issue 13/14 features through the LlamaIndex adapters (real retrievers,
VectorStoreIndex, Memory): pools="auto", progressive=True with the expand
FunctionTool, embeddings= and index recall that reuses NodeWithScore.score."""

from __future__ import annotations

import datetime
from typing import Any

import paraphrase
from counting_embeddings import CountingEmbedding
from llama_index.core import VectorStoreIndex
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.schema import TextNode

from poolsplit_adapters import Pool, default_scorer
from poolsplit_adapters.llama_index import HashEmbedding, PoolSplitRetriever, poolsplit_memory_blocks
from poolsplit_adapters.render import parse_markers

NOW = datetime.datetime(2026, 11, 20, 9)
FULL = "The October rounding incident: refunds were rounded down by one cent in the monthly totals report."


def words(text: str) -> int:
    return max(1, len(text.split()))


def node(id_: str, text: str, **metadata: Any) -> TextNode:
    metadata.setdefault("created", "2026-11-01T00:00:00Z")
    made = TextNode(text=text, metadata=metadata)
    made.id_ = id_
    return made


NODES = [
    node("fix-cents", "Quote amounts in integer cents.", type="correction", scope="always", source="user"),
    node("ep-round", FULL, type="episode", summary="October refunds rounding incident"),
    node("note-url", "The staging URL moved to staging2 and every preview link changed.", type="note",
         summary="Staging URL change"),
    node("skill-deploy", "To deploy, run make release, then watch the canary for ten minutes.", type="skill",
         summary="How to deploy"),
]  # fmt: skip
PLAN = [Pool("corrections", 0, 0, ("correction",)), Pool("memory", 200, 3, ("episode", "note", "skill"))]


def test_auto_pools_take_the_phase_from_the_constructor_and_per_call():
    retriever = PoolSplitRetriever(
        "auto", NODES, total_tokens=400, total_entries=10, phase="debugging", token_counter=words, now=NOW
    )
    _, debugging = retriever.retrieve_with_selection("what happened with the refunds?")
    _, review = retriever.retrieve_with_selection("what happened with the refunds?", phase="review")
    assert (debugging.notes["task_type"], review.notes["task_type"]) == ("debugging", "review")
    # Shared among the collections the nodes hold (episodic, semantic, skills): 400 x 35/70 and 400 x 15/55.
    assert [debugging.stats["episodic"].max_tokens, review.stats["episodic"].max_tokens] == [200, 109]
    assert "anti_patterns" not in debugging.stats and "other" not in debugging.stats
    assert retriever.retrieve("refunds")[0].node.node_id == "fix-cents"


def test_progressive_nodes_carry_the_summary_and_the_layer():
    retriever = PoolSplitRetriever(PLAN, NODES, progressive=True, token_counter=words, now=NOW)
    nodes, selection = retriever.retrieve_with_selection("refund rounding")
    assert [(n.node.node_id, n.node.metadata["poolsplit"].get("layer", "full")) for n in nodes] == [
        ("fix-cents", "full"),
        ("ep-round", "summary"),
        ("note-url", "summary"),
        ("skill-deploy", "summary"),
    ]
    assert nodes[1].node.get_content() == "October refunds rounding incident"
    assert selection.notes["metrics"]["tokens_by_layer"] == {"summary": 10, "timeline": 0, "full": 5}
    assert retriever.expand_tool().call(entry_id="ep-round").content == FULL
    assert NODES[1].get_content() == FULL  # the caller's node is untouched


def test_memory_blocks_render_summaries_and_the_store_expands_for_its_session():
    entries = [dict(n.metadata, id=n.node_id, content=n.get_content()) for n in NODES]
    blocks = poolsplit_memory_blocks(entries, PLAN, progressive=True, now=NOW)
    memory = Memory.from_defaults(session_id="alice", token_limit=3000, memory_blocks=blocks)
    memory.put(ChatMessage(role="user", content="refund rounding"))
    context = memory.get()[0].content
    found = parse_markers(context)
    assert [(m["id"], m.get("layer")) for m in found] == [
        ("fix-cents", None),
        ("ep-round", "summary"),
        ("note-url", "summary"),
        ("skill-deploy", "summary"),
    ]
    store = blocks[0].store
    assert store.last_selection.notes["deepened"] is False
    assert store.expand_tool("alice").call(entry_id="ep-round").content == FULL


PARAPHRASE = [node(id_, text, **metadata) for id_, text, metadata in paraphrase.PARAPHRASE]


def test_embeddings_rank_a_paraphrase_above_an_unrelated_node():
    one = [Pool("one", 1000, 1)]
    spec = PoolSplitRetriever(one, PARAPHRASE, scorer=default_scorer, now=paraphrase.JULY)
    words = PoolSplitRetriever(one, PARAPHRASE, now=paraphrase.JULY)
    embedded = PoolSplitRetriever(one, PARAPHRASE, embeddings=HashEmbedding(), now=paraphrase.JULY)
    assert [n.node.node_id for n in spec.retrieve(paraphrase.QUESTION)] == ["note"]  # see tests/paraphrase.py
    assert [n.node.node_id for n in words.retrieve(paraphrase.QUESTION)] == ["episode"]
    assert [n.node.node_id for n in embedded.retrieve(paraphrase.QUESTION)] == ["episode"]


async def test_index_recall_uses_node_scores_instead_of_re_embedding():
    embed = CountingEmbedding()
    index = VectorStoreIndex(PARAPHRASE, embed_model=embed)
    assert embed._texts == 2
    retriever = PoolSplitRetriever.from_vector_store_index(
        index, [Pool("one", 1000, 1)], embeddings=embed, now=paraphrase.JULY
    )
    assert [n.node.node_id for n in retriever.retrieve(paraphrase.QUESTION)] == ["episode"]
    assert [n.node.node_id for n in await retriever.aretrieve("refunded totals")] == ["episode"]
    assert embed._texts == 2  # recalled nodes were never embedded again
    assert embed._queries == 2  # one query embedding per call: the scorer takes the index's
