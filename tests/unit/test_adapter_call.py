"""The one adapter call (``poolsplit_adapters.call``) and the settings every
adapter class shares: one default scorer, one default token counter, the
plan checked once at construction and once per call, the ``k`` cap."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from langchain_core.documents import Document
from langgraph.store.memory import InMemoryStore
from llama_index.core.schema import TextNode

import poolsplit_adapters.index as index_module
import poolsplit_adapters.poolsplit as core
import poolsplit_adapters.render as render
import poolsplit_adapters.settings as settings_module
from poolsplit_adapters import Pool, select
from poolsplit_adapters.call import AdapterCall, cap
from poolsplit_adapters.checks import ArgumentError
from poolsplit_adapters.langchain import (
    PoolSplitCompressor,
    PoolSplitMemoryMiddleware,
    PoolSplitRetriever,
    RecallConfig,
)
from poolsplit_adapters.llama_index import PoolSplitMemoryStore, PoolSplitNodePostprocessor
from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaRetriever
from poolsplit_adapters.render import RenderedCounter
from poolsplit_adapters.settings import AdapterSettings
from poolsplit_adapters.tokens import default_counter, llama_index_counter

POOLS = [Pool("a", 100, 3), Pool("b", 100, 3)]
#: The adapters that render their selection into a prompt as markers.
RENDERED = {"middleware", "memory blocks' store"}


def settings_of_every_adapter_class() -> dict[str, Any]:
    """The settings each of the seven adapter classes selects with (the two
    memory blocks select through the store they share)."""
    middleware = PoolSplitMemoryMiddleware(POOLS, namespace=("memories", "u1"), store=InMemoryStore())
    return {
        "langchain retriever": PoolSplitRetriever(documents=[], pools=POOLS),
        "langchain compressor": PoolSplitCompressor(pools=POOLS),
        "middleware": middleware.settings,
        "llama_index retriever": LlamaRetriever(POOLS, []).settings,
        "llama_index postprocessor": PoolSplitNodePostprocessor(pools=POOLS),
        "memory blocks' store": PoolSplitMemoryStore([], POOLS).settings,
    }


def test_every_adapter_class_takes_its_default_scorer_from_one_function(monkeypatch):
    def chosen(entry: Any, context: Any, *, now: Any = None) -> float:
        return 1.0

    monkeypatch.setattr(settings_module, "default_adapter_scorer", lambda: chosen)
    assert {name: s.scorer for name, s in settings_of_every_adapter_class().items()} == dict.fromkeys(
        settings_of_every_adapter_class(), chosen
    )


def test_the_default_token_counter_is_the_frameworks_and_resolved_once():
    found = settings_of_every_adapter_class()
    langchain = {"langchain retriever", "langchain compressor", "middleware"}
    # The two that render markers into a prompt count them too, over the same counter.
    assert {name for name, s in found.items() if isinstance(s.token_counter, RenderedCounter)} == RENDERED
    inner = {name: getattr(s.token_counter, "inner", s.token_counter) for name, s in found.items()}
    assert {name for name in found if inner[name] is default_counter()} == langchain
    assert {name for name in found if inner[name] is llama_index_counter()} == set(found) - langchain


@pytest.mark.parametrize(
    "build",
    [
        lambda **kw: PoolSplitCompressor(**kw),
        lambda pools, total_tokens=None: PoolSplitMemoryMiddleware(
            pools, namespace=("memories", "u1"), store=[], recall=RecallConfig(total_tokens=total_tokens)
        ),
        lambda **kw: PoolSplitMemoryStore([], **kw),
        lambda **kw: LlamaRetriever(nodes=[], **kw),
    ],
)
def test_a_bad_plan_fails_at_construction_with_one_error_shape(build: Callable[..., Any]):
    with pytest.raises(ArgumentError, match="needs total_tokens, the token budget"):
        build(pools="auto")
    with pytest.raises(ArgumentError, match="apply only to pools='auto'"):
        build(pools=POOLS, total_tokens=10)
    with pytest.raises(ArgumentError, match=r"pools: duplicate pool name: 'a'"):
        build(pools=[Pool("a", 1, 1), Pool("a", 1, 1)])
    with pytest.raises(ArgumentError, match="not a single Pool"):
        build(pools=Pool("a", 1, 1))


def test_a_call_adds_no_plan_check_to_the_cores_own(monkeypatch):
    # Per call only the core's select checks the plan.
    calls: list[str] = []
    real = core.check_pools

    def counting(pools: Any) -> Any:
        calls.append("check")
        return real(pools)

    documents = [Document("x", metadata={"type": "note"})]
    retriever = PoolSplitRetriever(documents=documents, pools=POOLS)
    compressor = PoolSplitCompressor(pools=POOLS)
    monkeypatch.setattr(core, "check_pools", counting)
    monkeypatch.setattr(index_module, "check_pools", counting)
    select([{"content": "x"}], POOLS)
    by_the_core = len(calls)
    calls.clear()
    compressor.compress_documents(documents, "x")
    assert len(calls) == by_the_core
    calls.clear()
    index_module.MemoryIndex([{"content": "x"}]).select(POOLS, {"message": "x"})
    by_the_index = len(calls)
    calls.clear()
    retriever.invoke("x")
    assert len(calls) == by_the_index


@pytest.mark.parametrize(
    "build",
    [
        lambda: PoolSplitCompressor(pools=POOLS),
        lambda: LlamaRetriever(POOLS, []),
        lambda: PoolSplitMemoryStore([], POOLS),
        lambda: PoolSplitMemoryMiddleware(POOLS, namespace=("memories", "u1"), store=[]),
    ],
)
def test_the_plan_is_checked_once_at_construction(monkeypatch, build: Callable[[], Any]):
    # Settings held by a class were checked twice (by held_by, then by the
    # model's own __init__); the middleware checked its plan twice as well.
    import poolsplit_adapters.checks as checks_module

    calls: list[str] = []
    real = checks_module.core_check_pools

    def counting(pools: Any) -> Any:
        calls.append("check")
        return real(pools)

    monkeypatch.setattr(checks_module, "core_check_pools", counting)
    build()
    assert calls == ["check"]


def test_k_is_dealt_round_robin_across_pools_and_never_cuts_the_always_tier():
    entries = [
        {"id": "fix", "content": "c", "type": "a", "scope": "always", "token_count": 1},
        *[{"id": "a%d" % i, "content": "a", "type": "a", "token_count": 1, "base_priority": 9 - i} for i in range(3)],
        {"id": "b0", "content": "b", "type": "b", "token_count": 1},
    ]
    selection = select(entries, [Pool("a", 10, 3, ("a",)), Pool("b", 10, 3, ("b",))])
    assert [c.entry["id"] for c in cap(selection, 3)] == ["fix", "a0", "a1", "b0"]
    assert [c.entry["id"] for c in cap(selection, 0)] == ["fix"]
    assert [c.entry["id"] for c in cap(selection, None)] == ["fix", "a0", "a1", "a2", "b0"]


def test_a_call_applies_its_overrides_and_names_a_bad_one():
    settings = AdapterSettings(pools=POOLS, k=5, project="p")
    call = AdapterCall(settings, "deploy", {"k": 2, "tags": ["ops"]})
    assert (call.options.k, call.options.context) == (2, {"message": "deploy", "tags": ["ops"], "project": "p"})
    with pytest.raises(ArgumentError, match=r"runtime.context\['tags'\] must be a list of strings"):
        AdapterCall(settings, "deploy", {"tags": "ops"}, named=lambda key: "runtime.context[%r]" % key)
    with pytest.raises(ArgumentError, match="unexpected per-call keyword argument"):
        AdapterCall(settings, "deploy", {"kk": 2})
    assert TextNode  # the LlamaIndex classes above are real framework objects


@pytest.fixture
def tokenizer_loads(monkeypatch):
    """Every tokenizer load from now on, named: our tiktoken loader's
    (``tokens.load_encoding``, the shared default counter forgotten so it is
    built again) and LlamaIndex's global tokenizer lookup."""
    from llama_index.core import utils as llama_utils

    from poolsplit_adapters import tokens

    loads: list[str] = []
    real_load, real_get = tokens.load_encoding, llama_utils.get_tokenizer

    def load(name: str = "o200k_base") -> Any:
        loads.append(name)
        return real_load(name)

    def get_tokenizer(*args: Any, **kwargs: Any) -> Any:
        loads.append("llama_index")
        return real_get(*args, **kwargs)

    monkeypatch.setattr(tokens, "_DEFAULT", None)
    monkeypatch.setattr(tokens, "load_encoding", load)
    monkeypatch.setattr(llama_utils, "get_tokenizer", get_tokenizer)
    return loads


