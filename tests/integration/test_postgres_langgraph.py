"""LangGraph's PostgresStore as the agents' long-term store, on the embedded
Postgres + pgvector: BaseStoreMemory and the agent middleware, unchanged."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap
from typing import Any, Dict, List

import pytest
from agent_fakes import scripted_agent, thread
from exact_reads import check_every_item_is_read_exactly_once, counting
from langgraph.store.memory import InMemoryStore
from pg_corpus import NOW, POOLS, QUERY, entries
from pg_embeddings import DIMS, HashedNgramEmbeddings

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitMemoryMiddleware, RecallConfig
from poolsplit_adapters.poolsplit import default_token_counter

PostgresStore = pytest.importorskip("langgraph.store.postgres").PostgresStore

HERE = pathlib.Path(__file__).resolve().parents[1]  # tests/: the shared helpers
U1, U2 = ("memories", "u1"), ("memories", "u2")


def index_config() -> Dict[str, Any]:
    return {"dims": DIMS, "embed": HashedNgramEmbeddings(), "fields": ["content"]}


def chosen(memory: BaseStoreMemory) -> List[Any]:
    selection = memory.select(POOLS, {"message": QUERY}, now=NOW)
    return [(c.entry["id"], c.pool, c.always) for c in selection.chosen]


def fill(store: Any) -> None:
    BaseStoreMemory(store, U1).put_many(entries())
    BaseStoreMemory(store, U2).put_many(entries(prefix="u2-", notes=30))  # another user's flood
    BaseStoreMemory(store, U1 + ("drafts",)).put_many(entries(prefix="draft-", notes=3))  # a child namespace


def test_base_store_memory_over_postgres_store_selects_as_over_langgraphs_in_memory_store(pg_database):
    with PostgresStore.from_conn_string(pg_database.conninfo, index=index_config()) as store:
        store.setup()
        fill(store)
        got = chosen(BaseStoreMemory(store, U1, fetch_k=20))
    oracle_store = InMemoryStore(index=index_config())
    fill(oracle_store)
    assert got == chosen(BaseStoreMemory(oracle_store, U1, fetch_k=20))
    assert [c[0] for c in got[:3]] == ["fix-0", "fix-1", "fix-2"] and all(c[2] for c in got[:3])
    assert [c[1] for c in got[3:]] == ["content"] * 6 + ["skills"] * 2 + ["growth"]
    assert all(not c[0].startswith(("u2-", "draft-")) for c in got)  # exact namespace, never a child's


def test_a_fresh_connection_recalls_what_an_earlier_one_wrote(pg_database):
    with PostgresStore.from_conn_string(pg_database.conninfo) as store:
        store.setup()
        fill(store)
        before = chosen(BaseStoreMemory(store, U1))
    with PostgresStore.from_conn_string(pg_database.conninfo) as store:
        assert chosen(BaseStoreMemory(store, U1)) == before
    assert len(before) == 3 + 6 + 2 + 1


AGENT_POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("recent", 400, 6, ("episode", "note"))]
SECOND_PROCESS = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, {tests!r})
    from agent_fakes import ToolCallingFakeModel, UserContext, lookup, markers, thread
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.postgres import PostgresStore
    from poolsplit_adapters import Pool
    from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, RecallConfig
    from poolsplit_adapters.poolsplit import default_token_counter

    pools = [Pool("fixes", 0, 0, ("correction",)), Pool("recent", 400, 6, ("episode", "note"))]
    with PostgresStore.from_conn_string({conninfo!r}) as store:
        mw = PoolSplitMemoryMiddleware(pools, namespace=("memories", "u1"),
                                       recall=RecallConfig(token_counter=default_token_counter))
        model = ToolCallingFakeModel()
        agent = create_agent(model, tools=[lookup], middleware=[mw], checkpointer=InMemorySaver(), store=store,
                             context_schema=UserContext)
        agent.invoke({{"messages": [("user", "what did we say about the checklist?")]}}, thread("new"))
        print(json.dumps([m["id"] for m in markers(model.requests[0])]))
    """
)


