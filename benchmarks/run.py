"""Benchmarks: per-query time of the stateless paths (the package's
``retrieve_pools``, the core's fill over the best-first source, and the core
file alone, its plain list source) and of MemoryIndex against a
straightforward implementation of the spec, measured in the same run.

    make bench                      # 10k, 100k and 1M entries
    python benchmarks/run.py --sizes 10000 100000 --queries 5

Prints one table per store size: seconds per query (best of repeats, averaged
over the queries), the ratio to the baseline, whether every selection was
identical, index build time and memory, then tiktoken throughput cold vs
cached; writes the table and draws docs/benchmarks/plots/speed.svg from it
(``--plot-only``: from the table already written, measuring nothing). Last,
issue 40's bars for these paths, each figure as a ratio of this run (the
adapter calls' bar is printed by ``benchmarks/adapter_calls.py``).
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

from poolsplit_adapters import MemoryIndex, poolsplit, retrieve_pools  # noqa: E402
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

    t_base = t_state = t_core = t_index = 0.0
    identical = True
    for ctx in base_queries:
        expected = reference.fill_pools(store, synth.POOLS, ctx, synth.NOW)
        t_base += best_of(lambda ctx=ctx: reference.fill_pools(store, synth.POOLS, ctx, synth.NOW), rep_slow)
        t_state += best_of(lambda ctx=ctx: retrieve_pools(store, synth.POOLS, ctx, now=synth.NOW), rep_slow + 1)
        t_core += best_of(lambda ctx=ctx: poolsplit.retrieve_pools(store, synth.POOLS, ctx, now=synth.NOW), rep_slow)
        identical &= ids(retrieve_pools(store, synth.POOLS, ctx, now=synth.NOW)) == ids(expected)
        identical &= ids(poolsplit.retrieve_pools(store, synth.POOLS, ctx, now=synth.NOW)) == ids(expected)
        identical &= ids(index.retrieve_pools(synth.POOLS, ctx, now=synth.NOW)) == ids(expected)
    t_select = 0.0
    for ctx in contexts:
        t_index += best_of(lambda ctx=ctx: index.retrieve_pools(synth.POOLS, ctx, now=synth.NOW), 3)
        t_select += best_of(lambda ctx=ctx: index.select(synth.POOLS, ctx, now=synth.NOW), 3)
    t_base /= len(base_queries)
    t_state /= len(base_queries)
    t_core /= len(base_queries)
    t_index /= len(contexts)
    t_select /= len(contexts)
    print(
        "\n%d entries, %d pools, %d queries (%d for the baseline and stateless)"
        % (size, len(synth.POOLS), len(contexts), len(base_queries))
    )
    print("  %-28s %12s %10s" % ("path", "s/query", "vs base"))
    print("  %-28s %12.4f %9.1fx" % ("baseline (reference.py)", t_base, 1.0))
    print("  %-28s %12.4f %9.1fx" % ("stateless retrieve_pools", t_state, t_base / t_state))
    print("  %-28s %12.4f %9.1fx" % ("core file alone (list)", t_core, t_base / t_core))
    print("  %-28s %12.5f %9.1fx" % ("MemoryIndex, warm", t_index, t_base / t_index))
    print(
        "  %-28s %12.5f %9.1fx   (%.2fx its retrieve_pools)"
        % ("MemoryIndex.select (report)", t_select, t_base / t_select, t_select / t_index)
    )
    print("  identical selections: %s" % ("yes" if identical else "NO"))
    print("  index build: %.2f s (%.1f us/entry), resident memory grew by %.0f MB" % (build, build * 1e6 / size, grown))
    BARS.append((size, t_base / t_state, t_select / t_index, build, grown, identical))
    return [
        "%dk" % (size // 1000) if size < 1_000_000 else "%gM" % (size / 1e6),
        "%.3g" % t_base,
        "%.3g (%.1fx)" % (t_state, t_base / t_state),
        "%.3g (%.1fx)" % (t_core, t_base / t_core),
        "%.2g s (%.0fx)" % (t_index, t_base / t_index),
        "%.2g s (%.0fx; %.2fx its `retrieve_pools`)" % (t_select, t_base / t_select, t_select / t_index),
        "%.2f s" % build,
        "%.0f MB" % grown,
        "yes" if identical else "NO",
    ]


#: (size, stateless speed-up, select / retrieve_pools, build s, build MB, identical) of each size, for the bars.
BARS: List[Any] = []
#: Issue 40 item 7: stateless retrieve_pools >= x3 the baseline at 100k; at 1M the index <= 10 s, <= 300 MB;
#: MemoryIndex.select with its report <= x2 its retrieve_pools.
STATELESS_AT_LEAST, SELECT_AT_MOST, BUILD_SECONDS, BUILD_MB = 3.0, 2.0, 10.0, 300.0


def print_bars() -> None:
    """Each bar of issue 40 item 7 these paths meet (or not), as a ratio of this run."""

    def line(what: str, ratio: float, ok: bool) -> None:
        print("  %-62s x%5.2f  %s" % (what, ratio, "ok" if ok else "MISSED"))

    print("\nissue 40 item 7, this run (a ratio <= 1 is within the bar unless it says >=):")
    for size, speedup, select_ratio, build, grown, identical in BARS:
        name = "%dk" % (size // 1000)
        line("%s stateless retrieve_pools / baseline (>= x%g)" % (name, STATELESS_AT_LEAST), speedup,
             speedup >= STATELESS_AT_LEAST or size != 100_000)  # fmt: skip
        line("%s MemoryIndex.select (report) / its retrieve_pools (<= x%g)" % (name, SELECT_AT_MOST), select_ratio,
             select_ratio <= SELECT_AT_MOST)  # fmt: skip
        if size >= 1_000_000:
            line("%s index build / %g s" % (name, BUILD_SECONDS), build / BUILD_SECONDS, build <= BUILD_SECONDS)
            line("%s index memory / %g MB" % (name, BUILD_MB), grown / BUILD_MB, grown <= BUILD_MB)
        if not identical:
            print("  %s: a selection differed from the baseline's: MISSED" % name)


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
            "stateless `retrieve_pools`",
            "core file alone",
            "MemoryIndex warm",
            "`MemoryIndex.select` (full report)",
            "index build",
            "index memory",
            "identical",
        ],
        rows,
        "rrrrrrrrl",
    )
    tokens = docs_tables.markdown_table(
        ["tiktoken `o200k_base`", "cold, texts/s", "`count_many`, texts/s", "cached, texts/s"], [tiktoken_row], "lrrr"
    )
    docs_tables.write_table("speed", speed + "\n\n" + tokens)
    plots.speed()
    print_bars()


if __name__ == "__main__":
    main()
