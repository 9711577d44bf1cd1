"""The consolidation benchmarks run, and the figures the docstrings quote
hold (the labelled set and the timeline are deterministic)."""

from __future__ import annotations

import consolidation
import duplicates as duplicates_bench
import facts
import pytest

from poolsplit_adapters.memory.duplicates import COSINE_THRESHOLD, OVERLAP_THRESHOLD
from poolsplit_adapters.memory.hash_embedding import HashEmbedder


def test_the_word_overlap_default_has_the_precision_and_recall_its_docstring_quotes() -> None:
    pairs = facts.labelled_pairs(0)
    assert (len(pairs), sum(p.duplicate for p in pairs)) == (371, 179)
    precision, recall, false_merges, _ = duplicates_bench.precision_recall(
        pairs, duplicates_bench.predictions(pairs, embed=None, threshold=OVERLAP_THRESHOLD)
    )
    assert (round(precision, 2), round(recall, 2), false_merges) == (1.0, 0.96, 0)


def test_updates_and_negations_of_the_labelled_set_are_never_merged() -> None:
    pairs = [p for p in facts.labelled_pairs(1) if p.kind in ("value", "negation", "extension")]
    assert not any(duplicates_bench.predictions(pairs, embed=None, threshold=OVERLAP_THRESHOLD))


def test_the_edge_cases_are_never_merged_and_their_repeats_always_are() -> None:
    """A sign, a decimal, a unit written apart or a qualifier stopword is a
    value change (``facts.EDGE_CASES``); before the value rule kept signs,
    units and qualifiers, 14 of the 24 were merged by word overlap."""
    pairs = facts.edge_pairs()
    assert (len(pairs), sum(p.duplicate for p in pairs)) == (120, 96)
    for embed in (None, HashEmbedder().embed_documents):
        predicted = duplicates_bench.predictions(
            pairs, embed=embed, threshold=OVERLAP_THRESHOLD if embed is None else COSINE_THRESHOLD
        )
        assert duplicates_bench.precision_recall(pairs, predicted) == (1.0, 1.0, 0, 0)


def test_consolidation_leaves_one_current_version_per_fact_with_its_full_history() -> None:
    writes = facts.timeline(0, updates=2, repeats=1)
    model = consolidation.ScriptedConsolidator(messages=iter(()), truth=consolidation.truth_of(writes))
    plain = consolidation.measure(consolidation.store_everything(writes), writes)
    rules = consolidation.measure(consolidation.store_with_rules(writes, None, 5), writes)
    consolidated = consolidation.measure(consolidation.store_with_rules(writes, model, 5), writes)
    assert plain["stale"] == 1.0 and plain["stored"] == len(writes)
    assert rules["stored"] < plain["stored"] and rules["stale"] == 1.0
    assert consolidated == pytest.approx(
        {
            "current": 1.0,
            "stale": 0.0,
            "wasted": 0.0,
            "stored": 76,  # 4 repeats the noop kept closed, as history
            "active": 24,
            "duplicates_per_1000": 0.0,
            "history": 1.0,
        }
    )


def test_the_benchmark_prints_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    consolidation.main(["--updates", "1", "--repeats", "1"])
    out = capsys.readouterr().out
    assert "| rules + consolidator (scripted model) | 100% | 0% |" in out
