"""Issue 19 item 3 and issue 23 item 4 over real vector stores: per-pool
recall grows until each pool's budget is full or the store has nothing
more (LangChain ``InMemoryVectorStore``, LlamaIndex ``VectorStoreIndex``
over its ``SimpleVectorStore``; sync and async), the report says which, the
corrections always load, and every call embeds the query exactly once."""

from __future__ import annotations

import datetime
from typing import Any, List

import pytest
from counting_embeddings import CountingEmbedding, CountingEmbeddings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import TextNode

from poolsplit_adapters import Pool
from poolsplit_adapters.checks import ArgumentError
from poolsplit_adapters.langchain import PoolSplitRetriever as LangChainRetriever
from poolsplit_adapters.langchain import capture_selections
from poolsplit_adapters.langchain.vector_memory import VectorStoreMemory
from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaRetriever
from poolsplit_adapters.llama_index.vector_memory import VectorIndexMemory
from poolsplit_adapters.recall import FillingRecall, RecallPlan, budget_filled, grown_k
from poolsplit_adapters.render import explain, recall_line, render_context

NOW = datetime.datetime(2026, 11, 20, 9)
FACTS = 60  # each exactly 10 tokens (one per word)
FIXES = ["fix-0", "fix-1"]


def words(text: str) -> int:
    return max(1, len(text.split()))


def fact_text(n: int) -> str:
    return "refund fact %02d says totals round half even per ledger" % n  # 10 words


def entries() -> List[dict[str, Any]]:
    made: List[dict[str, Any]] = [
        {"id": "fix-%d" % n, "type": "correction", "scope": "always", "source": "user",
         "content": "Always quote amounts in integer cents, rule %d." % n, "created": "2026-01-01T00:00:00Z"}
        for n in range(2)
    ]  # fmt: skip
    made += [
        {"id": "fact-%02d" % n, "type": "fact", "content": fact_text(n), "created": "2026-11-01T00:00:00Z"}
        for n in range(FACTS)
    ]
    return made


def plan(tokens: int) -> List[Pool]:
    return [Pool("corrections", 0, 0, ("correction",)), Pool("facts", tokens, 100, ("fact",))]


QUERY = "how do refund totals round"


def lc_store(embeddings: Embeddings, **extra: str) -> InMemoryVectorStore:
    store = InMemoryVectorStore(embeddings)
    docs = [
        Document(
            page_content=e["content"],
            id=e["id"],
            metadata={**{k: v for k, v in e.items() if k not in ("id", "content")}, **extra},
        )
        for e in entries()
    ]
    store.add_documents(docs)
    return store


def li_index(embed: BaseEmbedding) -> VectorStoreIndex:
    nodes = []
    for e in entries():
        made = TextNode(text=e["content"], metadata={k: v for k, v in e.items() if k not in ("id", "content")})
        made.id_ = e["id"]
        nodes.append(made)
    return VectorStoreIndex(nodes, embed_model=embed)


def loaded(selection: Any) -> tuple[int, int, list[str]]:
    """(facts loaded, their tokens, always-scope ids)."""
    facts = [c for c in selection.chosen if not c.always]
    return len(facts), sum(c.cost for c in facts), [c.entry["id"] for c in selection.chosen if c.always]


# Budget -> (facts loaded, tokens, rounds, fetch_k reached, store ran out for).
EXPECTED = {
    # 20 loaded 200 tokens: filling looks to need 30, candidates of twice the budget (RecallPlan.breadth)
    # 60, and a quarter more: 75 asked, 60 came back (600 tokens, twice 300): the budget cut 30, it is full.
    300: (30, 300, 2, 75, []),
    # 20 loaded 200 tokens (and 20 of 100 entries): the budget looks to need 5 x 20 = 100, twice the
    # budget 2 x 5 x 20 = 200 (the entry cap comes first), and a quarter more: 250 asked, 60 came back:
    # all there is loaded.
    1024: (60, 600, 2, 250, ["facts"]),
}


def check(selection: Any, tokens: int) -> None:
    facts, used, rounds, reached, ran_out = EXPECTED[tokens]
    assert loaded(selection) == (facts, used, FIXES)
    assert selection.notes["recall"] == {
        "fetch_k": {"facts": reached},
        "rounds": rounds,
        "store_ran_out": ran_out,
        "capped": [],
    }


# -- LangChain ------------------------------------------------------------------------


