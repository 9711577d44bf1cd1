"""The memory-search tools, driven by the real frameworks: a LangChain
``create_agent`` agent whose fake chat model calls ``search_memory``, and a
LlamaIndex ``FunctionAgent`` / ``AgentWorkflow`` on ``MockFunctionCallingLLM``.
The model reads the selected entries and the why-not lines, from its own
namespace only; a bad query comes back to it as an error it can correct."""

from __future__ import annotations

import asyncio
import copy
import datetime
from typing import Any, Iterator, List

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.store.memory import InMemoryStore
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import Memory
from llama_index.core.tools import FunctionTool
from pydantic import Field

from poolsplit_adapters import Pool, Visibility
from poolsplit_adapters.checks import ArgumentError
from poolsplit_adapters.langchain import BaseStoreMemory, RecallConfig, create_search_memory_tool
from poolsplit_adapters.llama_index import PoolSplitMemoryStore, poolsplit_memory_blocks
from poolsplit_adapters.llama_index import create_search_memory_tool as llama_search_tool
from poolsplit_adapters.poolsplit import default_scorer
from poolsplit_adapters.render import marker_tokens, parse_markers
from poolsplit_adapters.reports import capture_selections
from poolsplit_adapters.search_tool import NOTHING_SELECTED, SEARCH_TOOL_NAME, answer
from poolsplit_adapters.stores import SQLiteMemoryStore
from poolsplit_adapters.tokens import default_counter, llama_index_counter

NOW = datetime.datetime(2026, 7, 1, 9)
POOLS = [Pool("corrections", 0, 0, ("correction",)), Pool("notes", 10, 5, ("note",), min_relevance=0.1)]


def counted_pools(counter: Any) -> List[Pool]:
    """`POOLS` for entries the tool counts itself (no ``token_count``): the
    tools render markers, and count each one beside its entry's text."""
    return [POOLS[0], Pool("notes", 10 + marker_tokens(counter, "corrections"), 5, ("note",), min_relevance=0.1)]


def at(day: int) -> str:
    return "2026-06-%02dT09:00:00Z" % day


ANA = [
    {"id": "cents", "type": "correction", "scope": "always", "source": "user:ana", "created": at(1),
     "content": "Quote amounts in integer cents."},
    {"id": "n-round", "type": "note", "source": "thread:t1", "created": at(2), "token_count": 10,
     "content": "Refunds are rounded down to the cent."},
    {"id": "n-ledger", "type": "note", "source": "thread:t1", "created": at(3), "token_count": 10,
     "content": "Refund totals come from the nightly ledger job."},
    {"id": "n-lunch", "type": "note", "source": "thread:t2", "created": at(4), "token_count": 10,
     "content": "Lunch is at noon on Fridays."},
]  # fmt: skip
BOB = [
    {"id": "b-refund", "type": "note", "source": "thread:b1", "created": at(5), "token_count": 10,
     "content": "Bob's refunds are approved by Carol."},
]  # fmt: skip

#: What Ana's search for the rounding reads: the correction first, the best
#: note within the notes budget, then one line per cause for what was cut.
ANA_ROUNDING = (
    '<memory id="cents" source="user:ana" at="2026-06-01T09:00:00Z" pool="corrections" scope="always">\n'
    "Quote amounts in integer cents.\n"
    "</memory>\n"
    '<memory id="n-round" source="thread:t1" at="2026-06-02T09:00:00Z" pool="notes">\n'
    "Refunds are rounded down to the cent.\n"
    "</memory>\n"
    "[1 more entry left out by budget: notes 1]\n"
    "[1 more entry left out below the relevance threshold: notes 1]"
)
BOB_APPROVAL = (
    '<memory id="b-refund" source="thread:b1" at="2026-06-05T09:00:00Z" pool="notes">\n'
    "Bob's refunds are approved by Carol.\n"
    "</memory>"
)


def shared_store() -> InMemoryStore:
    """One LangGraph store holding two users' memories."""
    store = InMemoryStore()
    BaseStoreMemory(store, ("memories", "ana")).put_many(ANA)
    BaseStoreMemory(store, ("memories", "bob")).put_many(BOB)
    return store


# -- LangChain: create_agent --------------------------------------------------------------