def test_the_agent_remembers_across_processes_with_postgres_store(pg_database):
    """The durability test of the SQLite store, pointed at Postgres: what the
    first agent's turns wrote, a second process's agent recalls."""
    with PostgresStore.from_conn_string(pg_database.conninfo) as store:
        store.setup()
        BaseStoreMemory(store, U1).put(
            {"id": "fix-1", "content": "Amounts in cents.", "type": "correction", "scope": "always"}
        )
        mw = PoolSplitMemoryMiddleware(
            AGENT_POOLS, namespace=U1, max_turns=2, recall=RecallConfig(token_counter=default_token_counter)
        )
        agent = scripted_agent(mw, store)
        for text in ["goal: ship", "remember=The release checklist lives in the wiki", "deploy calls=2", "status"]:
            agent.invoke({"messages": [("user", text)]}, thread("first"))
        written = {e["id"]: e for e in BaseStoreMemory(store, U1).entries()}
    assert "fix-1" in written and {e["type"] for e in written.values()} >= {"correction", "episode", "note"}
    done = subprocess.run(
        [sys.executable, "-c", SECOND_PROCESS.format(tests=str(HERE), conninfo=pg_database.conninfo)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen[0] == "fix-1"  # the correction first
    note = next(i for i, e in written.items() if e["type"] == "note")
    assert note in seen  # what the first process's agent wrote, recalled by the second's


def test_ten_thousand_items_of_one_batch_are_each_read_once_on_postgres_store(pg_database):
    # Before: OFFSET pages over ORDER BY updated_at, shared by one put_many,
    # overlapped: items at the page edges were never read (corrections lost).
    with counting(PostgresStore).from_conn_string(pg_database.conninfo) as store:
        store.setup()
        check_every_item_is_read_exactly_once(store)


def test_the_store_contract_holds_over_postgres_store(pg_database):
    from contract_checks import (
        check_a_changed_statement_supersedes_the_older,
        check_add_and_supersede,
        check_add_with_supersedes_closes_its_predecessor,
        check_supersede_back_to_a_closed_version,
    )

    from poolsplit_adapters import EntryError
    from poolsplit_adapters.stores import MemoryStore

    with PostgresStore.from_conn_string(pg_database.conninfo) as store:
        store.setup()
        memory = BaseStoreMemory(store, ("memories", "contract"), token_counter=default_token_counter)
        assert isinstance(memory, MemoryStore)
        check_add_and_supersede(memory)
        with pytest.raises(EntryError, match="'scope'"):
            memory.add([{"id": "v5", "content": "x", "scope": "Always"}])
        assert memory.delete("v2") is True and memory.entries() == []
        check_supersede_back_to_a_closed_version(memory)
        check_add_with_supersedes_closes_its_predecessor(memory)
        check_a_changed_statement_supersedes_the_older(memory)


def test_base_store_memory_over_postgres_store_implements_the_one_contract(pg_database):
    from contract_checks import check_implements_the_contract

    with PostgresStore.from_conn_string(pg_database.conninfo) as store:
        store.setup()
        check_implements_the_contract(BaseStoreMemory(store, ("memories", "one-contract")))


def test_a_postgres_store_never_set_up_is_refused_with_the_fix(pg_database):
    from poolsplit_adapters.errors import ArgumentError

    with PostgresStore.from_conn_string(pg_database.conninfo) as store:
        with pytest.raises(ArgumentError) as err:
            BaseStoreMemory(store, U1)
        assert str(err.value) == (
            "BaseStoreMemory store: the LangGraph PostgresStore has no tables (its database has no 'store' "
            "table): call store.setup() once before giving it to poolsplit_adapters"
        )
        store.setup()
        assert BaseStoreMemory(store, U1).put_many([{"id": "fix-1", "content": "Quote cents."}]) == ["fix-1"]


OWN_FACTS = ["Ana keeps a fern in her office.", "The cat is called Miso.", "Ana cycles to work on Fridays."]
NEAR = "deploy checkout service staging rollback"


def crowded(store: Any, fetch_k: int = 5) -> BaseStoreMemory:
    """Three facts of Ana's, far from the query; twenty facts of her child
    namespace, near it."""
    own = BaseStoreMemory(store, ("memories", "ana"), fetch_k=fetch_k)
    own.put_many([{"id": "o%d" % n, "type": "fact", "content": text} for n, text in enumerate(OWN_FACTS)])
    drafts = BaseStoreMemory(store, ("memories", "ana", "drafts"))
    drafts.put_many(
        [{"id": "c%d" % n, "type": "fact", "content": "%s %s" % (NEAR, chr(97 + n) * 3)} for n in range(20)]
    )
    return own


@pytest.mark.parametrize("ttl", [None, {"default_ttl": 60}])
def test_a_child_namespace_near_the_query_never_crowds_out_the_namespaces_own_items(pg_database, ttl):
    """With a TTL the store's own search serves the ranked reads, and it
    matches a namespace as a prefix: the child's twenty facts took the page
    of ``fetch_k`` = 5, were dropped as not Ana's, and her facts pool
    recalled none of her three facts."""
    with PostgresStore.from_conn_string(pg_database.conninfo, index=index_config(), ttl=ttl) as store:
        store.setup()
        own = crowded(store)
        selection = own.select([Pool("facts", 2000, 10, ("fact",))], {"message": NEAR})
        assert sorted(c.entry["id"] for c in selection.chosen) == ["o0", "o1", "o2"]


def test_an_async_store_with_a_ttl_recalls_the_namespaces_own_items_past_its_child(pg_database):
    import asyncio

    from langgraph.store.postgres.aio import AsyncPostgresStore

    async def run() -> List[str]:
        async with AsyncPostgresStore.from_conn_string(
            pg_database.conninfo, index=index_config(), ttl={"default_ttl": 60}
        ) as store:
            await store.setup()
            own = BaseStoreMemory(store, ("memories", "ana"), fetch_k=5)
            await own.aput_many([{"id": "o%d" % n, "type": "fact", "content": t} for n, t in enumerate(OWN_FACTS)])
            drafts = BaseStoreMemory(store, ("memories", "ana", "drafts"))
            near = [{"id": "c%d" % n, "type": "fact", "content": "%s %s" % (NEAR, chr(97 + n) * 3)} for n in range(20)]
            await drafts.aput_many(near)
            selection = await own.aselect([Pool("facts", 2000, 10, ("fact",))], {"message": NEAR})
            return sorted(c.entry["id"] for c in selection.chosen)

    assert asyncio.run(run()) == ["o0", "o1", "o2"]
