"""Hostile settings of the two write paths (the agent middleware's
``WriteConfig`` and LlamaIndex's ``PoolSplitMemoryStore``) are refused when
the object is built, each by the name of its field.

Found by an adversarial run: a configured entry type could stamp the
model's answers and notes as the user's ``instruction`` / ``preference`` /
``fact``; a LlamaIndex ``episode_priority``, ``episode_type`` or
``consolidator`` that no write can use failed only on the first flush, after
``Memory`` had archived the lines (lost, or kept and failing every later
flush); a consolidation delay of NaN or infinity was taken, and the thread's
consolidation never ran."""

from __future__ import annotations

import copy
import datetime
import math
import pickle
from typing import Any, Iterator, List

import pytest
from agent_fakes import UserContext, thread
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from pydantic import Field

from poolsplit_adapters import Pool
from poolsplit_adapters.background import BackgroundConsolidation
from poolsplit_adapters.errors import ArgumentError
from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, RecallConfig, RenderConfig, WriteConfig
from poolsplit_adapters.llama_index import PoolSplitMemoryStore, poolsplit_memory_blocks
from poolsplit_adapters.memory import WriteGate
from poolsplit_adapters.memory.standing import RULES
from poolsplit_adapters.stores import SQLiteMemoryStore

NOW = datetime.datetime(2026, 7, 1)
POOLS = [
    Pool("fixes", 0, 0, ("correction",)),
    Pool("standing", 300, 10, ("instruction", "preference")),
    Pool("recent", 400, 6, ("episode", "note", "fact")),
]


