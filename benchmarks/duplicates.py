"""Duplicate benchmark: precision and recall of the near-duplicate thresholds.

    python benchmarks/duplicates.py [--seed N]

A deterministic labelled set (``facts.labelled_pairs``): kept statements
against re-worded repeats (re-cased, wrapped in filler, re-ordered, one word
swapped for a synonym) and against distinct-but-similar statements (another
value, the twin subject, an extension "A and B", the negation). A pair is
predicted a duplicate when a :class:`DuplicateFinder` holding only the kept
statement finds the candidate. Prints, as markdown:

1. precision and recall of exact matching alone, of word overlap and of
   cosine over :class:`HashEmbedder` vectors, at thresholds around the
   defaults (the chosen ones marked), on the tuning seed and on a held-out
   seed;
2. at the defaults, which kinds of pair each measure gets wrong, on that set
   and on the fixed edge cases (``facts.EDGE_CASES``: a sign, a decimal, a
   unit written apart, a stopword that carries meaning);
3. what the check costs a write (``--write-cost``): milliseconds per
   one-entry ``InProcessStore.write`` into a store already holding N
   entries of one namespace and type (the word index keeps it flat in N).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import docs_tables  # noqa: E402
import facts  # noqa: E402

from poolsplit_adapters.memory.duplicates import (  # noqa: E402
    COSINE_THRESHOLD,
    OVERLAP_THRESHOLD,
    DuplicateFinder,
    DuplicateKind,
    Embed,
)
from poolsplit_adapters.memory.hash_embedding import HashEmbedder  # noqa: E402

OVERLAP_SWEEP = (0.7, 0.8, 0.85, OVERLAP_THRESHOLD, 1.0)
COSINE_SWEEP = (0.75, 0.8, COSINE_THRESHOLD, 0.9, 0.95)


def predictions(
    pairs: Sequence[facts.Pair], *, embed: Optional[Embed], threshold: float, exact_only: bool = False
) -> List[bool]:
    out = []
    for pair in pairs:
        finder = DuplicateFinder([{"content": pair.kept}], embed=embed, threshold=threshold)
        hit = finder.find({"content": pair.candidate})
        out.append(hit is not None and (not exact_only or hit.kind is DuplicateKind.EXACT))
    return out


def precision_recall(pairs: Sequence[facts.Pair], predicted: Sequence[bool]) -> Tuple[float, float, int, int]:
    tp = sum(1 for p, y in zip(pairs, predicted) if y and p.duplicate)
    fp = sum(1 for p, y in zip(pairs, predicted) if y and not p.duplicate)
    fn = sum(1 for p, y in zip(pairs, predicted) if not y and p.duplicate)
    precision = tp / (tp + fp) if tp + fp else 1.0
    return precision, tp / (tp + fn) if tp + fn else 1.0, fp, fn


def errors_by_kind(pairs: Sequence[facts.Pair], predicted: Sequence[bool]) -> Dict[str, Tuple[int, int]]:
    """kind -> (wrong, total)."""
    out: Dict[str, Tuple[int, int]] = {}
    for pair, y in zip(pairs, predicted):
        wrong, total = out.get(pair.kind, (0, 0))
        out[pair.kind] = (wrong + (y != pair.duplicate), total + 1)
    return out


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="tuning seed (the held-out one is seed + 1)")
    args = parser.parse_args(argv)
    lines: List[str] = []
    out = lines.append
    embed = HashEmbedder().embed_documents
    sets = [("tuning (seed %d)" % args.seed, facts.labelled_pairs(args.seed))]
    sets.append(("held out (seed %d)" % (args.seed + 1), facts.labelled_pairs(args.seed + 1)))
    for label, pairs in sets:
        positives = sum(p.duplicate for p in pairs)
        out("\n### %s: %d pairs, %d repeats, %d distinct\n" % (label, len(pairs), positives, len(pairs) - positives))
        out("| measure | threshold | precision | recall | false merges | missed repeats |")
        out("|---|---|---|---|---|---|")
        p, r, fp, fn = precision_recall(pairs, predictions(pairs, embed=None, threshold=1.0, exact_only=True))
        out("| exact only | - | %.2f | %.2f | %d | %d |" % (p, r, fp, fn))
        for name, sweep, default, emb in (
            ("word overlap", OVERLAP_SWEEP, OVERLAP_THRESHOLD, None),
            ("cosine (HashEmbedder)", COSINE_SWEEP, COSINE_THRESHOLD, embed),
        ):
            for threshold in sweep:
                p, r, fp, fn = precision_recall(pairs, predictions(pairs, embed=emb, threshold=threshold))
                mark = " **(default)**" if threshold == default else ""
                out("| %s | %.2f%s | %.2f | %.2f | %d | %d |" % (name, threshold, mark, p, r, fp, fn))
    pairs = sets[0][1]
    overlap = errors_by_kind(pairs, predictions(pairs, embed=None, threshold=OVERLAP_THRESHOLD))
    cosine = errors_by_kind(pairs, predictions(pairs, embed=embed, threshold=COSINE_THRESHOLD))
    out("\n### errors by kind at the defaults (%s)\n" % sets[0][0])
    out("| pair kind | label | word overlap wrong | cosine wrong |")
    out("|---|---|---|---|")
    for kind in sorted(overlap):
        label = "repeat" if any(p.kind == kind and p.duplicate for p in pairs) else "distinct"
        out(
            "| %s | %s | %d / %d | %d / %d |"
            % (kind, label, overlap[kind][0], overlap[kind][1], cosine[kind][0], cosine[kind][1])
        )
    edges = facts.edge_pairs()
    overlap = errors_by_kind(edges, predictions(edges, embed=None, threshold=OVERLAP_THRESHOLD))
    cosine = errors_by_kind(edges, predictions(edges, embed=embed, threshold=COSINE_THRESHOLD))
    out("\n### edge cases at the defaults (`facts.EDGE_CASES`: %d pairs)\n" % len(edges))
    out("| pair kind | label | word overlap wrong | cosine wrong |")
    out("|---|---|---|---|")
    for kind in sorted(overlap, key=lambda k: (k == "repeat", k)):
        label = "repeat" if kind == "repeat" else "distinct"
        out(
            "| %s | %s | %d / %d | %d / %d |"
            % (kind, label, overlap[kind][0], overlap[kind][1], cosine[kind][0], cosine[kind][1])
        )
    for name, emb, threshold in (("word overlap", None, OVERLAP_THRESHOLD), ("cosine", embed, COSINE_THRESHOLD)):
        p, r, fp, fn = precision_recall(edges, predictions(edges, embed=emb, threshold=threshold))
        out(
            "\n%s on the edge cases: precision %.2f, recall %.2f, %d false merges, %d missed repeats"
            % (name, p, r, fp, fn)
        )
    text = "\n".join(lines)
    print(text)
    if argv is None and not sys.argv[1:]:  # the default run is the one the docs show
        docs_tables.write_table("duplicates", text)


def write_cost(sizes: Sequence[int] = (1_000, 10_000, 50_000), writes: int = 200) -> None:
    """Print ms per one-entry write (the duplicate check included) at each store size."""
    import time

    from poolsplit_adapters.stores import InProcessStore

    words = ["deploy", "staging", "refund", "invoice", "rollback", "metrics", "release", "cluster", "billing", "cache"]

    def text(i: int) -> str:
        return "%s %s %s %s entry %d" % (
            words[i % 10],
            words[i // 10 % 10],
            words[i // 100 % 10],
            words[i // 1000 % 10],
            i,
        )

    print("\n### write cost (duplicate check included)\n")
    print("| stored entries | ms per write |")
    print("|---|---|")
    for size in sizes:
        store = InProcessStore(token_counter=lambda t: 1)
        store.add([{"type": "note", "namespace": "n", "content": text(i)} for i in range(size)])
        store.write([{"type": "note", "namespace": "n", "content": "warm up the finder"}])
        start = time.perf_counter()
        for i in range(writes):
            store.write([{"type": "note", "namespace": "n", "content": text(size + i)}])
        print("| %d | %.3f |" % (size, (time.perf_counter() - start) * 1000 / writes))


if __name__ == "__main__":
    if "--write-cost" in sys.argv:
        write_cost()
    else:
        main()