@pytest.mark.parametrize("tokens", sorted(EXPECTED))
def test_langchain_recall_grows_until_the_budget_is_full_or_the_store_runs_out(tokens: int) -> None:
    embeddings = CountingEmbeddings()
    store = lc_store(embeddings)
    retriever = LangChainRetriever.from_vectorstore(store, plan(tokens), token_counter=words, now=NOW)
    with capture_selections() as mine:
        documents = retriever.invoke(QUERY)
    check(mine[0], tokens)
    assert [d.id for d in documents[:2]] == FIXES
    assert embeddings.queries == 1  # every round searched by the one query vector


@pytest.mark.parametrize("tokens", sorted(EXPECTED))
async def test_langchain_recall_grows_async(tokens: int) -> None:
    embeddings = CountingEmbeddings()
    store = lc_store(embeddings)
    retriever = LangChainRetriever.from_vectorstore(store, plan(tokens), token_counter=words, now=NOW)
    with capture_selections() as mine:
        await retriever.ainvoke(QUERY)
    check(mine[0], tokens)
    assert embeddings.queries == 1


def test_a_fixed_fetch_k_fills_part_of_the_budget_and_says_recall_was_capped() -> None:
    store = lc_store(CountingEmbeddings())
    fixed = LangChainRetriever.from_vectorstore(store, plan(1024), token_counter=words, now=NOW, max_fetch_k=20)
    with capture_selections() as mine:
        fixed.invoke(QUERY)
    (selection,) = mine
    assert loaded(selection) == (20, 200, FIXES)  # what a fixed top-20 used to fill, silently
    assert selection.notes["recall"] == {
        "fetch_k": {"facts": 20},
        "rounds": 1,
        "store_ran_out": [],
        "capped": ["facts"],
    }
    assert recall_line(selection) == "[recall stopped at 20 candidates per search while budget was left: facts]"
    assert render_context(selection).text.splitlines()[-1] == recall_line(selection)
    assert "recall: stopped before the store ran out for facts (1 round)" in explain(selection).splitlines()


def test_when_the_store_runs_out_the_report_says_so_and_renders_no_cut() -> None:
    store = lc_store(CountingEmbeddings())
    retriever = LangChainRetriever.from_vectorstore(store, plan(1024), token_counter=words, now=NOW)
    with capture_selections() as mine:
        retriever.invoke(QUERY)
    (selection,) = mine
    assert "recall: the store ran out for facts (2 rounds)" in explain(selection).splitlines()
    assert recall_line(selection) == ""  # all there is loaded: nothing to warn the model about
    assert render_context(selection).text.splitlines()[-1] == "</memory>"  # markers only, no line after them


def test_corrections_load_even_when_the_pool_has_no_room() -> None:
    embeddings = CountingEmbeddings()
    store = lc_store(embeddings)
    retriever = LangChainRetriever.from_vectorstore(store, plan(0), token_counter=words, now=NOW)
    with capture_selections() as mine:
        assert [d.id for d in retriever.invoke(QUERY)] == FIXES
    assert mine[0].notes["recall"] == {"fetch_k": {}, "rounds": 1, "store_ran_out": [], "capped": []}
    assert embeddings.queries == 1


def test_embeddings_scorer_over_the_store_embeds_the_query_once_per_call_while_growing() -> None:
    embeddings = CountingEmbeddings()
    store = lc_store(embeddings)
    retriever = LangChainRetriever.from_vectorstore(
        store, plan(1024), token_counter=words, now=NOW, embeddings=embeddings
    )
    for call, query in enumerate((QUERY, "ledger rounding", QUERY), start=1):
        with capture_selections() as mine:
            retriever.invoke(query)
        assert mine[0].notes["recall"]["rounds"] == 2
        assert loaded(mine[0])[0] == FACTS
        assert embeddings.queries == call


async def test_embeddings_scorer_over_the_store_embeds_once_per_async_call() -> None:
    embeddings = CountingEmbeddings()
    store = lc_store(embeddings)
    retriever = LangChainRetriever.from_vectorstore(
        store, plan(300), token_counter=words, now=NOW, embeddings=embeddings
    )
    await retriever.ainvoke(QUERY)
    await retriever.ainvoke("ledger rounding")
    assert embeddings.queries == 2