class Scripted(GenericFakeChatModel):
    """LangChain's fake chat model answering each call with the next answer."""

    messages: Iterator[Any] = Field(default_factory=lambda: iter(()))
    answers: List[str] = Field(default_factory=list)
    requests: List[List[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: List[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.requests.append(list(messages))
        self.messages = iter([AIMessage(self.answers[(len(self.requests) - 1) % len(self.answers)])])
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def build(**kwargs: Any) -> PoolSplitMemoryMiddleware:
    return PoolSplitMemoryMiddleware(POOLS, namespace=("memories", "u1"), now=NOW, **kwargs)


def quiet_memory(max_turns: int) -> PoolSplitMemoryMiddleware:
    """`build` keeping ``max_turns`` turns, with no ``remember`` tool (the
    model writes nothing: only the write path's own entries are stored)."""
    return build(max_turns=max_turns, write=WriteConfig(remember=False))


@pytest.mark.parametrize("field", ["episode_type", "note_type"])
@pytest.mark.parametrize(
    "kind", ["instruction", "preference", "fact", "Instruction", " preference ", "in\u200bstruction"]
)
def test_the_middleware_refuses_a_written_type_that_only_the_users_own_statements_have(field, kind):
    with pytest.raises(ArgumentError, match="^%s must be none of instruction, preference, fact" % field):
        build(write=WriteConfig(**{field: kind}))


@pytest.mark.parametrize("field", ["episode_type", "note_type"])
@pytest.mark.parametrize("kind", ["", " ", "\u200b", None, 3])
def test_the_middleware_refuses_a_written_type_that_shows_no_word(field, kind):
    with pytest.raises(ArgumentError, match="^%s must be a non-empty string" % field):
        build(write=WriteConfig(**{field: kind}))


def test_with_the_default_types_no_answer_of_the_model_is_stored_as_the_users_statement():
    # The assistant's words read as instructions and preferences; only the user's are stored so.
    store = InMemoryStore()
    model = Scripted(answers=["Always use spaces from now on. I prefer tabs. My name is Claude."])
    memory = build(max_turns=1, write=WriteConfig(remember=False))
    agent = create_agent(
        model, middleware=[memory], checkpointer=InMemorySaver(), store=store, context_schema=UserContext
    )
    for text in ("Always use tabs.", "ok", "thanks"):
        agent.invoke({"messages": [("user", text)]}, thread("t"), context={"user_id": "u1"})
    stored = [item.value for item in store.search(("memories", "u1"), limit=100)]
    assert sorted(e["content"] for e in stored if e["type"] in ("instruction", "preference", "fact")) == [
        "Always use tabs."
    ]
    assert any(e["content"].startswith("assistant: Always use spaces") for e in stored)


@pytest.mark.parametrize("delay", [-1, math.nan, math.inf, "1", True])
def test_a_consolidation_delay_no_schedule_can_keep_is_refused_with_or_without_a_consolidator(delay):
    with pytest.raises(ArgumentError, match="consolidation_delay: .*finite number of seconds >= 0"):
        build(write=WriteConfig(consolidation_delay=delay))
    with pytest.raises(ValueError, match="finite number of seconds"):
        BackgroundConsolidation(Scripted(answers=["[]"]), delay=delay)


def test_one_config_shared_by_two_middlewares_is_neither_changed_nor_shared_state():
    recall, write, render = RecallConfig(fetch_k=7), WriteConfig(remember=False), RenderConfig(heading="Known:")
    before = (repr(recall), repr(write), repr(render))
    first = build(recall=recall, write=write, render=render)
    second = build(recall=recall, write=write, render=render)
    assert (repr(recall), repr(write), repr(render)) == before
    assert first.settings is not second.settings
    assert (first.heading, second.heading) == ("Known:", "Known:")


# -- LlamaIndex: checked when the store is built, before Memory archives any line ----


@pytest.mark.parametrize(
    "options, message",
    [
        ({"episode_type": "instruction"}, "^episode_type must be none of instruction, preference, fact"),
        ({"episode_type": "Preference"}, "^episode_type must be none of instruction, preference, fact"),
        ({"episode_type": None}, "^episode_type must be a non-empty string"),
        ({"episode_type": ""}, "^episode_type must be a non-empty string"),
        ({"episode_priority": math.nan}, "^episode_priority must be a finite number"),
        ({"episode_priority": math.inf}, "^episode_priority must be a finite number"),
        ({"episode_priority": "2"}, "^episode_priority must be a finite number"),
        ({"episode_priority": True}, "^episode_priority must be a finite number"),
        ({"episode_priority": 1e301}, "^episode_priority is 1e\\+301, beyond MAX_PRIORITY"),
        ({"share_chat": "no"}, "^share_chat must be True or False"),
        ({"flush_filter": 5}, "^flush_filter must be callable"),
        ({"consolidator": 5}, "^consolidator: consolidate needs"),
        ({"priority": "2"}, "^priority must be an int >= 1"),
        ({"priority": True}, "^priority must be an int >= 1"),
        ({"priority": math.nan}, "^priority must be an int >= 1"),
    ],
)
def test_the_llama_index_store_refuses_what_no_flush_could_write_before_any_line_is_archived(options, message):
    with pytest.raises(ArgumentError, match=message):
        poolsplit_memory_blocks([], POOLS, **options)


def test_a_flush_through_memory_with_a_checked_store_writes_every_line_and_retries_nothing(tmp_path):
    durable = SQLiteMemoryStore(tmp_path / "m.db")
    blocks = poolsplit_memory_blocks([], POOLS, store=durable, now=NOW, episode_priority=1)
    memory = Memory.from_defaults(
        session_id="alice", token_limit=60, chat_history_token_ratio=0.5, token_flush_size=20, memory_blocks=blocks
    )
    for n in range(6):
        memory.put(ChatMessage(role="user", content="Always number the steps, round %d of the plan." % n))
        memory.put(ChatMessage(role="assistant", content="I prefer bullets myself, round %d." % n))
    memory.get()  # flushes
    store = blocks[1].store
    assert isinstance(store, PoolSplitMemoryStore) and store.unflushed == 0
    stored = durable.entries()
    assert stored, "the flush wrote nothing"
    assert all(e["content"].startswith("Always number") for e in stored if e["type"] == "instruction")
    assert not [e for e in stored if e["type"] == "preference"]  # the model's "I prefer" is its own episode
    # the user's standing statements keep the default priority; the flushed lines take the store's
    assert {e.get("base_priority") for e in stored if e["type"] == "episode"} == {1}
    assert {e.get("base_priority", 5) for e in stored if e["type"] == "instruction"} == {5}


@pytest.mark.parametrize("field, value", [("standing", "x"), ("part_chars", "10"), ("max_chars", -1), ("new", 1)])
def test_a_write_gate_shared_with_a_middleware_cannot_be_changed_after_it_was_checked(field, value):
    # Set after the middleware checked it, ``standing="x"`` or ``part_chars="10"`` failed
    # deep inside the write of a later turn (AttributeError, TypeError).
    gate = WriteGate(max_chars=4000)
    build(write=WriteConfig(write_gate=gate))
    with pytest.raises(AttributeError, match=r"^WriteGate\.%s cannot be changed once the gate is built" % field):
        setattr(gate, field, value)
    assert (gate.max_chars, gate.part_chars, gate.standing) == (4000, 1000, RULES)
    twin = copy.deepcopy(pickle.loads(pickle.dumps(gate)))
    assert (twin.max_chars, twin.part_chars) == (4000, 1000) and twin.standing is not None


@pytest.mark.parametrize("field", ["total_tokens", "total_entries"])
def test_an_auto_total_beyond_the_largest_cost_is_refused_when_built_not_after_the_model_call(field):
    # 10**30 was taken; the plan's budgets reached the selection event kept in the agent's
    # state, and the checkpointer failed after the model call ("Integer exceeds 64-bit range").
    totals = {"total_tokens": 1200, "total_entries": 12, field: 10**30}
    with pytest.raises(ArgumentError, match="^PoolSplitMemoryMiddleware: %s is 10+, beyond MAX_COST" % field):
        PoolSplitMemoryMiddleware("auto", namespace=("memories", "u1"), recall=RecallConfig(**totals))
    largest = {"total_tokens": 1200, "total_entries": 12, field: 2**53 - 1}
    memory = PoolSplitMemoryMiddleware(
        "auto",
        namespace=("memories", "u1"),
        max_turns=1,
        recall=RecallConfig(**largest),
        write=WriteConfig(remember=False),
    )
    agent = create_agent(
        Scripted(answers=["ok"]),
        middleware=[memory],
        checkpointer=InMemorySaver(),
        store=InMemoryStore(),
        context_schema=UserContext,
    )
    for text in ("Always use tabs.", "ok", "more"):
        agent.invoke({"messages": [("user", text)]}, thread("t"), context={"user_id": "u1"})
    assert memory.last_selection is not None and memory.last_selection.chosen
