"""expand(): full text by id, from every kind of source; and the agent tools
built on it, exercised through the real frameworks (a LangChain tool call
from a fake chat model, a LlamaIndex FunctionAgent on MockFunctionCallingLLM)."""

from __future__ import annotations

import datetime
from typing import List

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool

from poolsplit_adapters import MemoryIndex, Pool
from poolsplit_adapters.memory.expand import UnknownEntryError, expand, find_entry
from poolsplit_adapters.memory.expand_tools import EXPAND_TOOL_NAME, langchain_expand_tool, llama_index_expand_tool
from poolsplit_adapters.memory.progressive import progressive_select
from poolsplit_adapters.render import parse_markers, render_context

NOW = datetime.datetime(2026, 11, 20, 9)
ENTRIES = [
    {"id": "ep-1", "type": "episode", "content": "The whole story of the outage, step by step.", "summary": "Outage"},
    {"id": "ep-2", "type": "episode", "content": "Second episode in full.", "summary": "Second"},
    {"id": "ep-3", "type": "episode", "content": "Third episode in full.", "summary": "Third"},
]


class Store:
    """A store that looks entries up by id (the protocol expand() accepts)."""

    def __init__(self, entries):  # noqa: ANN001
        self.by_id = {e["id"]: e for e in entries}

    def get(self, entry_id):  # noqa: ANN001
        return self.by_id.get(entry_id)


@pytest.mark.parametrize(
    "source",
    [ENTRIES, tuple(ENTRIES), iter(ENTRIES), {e["id"]: e for e in ENTRIES}, MemoryIndex(ENTRIES), Store(ENTRIES)],
    ids=["list", "tuple", "iterator", "mapping", "MemoryIndex", "store"],
)
def test_expand_from_every_kind_of_source(source):
    assert expand(source, "ep-1") == "The whole story of the outage, step by step."


def test_unknown_ids_and_bad_ids_are_clear():
    with pytest.raises(UnknownEntryError, match=r"no memory entry with id 'ep-9' \(searched 3 entries\); use an id"):
        expand(ENTRIES, "ep-9")
    with pytest.raises(UnknownEntryError, match=r"'ep-9' \(searched 3 entries\)"):
        expand({e["id"]: e for e in ENTRIES}, "ep-9")
    with pytest.raises(UnknownEntryError) as err:
        expand(Store(ENTRIES), "nope")
    assert err.value.entry_id == "nope"
    # A model's long id is abridged in the sentence it reads back (whole on the error).
    with pytest.raises(UnknownEntryError) as err:
        expand(ENTRIES, "x" * 100_000)
    assert str(err.value) == (
        "no memory entry with id %r... (100000 characters) (searched 3 entries); use an id from a <memory id=...> marker"
        % ("x" * 100)
    )
    assert err.value.entry_id == "x" * 100_000
    with pytest.raises(TypeError, match="entry_id must be a non-empty string"):
        expand(ENTRIES, "")
    with pytest.raises(TypeError, match="field 'content' must be a string"):
        expand([{"id": "x", "content": None}], "x")
    assert find_entry(ENTRIES, "ep-2") is ENTRIES[1]


def test_summary_markers_name_ids_that_expand_to_the_full_text():
    picked = progressive_select(ENTRIES, [Pool("episodes", 100, 3, ("episode",))], {"message": "outage"}, now=NOW)
    markers = parse_markers(render_context(picked).text)
    assert [m["layer"] for m in markers] == ["summary"] * 3
    assert {m["id"]: expand(ENTRIES, m["id"]) for m in markers} == {e["id"]: e["content"] for e in ENTRIES}


# -- LangChain ----------------------------------------------------------------------------


def test_langchain_tool_answers_a_model_tool_call():
    tool = langchain_expand_tool(ENTRIES)
    assert tool.name == EXPAND_TOOL_NAME and 'layer="summary"' in tool.description
    assert set(tool.args) == {"entry_id"}
    calls = [
        {"name": EXPAND_TOOL_NAME, "args": {"entry_id": "ep-1"}, "id": "call-1", "type": "tool_call"},
        {"name": EXPAND_TOOL_NAME, "args": {"entry_id": "ep-404"}, "id": "call-2", "type": "tool_call"},
    ]
    model = GenericFakeChatModel(messages=iter([AIMessage(content="", tool_calls=calls)]))
    reply = model.invoke("what happened in the outage?")
    results: List[ToolMessage] = [tool.invoke(call) for call in reply.tool_calls]
    assert results[0].content == "The whole story of the outage, step by step."
    assert results[0].tool_call_id == "call-1" and results[0].status == "success"
    # An unknown id goes back to the model as an error it can act on, not an exception.
    assert results[1].status == "error"
    assert "no memory entry with id 'ep-404'" in results[1].content


# -- LlamaIndex ---------------------------------------------------------------------------


def test_llama_index_function_tool():
    tool = llama_index_expand_tool({e["id"]: e for e in ENTRIES})
    assert isinstance(tool, FunctionTool) and tool.metadata.name == EXPAND_TOOL_NAME
    assert tool.call(entry_id="ep-2").content == "Second episode in full."
    with pytest.raises(UnknownEntryError):
        tool.call(entry_id="ep-404")


async def test_llama_index_agent_expands_a_summary_by_id():
    seen: List[str] = []

    def respond(messages, **kwargs):  # noqa: ANN001
        tool_results = [m for m in messages if m.role == MessageRole.TOOL]
        if not tool_results:
            return ChatMessage(
                role=MessageRole.ASSISTANT,
                blocks=[
                    ToolCallBlock(tool_call_id="c1", tool_name=EXPAND_TOOL_NAME, tool_kwargs={"entry_id": "ep-1"}),
                    ToolCallBlock(tool_call_id="c2", tool_name=EXPAND_TOOL_NAME, tool_kwargs={"entry_id": "ep-404"}),
                ],
            )
        seen.extend(str(m.content) for m in tool_results)
        return ChatMessage(role=MessageRole.ASSISTANT, content="read: " + tool_results[0].content)

    agent = FunctionAgent(
        tools=[llama_index_expand_tool(ENTRIES)], llm=MockFunctionCallingLLM(response_generator=respond)
    )
    result = await agent.run(user_msg="tell me about ep-1 in full")
    assert str(result) == "read: The whole story of the outage, step by step."
    assert seen[0] == "The whole story of the outage, step by step."
    assert "no memory entry with id 'ep-404'" in seen[1]
