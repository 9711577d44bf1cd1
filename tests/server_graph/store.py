# store.py: LangGraph's Postgres store under the server, in place of its own.
import contextlib
import os

from langgraph.store.postgres.aio import AsyncPostgresStore

from poolsplit_adapters.stores.postgres import ainstall_change_counter


@contextlib.asynccontextmanager
async def make_store():
    uri = os.environ["MEMORY_STORE_URI"]
    async with AsyncPostgresStore.from_conn_string(uri) as store:
        await store.setup()  # creates or migrates its tables
        # each turn's watermark: one lookup, not a digest of the namespace
        await ainstall_change_counter(store)
        yield store