def test_building_any_adapter_loads_no_tokenizer_and_the_first_count_counts_as_before(tokenizer_loads):
    from llama_index.core.utils import get_tokenizer

    from poolsplit_adapters.tokens import load_encoding

    found = settings_of_every_adapter_class()
    assert tokenizer_loads == []
    text = "Never force-push to main; open a pull request. <|endoftext|>"
    langchain = {"langchain retriever", "langchain compressor", "middleware"}
    counts = {name: s.token_counter(text) for name, s in found.items()}
    assert tokenizer_loads.count("o200k_base") == 1  # the shared default, loaded on its first count only

    def tiktoken(text: str) -> int:
        return len(load_encoding("o200k_base").encode_ordinary(text))

    def llama(text: str) -> int:
        return len(get_tokenizer()(text))

    def expected(name: str) -> int:
        count = tiktoken if name in langchain else llama
        # A marker of pool "a" or "b" (one letter): the sample's text "x" out.
        marker = count(render.marker(render.MARKER_SAMPLE, "a")) - count("x") if name in RENDERED else 0
        return count(text) + marker

    assert counts == {name: expected(name) for name in found}


def test_the_middleware_loads_tiktoken_on_its_first_turn_and_counts_as_tiktoken_does(tokenizer_loads):
    from agent_fakes import ToolCallingFakeModel, UserContext
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage

    from poolsplit_adapters.reports import capture_selections
    from poolsplit_adapters.tokens import load_encoding

    store = InMemoryStore()
    notes = ["Deploys go through the release checklist.", "The staging database is db-7; never drop it."]
    for i, text in enumerate(notes):
        store.put(("memories", "u1"), "n%d" % i, {"content": text, "type": "note"})
    middleware = PoolSplitMemoryMiddleware([Pool("notes", 500, 5, ("note",))], namespace=("memories", "u1"))
    assert tokenizer_loads == []
    model = ToolCallingFakeModel(messages=iter([AIMessage(content="ok")]))
    agent = create_agent(model, tools=[], middleware=[middleware], store=store, context_schema=UserContext)
    assert tokenizer_loads == []
    with capture_selections() as selections:
        agent.invoke({"messages": [{"role": "user", "content": "how do deploys go?"}]}, context={"user_id": "u1"})
    (selection,) = selections
    assert tokenizer_loads.count("o200k_base") == 1
    encoding = load_encoding("o200k_base")
    # Each entry costs its text and its marker (pool "notes"), as rendered into the prompt.
    marker = len(encoding.encode_ordinary(render.marker(render.MARKER_SAMPLE, "notes"))) - 1
    assert sorted((c.entry["content"], c.cost) for c in selection.chosen) == sorted(
        (text, len(encoding.encode_ordinary(text)) + marker) for text in notes
    )