def test_the_vector_store_memory_fills_the_same_way() -> None:
    embeddings = CountingEmbeddings()
    memory = VectorStoreMemory(lc_store(embeddings), token_counter=words, now=NOW, embeddings=embeddings)
    selection = memory.select(plan(1024), {"message": QUERY})
    check(selection, 1024)
    assert embeddings.queries == 1


async def test_the_vector_store_memory_fills_the_same_way_async() -> None:
    memory = VectorStoreMemory(lc_store(CountingEmbeddings()), token_counter=words, now=NOW)
    check(await memory.aselect(plan(300), {"message": QUERY}), 300)


def test_max_fetch_k_is_checked() -> None:
    store = lc_store(CountingEmbeddings())
    with pytest.raises(ArgumentError, match="max_fetch_k must be a positive int"):
        LangChainRetriever.from_vectorstore(store, plan(10), max_fetch_k=0)


def test_breadth_is_a_retriever_setting_on_both_frameworks() -> None:
    # breadth 1: recall stops once the budget is full (20 -> 40 candidates, the budget cut 10).
    lc = LangChainRetriever.from_vectorstore(
        lc_store(CountingEmbeddings()), plan(300), breadth=1, token_counter=words, now=NOW
    )
    li = LlamaRetriever.from_vector_store_index(
        li_index(CountingEmbedding()), plan(300), breadth=1, token_counter=words, now=NOW
    )
    with capture_selections() as mine:
        lc.invoke(QUERY)
    _, selection = li.retrieve_with_selection(QUERY)
    for made in (mine[0], selection):
        assert loaded(made) == (30, 300, FIXES)
        assert made.notes["recall"] == {"fetch_k": {"facts": 40}, "rounds": 2, "store_ran_out": [], "capped": []}
    with pytest.raises(ArgumentError, match="breadth"):
        LangChainRetriever.from_vectorstore(lc_store(CountingEmbeddings()), plan(10), breadth=0.5)
    with pytest.raises(ArgumentError, match="breadth"):
        LlamaRetriever.from_vector_store_index(li_index(CountingEmbedding()), plan(10), breadth=0.5)


# -- LlamaIndex -----------------------------------------------------------------------


@pytest.mark.parametrize("tokens", sorted(EXPECTED))
def test_llama_index_recall_grows_until_the_budget_is_full_or_the_index_runs_out(tokens: int) -> None:
    embed = CountingEmbedding()
    index = li_index(embed)
    retriever = LlamaRetriever.from_vector_store_index(index, plan(tokens), token_counter=words, now=NOW)
    nodes, selection = retriever.retrieve_with_selection(QUERY)
    check(selection, tokens)
    assert [n.node.node_id for n in nodes[:2]] == FIXES
    assert embed._queries == 1


@pytest.mark.parametrize("tokens", sorted(EXPECTED))
async def test_llama_index_recall_grows_async(tokens: int) -> None:
    embed = CountingEmbedding()
    retriever = LlamaRetriever.from_vector_store_index(li_index(embed), plan(tokens), token_counter=words, now=NOW)
    _, selection = await retriever.aretrieve_with_selection(QUERY)
    check(selection, tokens)
    assert embed._queries == 1


def test_llama_index_embeddings_scorer_embeds_the_query_once_per_call() -> None:
    embed = CountingEmbedding()
    retriever = LlamaRetriever.from_vector_store_index(
        li_index(embed), plan(1024), token_counter=words, now=NOW, embeddings=embed
    )
    _, selection = retriever.retrieve_with_selection(QUERY)
    assert (loaded(selection)[0], selection.notes["recall"]["rounds"], embed._queries) == (FACTS, 2, 1)
    retriever.retrieve("ledger rounding")
    assert embed._queries == 2


async def test_llama_index_embeddings_scorer_embeds_once_per_async_call() -> None:
    embed = CountingEmbedding()
    retriever = LlamaRetriever.from_vector_store_index(
        li_index(embed), plan(300), token_counter=words, now=NOW, embeddings=embed
    )
    await retriever.aretrieve(QUERY)
    await retriever.aretrieve("ledger rounding")
    assert embed._queries == 2


def test_the_vector_index_memory_fills_the_same_way() -> None:
    embed = CountingEmbedding()
    memory = VectorIndexMemory(li_index(embed), token_counter=words, now=NOW, embeddings=embed)
    check(memory.select(plan(300), {"message": QUERY}), 300)
    assert embed._queries == 1


# -- the rule -------------------------------------------------------------------------


