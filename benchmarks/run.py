"""Benchmarks: per-query time of the stateless paths (the core's plain list
candidates, and fastpath's best-first twin) and of MemoryIndex against a
straightforward implementation of the spec, measured in the same run.

    make bench                      # 10k, 100k and 1M entries
    python benchmarks/run.py --sizes 10000 100000 --queries 5

Prints one table per store size: seconds per query (best of repeats, averaged
over the queries), the ratio to the baseline, whether every selection was
identical, index build time and memory, then tiktoken throughput cold vs
cached; writes the table and draws docs/benchmarks/plots/speed.svg from it
(``--plot-only``: from the table already written, measuring nothing).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from typing import Any, Callable, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The spec oracle lives with the tests (tests/reference.py): the baseline here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

import docs_tables  # noqa: E402
import plots  # noqa: E402
import reference  # noqa: E402
import synth  # noqa: E402

from poolsplit_adapters import MemoryIndex, fastpath, retrieve_pools  # noqa: E402
from poolsplit_adapters.tokens import TiktokenCounter  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def best_of(fn: Callable[[], Any], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def ids(result: Dict[str, List[Any]]) -> Dict[str, List[int]]:
    return {name: [id(e) for e in got] for name, got in result.items()}


def bench_size(size: int, queries: int) -> List[str]:
    store = synth.make_store(size)
    contexts = synth.make_queries(queries)
    slow = size >= 500_000  # the baseline takes seconds per query there
    base_queries = contexts[:1] if slow else contexts
    rep_slow = 1 if slow else 2
    gc.collect()
    before = rss_mb()
    start = time.perf_counter()
    index = MemoryIndex(store)
    build = time.perf_counter() - start
    grown = rss_mb() - before

    t_base = t_state = t_fast = t_index = 0.0
    identical = True
    for ctx in base_queries:
        expected = reference.fill_pools(store, synth.POOLS, ctx, synth.NOW)
        t_base += best_of(lambda ctx=ctx: reference.fill_pools(store, synth.POOLS, ctx, synth.NOW), rep_slow)
        t_state += best_of(lambda ctx=ctx: retrieve_pools(store, synth.POOLS, ctx, now=synth.NOW), rep_slow + 1)
        t_fast += best_of(lambda ctx=ctx: fastpath.retrieve_pools(store, synth.POOLS, ctx, now=synth.NOW), rep_slow + 1)
        identical &= ids(retrieve_pools(store, synth.POOLS, ctx, now=synth.NOW)) == ids(expected)
        identical &= ids(fastpath.retrieve_pools(store, synth.POOLS, ctx, now=synth.NOW)) == ids(expected)
        identical &= ids(index.retrieve_pools(synth.POOLS, ctx, now=synth.NOW)) == ids(expected)
    t_select = 0.0
    for ctx in contexts:
        t_index += best_of(lambda ctx=ctx: index.retrieve_pools(synth.POOLS, ctx, now=synth.NOW), 3)
        t_select += best_of(lambda ctx=ctx: index.select(synth.POOLS, ctx, now=synth.NOW), 3)
    t_base /= len(base_queries)
    t_state /= len(base_queries)
    t_fast /= len(base_queries)
    t_index /= len(contexts)
    t_select /= len(contexts)
    print(
        "\n%d entries, %d pools, %d queries (%d for the baseline and stateless)"
        % (size, len(synth.POOLS), len(contexts), len(base_queries))
    )
    print("  %-28s %12s %10s" % ("path", "s/query", "vs base"))
    print("  %-28s %12.4f %9.1fx" % ("baseline (reference.py)", t_base, 1.0))
    print("  %-28s %12.4f %9.1fx" % ("stateless retrieve_pools", t_state, t_base / t_state))
    print("  %-28s %12.4f %9.1fx" % ("fastpath.retrieve_pools", t_fast, t_base / t_fast))
    print("  %-28s %12.5f %9.1fx" % ("MemoryIndex, warm", t_index, t_base / t_index))
    print(
        "  %-28s %12.5f %9.1fx   (%.2fx its retrieve_pools)"
        % ("MemoryIndex.select (report)", t_select, t_base / t_select, t_select / t_index)
    )
    print("  identical selections: %s" % ("yes" if identical else "NO"))
    print("  index build: %.2f s (%.1f us/entry), resident memory grew by %.0f MB" % (build, build * 1e6 / size, grown))
    return [
        "%dk" % (size // 1000) if size < 1_000_000 else "%gM" % (size / 1e6),
        "%.3g" % t_base,
        "%.3g (%.1fx)" % (t_state, t_base / t_state),
        "%.2g s (%.0fx)" % (t_index, t_base / t_index),
        "%.2g s (%.0fx; %.2fx its `retrieve_pools`)" % (t_select, t_base / t_select, t_select / t_index),
        "%.2f s" % build,
        "%.0f MB" % grown,
        "yes" if identical else "NO",
    ]


def bench_tiktoken(count: int) -> List[str]:
    store = synth.make_store(count, seed=3)
    texts = [e["content"] for e in store]
    counter = TiktokenCounter()
    start = time.perf_counter()
    for text in texts:
        counter(text)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    for text in texts:
        counter(text)
    cached = time.perf_counter() - start
    batch_counter = TiktokenCounter()
    start = time.perf_counter()
    batch_counter.count_many(texts)
    batch = time.perf_counter() - start
    print("\ntiktoken o200k_base, %d texts of ~%d chars" % (count, sum(map(len, texts)) // count))
    print("  cold, one by one : %8.0f texts/s" % (count / cold))
    print("  cold, count_many : %8.0f texts/s (%.1fx)" % (count / batch, cold / batch))
    print("  cached           : %8.0f texts/s (%.0fx)" % (count / cached, cold / cached))
    return [
        "%d texts of ~%d characters" % (count, sum(map(len, texts)) // count),
        "%.0f" % (count / cold),
        "%.0f (%.1fx)" % (count / batch, cold / batch),
        "%.0f (%.0fx)" % (count / cached, cold / cached),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=5)
    parser.add_argument("--tiktoken-texts", type=int, default=20_000)
    parser.add_argument("--plot-only", action="store_true", help="redraw the plot from the table written before")
    args = parser.parse_args()
    if args.plot_only:
        plots.speed()
        return
    print(
        "machine: %s, %s, %d cores, Python %s"
        % (platform.machine(), platform.processor() or "cpu", os.cpu_count() or 0, platform.python_version())
    )
    rows = [bench_size(size, args.queries) for size in args.sizes]
    tiktoken_row = bench_tiktoken(args.tiktoken_texts)
    speed = docs_tables.markdown_table(
        [
            "entries",
            "baseline s/query",
            "stateless",
            "MemoryIndex warm",
            "`MemoryIndex.select` (full report)",
            "index build",
            "index memory",
            "identical",
        ],
        rows,
        "rrrrrrrl",
    )
    tokens = docs_tables.markdown_table(
        ["tiktoken `o200k_base`", "cold, texts/s", "`count_many`, texts/s", "cached, texts/s"], [tiktoken_row], "lrrr"
    )
    docs_tables.write_table("speed", speed + "\n\n" + tokens)
    plots.speed()


if __name__ == "__main__":
    main()