@pytest.mark.parametrize("query", [5, None, ["deploy"], b"deploy"])
def test_a_query_that_is_not_a_string_is_refused_by_name_on_every_retriever(query):
    from langchain_core.vectorstores import InMemoryVectorStore

    from poolsplit_adapters.langchain import HashEmbeddings, PoolSplitRetriever

    pools = [Pool("notes", 100, 3, ("note",))]
    held = PoolSplitRetriever(documents=[], pools=pools)
    store = PoolSplitRetriever.from_vectorstore(InMemoryVectorStore(HashEmbeddings()), pools)
    for retriever in (held, store):
        with pytest.raises(ArgumentError, match="the query must be a string, got %s" % type(query).__name__):
            retriever.invoke(query)


def test_an_empty_plan_is_refused_at_construction_by_every_adapter():
    from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, PoolSplitRetriever
    from poolsplit_adapters.llama_index import poolsplit_memory_blocks

    builds = [
        lambda: PoolSplitMemoryMiddleware([], namespace=("memories", "u1")),
        lambda: PoolSplitRetriever(documents=[], pools=[]),
        lambda: poolsplit_memory_blocks([], []),
    ]
    for build in builds:
        with pytest.raises(ArgumentError, match=r"^pools: an empty plan loads nothing, corrections included"):
            build()


