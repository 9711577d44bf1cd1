"""Benchmark of the embedded SQLite store against an in-memory baseline
measured in the same run.

    make bench                                   # runs this after benchmarks/run.py
    python benchmarks/stores_sqlite.py           # 100k entries
    python benchmarks/stores_sqlite.py --sizes 100000 1000000 --queries 200

For each store size it reports:

* ingest: entries per second through ``add`` (batches of 10k, each one
  durable transaction), against writing the same JSON Lines file;
* warm start: opening the file and answering the first query (the index is
  built from the table), against the baseline of ``load_store`` on the JSON
  Lines file + building a ``MemoryIndex`` + the same first query;
* query latency p50/p95 (``retrieve_pools``, the per-turn path) over the
  queries: the store (with its change check before every query) against the
  same ``MemoryIndex`` queried directly; and the median of ``select`` (with
  the full report) over fewer queries;
* catch-up: the next query after another connection added 100, superseded 10
  and deleted 10 entries (applied incrementally), against reopening the file.

Both sides use the core's default token counter, so the tokenizer is not
what is measured.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import docs_tables  # noqa: E402
import synth  # noqa: E402

from poolsplit_adapters.index import MemoryIndex  # noqa: E402
from poolsplit_adapters.stores import SQLiteMemoryStore, load_store  # noqa: E402
from poolsplit_adapters.stores.checks import entry_json  # noqa: E402


def timed(fn: Callable[[], Any]) -> Tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def percentiles(samples: List[float]) -> Tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def ms(seconds: float) -> str:
    return "%.2f ms" % (seconds * 1000)


def bench(size: int, queries: int, report_queries: int, folder: str) -> Dict[str, Any]:
    entries = synth.make_store(size)
    contexts = synth.make_queries(queries)
    pools = synth.POOLS
    db = os.path.join(folder, "memory-%d.db" % size)
    jsonl = os.path.join(folder, "memory-%d.jsonl" % size)

    def write_jsonl() -> None:
        with open(jsonl, "w", encoding="utf-8") as out:
            for n, entry in enumerate(entries):
                out.write(entry_json(entry, n) + "\n")
            out.flush()
            os.fsync(out.fileno())

    jsonl_s, _ = timed(write_jsonl)

    def ingest() -> None:
        with SQLiteMemoryStore(db) as store:
            for start in range(0, size, 10_000):
                store.add(entries[start : start + 10_000])

    ingest_s, _ = timed(ingest)

    first = contexts[0]
    store_warm_s, store = timed(lambda: _open_and_query(db, pools, first))
    base_warm_s, index = timed(lambda: _load_and_query(jsonl, pools, first))

    def chosen(source: Any, ctx: Dict[str, Any]) -> List[str]:
        return [e["id"] for got in source.retrieve_pools(pools, ctx, now=synth.NOW).values() for e in got]

    same = all(chosen(store, ctx) == chosen(index, ctx) for ctx in contexts)
    store_lat, base_lat = [], []
    for ctx in contexts:
        t0 = time.perf_counter()
        store.retrieve_pools(pools, ctx, now=synth.NOW)
        t1 = time.perf_counter()
        index.retrieve_pools(pools, ctx, now=synth.NOW)
        t2 = time.perf_counter()
        store_lat.append(t1 - t0)
        base_lat.append(t2 - t1)
    # select() also builds the report's row for every entry that did not
    # load: seconds at 1M entries, so fewer queries.
    # A full collection before each: the report allocates a row per entry,
    # and a collection it triggers would be charged to whichever ran next.
    # Interleaved, alternating which goes first, so drift in the machine's
    # load falls on both sides alike.
    store_sel, base_sel = [], []
    for k, ctx in enumerate(contexts[:report_queries]):
        pair = [(store_sel, store), (base_sel, index)]
        for samples, source in pair if k % 2 == 0 else pair[::-1]:
            samples.append(timed(lambda s=source, c=ctx: s.select(pools, c, now=synth.NOW))[0])

    with SQLiteMemoryStore(db) as other:
        live = [e["id"] for e in entries[size // 2 : size // 2 + 20]]
        other.add([{"type": "note", "content": "fresh note %d" % n} for n in range(100)])
        for entry_id in live[:10]:
            other.supersede(entry_id, {"type": "fact", "content": "corrected %s" % entry_id})
        for entry_id in live[10:]:
            other.delete(entry_id)
    catch_up_s, _ = timed(lambda: store.retrieve_pools(pools, first, now=synth.NOW))
    reopen_s, reopened = timed(lambda: _open_and_query(db, pools, first))
    assert store.full_loads == 1, "the long-lived store reloaded instead of catching up"
    assert chosen(store, first) == chosen(reopened, first)
    reopened.close()
    store.close()
    return {
        "size": size,
        "ingest": size / ingest_s,
        "jsonl_write": size / jsonl_s,
        "store_warm": store_warm_s,
        "base_warm": base_warm_s,
        "store_p": percentiles(store_lat),
        "base_p": percentiles(base_lat),
        "store_sel": statistics.median(store_sel),
        "base_sel": statistics.median(base_sel),
        "catch_up": catch_up_s,
        "reopen": reopen_s,
        "same": same,
        "db_mb": os.path.getsize(db) / 2**20,
        "jsonl_mb": os.path.getsize(jsonl) / 2**20,
    }


def _open_and_query(db: str, pools: Any, context: Dict[str, Any]) -> SQLiteMemoryStore:
    store = SQLiteMemoryStore(db)
    store.retrieve_pools(pools, context, now=synth.NOW)
    return store


def _load_and_query(jsonl: str, pools: Any, context: Dict[str, Any]) -> MemoryIndex:
    index = MemoryIndex(load_store(jsonl))
    index.retrieve_pools(pools, context, now=synth.NOW)
    return index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--queries", type=int, default=200, help="queries timed with retrieve_pools")
    parser.add_argument("--report-queries", type=int, default=10, help="queries timed with select (full report)")
    args = parser.parse_args()
    print("python %s, %s, %d cores" % (platform.python_version(), platform.machine(), os.cpu_count() or 0))
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            rows.append(bench(size, args.queries, args.report_queries, folder))
    lines = [
        "| entries | ingest, entries/s (JSONL write) | warm start: store / JSONL + index | "
        "retrieve p50: store / index | retrieve p95: store / index | select (report) p50: store / index | "
        "next query after 120 writes elsewhere / reopen | same results |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            "| %d | %.0f (%.0f) | %.2f s / %.2f s (x%.2f) | %s / %s (x%.2f) | %s / %s (x%.2f) | %s / %s (x%.2f) | %s / %.2f s | %s |"
            % (
                r["size"],
                r["ingest"],
                r["jsonl_write"],
                r["store_warm"],
                r["base_warm"],
                r["store_warm"] / r["base_warm"],
                ms(r["store_p"][0]),
                ms(r["base_p"][0]),
                r["store_p"][0] / r["base_p"][0],
                ms(r["store_p"][1]),
                ms(r["base_p"][1]),
                r["store_p"][1] / r["base_p"][1],
                ms(r["store_sel"]),
                ms(r["base_sel"]),
                r["store_sel"] / r["base_sel"],
                ms(r["catch_up"]),
                r["reopen"],
                "yes" if r["same"] else "NO",
            )
        )
    print("\n" + "\n".join(lines))
    sizes = []
    for r in rows:
        sizes.append(
            "file sizes at %d entries: SQLite %.0f MB, JSON Lines %.0f MB" % (r["size"], r["db_mb"], r["jsonl_mb"])
        )
        print(sizes[-1])
    docs_tables.write_table("stores_sqlite", "\n".join(lines) + "\n\n" + "\n".join("- " + x for x in sizes))


if __name__ == "__main__":
    main()