class SearchingModel(GenericFakeChatModel):
    """LangChain's fake chat model, tool-calling: it searches its memory for
    the user's message, then answers ``"done"``; every request is kept."""

    messages: Iterator[Any] = Field(default_factory=lambda: iter(()))
    requests: List[List[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> SearchingModel:  # type: ignore[override]
        return self

    def _generate(self, messages: List[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.requests.append(list(messages))
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage("done")
        else:
            call = {"name": SEARCH_TOOL_NAME, "args": {"query": str(last.text)}, "id": "s%d" % len(self.requests)}
            reply = AIMessage("", tool_calls=[call])
        self.messages = iter([reply])
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def by_user(runtime: Any) -> tuple[str, str]:
    return ("memories", runtime.context["user_id"])


def tool_answer(result: dict[str, Any]) -> ToolMessage:
    (message,) = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    return message


def test_agent_search_returns_the_selection_and_the_why_not_lines():
    tool = create_search_memory_tool(POOLS, namespace=by_user, now=NOW)
    agent = create_agent(SearchingModel(), tools=[tool], store=shared_store(), context_schema=dict)
    with capture_selections() as seen:
        result = agent.invoke({"messages": [("user", "how are refunds rounded?")]}, context={"user_id": "ana"})
    message = tool_answer(result)
    assert (message.content, message.status, message.name) == (ANA_ROUNDING, "success", SEARCH_TOOL_NAME)
    assert result["messages"][-1].content == "done"
    # The call's selection is reported like every adapter's: what was cut, and why.
    (selection,) = seen
    assert [c.entry["id"] for c in selection.chosen] == ["cents", "n-round"]
    assert sorted((d.entry["id"], d.reason.value) for d in selection.dropped) == [
        ("n-ledger", "token_budget"),
        ("n-lunch", "below_relevance"),
    ]


def test_agent_search_async_gives_the_same_answer():
    tool = create_search_memory_tool(POOLS, namespace=by_user, now=NOW)
    agent = create_agent(SearchingModel(), tools=[tool], store=shared_store(), context_schema=dict)
    result = asyncio.run(
        agent.ainvoke({"messages": [("user", "how are refunds rounded?")]}, context={"user_id": "ana"})
    )
    assert tool_answer(result).content == ANA_ROUNDING


@pytest.mark.parametrize("kind", ["runtime InMemoryStore", "SQLite store", "list of entries"])
def test_agent_search_never_returns_another_namespace(kind, tmp_path):
    entries = [dict(e, namespace="memories.ana") for e in ANA] + [dict(e, namespace="memories.bob") for e in BOB]
    if kind == "runtime InMemoryStore":
        fixed, runtime_store = None, shared_store()
    elif kind == "SQLite store":
        fixed, runtime_store = SQLiteMemoryStore(tmp_path / "memory.db"), None
        fixed.add(entries)
    else:
        fixed, runtime_store = entries, None
    tool = create_search_memory_tool(POOLS, namespace=by_user, store=fixed, now=NOW)
    agent = create_agent(SearchingModel(), tools=[tool], store=runtime_store, context_schema=dict)
    question = {"messages": [("user", "Bob's refunds are approved by Carol.")]}
    # Bob's note matches word for word, and still never reaches Ana.
    ana = tool_answer(agent.invoke(question, context={"user_id": "ana"})).content
    assert "Carol" not in ana and "b-refund" not in ana
    assert ana.startswith('<memory id="cents"')
    assert tool_answer(agent.invoke(question, context={"user_id": "bob"})).content == BOB_APPROVAL
    if isinstance(fixed, SQLiteMemoryStore):
        fixed.close()


def test_agent_search_of_a_blank_query_is_an_error_the_model_reads():
    tool = create_search_memory_tool(POOLS, namespace=by_user, now=NOW)
    agent = create_agent(SearchingModel(), tools=[tool], store=shared_store(), context_schema=dict)
    message = tool_answer(agent.invoke({"messages": [("user", "  ")]}, context={"user_id": "ana"}))
    assert (message.status, message.content) == (
        "error",
        "search_memory: query must be a non-blank string, got str '  '",
    )


@pytest.mark.parametrize("query", ["\u200b", "\u200b\u00ad \ufeff", "\ufffd"])
def test_agent_search_of_a_query_that_shows_nothing_is_an_error_the_model_reads(query):
    # Blank by the one rule of "shows nothing" (write_gate.blank): a
    # zero-width space was searched as a query and answered by recency alone.
    tool = create_search_memory_tool(POOLS, namespace=by_user, now=NOW)
    agent = create_agent(SearchingModel(), tools=[tool], store=shared_store(), context_schema=dict)
    message = tool_answer(agent.invoke({"messages": [("user", query)]}, context={"user_id": "ana"}))
    assert (message.status, message.content) == (
        "error",
        "search_memory: query must be a non-blank string, got str %r" % query,
    )


def test_search_tool_arguments_are_checked_by_name():
    with pytest.raises(ArgumentError, match="name must be a non-empty string, got str ''"):
        create_search_memory_tool(POOLS, namespace=("memories", "ana"), name="")
    with pytest.raises(ArgumentError, match="description must be a string, got NoneType None"):
        create_search_memory_tool(POOLS, namespace=("memories", "ana"), description=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="store must be a LangGraph BaseStore"):
        create_search_memory_tool(POOLS, namespace=("memories", "ana"), store=42)
    with pytest.raises(TypeError, match="pools"):
        create_search_memory_tool("notes", namespace=("memories", "ana"))
    with pytest.raises(ValueError, match="namespace"):
        create_search_memory_tool(POOLS, namespace=("memories", ""))


def test_search_tool_takes_the_middlewares_recall_config_and_names_it_for_a_flat_keyword():
    entries = [
        {"id": "n1", "type": "note", "namespace": "memories.ana", "content": "Refunds are rounded in cents."},
        {"id": "n2", "type": "note", "namespace": "memories.ana", "content": "Deploys happen on Tuesdays."},
    ]
    scored: List[str] = []

    def scorer(entry: Any, context: Any, *, now: Any = None) -> float:
        scored.append(entry["id"])
        return default_scorer(entry, context, now=now)

    tool = create_search_memory_tool(
        counted_pools(default_counter()),
        namespace=("memories", "ana"),
        store=entries,
        now=NOW,
        recall=RecallConfig(scorer=scorer),
    )
    runtime = ToolRuntime(state={}, context={}, config={}, stream_writer=print, tool_call_id=None, store=None)
    assert "Refunds are rounded in cents." in tool.invoke({"query": "refunds", "runtime": runtime})
    assert sorted(set(scored)) == ["n1", "n2"]  # the config's scorer ranked the candidates
    with pytest.raises(TypeError, match=r"scorer= is recall=RecallConfig\(scorer=...\) since 0.3"):
        create_search_memory_tool(POOLS, namespace=("memories", "ana"), scorer=default_scorer)
    with pytest.raises(TypeError, match=r"remember= is not a keyword of create_search_memory_tool"):
        create_search_memory_tool(POOLS, namespace=("memories", "ana"), remember=False)


def test_search_tool_without_a_store_or_namespace_says_so():
    tool = create_search_memory_tool(POOLS, namespace=by_user, now=NOW)
    agent = create_agent(SearchingModel(), tools=[tool], context_schema=dict)  # no store
    with pytest.raises(ValueError, match=r"create_search_memory_tool has no store: pass store= or give one"):
        agent.invoke({"messages": [("user", "refunds")]}, context={"user_id": "ana"})
    agent = create_agent(SearchingModel(), tools=[tool], store=shared_store(), context_schema=dict)
    with pytest.raises(ValueError, match=r"namespace\(runtime\) failed: KeyError: 'user_id'"):
        agent.invoke({"messages": [("user", "refunds")]}, context={"name": "Ana"})


def test_the_callers_entries_are_never_changed():
    entries = [dict(e, namespace="memories.ana") for e in ANA]
    before = copy.deepcopy(entries)
    tool = create_search_memory_tool(POOLS, namespace=("memories", "ana"), store=entries, now=NOW)
    agent = create_agent(SearchingModel(), tools=[tool], context_schema=dict)
    assert tool_answer(agent.invoke({"messages": [("user", "how are refunds rounded?")]})).content == ANA_ROUNDING
    assert entries == before


def test_an_empty_selection_says_so_with_what_was_cut():
    from poolsplit_adapters import select

    notes = [{"id": "a", "type": "note", "content": "Lunch is at noon.", "token_count": 3}]
    picked = select(notes, [Pool("notes", 10, 5, min_relevance=0.1)], {"message": "refunds"})
    assert answer(picked) == NOTHING_SELECTED + "\n[1 more entry left out below the relevance threshold: notes 1]"
    assert answer(select([], [Pool("notes", 10, 5)], {"message": "refunds"})) == NOTHING_SELECTED


# -- LlamaIndex: FunctionAgent, AgentWorkflow ---------------------------------------------


def searching_llm(seen: List[List[ChatMessage]], answers: List[str]) -> MockFunctionCallingLLM:
    """LlamaIndex's mock function-calling LLM: it searches for the user's
    message, then answers ``"done"``; each call's messages and each tool
    answer are kept."""

    def respond(messages: List[ChatMessage], **kwargs: Any) -> ChatMessage:
        seen.append(list(messages))
        results = [m for m in messages if m.role == MessageRole.TOOL]
        if results:
            answers.extend(str(m.content) for m in results)
            return ChatMessage(role=MessageRole.ASSISTANT, content="done")
        question = next(str(m.content) for m in reversed(messages) if m.role == MessageRole.USER)
        call = ToolCallBlock(tool_call_id="s1", tool_name=SEARCH_TOOL_NAME, tool_kwargs={"query": question})
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])

    return MockFunctionCallingLLM(response_generator=respond)


@pytest.fixture
def sqlite_two_users(tmp_path):
    with SQLiteMemoryStore(tmp_path / "memory.db") as store:
        store.add([dict(e, namespace="ana") for e in ANA] + [dict(e, namespace="bob") for e in BOB])
        yield store


def ana_memory(store: SQLiteMemoryStore, session: str = "ana") -> Memory:
    blocks = poolsplit_memory_blocks([], POOLS, store=store, visibility=Visibility(namespace="ana"), now=NOW)
    return Memory.from_defaults(session_id=session, token_limit=4000, memory_blocks=blocks)


async def test_function_agent_search_reads_the_selection_and_the_correction_on_every_call(sqlite_two_users):
    memory = ana_memory(sqlite_two_users)
    seen: List[List[ChatMessage]] = []
    answers: List[str] = []
    agent = FunctionAgent(tools=[llama_search_tool(memory)], llm=searching_llm(seen, answers))
    result = await agent.run(user_msg="how are refunds rounded?", memory=memory)
    assert str(result) == "done"
    assert answers == [ANA_ROUNDING]
    # Two LLM calls (the search, the answer): the correction is in the system message of both.
    assert [m[0].role for m in seen] == [MessageRole.SYSTEM, MessageRole.SYSTEM]
    assert ["Quote amounts in integer cents." in str(m[0].content) for m in seen] == [True, True]


async def test_agent_workflow_search_is_scoped_to_the_memorys_namespace(sqlite_two_users):
    memory = ana_memory(sqlite_two_users)
    seen: List[List[ChatMessage]] = []
    answers: List[str] = []
    agent = FunctionAgent(
        name="assistant",
        description="Answers from memory.",
        tools=[llama_search_tool(memory)],
        llm=searching_llm(seen, answers),
    )
    workflow = AgentWorkflow(agents=[agent], root_agent="assistant")
    await workflow.run(user_msg="Bob's refunds are approved by Carol.", memory=memory)
    (ana,) = answers
    assert "Carol" not in ana and "b-refund" not in ana
    assert ana.startswith('<memory id="cents"')


def test_llama_search_tool_reads_its_sessions_chat_only(sqlite_two_users):
    pools = counted_pools(llama_index_counter())  # the flushed line has no token_count
    store = PoolSplitMemoryStore(
        [], pools, store=sqlite_two_users, visibility=Visibility(namespace="ana"), episode_type="note", now=NOW
    )
    store.flush([ChatMessage(role="user", content="my locker code is 4417", additional_kwargs={"session_id": "s-1"})])
    mine = llama_search_tool(store, session_id="s-1").call(query="locker code")
    other = llama_search_tool(store, session_id="s-2").call(query="locker code")
    fix = "Quote amounts in integer cents."
    assert [m["content"] for m in parse_markers(mine.content)] == [fix, "user: my locker code is 4417"]
    assert [m["content"] for m in parse_markers(other.content)] == [fix]


async def test_llama_search_of_a_blank_query_is_an_error_the_model_reads(sqlite_two_users):
    memory = ana_memory(sqlite_two_users)
    answers: List[str] = []

    def respond(messages: List[ChatMessage], **kwargs: Any) -> ChatMessage:
        results = [m for m in messages if m.role == MessageRole.TOOL]
        if results:
            answers.extend(str(m.content) for m in results)
            return ChatMessage(role=MessageRole.ASSISTANT, content="done")
        call = ToolCallBlock(tool_call_id="s1", tool_name=SEARCH_TOOL_NAME, tool_kwargs={"query": ""})
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])

    agent = FunctionAgent(tools=[llama_search_tool(memory)], llm=MockFunctionCallingLLM(response_generator=respond))
    await agent.run(user_msg="what do you remember?", memory=memory)
    assert answers == ["query must be a non-blank string, got str ''"]


def test_llama_search_tool_arguments_are_checked_by_name(sqlite_two_users):
    memory = ana_memory(sqlite_two_users)
    tool = llama_search_tool(memory)
    assert isinstance(tool, FunctionTool) and tool.metadata.name == SEARCH_TOOL_NAME
    with pytest.raises(ArgumentError, match="memory must be a Memory with poolsplit_memory_blocks or a PoolSplit"):
        llama_search_tool([])
    with pytest.raises(ArgumentError, match="session_id: give it with a PoolSplitMemoryStore only"):
        llama_search_tool(memory, session_id="bob")
    with pytest.raises(ArgumentError, match="memory must hold the blocks of one PoolSplitMemoryStore"):
        llama_search_tool(Memory.from_defaults(session_id="ana"))
    with pytest.raises(ArgumentError, match="session_id .* contains NUL"):  # a session id no store holds as it is
        llama_search_tool(PoolSplitMemoryStore([], POOLS), session_id="a\x00b")
    with pytest.raises(ArgumentError, match="query must be a non-blank string, got NoneType None"):
        tool.call(query=None)