def test_a_pool_is_filled_when_its_budget_cut_something_or_has_no_room() -> None:
    from poolsplit_adapters import select

    items = [{"id": "a", "type": "fact", "content": "one two three"}, {"id": "b", "type": "fact", "content": "x y"}]
    assert budget_filled(select(items, [Pool("p", 4, 9)], token_counter=words), "p")  # b cut by the tokens
    assert budget_filled(select(items, [Pool("p", 99, 2)], token_counter=words), "p")  # entry cap reached
    assert not budget_filled(select(items, [Pool("p", 99, 9)], token_counter=words), "p")  # room left


def test_the_next_k_is_at_least_double_or_what_the_budget_looks_to_need() -> None:
    from poolsplit_adapters import select

    items = [{"id": "e%d" % n, "type": "fact", "content": "w w"} for n in range(10)]  # 2 tokens each
    # 10 candidates loaded 20 of 1,000 tokens: 50 x 10 = 500 look needed, 625 with the headroom.
    assert grown_k(10, select(items, [Pool("p", 1000, 1000)], token_counter=words), "p") == 625
    # The entry cap comes first: 30 entries of 10 loaded -> 3 x 10 = 30, 38 with the headroom.
    assert grown_k(10, select(items, [Pool("p", 1000, 30)], token_counter=words), "p") == 38
    # Close to full: at least double.
    assert grown_k(10, select(items, [Pool("p", 22, 1000)], token_counter=words), "p") == 20
    # Nothing loaded to extrapolate from (the threshold set everything aside): double.
    below = select(items, [Pool("p", 1000, 1000, min_relevance=0.5)], {"message": "zzz"}, token_counter=words)
    assert grown_k(10, below, "p") == 20


def test_growth_doubles_only_full_searches_of_pools_with_room_and_stops_at_max_fetch_k() -> None:
    from poolsplit_adapters import select

    pools = [Pool("a", 1000, 100, ("x",)), Pool("b", 1000, 100, ("y",))]
    recall: FillingRecall[dict[str, Any]] = FillingRecall(RecallPlan(pools, fetch_k=2, max_fetch_k=3))
    assert [(s.label, s.k) for s in recall.asks()] == [("pool:a", 2), ("pool:b", 2), ("always", 1000)]
    xs = [{"id": "x%d" % n, "type": "x", "content": "w"} for n in range(5)]
    ys = [{"id": "y0", "type": "y", "content": "w"}]
    candidates = recall.found([xs[:2], ys, []])
    assert not recall.settle(select(candidates, pools, token_counter=words))
    assert [(s.label, s.k) for s in recall.asks()] == [("pool:a", 3)]  # b came back short: the store ran out
    candidates = recall.found([xs[:3]])
    selection = select(candidates, pools, token_counter=words)
    assert recall.settle(selection)
    assert selection.notes["recall"] == {
        "fetch_k": {"a": 3, "b": 2},
        "rounds": 2,
        "store_ran_out": ["b"],
        "capped": ["a"],
    }


def _grown_over(store_order: List[dict[str, Any]], plan: RecallPlan) -> tuple[Any, list[str]]:
    """Recall over a store whose similarity order is ``store_order`` (each
    search returns its first ``k``), the core's spec scorer ranking by
    priority: the selection and the ids it loaded."""
    from poolsplit_adapters import select
    from poolsplit_adapters.recall import fill

    recall: FillingRecall[dict[str, Any]] = FillingRecall(plan)
    selection = fill(
        recall,
        lambda searches: [[] if s.always else store_order[: s.k] for s in searches],
        lambda found: select(found, list(plan.pools), token_counter=words),
    )
    return selection, [c.entry["id"] for c in selection.chosen]


def test_a_budget_with_room_for_a_short_entry_is_not_filled_by_a_cut() -> None:
    # a (3 tokens) loads, b (8) is cut, and 3 tokens are left: an entry as
    # short as a still fits, so recall grows and finds c (2 tokens), as the
    # greedy fill over the store's whole order would.
    store_order = [
        {"id": "a", "content": "w w w", "base_priority": 9},
        {"id": "b", "content": "w w w w w w w w", "base_priority": 8},
        {"id": "c", "content": "w w", "base_priority": 7},
    ]
    plan = RecallPlan([Pool("p", 6, 9)], fetch_k=2, breadth=1)
    selection, ids = _grown_over(store_order, plan)
    assert ids == ["a", "c"]
    # k 5: filling looks to need 2 x 6 / 3 = 4, and a quarter more.
    assert selection.notes["recall"] == {"fetch_k": {"p": 5}, "rounds": 2, "store_ran_out": [], "capped": []}
    assert budget_filled(selection, "p")  # 1 token left: shorter than anything loaded


