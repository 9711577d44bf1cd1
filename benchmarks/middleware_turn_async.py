"""Benchmark: what ``PoolSplitMemoryMiddleware`` adds to one async agent turn
over LangGraph's ``AsyncPostgresStore``, against the sync ``PostgresStore``
over the same database in the same run.

    python benchmarks/middleware_turn_async.py                 # 10k and 100k memories
    python benchmarks/middleware_turn_async.py --sizes 10000 --turns 10

The memories, pools and turns are ``benchmarks/middleware_turn.py``'s (one
user's namespace, 20 corrections checked on every model call, quiet and
demoting turns), on a throwaway embedded Postgres with the change counter
installed (``install_change_counter`` / ``ainstall_change_counter``). The
sync store's turns run with ``agent.invoke``; the async store's with
``agent.ainvoke`` on the event loop the store was made on (a loop thread of
this process; each turn is handed to it and waited for, a hop of well under
a millisecond). Over the async store the middleware's watermark and diff
reads are statements on the store's loop, waited for from a worker thread,
so an async turn reads the counter, not the namespace.

Reported per store and size: the turn's p50 / p95 with the middleware, the
overhead (p50 with - p50 without, each store against its own bare turn),
the store round trips per turn (``batch`` / ``abatch`` calls) and the time
spent in them, and the async turn's p50 as a ratio of the sync one's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import threading
import time
from typing import Any, Coroutine, Iterator, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import docs_tables  # noqa: E402
from middleware_turn import HEADER, POOLS, U1, counter, counting, memories, p95, turns  # noqa: E402

from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitMemoryMiddleware, RecallConfig, WriteConfig  # noqa: E402


@contextlib.contextmanager
def loop_thread() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop running in a thread of its own (the async store's)."""
    loop = asyncio.new_event_loop()
    worker = threading.Thread(target=loop.run_forever, daemon=True)
    worker.start()
    try:
        yield loop
    finally:
        on(loop, _cancel_pending())  # the stores' background batch tasks
        loop.call_soon_threadsafe(loop.stop)
        worker.join()
        loop.close()


async def _cancel_pending() -> None:
    mine = asyncio.current_task()
    pending = [task for task in asyncio.all_tasks() if task is not mine]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


def on(loop: asyncio.AbstractEventLoop, work: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run_coroutine_threadsafe(work, loop).result()


def measure(size: int, count: int) -> List[List[str]]:
    from langgraph.store.postgres import PostgresStore
    from langgraph.store.postgres.aio import AsyncPostgresStore
    from pg_server import EmbeddedPostgres

    from poolsplit_adapters.stores.postgres import ainstall_change_counter, install_change_counter

    rows: List[List[str]] = []
    with EmbeddedPostgres() as pg, loop_thread() as loop:
        db = pg.create_database("turns")
        with counting(PostgresStore).from_conn_string(db.conninfo) as sync_store:
            sync_store.setup()
            install_change_counter(sync_store)
            loader, items = BaseStoreMemory(sync_store, U1, token_counter=counter), memories(size)
            for start in range(0, size, 2_000):
                loader.put_many(items[start : start + 2_000])
            opened = counting(AsyncPostgresStore).from_conn_string(db.conninfo)
            async_store = on(loop, opened.__aenter__())
            try:
                on(loop, ainstall_change_counter(async_store))  # (installed: harmless again)

                def run_async(agent: Any, given: Any, config: Any) -> Any:
                    return on(loop, agent.ainvoke(given, config))

                medians = {}
                for name, store, run in (
                    ("PostgresStore (sync, invoke)", sync_store, None),
                    ("AsyncPostgresStore (ainvoke)", async_store, run_async),
                ):
                    bare, _, _ = turns(store, None, count, run)
                    for label, max_turns in (("quiet", count + 10), ("demoting", 1)):
                        middleware = PoolSplitMemoryMiddleware(
                            POOLS,
                            namespace=U1,
                            max_turns=max_turns,
                            recall=RecallConfig(token_counter=counter),
                            write=WriteConfig(remember=False),
                        )
                        times, trips, inside = turns(store, middleware, count, run)
                        medians[(name, label)] = statistics.median(times)
                        sync_p50 = medians.get(("PostgresStore (sync, invoke)", label))
                        rows.append(
                            [
                                name,
                                f"{size:,}",
                                label,
                                "%.1f ms" % (1000 * statistics.median(times)),
                                "%.1f ms" % (1000 * p95(times)),
                                "%.1f ms" % (1000 * (statistics.median(times) - statistics.median(bare))),
                                "%.1f" % statistics.mean(trips),
                                "%.1f ms" % (1000 * statistics.median(inside)),
                                "x%.2f" % (statistics.median(times) / sync_p50) if sync_p50 else "x1.00",
                            ]
                        )
                        print(" | ".join(rows[-1]))
            finally:
                on(loop, opened.__aexit__(None, None, None))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--turns", type=int, default=15)
    args = parser.parse_args()
    header = [*HEADER, "p50 ÷ the sync store's"]
    rows: List[List[str]] = []
    started = time.perf_counter()
    for size in args.sizes:
        rows += measure(size, args.turns)
    print("%.0f s" % (time.perf_counter() - started))
    docs_tables.write_table("middleware_turn_async", docs_tables.markdown_table(header, rows, "lllrrrrrr"))


if __name__ == "__main__":
    main()
