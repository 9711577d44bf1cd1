"""LangGraph's ``PostgresStore.from_conn_string`` opens one connection (as
docs/stores.md shows it): twenty conversations in threads share it, each
reading and writing its user's memory through the middleware. Every
statement of ours on the store takes the store's lock as its own ``batch``
does (:func:`~poolsplit_adapters.stores.postgres.locked_cursor`): without
it all twenty failed with "another command is already in progress"."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Dict, List

import pytest
from agent_fakes import ToolCallingFakeModel, markers, scripted_agent, thread
from langchain_core.messages import ToolMessage
from pg_embeddings import DIMS, HashedNgramEmbeddings

from poolsplit_adapters import Pool
from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitMemoryMiddleware
from poolsplit_adapters.stores.postgres import ainstall_change_counter, install_change_counter

postgres = pytest.importorskip("langgraph.store.postgres")

POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("notes", 300, 5, ("note",))]
USERS = 20
#: each form of the store: from_conn_string's keywords, and whether the change counter is installed
FORMS = {
    "digest": ({}, False),
    "change-counter": ({}, True),
    "index": ({"index": {"dims": DIMS, "embed": HashedNgramEmbeddings(), "fields": ["content"]}}, False),
    "pipeline": ({"pipeline": True}, True),
}


def _namespace(user: int) -> tuple:
    return ("memories", "u%d" % user)


def _fix(user: int) -> Dict[str, Any]:
    return {"id": "fix-%d" % user, "type": "correction", "scope": "always", "content": "Fix of user %d." % user}


def _turns(user: int) -> List[Any]:
    """A conversation's two turns: a note remembered, then a question."""
    config, context = thread("t%d" % user), {"user_id": "u%d" % user}
    return [
        ({"messages": [("user", "remember=User %d deploys on Mondays" % user)]}, config, context),
        ({"messages": [("user", "when do I deploy?")]}, config, context),
    ]


def _agents(store: Any) -> List[Any]:
    middleware = PoolSplitMemoryMiddleware(POOLS, namespace=lambda rt: ("memories", rt.context["user_id"]))
    return [
        (lambda model: (model, scripted_agent(middleware, store, model=model)))(ToolCallingFakeModel())
        for _ in range(USERS)
    ]


def _check(store: Any, agents: List[Any], answers: List[Any]) -> None:
    """Every conversation succeeded: its note saved once in its own
    namespace, and its second turn shown its own correction and note."""
    failed = {user: repr(a) for user, a in enumerate(answers) if isinstance(a, BaseException) or a is None}
    assert failed == {}
    for user, ((model, _), first) in enumerate(zip(agents, answers)):
        [note] = [e for e in BaseStoreMemory(store, _namespace(user)).entries() if e["type"] == "note"]
        assert note["content"] == "User %d deploys on Mondays" % user
        saved = [str(m.text) for m in first["messages"] if isinstance(m, ToolMessage) and m.name == "remember"]
        assert saved == ["Saved as %s." % note["id"]]
        shown = [(m["id"], m["content"]) for m in markers(model.requests[-1])]
        assert shown == [("fix-%d" % user, "Fix of user %d." % user), (note["id"], note["content"])]