def test_recall_grows_until_the_candidates_hold_twice_the_budget() -> None:
    # Two 2-token entries fill the 4-token budget from the first search, but
    # the scorer (priority) prefers entries the store ranked lower: with
    # breadth 2 recall grows to 8 tokens of candidates (k 5: twice the
    # budget looks to need 4, and a quarter more) and the best two load.
    store_order = [{"id": "e%d" % n, "content": "w w", "base_priority": n} for n in range(6)]
    selection, ids = _grown_over(store_order, RecallPlan([Pool("p", 4, 9)], fetch_k=2))
    assert ids == ["e4", "e3"]
    assert selection.notes["recall"] == {"fetch_k": {"p": 5}, "rounds": 2, "store_ran_out": [], "capped": []}
    # breadth 1: only until the budget is filled, the store's first two.
    selection, ids = _grown_over(store_order, RecallPlan([Pool("p", 4, 9)], fetch_k=2, breadth=1))
    assert ids == ["e1", "e0"]
    assert selection.notes["recall"]["rounds"] == 1


@pytest.mark.parametrize("breadth", [0.5, True, float("inf"), "2"])
def test_breadth_is_checked(breadth: Any) -> None:
    with pytest.raises(ValueError, match="breadth"):
        RecallPlan([], breadth=breadth)


# -- the agent middleware over a vector store --------------------------------------------


def test_the_middleware_over_a_vector_store_embeds_the_query_once_per_selection() -> None:
    from agent_fakes import ToolCallingFakeModel, UserContext, lookup, thread
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, RecallConfig

    embeddings = CountingEmbeddings()
    store = lc_store(embeddings, namespace="memories.u1")
    # The middleware counts each entry's marker beside its text: 6 words
    # ('<memory', id=, source=, at=, pool=, '</memory>'), 16 a fact; 480 is 30 facts, as 300 is elsewhere.
    middleware = PoolSplitMemoryMiddleware(
        plan(480),
        store=store,
        namespace=lambda runtime: ("memories", runtime.context["user_id"]),
        now=NOW,
        max_turns=3,
        recall=RecallConfig(embeddings=embeddings, token_counter=words),
    )
    agent = create_agent(
        ToolCallingFakeModel(),
        tools=[lookup],
        middleware=[middleware],
        checkpointer=InMemorySaver(),
        context_schema=UserContext,
    )
    with capture_selections() as mine:
        for i in range(3):
            agent.invoke({"messages": [("user", "how do refund totals round %d calls=1" % i)]}, thread("t"),
                         context={"user_id": "u1"})  # fmt: skip
    assert mine and all(loaded(s)[:2] == (30, 480) and s.notes["recall"]["rounds"] == 2 for s in mine)
    assert embeddings.queries == len({id(s) for s in mine})  # one query embedding per selection made


@pytest.mark.parametrize("fetch_k", [10, None])
def test_the_middleware_over_an_indexed_langgraph_store_embeds_the_query_once_with_its_model(fetch_k: Any) -> None:
    # With embeddings= the store's own model, the scorer embedded the message
    # again after the store's search had (and, with fetch_k=None, the store
    # embedded it once per type op): two to four embeddings a call.
    import asyncio

    from agent_fakes import ToolCallingFakeModel, thread
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.memory import InMemoryStore

    from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitMemoryMiddleware, RecallConfig, WriteConfig

    embeddings = CountingEmbeddings()
    store = InMemoryStore(index={"dims": len(embeddings.embed_documents(["x"])[0]), "embed": embeddings})
    ns = ("memories", "u1")
    fixes = [{"id": "fix", "type": "correction", "scope": "always", "content": "Totals round half-even."}]
    BaseStoreMemory(store, ns).put_many(
        fixes + [{"id": "n%d" % j, "type": "note", "content": "refund %d" % j} for j in range(30)]
    )
    pools = [Pool("fixes", 0, 0, ("correction",)), Pool("recent", 300, 4, ("episode", "note"))]
    middleware = PoolSplitMemoryMiddleware(
        pools,
        namespace=ns,
        max_turns=50,
        recall=RecallConfig(fetch_k=fetch_k, embeddings=embeddings),
        write=WriteConfig(remember=False),
    )
    agent = create_agent(ToolCallingFakeModel(), middleware=[middleware], checkpointer=InMemorySaver(), store=store)
    for i in range(2):
        before = embeddings.queries
        agent.invoke({"messages": [("user", "how do refund totals round %d" % i)]}, thread("t"))
        assert embeddings.queries - before == 1
        before = embeddings.queries
        asyncio.run(agent.ainvoke({"messages": [("user", "and refunds %d" % i)]}, thread("a")))
        assert embeddings.queries - before == 1


