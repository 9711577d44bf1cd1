# store.py: LangGraph's Postgres store under the server, in place of its own.
import contextlib
import os

from langgraph.store.postgres.aio import AsyncPostgresStore

from poolsplit_adapters.stores.postgres import ainstall_change_counter


@contextlib.asynccontextmanager
async def make_store():
    async with AsyncPostgresStore.from_conn_string(os.environ["MEMORY_STORE_URI"]) as store:
        await store.setup()  # creates or migrates its tables
        await ainstall_change_counter(store)  # each turn's watermark: one lookup, not a digest of the namespace
        yield store
