"""Pseudo-relevance feedback: the query expanded by the call's best matches.

Why: a multi-hop question ("Which city does Maya's brother live in now?")
names the first hop ("Maya's brother is Tom") and shares no word with the
second ("Tom moved to Sydney"). The first pass finds the first hop; its
words ("Tom") find the second. This is query expansion from the top results
(as RM3 does for a search engine), kept lexical:

    first    = the fused relevance (BM25, with an embedder the cosine too)
    sources  = the ``top`` candidates of highest ``first`` above 0,
               ties by the core's order (created, id, position)
    F        = the normalised BM25 of the sources' texts, joined in that
               order, as a second query (same corpus statistics) of
               their ``terms`` rarest words (highest idf; all with None)
    relevance = (1 - weight) * first + weight * F

so the relevance stays in [0, 1] and the relevance-first bound of
`scorer` holds for it as it stands. Only BM25 is expanded: no second
query embedding (one per call, as without feedback) and the cosine half is
the first pass's.

**Where the sources come from.** Only from the call's *admitted
contextual* candidates: entries the call's activeness, lifecycle,
visibility and namespace already let through, so no word of another
tenant's, an inactive or an expired entry reaches the query; always-scope
entries (corrections) are never sources, since they load on every call
whatever the question. The core hands them over once per call, before any
ranking (``PreparedRelevance.admitted``); a scorer asked about one entry
alone (``scorer(entry, context)``) has no candidates and its relevance is
the first pass.

**Measured** (``benchmarks/eval/fusion_variants.py`` and
``evaluate_long.py``, README "Pseudo-relevance feedback"): off by default;
the README gives the figures and why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, List, Mapping, Optional, Sequence

__all__ = ["Feedback", "EXPANSION_TERMS", "best_sources", "expansion", "expand", "settled", "SETTLE_STEP"]


#: How many words the second query holds by default: on the long-horizon
#: questions (benchmarks/eval/evaluate_long.py, both halves) every default
#: path recalls what it did with every word; 16 lost one piece of evidence
#: with vectors, at 256 and at 1,024 tokens.
EXPANSION_TERMS = 24


@dataclass(frozen=True)
class Feedback:
    """How far a call's best matches expand its query (see the module
    docstring).

    Args:
        top: how many of the best candidates give their words (at least 1).
        weight: the share of the expanded query's BM25 in the relevance,
            in (0, 1).
        terms: how many of the sources' words the second query holds: their
            rarest (highest idf; ties: the earlier), as RM3 keeps its best
            expansion terms. Each word costs a pass over its postings, so
            without a bound a long best match (a pasted document, a long
            turn) makes every call pay for all of its words, and the most
            common of them add the least. None: every word. Default
            `EXPANSION_TERMS`.
        words_only: expand only a relevance of words alone. A call with a
            vector half (an embedder, or a vector store's similarities
            through ``with_known_relevance``) then ranks by its first pass.
            Why: the embedding already finds the neighbours that share no
            word with the question, and on long conversations the best
            matches are long turns whose words pull the query away: every
            expansion weight loaded less than plain vector top-k at 2,048
            and 4,096 tokens with all-MiniLM-L6-v2 (benchmarks/eval/README.md,
            "Fusion on long conversations"), while words alone gain on every
            set. The adapters' words default sets it
            (``defaults.WORDS_FEEDBACK``), so the same scorer expands when a
            call has only words and not when a vector store answers.

    Example:
        >>> from poolsplit_adapters.relevance import RelevanceScorer
        >>> scorer = RelevanceScorer(feedback=Feedback(top=2, weight=0.1))
        >>> scorer.feedback
        Feedback(top=2, weight=0.1, terms=24, words_only=False)
        >>> scorer.with_known_relevance({"a": 0.9}).expansion is None
        False
        >>> only_words = RelevanceScorer(feedback=Feedback(top=2, weight=0.1, words_only=True))
        >>> only_words.expansion, only_words.with_known_relevance({"a": 0.9}).expansion
        (Feedback(top=2, weight=0.1, terms=24, words_only=True), None)
    """

    top: int = 2
    weight: float = 0.1
    terms: Optional[int] = EXPANSION_TERMS
    words_only: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.top, bool) or not isinstance(self.top, int) or self.top < 1:
            raise ValueError("Feedback top must be an int of at least 1, got %r" % (self.top,))
        terms = self.terms
        if terms is not None and (isinstance(terms, bool) or not isinstance(terms, int) or terms < 1):
            raise ValueError("Feedback terms must be an int of at least 1 or None, got %r" % (terms,))
        weight = self.weight
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0.0 < weight < 1.0:
            raise ValueError("Feedback weight must be in (0, 1), got %r" % (weight,))
        object.__setattr__(self, "weight", float(weight))
        if not isinstance(self.words_only, bool):
            raise ValueError("Feedback words_only must be a bool, got %r" % (self.words_only,))


def best_sources(
    candidates: Sequence[Mapping[str, Any]], first: Callable[[Mapping[str, Any]], float], top: int
) -> List[Mapping[str, Any]]:
    """The ``top`` candidates of highest ``first`` above 0, best first,
    ties by the core's ranking key (created, id, position): the same
    sources whatever the input order (the twin of the columns' choice in
    [`MemoryIndex`][poolsplit_adapters.index.MemoryIndex]).

    Example:
        >>> found = [{"id": "a"}, {"id": "c"}, {"id": "b"}, {"id": "d"}]
        >>> relevance = {"a": 0.2, "b": 0.2, "c": 0.5, "d": 0.0}
        >>> [e["id"] for e in best_sources(found, lambda e: relevance[e["id"]], 3)]
        ['c', 'a', 'b']
    """
    scored = sorted((-first(e), e.get("created") or "", e.get("id") or "", n) for n, e in enumerate(candidates))
    return [candidates[key[3]] for key in scored[:top] if key[0] < 0.0]


def expansion(corpus: Any, texts: Sequence[str], feedback: Feedback) -> Any:
    """The second query: the sources' texts joined in order, as a
    `Query` of ``corpus`` holding the ``feedback.terms``
    rarest of their words (all with None)."""
    return corpus.query(" ".join(texts), feedback.terms)


#: The expanded query's BM25 is rounded to a multiple of this (2**-40, about
#: 1e-12): two entries whose second-pass sums are equal but for the order
#: their terms were added in (note "0" and note "1" against a query holding
#: both) then tie exactly, and the core's tie rule (created, id, position)
#: decides, not the last bit of a float.
SETTLE_STEP = 2.0**-40


def settled(second: float) -> float:
    """``second`` rounded to a multiple of `SETTLE_STEP` (the columns
    apply the same float64 operations: a power of two scales exactly).

    Example:
        >>> settled(0.5882646376750952) == settled(0.5882646376750951)
        True
    """
    return math.floor(second / SETTLE_STEP + 0.5) * SETTLE_STEP


def expand(first: float, second: float, weight: float) -> float:
    """The relevance with feedback: ``(1 - weight) * first + weight * second``
    (the columns compute the same float64 operations in the same order).

    Example:
        >>> expand(0.5, 0.25, 0.2)
        0.45
    """
    return (1.0 - weight) * first + weight * settled(second)
