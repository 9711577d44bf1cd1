"""Starvation benchmark: one shared budget vs pools, on a synthetic store.

    python benchmarks/starvation.py                    # the core's default_scorer
    python benchmarks/starvation.py --scorer adapters  # the adapters' default (relevance first)

Prints (1) the per-type load rate over ~50 queries on a ~5k-entry mixed
store: the share of queries on which at least one entry of the type loaded,
under one shared budget of the same total size (every entry ranked by the
same scorer, corrections included) and under pools with the always tier;
(2) correction presence as a flood of fresh, matching, high-priority notes
grows: the share of corrections that loaded, averaged over the queries.
The notebook notebooks/starvation.ipynb plots the same numbers; the run
draws docs/benchmarks/plots/starvation.svg from the table it wrote
(``--plot-only``: from the table already written, measuring nothing).
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import sys
from typing import Any, Dict, List, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import docs_tables  # noqa: E402
import plots  # noqa: E402
import synth  # noqa: E402

from poolsplit_adapters import MemoryIndex, Pool  # noqa: E402
from poolsplit_adapters.poolsplit import Scorer, default_scorer  # noqa: E402
from poolsplit_adapters.settings import default_adapter_scorer  # noqa: E402

TYPES = ["correction", "note", "task", "fact", "episode", "skill", "growth"]
FLOODS = [0, 100, 1_000, 10_000]
# One pool per group of types; the always tier carries the corrections.
POOLS = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("content", 600, 10, ("note", "task", "fact")),
    Pool("episodes", 200, 4, ("episode",)),
    Pool("skills", 120, 2, ("skill",)),
    Pool("growth", 80, 1, ("growth",)),
]


def make_store(size: int = 5_000, seed: int = 4) -> List[Dict[str, Any]]:
    """The synthetic store, with corrections as a one-budget system would
    hold them: top priority, recent, and about the work at hand (they share
    the queries' common words), so that they do load on quiet turns."""
    store = synth.make_store(size, seed=seed)
    common = synth.vocabulary()[:40]
    rnd = random.Random(seed)
    out = []
    for entry in store:
        if entry.get("scope") == "always":
            entry = dict(
                entry,
                base_priority=10,
                content="Correction: " + " ".join(rnd.sample(common, 12)),
                created=(synth.NOW - datetime.timedelta(days=rnd.uniform(1, 10))).isoformat() + "Z",
            )
        out.append(entry)
    return out


def single_budget(pools: Sequence[Pool]) -> List[Pool]:
    """One pool as large as all of them together: the usual retrieval."""
    return [Pool("single", sum(p.max_tokens for p in pools), sum(p.max_entries for p in pools))]


def without_always(store: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The store as a one-budget retriever sees it: no always tier."""
    return [{k: v for k, v in e.items() if k != "scope"} for e in store]


def load_rates(
    store: Sequence[Dict[str, Any]], queries: Sequence[Dict[str, Any]], scorer: Scorer = default_scorer
) -> Dict[str, Dict[str, float]]:
    """Per type: share of queries that loaded at least one entry of it."""
    pooled = MemoryIndex(store, scorer=scorer)
    shared = MemoryIndex(without_always(store), scorer=scorer)
    hits: Dict[str, Dict[str, int]] = {"shared": dict.fromkeys(TYPES, 0), "pools": dict.fromkeys(TYPES, 0)}
    for ctx in queries:
        results = {
            "shared": shared.retrieve_pools(single_budget(POOLS), ctx, now=synth.NOW),
            "pools": pooled.retrieve_pools(POOLS, ctx, now=synth.NOW),
        }
        for name, result in results.items():
            loaded = {e["type"] for chosen in result.values() for e in chosen}
            for kind in loaded:
                hits[name][kind] += 1
    return {name: {k: v / len(queries) for k, v in counts.items()} for name, counts in hits.items()}


def flood(size: int, queries: Sequence[Dict[str, Any]], seed: int = 11) -> List[Dict[str, Any]]:
    """Fresh, high-priority notes that echo the queries' words: the busy turn."""
    rnd = random.Random(seed)
    notes = []
    for n in range(size):
        ctx = queries[n % len(queries)]
        words = ctx["message"].split()
        notes.append(
            {
                "id": "flood-%06d" % n,
                "type": "note",
                "content": "Fresh update: " + " ".join(rnd.choices(words, k=12)),
                "tags": list(ctx["tags"]),
                "project": ctx["project"],
                "created": (synth.NOW - datetime.timedelta(minutes=rnd.randint(0, 600))).isoformat() + "Z",
                "base_priority": 9,
                "source": "tool-output",
            }
        )
    return notes


def quiet(store: Sequence[Dict[str, Any]], days: float = 30.0) -> List[Dict[str, Any]]:
    """The store a month later with nothing new: every contextual entry aged
    by ``days``; the corrections stay as they are (standing, recent)."""
    shift = datetime.timedelta(days=days)
    out = []
    for entry in store:
        if entry.get("scope") != "always" and entry.get("created"):
            stamp = datetime.datetime.fromisoformat(entry["created"].rstrip("Z")) - shift
            entry = dict(entry, created=stamp.isoformat() + "Z")
        out.append(entry)
    return out


def correction_presence(
    store: Sequence[Dict[str, Any]],
    queries: Sequence[Dict[str, Any]],
    floods: Sequence[int] = FLOODS,
    scorer: Scorer = default_scorer,
) -> Dict[str, List[float]]:
    """Share of corrections loaded (mean over queries) for each flood size,
    starting from a quiet store (see :func:`quiet`)."""
    store = quiet(store)
    corrections = [e for e in store if e.get("scope") == "always"]
    out: Dict[str, List[float]] = {"shared": [], "pools": []}
    for size in floods:
        grown = list(store) + flood(size, queries)
        pooled = MemoryIndex(grown, scorer=scorer)
        shared = MemoryIndex(without_always(grown), scorer=scorer)
        got = {"shared": 0.0, "pools": 0.0}
        for ctx in queries:
            for name, index, plan in (
                ("shared", shared, single_budget(POOLS)),
                ("pools", pooled, POOLS),
            ):
                loaded = {e["id"] for chosen in index.retrieve_pools(plan, ctx, now=synth.NOW).values() for e in chosen}
                got[name] += sum(1 for c in corrections if c["id"] in loaded) / len(corrections)
        for name in out:
            out[name].append(got[name] / len(queries))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scorer",
        choices=["spec", "adapters"],
        default="spec",
        help="spec: the core's default_scorer (the docs table); adapters: default_adapter_scorer() (printed only)",
    )
    parser.add_argument("--plot-only", action="store_true", help="redraw the plot from the table written before")
    args = parser.parse_args()
    if args.plot_only:
        plots.starvation()
        return
    scorer = default_scorer if args.scorer == "spec" else default_adapter_scorer()
    store = make_store()
    queries = synth.make_queries(50, seed=8)
    rates = load_rates(store, queries, scorer)
    print(
        "per-type load rate over %d queries, %d-entry store (share of queries loading >= 1 entry)"
        % (len(queries), len(store))
    )
    print("  %-12s %14s %8s" % ("type", "one budget", "pools"))
    for kind in TYPES:
        print("  %-12s %13.0f%% %7.0f%%" % (kind, 100 * rates["shared"][kind], 100 * rates["pools"][kind]))
    presence = correction_presence(store, queries, scorer=scorer)
    print(
        "\ncorrections present as fresh content floods into a quiet store (mean share of the %d corrections)"
        % sum(1 for e in store if e.get("scope") == "always")
    )
    print("  %-12s %14s %8s" % ("flood", "one budget", "pools"))
    for size, a, b in zip(FLOODS, presence["shared"], presence["pools"]):
        print("  %-12d %13.0f%% %7.0f%%" % (size, 100 * a, 100 * b))
    if args.scorer != "spec":
        return
    per_type = docs_tables.markdown_table(
        ["type", "one shared budget", "pools"],
        [[kind, "%.0f%%" % (100 * rates["shared"][kind]), "%.0f%%" % (100 * rates["pools"][kind])] for kind in TYPES],
        "lrr",
    )
    flood = docs_tables.markdown_table(
        ["fresh matching entries added", "corrections present, one shared budget", "pools"],
        [
            [f"{size:,}", "%.0f%%" % (100 * a), "%.0f%%" % (100 * b)]
            for size, a, b in zip(FLOODS, presence["shared"], presence["pools"])
        ],
        "rrr",
    )
    intro = "%d-entry store, %d queries, the same total budget either way." % (len(store), len(queries))
    docs_tables.write_table(
        "starvation",
        intro + " Share of queries that load at least one entry of the type:\n\n" + per_type
        + "\n\nMean share of the %d corrections present as fresh content floods in:\n\n"
        % sum(1 for e in store if e.get("scope") == "always") + flood,
    )  # fmt: skip
    plots.starvation()


if __name__ == "__main__":
    main()
