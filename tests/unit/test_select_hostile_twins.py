"""``poolsplit_adapters.select`` / ``retrieve_pools`` (the core's fill over
``fastpath.BestFirstCandidates``) answer exactly what the core's own
``poolsplit.select`` / ``retrieve_pools`` answer over the plain list, for
hostile stores: the same dict several times, repeated ids, huge, negative,
infinite and NaN priorities and costs, wrong types, expired and superseded
entries, namespaces, near-miss scopes and always-scope entries of several
pools' types. The same report to the score, or the same error.

``tests/unit/test_twins.py`` draws from well-formed vocabularies; this file
draws the values an attacker or a broken host would store."""

from __future__ import annotations

import datetime
from typing import Any, Dict, List

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import pools, scopes

from poolsplit_adapters import fastpath, poolsplit, retrieve_pools, select

NOW = datetime.datetime(2026, 7, 1)
PRIORITIES = [0, 1, 5, 9.5, -1, -1e300, 1e300, -1e308, 1e308, float("nan"), float("inf"), True, "5", None, 2**70]
COSTS = [0, 1, 5, 2**53, 2**63, 10**30, -1, float("nan"), float("inf"), "3", True, 2.5, None]
TIMES = [
    None,
    "2026-07-07T00:00:00Z",
    "2026-06-01",
    "2027-01-01T00:00:00+05:00",
    "garbage",
    "",
    "9999-12-31T23:59:59-05:00",
]
WORDS = ["deploy", "tabs", "staging", "db", "the", "\u200b", "\uff21\uff22", "Deploy"]


@st.composite
def entries(draw: Any) -> Dict[str, Any]:
    entry: Dict[str, Any] = {"content": " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=5)))}
    if draw(st.booleans()):
        entry["id"] = draw(st.sampled_from(["a", "b", "c"]))
    if draw(st.booleans()):
        entry["type"] = draw(st.sampled_from(["correction", "instruction", "preference", "episode", "fact"]))
    if draw(st.integers(0, 2)) == 0:
        entry["scope"] = draw(st.sampled_from(["always", "Always", "al\u200bways", "session", None]))
    if draw(st.integers(0, 3)) == 0:
        entry["base_priority"] = draw(st.sampled_from(PRIORITIES))
    if draw(st.integers(0, 3)) == 0:
        entry["token_count"] = draw(st.sampled_from(COSTS))
    if draw(st.booleans()):
        entry["namespace"] = draw(st.sampled_from(["A", "B", None, ""]))
    if draw(st.integers(0, 3)) == 0:
        entry["expires"] = draw(st.sampled_from(TIMES))
    if draw(st.integers(0, 3)) == 0:
        entry["superseded_by"] = draw(st.sampled_from(["x", "", None]))
    if draw(st.integers(0, 3)) == 0:
        entry["status"] = draw(st.sampled_from(["active", "archived", "superseded"]))
    if draw(st.booleans()):
        entry["created"] = draw(st.sampled_from(TIMES))
    return entry


@st.composite
def stores(draw: Any) -> List[Dict[str, Any]]:
    base = draw(st.lists(entries(), max_size=15))
    for _ in range(draw(st.integers(0, 3))):  # the very same dict again
        if base:
            base.append(base[draw(st.integers(0, len(base) - 1))])
    return base


def _report(run: Any) -> Any:
    try:
        selection = run()
    except Exception as err:  # the same refusal, word for word
        return ("error", type(err).__name__, str(err))
    chosen = [(id(c.entry), c.pool, c.always, repr(c.score), c.cost) for c in selection.chosen]
    dropped = [(id(d.entry), d.reason, d.pool, repr(d.score), d.cost) for d in selection.dropped]
    return chosen, dropped, {k: [id(e) for e in v] for k, v in selection.pools.items()}, repr(selection.stats)


def _loaded(run: Any) -> Any:
    try:
        return {name: [id(e) for e in got] for name, got in run().items()}
    except Exception as err:
        return ("error", type(err).__name__, str(err))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(store=stores(), plan=pools(), view=scopes, message=st.sampled_from(["", "deploy tabs", "DB \u200bstaging"]))
def test_the_package_select_is_the_core_select_for_hostile_stores(store, plan, view, message):
    context = {"message": message}
    options = {"now": NOW, "visibility": view}
    assert select is fastpath.select and retrieve_pools is fastpath.retrieve_pools
    expected = _report(lambda: poolsplit.select(store, plan, context, **options))
    # a refusal is the entry's error (an OverflowError from inside as_utc was one before), or the
    # core's warning about an always-scope entry no pool admits (an error under the tests' filter)
    assert expected[0] != "error" or expected[1] in ("EntryError", "UnadmittedCorrectionWarning"), expected
    assert _report(lambda: select(store, plan, context, **options)) == expected
    assert _loaded(lambda: retrieve_pools(store, plan, context, **options)) == _loaded(
        lambda: poolsplit.retrieve_pools(store, plan, context, **options)
    )