def test_a_store_of_the_wrong_kind_is_an_argument_error_naming_it():
    import sqlite3

    from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware

    for wrong in (sqlite3.connect(":memory:"), "memory.db", {}):
        with pytest.raises(
            ArgumentError, match=r"store must be a LangGraph BaseStore, .*; got %s$" % type(wrong).__name__
        ):
            PoolSplitMemoryMiddleware(POOLS, namespace=("memories", "u1"), store=wrong)


def test_a_misspelt_per_call_keyword_names_the_one_meant():
    retriever = PoolSplitRetriever(documents=[Document("Deploy finished.", id="n1")], pools=POOLS)
    with pytest.raises(ArgumentError) as raised:
        retriever.invoke("deploy", kk=3)
    assert str(raised.value) == (
        "unexpected per-call keyword argument(s) 'kk'; did you mean 'k'? "
        "(known: k, tags, project, now, namespace, goal, action_type, phase)"
    )


@pytest.mark.parametrize(
    "build, owner",
    [
        (lambda: PoolSplitCompressor(POOLS), "PoolSplitCompressor"),
        (lambda: PoolSplitRetriever(POOLS, documents=[]), "PoolSplitRetriever"),
        (lambda: AdapterSettings(POOLS), "AdapterSettings"),
        (lambda: PoolSplitNodePostprocessor(POOLS), "PoolSplitNodePostprocessor"),
    ],
)
def test_a_langchain_adapter_given_pools_by_position_says_it_takes_keywords(build, owner):
    # Was "AdapterSettings.__init__() takes 1 positional argument but 2 were given" for the compressor.
    with pytest.raises(ArgumentError) as raised:
        build()
    assert str(raised.value) == (
        "%s takes keyword arguments only, e.g. %s(pools=[Pool(...), ...]); got 1 positional argument" % (owner, owner)
    )


@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda: PoolSplitRetriever.from_vectorstore([], POOLS),
            "vectorstore must be a VectorStore (a LangChain vector store), got list []",
        ),
        (
            lambda: PoolSplitRetriever(vectorstore="memory.db", pools=POOLS),
            "vectorstore must be a VectorStore (a LangChain vector store), got str 'memory.db'",
        ),
        (
            lambda: PoolSplitRetriever(base_retriever={"k": 3}, pools=POOLS),
            "base_retriever must be a BaseRetriever (LangChain's), got dict {'k': 3}",
        ),
    ],
)
def test_a_langchain_retriever_given_a_source_of_the_wrong_kind_names_it_in_one_line(build, message):
    # Was a 4-line pydantic ValidationError ("Input should be an instance of VectorStore").
    with pytest.raises(ArgumentError) as raised:
        build()
    assert str(raised.value) == message
