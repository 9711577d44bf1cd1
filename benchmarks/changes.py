"""Changed statements: how often the write path's rule links a new statement
to an older one it really updates, and how often it links one of another
subject (a false supersede).

    python benchmarks/changes.py [--seed N]

The labelled pairs are the duplicate benchmark's (``facts.labelled_pairs``):
a kept statement against another value of the same subject (an update: the
rule should link it), the negation (an update of polarity: link), the twin
subject with the same value (another fact: never link), the extension
"A and B" (says more, not another value: either), and the re-worded repeats
(the duplicate check keeps those once before this rule is asked: shown for
completeness). Prints, as markdown, the share of pairs of each kind that
:func:`poolsplit_adapters.memory.changes.changes` links, on the tuning seed
and a held-out one, and the false-supersede rate (twins linked).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
from typing import Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import facts  # noqa: E402

from poolsplit_adapters.memory.changes import SUBJECT_OVERLAP, WORDING_OVERLAP, changes  # noqa: E402

#: What the rule should do with each kind of pair (None: either is right).
WANTED: Dict[str, Optional[bool]] = {
    "value": True,
    "negation": True,
    "twin": False,
    "extension": None,
    "case": None,
    "filler": None,
    "synonym": None,
    "reorder": None,
}


def linked_by_kind(seed: int) -> Dict[str, List[bool]]:
    """For each kind of pair, whether the rule linked each pair."""
    out: Dict[str, List[bool]] = collections.defaultdict(list)
    for pair in facts.labelled_pairs(seed):
        out[pair.kind].append(changes(pair.candidate, pair.kept))
    return out


def table(seeds: Sequence[int]) -> str:
    lines = [
        "| kind | should link | " + " | ".join("seed %d" % s for s in seeds) + " |",
        "|---|---|" + "---|" * len(seeds),
    ]
    results = [linked_by_kind(s) for s in seeds]
    for kind, wanted in WANTED.items():
        cells = []
        for result in results:
            got = result.get(kind, [])
            cells.append("%d / %d" % (sum(got), len(got)) if got else "-")
        lines.append(
            "| %s | %s | %s |" % (kind, {True: "yes", False: "never", None: "either"}[wanted], " | ".join(cells))
        )
    false = [sum(r["twin"]) / len(r["twin"]) for r in results]
    hits = [sum(r["value"] + r["negation"]) / len(r["value"] + r["negation"]) for r in results]
    lines.append("")
    lines.append(
        "False-supersede rate (twins linked): %s; updates linked (value and negation): %s "
        "(SUBJECT_OVERLAP %.2f, WORDING_OVERLAP %.2f)."
        % (", ".join("%.3f" % f for f in false), ", ".join("%.3f" % h for h in hits), SUBJECT_OVERLAP, WORDING_OVERLAP)
    )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="the tuning seed (the next one is held out)")
    args = parser.parse_args(argv)
    text = table([args.seed, args.seed + 1])
    print(text)
    return text


if __name__ == "__main__":
    main()
