"""Which part of the fused score costs evidence recall on long conversations.

    python benchmarks/conversations/ablate.py --embedding minilm \\
        --markdown-out docs/benchmarks/_generated/conversations_ablation_minilm.md
    python benchmarks/conversations/ablate.py --embedding minilm --conversations 3

Issue 39 asks that no default retrieval path load less evidence than plain
vector top-k over the raw messages; with all-MiniLM-L6-v2 on the
conversations of :mod:`make_conversations` they do. This script takes the
core path (``select`` over the raw messages, one ``Pool("all", B)``, the same
entries, token counts and scoring moment as ``evaluate.py``'s ``core select +
hybrid_scorer``) and switches one part of the score off at a time, through
the public settings of [`RelevanceScorer`] only:

* ``boosts``: the bounded boosts (priority, recency, tags, project) with
  their defaults, or every weight 0 (``Modifiers(0, 0, 30, 0, 0)``);
* ``feedback``: the query expansion ``hybrid_scorer`` had before this
  ablation (0.3), the one the vector-store adapters had (0.1), or none (what
  both have now: ``FUSED_FEEDBACK``);
* ``lexical weight``: ``hybrid_scorer``'s now (``FUSED_LEXICAL_WEIGHT``,
  0.3), its former 0.6, the vector-store adapters' former 0.5, or 0 (cosine
  alone).

The baseline is ``evaluate.py``'s ``vector top-k (baseline)`` (cosine order,
greedy fill), computed by that script's own function. The columns are
``evaluate.py``'s ``recall`` (evidence key sentences found), ``instr`` and
``pref``. Nothing else differs between the rows: a row at the baseline's
figures with the boosts, feedback and words off shows that the fill and the
token accounting cost nothing.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import evaluate  # noqa: E402
from make_conversations import make_conversations  # noqa: E402

from poolsplit_adapters import Pool, select  # noqa: E402
from poolsplit_adapters.defaults import FUSED_FEEDBACK, FUSED_LEXICAL_WEIGHT  # noqa: E402
from poolsplit_adapters.relevance import Feedback, Modifiers, RelevanceScorer  # noqa: E402

NO_BOOSTS = Modifiers(priority_weight=0.0, recency_weight=0.0, tag_weight=0.0, project_weight=0.0)


def _mix(weight: float, feedback: Optional[Feedback]) -> str:
    return "w %g, %s" % (weight, "no feedback" if feedback is None else "feedback %g" % feedback.weight)


#: The setting hybrid_scorer had before the fusion on long conversations was
#: measured (benchmarks/eval/README.md), and the vector-store adapters' mix then.
FORMER_FUSED, FORMER_STORE = (0.6, Feedback(top=2, weight=0.3)), (0.5, Feedback(top=2, weight=0.1))
NOW = (FUSED_LEXICAL_WEIGHT, FUSED_FEEDBACK)
#: name -> (lexical weight, feedback, boosts on)
VARIANTS: Dict[str, Tuple[float, Optional[Feedback], bool]] = {
    "hybrid_scorer (%s, boosts)" % _mix(*NOW): (*NOW, True),
    "%s, no boosts" % _mix(*NOW): (*NOW, False),
    "former hybrid_scorer (%s, boosts)" % _mix(*FORMER_FUSED): (*FORMER_FUSED, True),
    "%s, no boosts" % _mix(*FORMER_FUSED): (*FORMER_FUSED, False),
    "w 0.6, no feedback, boosts": (0.6, None, True),
    "w 0.6, no feedback, no boosts": (0.6, None, False),
    "former store adapters' mix (%s, boosts)" % _mix(*FORMER_STORE): (*FORMER_STORE, True),
    "%s, no boosts" % _mix(*FORMER_STORE): (*FORMER_STORE, False),
    "cosine alone, boosts": (0.0, None, True),
    "cosine alone, no boosts": (0.0, None, False),
}
BASELINE = "vector top-k (baseline)"
SHOWN = ("recall", "instr", "pref")


def scorer_for(cached: Any, variant: str) -> RelevanceScorer:
    weight, feedback, boosts = VARIANTS[variant]
    return RelevanceScorer(cached, lexical_weight=weight, feedback=feedback, modifiers=None if boosts else NO_BOOSTS)


def _core(
    entries: List[Dict[str, Any]], scorer: RelevanceScorer, now: datetime.datetime
) -> Callable[[str, int], List[str]]:
    """``evaluate.py``'s core path with ``scorer``: ``(question, budget) -> chosen texts``."""

    def core(question: str, budget: int) -> List[str]:
        picked = select(entries, [Pool("all", budget, 10**6)], {"message": question}, scorer=scorer, now=now)
        return [c.entry["content"] for c in picked.chosen]

    return core


