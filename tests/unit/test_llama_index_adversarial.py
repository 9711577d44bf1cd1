"""An adversarial sweep of the LlamaIndex paths with real llama-index-core
objects (``Memory``, ``VectorStoreIndex``, ``HashEmbedding``): each test
names the input that broke a rule and the rule it keeps."""

from __future__ import annotations

import asyncio
import re
import warnings
from typing import Any, Callable, List, Optional

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.schema import TextNode

from poolsplit_adapters import EntryError, Pool
from poolsplit_adapters.llama_index import HashEmbedding, PoolSplitRetriever, poolsplit_memory_blocks
from poolsplit_adapters.render import parse_markers
from poolsplit_adapters.tokens import llama_index_counter

#: ``Memory``'s default session id is a UUID4 like this one.
SESSION = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
CORRECTION = {"id": "fix-1", "type": "correction", "scope": "always", "content": "Never force-push to main."}


PLAN = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("standing", 300, 10, ("instruction", "preference", "fact")),
    Pool("episodes", 400, 5, ("episode",)),
]


def _marker_texts(block: str) -> List[str]:
    return ["<memory " + part.split("</memory>")[0] + "</memory>" for part in block.split("<memory ")[1:]]


@pytest.mark.parametrize(
    ("tokenizer_fn", "total", "shown"),
    [(None, 400, 4), (list, 2000, 11)],
    ids=["llama-index-tokenizer", "custom-tokenizer-fn-of-characters"],
)
def test_the_pooled_block_keeps_to_total_tokens_with_a_uuid_session_whose_markers_cost_more(
    tokenizer_fn: Optional[Callable[[str], List[Any]]], total: int, shown: int
):
    # Found by an adversarial sweep: each entry was charged a typical marker's
    # tokens (source "thread:t1"), and flushed chat's source is "session:<uuid>":
    # a 400-token plan put 500 tokens of markers (llama-index tokenizer) before the model.
    count: Callable[[str], int] = llama_index_counter() if tokenizer_fn is None else len
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the auto plan has no standing pool
        blocks = poolsplit_memory_blocks([CORRECTION], "auto", total_tokens=total, tokenizer_fn=tokenizer_fn)
    options = {} if tokenizer_fn is None else {"tokenizer_fn": tokenizer_fn}
    memory = Memory.from_defaults(
        session_id=SESSION, token_limit=3000, chat_history_token_ratio=0.01, memory_blocks=blocks, **options
    )
    for n in range(60):
        memory.put(ChatMessage(role="user", content="okay number %d noted" % n))
    store = blocks[1].store
    flushed = [e for e in store.entries() if e.get("session") == SESSION]
    said = [ChatMessage(role="user", content="okay")]
    corrections = asyncio.run(blocks[0].aget(said, session_id=SESSION))
    pooled = asyncio.run(blocks[1].aget(said, session_id=SESSION))
    markers = _marker_texts(pooled)
    assert sum(count(m) for m in markers) <= total
    assert len(markers) == shown
    # what the budget left out is said, and adds up to every flushed line
    (left,) = re.findall(r"\[(\d+) more entr(?:y|ies) left out by budget: episodic \1\]", pooled)
    assert len(markers) + int(left) == len(flushed) > 50
    assert "(episodic %d)" % shown in corrections and "budgets left out %s more" % left in corrections
    assert [m["id"] for m in parse_markers(corrections)] == ["fix-1"]  # the correction renders, outside the budget


@pytest.mark.parametrize("scope", ["Always", " always", "ALWAYS", "allways"])
async def test_a_stored_node_whose_scope_is_always_but_for_case_is_named_as_the_node_paths_name_it(scope: str):
    # Found by an adversarial sweep: the node path refuses scope "Always", but over a
    # VectorStoreIndex the always fetch (scope == "always") missed it and its type's
    # pool took it as a contextual entry: a 0-token corrections pool dropped it unnamed.
    good = TextNode(text="deploy steps", id_="good", metadata={"type": "note"})
    bad = TextNode(text="never deploy on friday", id_="bad", metadata={"type": "correction", "scope": scope})
    pools = [Pool("corrections", 0, 0, ("correction",)), Pool("notes", 500, 5, ("note",))]
    message = "^node 'bad': metadata field 'scope' is %s, not exactly 'always'" % re.escape(repr(scope))
    with pytest.raises(EntryError, match=message):
        PoolSplitRetriever(pools, [good, bad])  # the node path
    embed = HashEmbedding()
    retriever = PoolSplitRetriever.from_vector_store_index(
        VectorStoreIndex([good, bad], embed_model=embed), pools, embeddings=embed
    )
    with pytest.raises(EntryError, match=message):
        retriever.retrieve("deploy")
    with pytest.raises(EntryError, match=message):
        await retriever.aretrieve("deploy")
    fixed = TextNode(text="never deploy on friday", id_="bad", metadata={"type": "correction", "scope": "always"})
    exact = PoolSplitRetriever.from_vector_store_index(
        VectorStoreIndex([good, fixed], embed_model=embed), pools, embeddings=embed
    )
    assert [n.node.node_id for n in exact.retrieve("deploy")] == ["bad", "good"]


def test_a_blocks_put_never_stamps_the_callers_messages_and_the_session_still_recalls_them():
    # Found by an adversarial sweep: BaseMemoryBlock.aput writes the session id into
    # each message's additional_kwargs, so a caller's own messages came back changed.
    blocks = poolsplit_memory_blocks([CORRECTION], PLAN)
    said = [
        ChatMessage(role="user", content="the invoice run is on mondays", additional_kwargs={"trace": [1]}),
        ChatMessage(role="assistant", content="noted, mondays"),
    ]
    before = [m.model_dump() for m in said]
    asyncio.run(blocks[1].aput(said, session_id="alice"))
    assert [m.model_dump() for m in said] == before
    pooled = asyncio.run(blocks[1].aget([ChatMessage(role="user", content="invoice run")], session_id="alice"))
    assert sorted(m["content"] for m in parse_markers(pooled) if m["pool"] == "episodes") == [
        "assistant: noted, mondays",
        "user: the invoice run is on mondays",
    ]
    assert parse_markers(asyncio.run(blocks[1].aget(said[:1], session_id="bob"))) == []