# -- invariants ---------------------------------------------------------------------------


stored = st.lists(
    st.tuples(st.sampled_from(["fact", "skill", "correction"]), st.integers(1, 12), st.booleans()), max_size=40
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    stored,
    st.integers(0, 120),
    st.integers(0, 60),
    st.integers(1, 12),
    st.integers(1, 6),
    st.integers(0, 30),
)
def test_recall_ends_with_every_pool_filled_or_reported_and_every_correction_loaded(
    rows_, fact_tokens, skill_tokens, fact_entries, fetch_k, more
):
    docs = [
        Document(
            page_content=" ".join(["word%d" % n] * size),
            id="d%02d" % n,
            metadata={"type": kind, **({"scope": "always"} if kind == "correction" and always else {})},
        )
        for n, (kind, size, always) in enumerate(rows_)
    ]
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    if docs:
        store.add_documents(docs)
    pools = [
        Pool("corrections", 0, 0, ("correction",)),
        Pool("facts", fact_tokens, fact_entries, ("fact",)),
        Pool("skills", skill_tokens, 3, ("skill",)),
    ]
    retriever = LangChainRetriever.from_vectorstore(
        store, pools, fetch_k=fetch_k, max_fetch_k=fetch_k + more, token_counter=words, now=NOW
    )
    with capture_selections() as mine:
        retriever.invoke("word1 word2")
    (selection,) = mine
    corrections = {d.id for d in docs if d.metadata.get("scope") == "always"}
    assert corrections <= {c.entry["id"] for c in selection.chosen if c.always}
    report = selection.notes["recall"]
    assert not set(report["store_ran_out"]) & set(report["capped"])
    for pool in pools[1:]:
        ran_out, capped = pool.name in report["store_ran_out"], pool.name in report["capped"]
        assert budget_filled(selection, pool.name) != (ran_out or capped)
        if ran_out:  # every document of the pool's types was a candidate: all there is was considered
            held = {d.id for d in docs if d.metadata["type"] in (pool.types or ())}
            seen = {c.entry["id"] for c in selection.chosen} | {d.entry["id"] for d in selection.dropped}
            assert held <= seen
        if capped:
            assert report["fetch_k"][pool.name] == fetch_k + more


def test_one_short_outlier_does_not_grow_recall_to_max_fetch_k_on_every_call() -> None:
    # One 1-token fact loads with 50-token notes beside it; the 30 tokens left
    # are room for another such fact, which the store does not hold. Recall
    # grows while that could still be found, then stops after two rounds that
    # loaded nothing more (k 20 -> 40 -> 80), where it used to ask for 1,000
    # on every call; the pool is reported as stopped with room (capped).
    store_order = [{"id": "fact", "content": "w", "base_priority": 9}]
    store_order += [{"id": "n%d" % n, "content": " ".join(["w"] * 50), "base_priority": 5} for n in range(5000)]
    selection, ids = _grown_over(store_order, RecallPlan([Pool("p", 81, 50)], fetch_k=20))
    assert ids == ["fact", "n0"]
    assert selection.notes["recall"] == {"fetch_k": {"p": 80}, "rounds": 3, "store_ran_out": [], "capped": ["p"]}


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_full_always_fetch_doubles_until_every_correction_loads_on_both_frameworks(asynchronous: bool) -> None:
    """Seven corrections, ``always_k=3``: over the in-memory stores the
    always-scope fetch is a similarity search cut at ``k``, so three loaded
    and a warning was the only trace. It now runs again, ``k`` 3 -> 6 -> 12,
    until it comes back short, and all seven load (outside every budget)."""
    import asyncio
    import warnings

    extra = [
        {"id": "fix-%d" % n, "type": "correction", "scope": "always", "content": "Standing rule number %d." % n}
        for n in range(2, 7)
    ]
    store = lc_store(CountingEmbeddings())
    store.add_documents(
        [
            Document(page_content=e["content"], id=e["id"], metadata={"type": e["type"], "scope": "always"})
            for e in extra
        ]
    )
    index = li_index(CountingEmbedding())
    for e in extra:
        node = TextNode(text=e["content"], metadata={"type": e["type"], "scope": "always"})
        node.id_ = e["id"]
        index.insert_nodes([node])
    lc = LangChainRetriever.from_vectorstore(store, plan(100), always_k=3, token_counter=words, now=NOW)
    li = LlamaRetriever.from_vector_store_index(index, plan(100), always_k=3, token_counter=words, now=NOW)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with capture_selections() as mine:
            asyncio.run(lc.ainvoke(QUERY)) if asynchronous else lc.invoke(QUERY)
        if asynchronous:
            _, selection = asyncio.run(li.aretrieve_with_selection(QUERY))
        else:
            _, selection = li.retrieve_with_selection(QUERY)
    for made in (mine[0], selection):
        assert sorted(loaded(made)[2]) == ["fix-%d" % n for n in range(7)]
        assert made.notes["recall"]["rounds"] >= 3  # 3 and 6 came back full, 12 short