@pytest.mark.parametrize("form", list(FORMS))
def test_twenty_conversations_in_threads_share_one_connection(pg_database: Any, form: str) -> None:
    keywords, counted = FORMS[form]
    with postgres.PostgresStore.from_conn_string(pg_database.conninfo, index=keywords.get("index")) as plain:
        plain.setup()  # not in pipeline mode (its CREATE INDEX CONCURRENTLY cannot run in one)
        if counted:
            install_change_counter(plain)
    with postgres.PostgresStore.from_conn_string(pg_database.conninfo, **keywords) as store:
        for user in range(USERS):
            BaseStoreMemory(store, _namespace(user)).put(_fix(user))
        agents = _agents(store)
        start = threading.Barrier(USERS)
        answers: List[Any] = [None] * USERS

        def converse(user: int) -> None:
            start.wait(timeout=60)
            try:
                for n, (message, config, context) in enumerate(_turns(user)):
                    answer = agents[user][1].invoke(message, config, context=context)
                    if n == 0:
                        answers[user] = answer
            except Exception as error:  # noqa: BLE001 - each conversation's failure is reported
                answers[user] = error

        threads = [threading.Thread(target=converse, args=(user,)) for user in range(USERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        _check(store, agents, answers)


def test_twenty_async_conversations_share_one_connection(pg_database: Any) -> None:
    async def main() -> None:
        async with postgres.AsyncPostgresStore.from_conn_string(pg_database.conninfo) as store:
            await store.setup()
            await ainstall_change_counter(store)
            for user in range(USERS):
                await BaseStoreMemory(store, _namespace(user)).aput(_fix(user))
            agents = _agents(store)

            async def converse(user: int) -> Any:
                first = None
                for message, config, context in _turns(user):
                    answer = await agents[user][1].ainvoke(message, config, context=context)
                    first = first or answer
                return first

            answers = await asyncio.gather(*(converse(user) for user in range(USERS)), return_exceptions=True)
            await asyncio.to_thread(_check, store, agents, list(answers))

    asyncio.run(main())


def _calls(store: Any) -> Dict[str, Any]:
    """Each statement-running function of ours over a sync PostgresStore."""
    from poolsplit_adapters.stores.langgraph.postgres_store_search import PostgresStoreSearch
    from poolsplit_adapters.stores.langgraph.prepared import watermark
    from poolsplit_adapters.stores.langgraph.ranked_search import RankedSearch
    from poolsplit_adapters.stores.postgres import install_filter_index
    from poolsplit_adapters.stores.type_indexes import install_type_indexes

    return {
        "watermark": lambda: watermark(store, [_namespace(0)]),
        "install_change_counter": lambda: install_change_counter(store),
        "install_filter_index": lambda: install_filter_index(store),
        "install_type_indexes": lambda: install_type_indexes(store, ["note"]),
        "ranked search": lambda: PostgresStoreSearch(store).run(
            [RankedSearch(_namespace(0), 5, type="note")], "deploy"
        ),
    }


@pytest.mark.parametrize("call", list(_calls(None)))
def test_each_of_our_statements_waits_for_the_stores_lock(pg_database: Any, call: str) -> None:
    """Held by the test as a batch of another thread holds it, the store's
    lock keeps each of our statement-running calls waiting; released, the
    call completes."""
    index = FORMS["index"][0]["index"]
    with postgres.PostgresStore.from_conn_string(pg_database.conninfo, index=index) as store:
        store.setup()
        done = threading.Event()
        worker = threading.Thread(target=lambda: (_calls(store)[call](), done.set()))
        with store.lock:
            worker.start()
            assert not done.wait(0.5)  # waiting on the lock, not running beside its holder
        worker.join(timeout=30)
        assert done.is_set()


def test_ranked_searches_in_threads_over_a_pipelined_store_take_turns(pg_database: Any) -> None:
    """In pipeline mode the store takes no lock; our ranked searches (each
    one transaction) still take it, so twenty at once never nest their
    transactions (psycopg refused them "at the wrong nesting level")."""
    from poolsplit_adapters.stores.langgraph.postgres_store_search import PostgresStoreSearch
    from poolsplit_adapters.stores.langgraph.ranked_search import RankedSearch

    index = FORMS["index"][0]["index"]
    with postgres.PostgresStore.from_conn_string(pg_database.conninfo, index=index) as plain:
        plain.setup()
        BaseStoreMemory(plain, _namespace(0)).put_many(
            [{"id": "n%d" % n, "type": "note", "content": "deploy note %d" % n} for n in range(5)]
        )
    with postgres.PostgresStore.from_conn_string(pg_database.conninfo, index=index, pipeline=True) as store:
        search = PostgresStoreSearch(store)
        start = threading.Barrier(USERS)
        found: List[Any] = [None] * USERS

        def run(n: int) -> None:
            start.wait(timeout=60)
            try:
                [items] = search.run([RankedSearch(_namespace(0), 3, type="note")], "deploy note %d" % (n % 5))
                found[n] = [item.key for item in items][0]
            except Exception as error:  # noqa: BLE001 - each search's failure is reported
                found[n] = repr(error)

        threads = [threading.Thread(target=run, args=(n,)) for n in range(USERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert found == ["n%d" % (n % 5) for n in range(USERS)]
