"""Per-call cost of the adapters' default scorer on a MemoryIndex.

    python benchmarks/relevance_speed.py                    # 10k and 100k entries
    python benchmarks/relevance_speed.py --sizes 100000 --queries 5

The adapters rank with ``RelevanceScorer`` (BM25 over Unicode words, bounded
boosts) where the core ranks with the spec's ``default_scorer``. Over a
``MemoryIndex`` both are vectorised: the spec's factors over columns and
word postings, BM25 over term postings kept as entries are added
(``relevance.columns.TermPostings``). This prints, per store size, the
seconds per ``MemoryIndex.select`` call with each scorer (best of three,
averaged over the queries), their ratio, the one-off cost of the BM25
statistics (built with the index when its scorer is a ``RelevanceScorer``),
and whether the vectorised selection equals the per-entry one (the index
without numpy) on the first queries; at 10k, the stateless per-entry
``select(..., scorer=RelevanceScorer())`` for scale.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import synth  # noqa: E402
from run import best_of  # noqa: E402  (the same timing rule)

from poolsplit_adapters import MemoryIndex, select  # noqa: E402
from poolsplit_adapters.relevance import RelevanceScorer  # noqa: E402
from poolsplit_adapters.settings import default_adapter_scorer  # noqa: E402


def report(selection: Any) -> Any:
    return [(id(c.entry), c.pool, c.score) for c in selection.chosen], selection.stats


def bench(size: int, queries: int, check: int) -> None:
    store = synth.make_store(size)
    contexts = synth.make_queries(queries)
    start, cpu = time.perf_counter(), time.process_time()
    spec = MemoryIndex(store)
    t_spec_build, c_spec_build = time.perf_counter() - start, time.process_time() - cpu
    scorer = default_adapter_scorer()
    assert isinstance(scorer, RelevanceScorer)
    start, cpu = time.perf_counter(), time.process_time()
    words = MemoryIndex(store, scorer=scorer)
    t_words_build, c_words_build = time.perf_counter() - start, time.process_time() - cpu
    t_spec = t_words = 0.0
    for ctx in contexts:
        t_spec += best_of(lambda ctx=ctx: spec.select(synth.POOLS, ctx, now=synth.NOW), 3)
        t_words += best_of(lambda ctx=ctx: words.select(synth.POOLS, ctx, now=synth.NOW), 3)
    t_spec /= len(contexts)
    t_words /= len(contexts)
    per_entry = MemoryIndex(store, use_numpy=False)
    identical = all(
        report(words.select(synth.POOLS, ctx, now=synth.NOW))
        == report(per_entry.select(synth.POOLS, ctx, now=synth.NOW, scorer=RelevanceScorer()))
        for ctx in contexts[:check]
    )
    t_stateless: Optional[float] = None
    if size <= 20_000:
        t_stateless = sum(
            best_of(lambda ctx=ctx: select(store, synth.POOLS, ctx, now=synth.NOW, scorer=RelevanceScorer()), 1)
            for ctx in contexts
        ) / len(contexts)
    print("\n%d entries, %d pools, %d queries" % (size, len(synth.POOLS), len(contexts)))
    print("  %-44s %10s" % ("path", "s/call"))
    print("  %-44s %10.4f" % ("MemoryIndex.select, default_scorer (spec)", t_spec))
    print("  %-44s %10.4f   (%.2fx the spec's)" % ("MemoryIndex.select, RelevanceScorer", t_words, t_words / t_spec))
    if t_stateless is not None:
        print("  %-44s %10.4f" % ("select(entries, scorer=RelevanceScorer())", t_stateless))
    print(
        "  index build: %.2f s with default_scorer, %.2f s with RelevanceScorer (+%.2f s for the BM25 postings)"
        % (t_spec_build, t_words_build, t_words_build - t_spec_build)
    )
    # CPU seconds of this process: what the build costs on a machine that
    # other work shares (wall time there measures the neighbours too).
    print(
        "  index build, CPU: %.2f s with default_scorer, %.2f s with RelevanceScorer (+%.2f s)"
        % (c_spec_build, c_words_build, c_words_build - c_spec_build)
    )
    print("  vectorised == per-entry on %d queries: %s" % (min(check, len(contexts)), "yes" if identical else "NO"))


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--check", type=int, default=2, help="queries compared with the per-entry path")
    args = parser.parse_args(argv)
    sizes: List[int] = args.sizes
    for size in sizes:
        bench(size, args.queries, args.check)


if __name__ == "__main__":
    main()