# -- the recalled texts' warm-up (issue 42 item 9) ------------------------------------


def test_recalled_texts_reach_the_calls_warm_up_only_inside_it_and_on_the_searchs_thread() -> None:
    import threading

    from poolsplit_adapters.recall import recalled_texts, warming_recall
    from poolsplit_adapters.threads import at_once

    seen: List[Any] = []
    recalled_texts(["outside"])  # no call: nothing to warm, no error
    with warming_recall(lambda texts: seen.append((threading.current_thread().name, list(texts)))):
        at_once([lambda: recalled_texts(["a", "b"]), lambda: recalled_texts(["c"])])
        recalled_texts([])  # nothing recalled: not handed on
    recalled_texts(["after"])
    assert sorted(texts for _, texts in seen) == [["a", "b"], ["c"]]
    assert all(name.startswith("poolsplit-search") for name, _ in seen)


def test_a_failing_warm_up_changes_nothing_the_selection_counts_again() -> None:
    from poolsplit_adapters.recall import recalled_texts, warming_recall

    def broken(texts: List[str]) -> None:
        raise RuntimeError("tokenizer gone")

    with warming_recall(broken):
        recalled_texts(["a"])  # swallowed: the selection's own count raises its own clear error


def test_a_store_calls_warm_up_counts_each_recalled_text_once_and_selects_as_without_it() -> None:
    from poolsplit_adapters import call as call_module
    from poolsplit_adapters.recall import recalled_texts
    from poolsplit_adapters.tokens import TokenizerCounter

    texts = ["Quote amounts in integer cents, rule %d" % i for i in range(3)]
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents([Document(t, metadata={"type": "note"}) for t in texts])
    pools = [Pool("notes", 20, 5, ("note",))]
    counter = TokenizerCounter(str.split)
    warmed = LangChainRetriever.from_vectorstore(store, pools, token_counter=counter)
    plain = LangChainRetriever.from_vectorstore(store, pools, token_counter=lambda t: len(t.split()))
    handed: List[List[str]] = []
    original_warm, original_search = call_module.StoreCall.warm, warmed._store.recall.search  # type: ignore[union-attr]

    def warm(self: Any, recalled: List[str]) -> None:
        handed.append(list(recalled))
        original_warm(self, recalled)

    def searching(*args: Any, **kwargs: Any) -> Any:
        recalled_texts(texts + texts[:1])  # as a search's thread hands on its rows (one text twice)
        return original_search(*args, **kwargs)

    call_module.StoreCall.warm = warm  # type: ignore[method-assign]
    warmed._store.recall.search = searching  # type: ignore[union-attr, method-assign]
    try:
        got = [d.page_content for d in warmed.invoke("integer cents")]
    finally:
        call_module.StoreCall.warm = original_warm  # type: ignore[method-assign]
    assert handed and all(h == texts + texts[:1] for h in handed)  # once per round
    assert counter.tokenized == 3  # warmed once each; the selection found every count in the cache
    assert got == [d.page_content for d in plain.invoke("integer cents")]  # 20 tokens: not all three fit
    assert len(got) == 2
