"""benchmarks/conversations: the generator is deterministic, its labels hold,
and the evaluator runs end to end on one small conversation."""

from __future__ import annotations

import math
import os
import sys

import pytest

HERE = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "conversations")
sys.path.insert(0, HERE)

import importlib.util  # noqa: E402

# by its path, under a name of its own: benchmarks/eval has an evaluate.py too, and one
# test process (a pytest-xdist worker) may import both
_spec = importlib.util.spec_from_file_location("conversations_evaluate", os.path.join(HERE, "evaluate.py"))
assert _spec is not None and _spec.loader is not None
evaluate = importlib.util.module_from_spec(_spec)
sys.modules["conversations_evaluate"] = evaluate
_spec.loader.exec_module(evaluate)
import make_conversations as mc  # noqa: E402


def test_the_generator_is_deterministic() -> None:
    assert mc.make_conversations(2, 80, seed=5) == mc.make_conversations(2, 80, seed=5)
    assert mc.make_conversations(1, 80, seed=5) != mc.make_conversations(1, 80, seed=6)


@pytest.mark.parametrize("turns", [40, 80, 200])
def test_labels_are_consistent(turns: int) -> None:
    for conversation in mc.make_conversations(8, turns):
        assert mc.check_labels(conversation) == []
        ids = [t[k] for t in conversation["turns"] for k in ("user_id", "assistant_id")]
        assert len(ids) == len(set(ids)) == 2 * turns
        kinds = {p["kind"] for p in conversation["probes"]}
        assert kinds == {"instruction", "preference", "updated", "contradiction", "fact", "multi-session", "temporal"}


def test_the_default_set_has_what_the_issue_asks_for() -> None:
    conversations = mc.make_conversations()
    assert len(conversations) == 8 and all(len(c["turns"]) == 200 for c in conversations)
    turns = [t for c in conversations for t in c["turns"]]
    answers = sorted(len(t["assistant"]) for t in turns)
    assert 800 <= answers[len(answers) // 2] <= 4000  # typical answers
    assert sum(n > 8000 for n in answers) >= 8 * 3  # a few long ones per conversation
    assert sum(len(t["user"]) > 8000 for t in turns) == 8 * 2  # pasted logs
    languages = {p.get("language") for c in conversations for p in c["probes"]}
    assert "other" in languages
    # The sessions span several days.
    days = {s["day"][:10] for s in conversations[0]["sessions"]}
    assert len(days) == mc.SESSIONS


def test_an_updated_fact_is_labelled_exactly() -> None:
    conversation = mc.make_conversation(0, 200)
    texts = {t["user_id"]: t["user"] for t in conversation["turns"]}
    launch = [p for p in conversation["probes"] if p.get("subject") == "launch"]
    for probe in launch:
        assert probe["question"] == "When is the launch?"
        assert probe["current"] == "March 24" and probe["stale"] == ["March 3", "March 17"]
        assert probe["key_sentences"] == ["The launch is now March 24."]
        first, second, last = probe["history"]
        assert "The launch is on March 3." in texts[first]
        assert "The launch moved to March 17." in texts[second]
        assert probe["evidence"] == [last]


def test_judge() -> None:
    probe = {"kind": "updated", "key_sentences": ["The launch is now March 24."], "current": "March 24"}
    probe["stale"] = ["March 3", "March 17"]
    assert evaluate.judge(probe, "user: the launch is on  MARCH 3.")["stale"] == 1.0
    scored = evaluate.judge(probe, "The launch moved to March 17. The launch is now March 24.")
    assert (scored["upd"], scored["stale"], scored["instr"]) == (1.0, 0.0, None)
    instruction = {"kind": "instruction", "key_sentences": ["I&#x27;d rather use Postgres."]}
    assert evaluate.judge(instruction, "I'd rather use Postgres.")["instr"] == 1.0
    evidence = {"kind": "multi-session", "key_sentences": ["A is 1.", "B is 2."]}
    assert (evaluate.judge(evidence, "a is 1.")["recall"], evaluate.judge(evidence, "")["evidence"]) == (1.0, 2.0)


def test_the_evaluator_runs_end_to_end() -> None:
    conversations = mc.make_conversations(1, 40)
    result = evaluate.run(conversations, budgets=(1024,), plans=("agent auto",), overhead=1)
    paths = {r["path"] for r in result["rows"]}
    assert paths == {"agent auto", *evaluate.RETRIEVAL_PATHS}
    for row in result["rows"]:
        for column in evaluate.COLUMNS:
            if column != "tokens" and not math.isnan(row[column]):
                assert 0.0 <= row[column] <= 1.0, (row["path"], column)
        assert 0 < row["tokens"] < 2 * 1024
    assert len(result["with_ms"]) == len(result["without_ms"]) == 40
    assert set(result["evidence_lost"]) <= set(result["lost"])
    assert "| agent auto | 1024 |" in evaluate.render(result, "test")
