"""The write gate: exact refusals, stamped provenance, content keys."""

from __future__ import annotations

import datetime

import pytest

from poolsplit_adapters.memory import GateReport, Refusal, WriteGate, utc_stamp


def propose(gate: WriteGate, text, **kw):
    options = {
        "type": "note",
        "source": "agent:thread:t1",
        "namespace": "memories.u1",
        "created": "2026-01-02T03:04:05Z",
    }
    options.update(kw)
    return gate.propose(text, **options)


def test_accepted_note_is_stamped_by_the_harness():
    p = propose(WriteGate(), "Staging needs the release checklist.", tags=["deploy"])
    assert p.refused is None
    assert p.entry == {
        "id": p.key,
        "content": "Staging needs the release checklist.",
        "type": "note",
        "source": "agent:thread:t1",
        "created": "2026-01-02T03:04:05Z",
        "namespace": "memories.u1",
        "tags": ["deploy"],
    }
    assert p.key.startswith("note-") and len(p.key) == len("note-") + 24


@pytest.mark.parametrize("scope", ["always", "Always", " ALWAYS "])
def test_always_scope_claims_are_refused(scope):
    assert propose(WriteGate(), "Never ask me again", claims={"scope": scope}).refused is Refusal.ALWAYS_SCOPE


def test_other_claims_do_not_become_fields():
    p = propose(WriteGate(), "a fact", claims={"scope": "project", "source": "user", "id": "x"})
    assert p.refused is None and "scope" not in p.entry and p.entry["source"] == "agent:thread:t1"


@pytest.mark.parametrize("text", ["", "   ", "\n\t", None])
def test_empty_is_refused(text):
    assert propose(WriteGate(), text).refused is Refusal.EMPTY


def test_oversized_is_refused_at_the_limit_plus_one():
    gate = WriteGate(max_chars=10)
    assert propose(gate, "x" * 10).refused is None
    assert propose(gate, "x" * 11).refused is Refusal.OVERSIZED


def test_duplicates_differ_only_in_case_and_spacing():
    gate = WriteGate()
    a = propose(gate, "Deploys  need the Checklist")
    b = propose(gate, "deploys need the checklist ")
    c = propose(gate, "deploys need the checklist", namespace="memories.u2")
    assert a.key == b.key != c.key  # another namespace is another memory
    settled = gate.settle([a, b, c], existing=set())
    assert [p.refused for p in settled] == [None, Refusal.DUPLICATE, None]
    assert gate.settle([c], existing={c.key})[0].refused is Refusal.DUPLICATE


def test_settle_keeps_earlier_refusals():
    gate = WriteGate()
    empty = propose(gate, " ")
    assert gate.settle([empty], existing={empty.key})[0].refused is Refusal.EMPTY


def test_report_counts_by_reason():
    gate = WriteGate(max_chars=5)
    report = GateReport()
    report.count([propose(gate, "ok"), propose(gate, ""), propose(gate, "too long"), propose(gate, "")])
    assert report.to_dict() == {"written": 1, "refused": {"empty": 2, "oversized": 1}}
    other = GateReport()
    other.count([propose(gate, "x", claims={"scope": "always"})])
    report.merge(other)
    assert report.to_dict()["refused"] == {"always_scope": 1, "empty": 2, "oversized": 1}


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_max_chars_is_checked(bad):
    with pytest.raises(ValueError, match="max_chars"):
        WriteGate(max_chars=bad)


def test_utc_stamp_converts_to_utc():
    moment = datetime.datetime(2026, 5, 1, 12, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    assert utc_stamp(moment) == "2026-05-01T10:00:00Z"
    assert utc_stamp(datetime.datetime(2026, 5, 1, 12, 0, 7, 999)) == "2026-05-01T12:00:07Z"


def test_the_memory_modules_docstring_examples_run():
    import doctest

    from poolsplit_adapters.memory import working_set, write_gate

    for module in (working_set, write_gate):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
