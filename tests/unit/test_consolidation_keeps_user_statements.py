"""A consolidator never puts other words in the place of what the user said.

Found by an adversarial run: a model's ``update`` whose new memory was the
assistant's answer (or any memory not the user's statement of that type) and
whose old one was the user's instruction closed the instruction with the
answer as its current version: the standing pool lost it, and the model had
rewritten the user's order. Refused now as ``user_statement``; the user's own
later statement of the same type still supersedes it."""

from __future__ import annotations

from typing import Any, Dict

import pytest
from agent_fakes import PlanningFakeModel, handle, plan

from poolsplit_adapters.memory.consolidate import OpRefusal, validate
from poolsplit_adapters.stores import SQLiteMemoryStore

AT = "2026-07-01T00:00:00Z"
TABS = {
    "id": "tabs",
    "type": "instruction",
    "content": "Always use tabs for indentation.",
    "said_by": "user",
    "namespace": "u1",
    "source": "thread:t",
    "created": "2026-06-01T00:00:00Z",
}


def candidate(content: str, **fields: Any) -> Dict[str, Any]:
    return {"type": "episode", "content": content, "namespace": "u1", "source": "thread:t", "created": AT, **fields}


@pytest.mark.parametrize(
    "new",
    [
        candidate("assistant: I will always use spaces for indentation.", role="assistant"),
        candidate("tool lint: always use spaces for indentation", role="assistant"),
        candidate("user: Always use spaces for indentation.", role="user"),  # the user's turn, not a statement
        candidate("Always use spaces for indentation.", type="preference", said_by="user"),  # another type
        candidate("Always use spaces for indentation.", type="instruction"),  # not stamped as the user's
    ],
)
def test_a_consolidator_update_of_the_users_statement_by_other_words_is_refused_and_changes_nothing(tmp_path, new):
    store = SQLiteMemoryStore(tmp_path / "m.db")
    store.add([dict(TABS)])
    model = PlanningFakeModel(
        decide=lambda p: plan({"op": "update", "new": handle(p, "spaces"), "old": handle(p, "tabs")})
    )
    # The user's new instruction of the same turn has the stored one shown beside it (its
    # neighbour); every candidate of the call is a handle the model may name.
    said = candidate("Always write commit messages in English.", type="instruction", said_by="user")
    report, result = store.consolidate([said, new], model=model, at=AT)
    assert handle(model.payloads[0], "tabs for indentation.") is not None  # shown to the model
    assert [r.reason for r in result.refused] == [OpRefusal.USER_STATEMENT]
    assert not result.accepted
    kept = store.get("tabs")
    assert kept is not None and kept.get("superseded_by") is None and kept["content"] == TABS["content"]
    # the refused candidate is written as given: nothing lost
    assert any(e["content"] == new["content"] for e in store.entries("u1"))


def test_the_users_own_later_statement_of_the_same_type_still_supersedes(tmp_path):
    store = SQLiteMemoryStore(tmp_path / "m.db")
    store.add([dict(TABS)])
    new = candidate("Always use spaces for indentation.", type="instruction", said_by="user")
    model = PlanningFakeModel(
        decide=lambda p: plan({"op": "update", "new": handle(p, "spaces"), "old": handle(p, "tabs")})
    )
    _, result = store.consolidate([new], model=model, at=AT)
    assert [a.op.value for a in result.accepted] == ["update"] and not result.refused
    closed = store.get("tabs")
    assert closed is not None and closed.get("superseded_by")


def test_the_rule_reads_only_the_stamped_provenance():
    host = dict(TABS, said_by=None)  # a host's entry: the consolidator may update it as before
    new = candidate("assistant: use spaces", role="assistant", id="n1")
    result = validate([{"op": "update", "new": 2, "old": 1}], [new], [host], at=AT)
    assert [a.op.value for a in result.accepted] == ["update"]
    result = validate([{"op": "update", "new": 2, "old": 1}], [new], [dict(TABS)], at=AT)
    assert [r.reason.value for r in result.refused] == ["user_statement"] and result.unresolved == (0,)
    assert "existing 1 is the user's own instruction; new 2 is not the user's instruction" in result.refused[0].detail
