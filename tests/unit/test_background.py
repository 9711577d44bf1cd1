"""BackgroundConsolidation on its own (no agent): arguments checked, reports
taken once per key, a failing callback never stops the runner, and the
debounce holds a key's work until it has been quiet for the delay."""

from __future__ import annotations

import threading
from typing import Any, Dict, List

import pytest

from poolsplit_adapters.background import BackgroundConsolidation, ConsolidationRun
from poolsplit_adapters.stores import InProcessStore


class AddAll:
    """A Decider: every new memory is added (a plain host rule, no model)."""

    def __init__(self) -> None:
        self.calls = 0

    def decide(self, prompt: Any) -> List[Dict[str, Any]]:
        self.calls += 1
        n = len(prompt.existing)
        return [{"op": "add", "new": n + i + 1} for i in range(len(prompt.candidates))]

    async def adecide(self, prompt: Any) -> List[Dict[str, Any]]:
        return self.decide(prompt)


def stored(*texts: str) -> tuple[InProcessStore, List[str]]:
    store = InProcessStore()
    ids = store.add([{"type": "note", "namespace": "u1", "content": t, "source": "t"} for t in texts])
    return store, ids


@pytest.mark.parametrize(
    ("options", "named"), [({"delay": -1}, "delay"), ({"nearest": -2}, "nearest"), ({"keep": 0}, "keep")]
)
def test_bad_settings_are_refused_naming_them(options: Dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        BackgroundConsolidation(AddAll(), **options)


def test_a_model_of_no_known_kind_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="Decider"):
        BackgroundConsolidation("gpt-4")


def test_reports_are_taken_once_per_key_and_runs_keep_them_all() -> None:
    store, ids = stored("Alpha ships Monday.", "Beta ships Tuesday.")
    background = BackgroundConsolidation(AddAll(), delay=60)
    background.submit("k1", store, ids[:1])
    background.submit("k2", store, ids[1:])
    assert background.pending == 2
    runs = background.drain()
    assert sorted(r.key for r in runs) == ["k1", "k2"] and background.pending == 0
    [mine] = background.take("k1")
    assert mine.to_dict() == {
        "ids": 1,
        "accepted": {"add": 1},
        "refused": {},
        "unresolved": 0,
        "applied": {"add": 1},
        "failed": 0,
        "skipped": 0,
    }
    assert background.take("k1") == [] and len(background.runs) == 2


def test_a_failing_callback_is_logged_and_the_runner_goes_on(caplog: Any) -> None:
    store, ids = stored("Alpha ships Monday.", "Beta ships Tuesday.")
    seen: List[ConsolidationRun] = []

    def callback(run: ConsolidationRun) -> None:
        seen.append(run)
        raise RuntimeError("host bug")

    background = BackgroundConsolidation(AddAll(), delay=60, on_run=callback)
    background.submit("k", store, ids[:1])
    background.drain()
    background.submit("k", store, ids[1:])
    background.drain()
    assert len(seen) == 2 and "on_run callback failed" in caplog.text


def test_new_work_during_a_run_waits_for_the_next_run_of_its_key() -> None:
    store, ids = stored("Alpha ships Monday.", "Beta ships Tuesday.")
    inside = threading.Event()
    release = threading.Event()

    class Slow(AddAll):
        def decide(self, prompt: Any) -> List[Dict[str, Any]]:
            inside.set()
            assert release.wait(30)
            return super().decide(prompt)

    model = Slow()
    background = BackgroundConsolidation(model, delay=0)
    background.submit("k", store, ids[:1])
    assert inside.wait(30)
    background.submit("k", store, ids[1:])  # the first run is in its model call
    assert background.pending == 1
    release.set()
    runs = background.drain()
    assert [r.ids for r in runs] == [(ids[0],), (ids[1],)] and model.calls == 2