def run(conversations: Sequence[Dict[str, Any]], embedding: str, budgets: Sequence[int]) -> Dict[Any, Dict[str, float]]:
    """``(row, budget) -> evaluate.summarise`` of every variant and the baseline."""
    from poolsplit_adapters.tokens import TiktokenCounter

    counter = TiktokenCounter()
    cached = evaluate.embeddings_for_run(embedding)
    scored: Dict[Tuple[str, int], List[Dict[str, Optional[float]]]] = {}
    for conversation in conversations:
        texts = [t[k] for t in conversation["turns"] for k in ("user", "assistant")]
        counts = dict(zip(texts, counter.count_many(texts)))
        cached.embed_documents(texts + [p["question"] for p in conversation["probes"]])
        entries = evaluate._documents(conversation)
        for e in entries:
            e["token_count"] = counts[e["content"]]
        now = evaluate._when(conversation["after"])
        paths: Dict[str, Callable[[str, int], List[str]]] = {
            BASELINE: evaluate.retrieval_paths(conversation, cached, counts)[BASELINE]
        }
        for variant in VARIANTS:
            paths[variant] = _core(entries, scorer_for(cached, variant), now)
        for name, path in paths.items():
            for budget in budgets:
                for probe in conversation["probes"]:
                    chosen = path(probe["question"], budget)
                    scored.setdefault((name, budget), []).append(evaluate.judge(probe, "\n".join(chosen)))
    return {key: evaluate.summarise(values, []) for key, values in scored.items()}


def render(rows: Dict[Any, Dict[str, float]], budgets: Sequence[int], command: str, embedding: str, n: int) -> str:
    names = [BASELINE, *VARIANTS]
    header = ["core path", *("%s @%d" % (c, b) for b in budgets for c in SHOWN)]
    lines = [
        "<!-- written by benchmarks/conversations/ablate.py on %s: %s -->"
        % (datetime.date.today().isoformat(), command),
        "*`%s`; %d conversations; embeddings: %s.*" % (command, n, evaluate.EMBEDDING_NAMES[embedding]),
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    for name in names:
        cells = [name] + [
            "%.3f" % rows[(name, b)][c] if c == "recall" else "%.2f" % rows[(name, b)][c]
            for b in budgets
            for c in SHOWN
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=list(evaluate.BUDGETS))
    parser.add_argument("--conversations", type=int, default=8)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--seed", type=int, default=39)
    parser.add_argument("--embedding", default="hash", choices=list(evaluate.EMBEDDINGS))
    parser.add_argument("--markdown-out", help="write the table here as well")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    conversations = make_conversations(args.conversations, args.turns, args.seed)
    rows = run(conversations, args.embedding, args.budgets)
    command = "python benchmarks/conversations/ablate.py " + " ".join(sys.argv[1:] if argv is None else argv)
    table = render(rows, args.budgets, command.strip(), args.embedding, len(conversations))
    print(table)
    if args.markdown_out:
        with open(args.markdown_out, "w", encoding="utf-8") as out:
            out.write(table)
    print("took %.1f s" % (time.perf_counter() - start))


if __name__ == "__main__":
    main()
