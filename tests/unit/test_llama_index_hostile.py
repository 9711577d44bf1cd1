"""The LlamaIndex adapters given hostile input through their public entry
points (found by an adversarial hunt): each fails where it is given, with an
error naming the argument, never a traceback from inside."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import Memory
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from poolsplit_adapters import Pool
from poolsplit_adapters.checks import ArgumentError
from poolsplit_adapters.llama_index import (
    CorrectionsMemoryBlock,
    PooledMemoryBlock,
    PoolSplitNodePostprocessor,
    PoolSplitRetriever,
    create_search_memory_tool,
    poolsplit_memory_blocks,
)
from poolsplit_adapters.memory import WriteGate

POOLS = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("standing", 256, 20, ("instruction", "preference")),
    Pool("facts", 300, 5, ("fact", "episode")),
]
CURATED = [
    {"id": "c1", "type": "correction", "scope": "always", "content": "Amounts in integer cents."},
    {"id": "f1", "type": "fact", "content": "Refunds round half-even."},
]
HELLO = ChatMessage(role=MessageRole.USER, content="how do refunds round?")


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ("how do refunds round?", "messages must be a list of ChatMessage, got str 'how do refunds round?'"),
        (3, "messages must be a list of ChatMessage, got int 3"),
        ({"role": "user"}, "messages must be a list of ChatMessage, got dict {'role': 'user'}"),
        (["hello"], "messages[0] must be a ChatMessage, got str 'hello'"),
        ([HELLO, None], "messages[1] must be a ChatMessage, got NoneType None"),
    ],
)
async def test_a_block_given_messages_that_are_not_chat_messages_names_the_argument(messages: Any, problem: str):
    # Found by an adversarial run: aget("x") read the string's letters as messages and failed
    # inside with AttributeError: 'str' object has no attribute 'role'.
    corrections, pooled = poolsplit_memory_blocks(CURATED, POOLS)
    for block in (corrections, pooled):
        with pytest.raises(ArgumentError) as raised:
            await block.aget(messages, session_id="alice")
        assert str(raised.value) == problem
        with pytest.raises(ArgumentError) as raised:
            await block.aput(messages, session_id="alice")
        assert str(raised.value) == problem
    with pytest.raises(ArgumentError) as raised:
        pooled.store.flush(messages)
    assert str(raised.value) == problem
    assert [e["id"] for e in pooled.store.index.entries] == ["c1", "f1"]  # nothing written


async def test_blocks_still_take_a_tuple_of_messages_and_none():
    corrections, pooled = poolsplit_memory_blocks(CURATED, POOLS, write_gate=WriteGate(standing=None))
    assert (await corrections.aget(None)).startswith('<memory id="c1" pool="corrections" scope="always">\nAmounts')
    assert "Refunds round half-even." in await pooled.aget((HELLO,), session_id="alice")
    await pooled.aput((ChatMessage(role=MessageRole.USER, content="Refunds go to the card."),), session_id="alice")
    assert [e["content"] for e in pooled.store.index.entries][-1] == "user: Refunds go to the card."
    memory = Memory.from_defaults(session_id="alice", token_limit=2000, memory_blocks=[corrections, pooled])
    await memory.aput(HELLO)
    assert any("Refunds round half-even." in str(m.content) for m in await memory.aget())


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        (
            lambda post, given: post.postprocess_nodes(given, "refunds"),
            "query_bundle must be a QueryBundle or None (give a string as query_str=), got str 'refunds'",
        ),
        (lambda post, given: post.postprocess_nodes(None), "nodes must be a list of NodeWithScore, got NoneType None"),
        (
            lambda post, given: post.postprocess_nodes("refunds"),
            "nodes must be a list of NodeWithScore, got str 'refunds'",
        ),
    ],
)
async def test_a_postprocessor_given_a_wrong_argument_names_it(call: Any, problem: str):
    # Found by an adversarial run: the query as the second argument (LlamaIndex's
    # query_bundle) failed inside with 'str' object has no attribute 'query_str', and
    # nodes=None with 'NoneType' object is not iterable.
    post = PoolSplitNodePostprocessor(pools=POOLS)
    given = [NodeWithScore(node=TextNode(text="Refunds round half-even.", id_="f1", metadata={"type": "fact"}))]
    with pytest.raises(ArgumentError) as raised:
        call(post, given)
    assert str(raised.value) == problem
    kept = post.postprocess_nodes(tuple(given), query_bundle=QueryBundle("refunds"))  # a tuple is a list of nodes
    assert [n.node.node_id for n in kept] == ["f1"]


async def test_a_session_id_that_is_not_a_string_recalls_the_chat_it_flushed():
    # Found by an adversarial run: the flush wrote session 7's chat as session "7", and
    # aget(session_id=7) compared it with the int 7: the session never recalled its own chat.
    corrections, pooled = poolsplit_memory_blocks([], POOLS, write_gate=WriteGate(standing=None))
    await pooled.aput([ChatMessage(role=MessageRole.USER, content="remember the blue deploy")], session_id=7)
    asked = [ChatMessage(role=MessageRole.USER, content="deploy")]
    for session in (7, "7"):
        assert "user: remember the blue deploy" in await pooled.aget(asked, session_id=session)
    assert "user: remember the blue deploy" not in await pooled.aget(asked, session_id=8)
    assert pooled.store.expand_tool(7).call(entry_id=pooled.store.index.entries[0]["id"]).raw_output == (
        "user: remember the blue deploy"
    )
    # the search tool reads a session id as the blocks do (it refused the int the blocks took)
    found = create_search_memory_tool(pooled.store, session_id=7).call(query="blue deploy").content
    assert "user: remember the blue deploy" in found


@pytest.mark.parametrize(
    ("content", "tokens", "problem"),
    [
        (["text"], 3, "content must be a string (the pooled block's text), got list ['text']"),
        (None, "3", "tokens_to_truncate must be an int, got str '3'"),
    ],
)
async def test_truncating_the_pooled_block_with_wrong_types_names_the_argument(content: Any, tokens: Any, problem: str):
    # Found by an adversarial run: "unhashable type: 'list'" and "'<' not supported between
    # instances of 'int' and 'str'" from inside the store.
    _, pooled = poolsplit_memory_blocks(CURATED, POOLS)
    text = await pooled.aget([HELLO])
    with pytest.raises(ArgumentError) as raised:
        pooled.store.truncate_pooled(text if content is None else content, tokens)
    assert str(raised.value) == problem
    assert await pooled.atruncate(text, 1_000) == pooled.store.truncate_pooled(text, 1_000)


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        (3, "query must be a string or a QueryBundle, got int 3"),
        (b"x", "query must be a string or a QueryBundle, got bytes b'x'"),
    ],
)
async def test_retrieve_with_selection_given_a_query_that_is_not_text_names_it(query: Any, problem: str):
    # Found by an adversarial run: a pydantic error about RetrievalStartEvent from inside
    # LlamaIndex's instrumentation, and "'bytes' object has no attribute 'query_str'".
    retriever = PoolSplitRetriever(
        POOLS, [TextNode(text="Refunds round half-even.", id_="f1", metadata={"type": "fact"})]
    )
    for call in (retriever.retrieve_with_selection, retriever.aretrieve_with_selection):
        with pytest.raises(ArgumentError) as raised:
            result = call(query)
            if not isinstance(result, tuple):
                await result
        assert str(raised.value) == problem
    nodes, selection = retriever.retrieve_with_selection(QueryBundle("refunds"))
    assert [n.node.node_id for n in nodes] == ["f1"] and [c.entry["id"] for c in selection.chosen] == ["f1"]


STORE_HINT = "a PoolSplitMemoryStore (poolsplit_memory_blocks(entries, pools, store=...) builds the blocks on one)"


@pytest.mark.parametrize("block", [CorrectionsMemoryBlock, PooledMemoryBlock])
@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"store": {"a": 1}}, "store must be %s, got dict {'a': 1}" % STORE_HINT),
        ({"store": CURATED}, "store must be %s, got list %r" % (STORE_HINT, CURATED)),
        ({}, "store must be %s, got NoneType None" % STORE_HINT),
    ],
)
def test_a_block_given_a_store_that_is_not_one_names_it_in_one_line(block: Any, given: Any, problem: str):
    # Was a 4-line pydantic ValidationError ("Input should be an instance of PoolSplitMemoryStore").
    with pytest.raises(ArgumentError) as raised:
        block(**given)
    assert str(raised.value) == problem


def test_the_blocks_given_inside_another_list_say_how_to_give_them():
    # Was "AttributeError: 'list' object has no attribute 'name'" from Memory's validator.
    blocks = poolsplit_memory_blocks(CURATED, POOLS)
    with pytest.raises(AttributeError) as raised:
        Memory.from_defaults(session_id="u", token_limit=1500, memory_blocks=[blocks])
    assert str(raised.value) == (
        "memory_blocks holds the list poolsplit_memory_blocks() returns as one item (read as a block: no"
        " 'name'): give that list as memory_blocks= itself, or [*blocks, your_block]"
    )
    memory = Memory.from_defaults(session_id="u", token_limit=1500, memory_blocks=blocks)
    assert [b.name for b in memory.memory_blocks] == ["corrections", "long_term_memory"]
    assert type(memory.memory_blocks) is list and blocks == memory.memory_blocks


def test_a_tokenizer_fn_that_cannot_be_called_with_a_text_is_named():
    # Was "<lambda>() missing 1 required positional argument: 'b'" from the first count.
    with pytest.raises(ArgumentError) as raised:
        poolsplit_memory_blocks(CURATED, POOLS, tokenizer_fn=lambda text, model: [])
    assert (
        str(raised.value) == "tokenizer_fn must be callable as tokenizer_fn(text): missing a required argument: 'model'"
    )
    blocks = poolsplit_memory_blocks(CURATED, POOLS, tokenizer_fn=str.split)
    assert [b.name for b in blocks] == ["corrections", "long_term_memory"]


@pytest.mark.parametrize(
    "build",
    [
        lambda: PoolSplitRetriever(POOLS, [], show_selection_to_llm="yes"),
        lambda: PoolSplitNodePostprocessor(pools=POOLS, show_selection_to_llm="yes"),
    ],
)
def test_show_selection_to_llm_takes_true_or_false_only(build):
    # "yes" was read as True (pydantic's lax bool, or any truthy value), "no" as True too.
    with pytest.raises(ArgumentError) as raised:
        build()
    assert str(raised.value) == "show_selection_to_llm must be True or False, got str 'yes'"
