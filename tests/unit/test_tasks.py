"""Task-type detection and task-aware pool plans (seed 003): exact values for
the detection rule, properties for the budget arithmetic, and the plans run
through the real selector."""

from __future__ import annotations

from fractions import Fraction

import pytest
from example_memory import EXAMPLES, NOW
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_adapters import Pool, select
from poolsplit_adapters.memory.tasks import (
    COLLECTIONS,
    DEFAULT_PRESETS,
    DEFAULT_SIGNALS,
    TASK_TYPES,
    MatchedSignal,
    Preset,
    Signals,
    detect_task_type,
    extend_signals,
    plan_for_task,
    resolve_pools,
    share_out,
    task_pools,
)
from poolsplit_adapters.stores import load_store

# -- Detection: each signal's weight ---------------------------------------------


def test_a_goal_keyword_weighs_two():
    found = detect_task_type({"goal": "please refactor it"})
    assert found.type == "refactoring"
    assert found.scores["refactoring"] == 2
    assert found.matched_signals == (MatchedSignal("refactoring", "goal", "refactor", 2),)


def test_an_action_type_weighs_three():
    found = detect_task_type({"action_type": "read_diff"})
    assert (found.type, found.scores["review"]) == ("review", 3)
    assert found.decided_by == (MatchedSignal("review", "action_type", "read_diff", 3),)


def test_a_phase_weighs_four():
    found = detect_task_type({"phase": "Troubleshooting"})
    assert (found.type, found.scores["debugging"]) == ("debugging", 4)
    assert [m.field for m in found.decided_by] == ["phase"]


def test_signals_add_up_and_each_distinct_signal_counts_once():
    found = detect_task_type({"goal": "fix the bug, fix it now", "action_type": "run_test", "phase": "debugging"})
    # phase 4 + action_type 3 + goal "fix" 2 + goal "bug" 2; the second "fix" adds nothing.
    assert found.scores == {"exploration": 0, "implementation": 0, "debugging": 11, "review": 0, "refactoring": 0}
    assert [(m.field, m.signal) for m in found.decided_by] == [
        ("phase", "debugging"),
        ("action_type", "run_test"),
        ("goal", "fix"),
        ("goal", "bug"),
    ]


def test_matching_is_on_whole_words_case_insensitive():
    assert detect_task_type({"goal": "add a prefix"}).scores["debugging"] == 0  # "fix" is not a word of "prefix"
    assert detect_task_type({"goal": "FIX it"}).scores["debugging"] == 2
    assert detect_task_type({"goal": "fixing it"}).scores["debugging"] == 0  # no stemming
    # Separators do not matter inside a multi-word signal.
    assert detect_task_type({"action_type": "Run-Test"}).scores["debugging"] == 3
    assert detect_task_type({"goal": "open a Pull-Request"}).scores["review"] == 2


def test_the_message_stands_in_for_a_missing_goal_only():
    found = detect_task_type({"message": "why does the import crash"})
    assert found.type == "debugging"
    assert found.decided_by == (MatchedSignal("debugging", "message", "crash", 2),)
    # With a goal, the message is not read.
    assert detect_task_type({"goal": "write docs", "message": "crash"}).scores["debugging"] == 0


# -- Ties and the fallback -----------------------------------------------------------


def test_a_tie_goes_to_the_stronger_field():
    # review: phase 4; debugging: goal "fix" 2 + goal "bug" 2 = 4.
    found = detect_task_type({"goal": "fix bug", "phase": "review"})
    assert found.scores["review"] == found.scores["debugging"] == 4
    assert found.type == "review"


def test_a_complete_tie_goes_to_the_type_listed_first():
    context = {"goal": "fix the refactor"}  # debugging 2 (goal), refactoring 2 (goal)
    assert detect_task_type(context).type == "debugging"
    reordered = {name: DEFAULT_SIGNALS[name] for name in reversed(list(DEFAULT_SIGNALS))}
    assert detect_task_type(context, signals=reordered).type == "refactoring"


def test_no_match_falls_back_to_implementation():
    for context in (None, {}, {"goal": "hello there"}, {"phase": ""}):
        found = detect_task_type(context)
        assert (found.type, found.fallback, found.matched_signals) == ("implementation", True, ())
        assert set(found.scores.values()) == {0}
        assert found.decided_by == ()
    assert detect_task_type({}, fallback="exploration").type == "exploration"
    assert detect_task_type({"phase": "review"}).fallback is False


# -- User-extended tables -------------------------------------------------------------


def test_extending_a_type_and_adding_one():
    table = extend_signals(
        DEFAULT_SIGNALS,
        {"debugging": Signals(goal=("oncall",)), "deployment": Signals(phase=("release",), action_type=("deploy",))},
    )
    assert detect_task_type({"goal": "oncall page"}, signals=table).type == "debugging"
    assert detect_task_type({"goal": "oncall page"}).fallback is True  # the default table is untouched
    found = detect_task_type({"phase": "release", "action_type": "deploy"}, signals=table)
    assert (found.type, found.scores["deployment"]) == ("deployment", 7)
    assert table["debugging"].goal[-1] == "oncall" and table["debugging"].goal[0] == "fix"
    assert list(table)[-1] == "deployment"


def test_a_custom_table_and_custom_weights():
    table = {"ops": Signals(goal=("page",)), "docs": Signals(phase=("writing",))}
    found = detect_task_type(
        {"goal": "page", "phase": "writing"}, signals=table, weights={"goal": 5, "action_type": 1, "phase": 4}
    )
    assert found.scores == {"ops": 5, "docs": 4} and found.type == "ops"


def test_bad_input_names_the_field():
    with pytest.raises(TypeError, match=r"context\['phase'\] must be a string or None, got int 3"):
        detect_task_type({"phase": 3})
    with pytest.raises(TypeError, match="context must be a mapping"):
        detect_task_type("debugging")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Signals.goal must be a list of strings"):
        Signals(goal="fix")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"signal table\['x'\] must be a Signals"):
        detect_task_type({}, signals={"x": ("fix",)})  # type: ignore[dict-item]


def test_detection_reports_as_json():
    found = detect_task_type({"phase": "qa"})
    assert found.to_dict() == {
        "type": "review",
        "fallback": False,
        "scores": {"exploration": 0, "implementation": 0, "debugging": 0, "review": 4, "refactoring": 0},
        "matched_signals": [{"task_type": "review", "field": "phase", "signal": "qa", "weight": 4}],
    }


# -- Pool plans ------------------------------------------------------------------------


def test_debugging_plan_exact():
    plan = task_pools({"phase": "debugging"}, total_tokens=600, total_entries=12)
    # The standing pool first: its floor, 640 tokens, is more than 5/8 of 600, so 375 tokens; a quarter
    # of the entries (3), its cap raised to 375 // 12 = 31 short sentences. The rest, 225 tokens and 9
    # entries, shared out by the preset. Tokens: 225 x 35/15/20/20/10 % = 78.75, 33.75, 45, 45, 22.5 ->
    # floors (223); the two units left go to the largest remainders, episodic and semantic (.75).
    # Entries: quotas 3.15, 1.35, 1.8, 1.8, 0.9 -> floors 3, 1, 1, 1, 0 (6); the three units left go to
    # the largest remainders: other (.9), skills and anti_patterns (.8).
    assert [(p.name, p.max_tokens, p.max_entries, p.types) for p in plan] == [
        ("corrections", 0, 0, ("correction",)),
        ("standing", 375, 31, ("instruction", "preference")),
        ("episodic", 79, 3, ("episode",)),
        ("semantic", 34, 1, ("fact", "note", "task")),
        ("skills", 45, 2, ("skill",)),
        ("anti_patterns", 45, 2, ("anti_pattern", "growth")),
        ("other", 22, 1, None),
    ]
    # A budget where a quarter is more than the floor: the quarter.
    large = task_pools({"phase": "debugging"}, total_tokens=4096, total_entries=12)
    assert [(p.name, p.max_tokens) for p in large][1] == ("standing", 1024)


def test_the_standing_pool_is_planned_when_the_store_holds_instructions_or_types_are_unknown():
    with_turns = plan_for_task(
        "implementation", total_tokens=1024, total_entries=40, entry_types=["turn", "instruction"]
    )
    assert [(p.name, p.max_tokens, p.max_entries) for p in with_turns] == [
        ("corrections", 0, 0),
        ("standing", 640, 53),  # the floor, 640 (a quarter is less, 5/8 more); max(40 // 4, 640 // 12)
        ("turn", 384, 30),
    ]
    only = plan_for_task("implementation", total_tokens=1024, total_entries=40, entry_types=["preference"])
    assert [(p.name, p.max_tokens, p.max_entries) for p in only] == [("corrections", 0, 0), ("standing", 1024, 85)]
    without = plan_for_task("implementation", total_tokens=1024, total_entries=40, entry_types=["turn"])
    assert "standing" not in [p.name for p in without]


def test_every_task_type_has_a_preset_with_a_why():
    assert tuple(DEFAULT_PRESETS) == TASK_TYPES == tuple(DEFAULT_SIGNALS)
    for name, preset in DEFAULT_PRESETS.items():
        assert len(preset.why) > 40, name
        assert set(preset.weights) == set(COLLECTIONS) | {"other"}
        assert sum(preset.weights.values()) == 100, name


def test_known_entry_types_share_the_budget_among_the_types_the_store_holds():
    plan = plan_for_task("exploration", total_tokens=100, total_entries=10, entry_types=["episode", "custom", "zeta"])
    # episodic 25, and each unnamed type the mean collection weight (90 / 4 = 22.5): 100 x 25/70, 22.5/70, 22.5/70
    # = 35.7, 32.1, 32.1 -> 35, 32, 32 and the 1 left to the largest remainder. No pool for absent collections.
    assert [(p.name, p.max_tokens, p.max_entries, p.types) for p in plan] == [
        ("corrections", 0, 0, ("correction",)),
        ("episodic", 36, 4, ("episode",)),
        ("custom", 32, 3, ("custom",)),
        ("zeta", 32, 3, ("zeta",)),
    ]
    named = plan_for_task("debugging", total_tokens=100, total_entries=9, entry_types=["episode", "fact", "correction"])
    # Only the collections the store holds: 35 and 15 of 50 -> 70 and 30 tokens; 6.3 and 2.7 -> 6 and 3 entries.
    assert [(p.name, p.max_tokens, p.max_entries) for p in named] == [
        ("corrections", 0, 0),
        ("episodic", 70, 6),
        ("semantic", 30, 3),
    ]


def test_a_store_of_turns_and_events_gets_the_whole_budget_not_the_catch_all_share():
    # The benchmark vocabulary: with the types unknown they shared the catch-all's 10% of what the
    # standing pool leaves (38 of 384).
    unknown = plan_for_task("implementation", total_tokens=1024, total_entries=40)
    assert [(p.name, p.max_tokens) for p in unknown][-1] == ("other", 38)
    plan = plan_for_task("implementation", total_tokens=1024, total_entries=40, entry_types=["turn", "event"])
    assert [(p.name, p.max_tokens, p.max_entries, p.types) for p in plan] == [
        ("corrections", 0, 0, ("correction",)),
        ("event", 512, 20, ("event",)),
        ("turn", 512, 20, ("turn",)),
    ]
    # Next to named types, each weighs like an average collection: semantic 35, skills 30, turn 22.5, event 22.5.
    mixed = plan_for_task(
        "implementation", total_tokens=1100, total_entries=22, entry_types=["fact", "skill", "turn", "event"]
    )
    assert [(p.name, p.max_tokens, p.max_entries) for p in mixed] == [
        ("corrections", 0, 0),
        ("semantic", 350, 7),
        ("skills", 300, 6),
        ("event", 225, 5),
        ("turn", 225, 4),
    ]


def test_a_host_maps_its_types_onto_the_seed_collections_so_the_task_weights_apply():
    collections = {**COLLECTIONS, "episodic": ("episode", "turn", "event")}
    debugging = plan_for_task(
        "debugging", total_tokens=1000, total_entries=20, collections=collections, entry_types=["turn", "event", "fact"]
    )
    # episodic 35, semantic 15: 700 and 300.
    assert [(p.name, p.max_tokens, p.max_entries) for p in debugging] == [
        ("corrections", 0, 0),
        ("episodic", 700, 14),
        ("semantic", 300, 6),
    ]
    pools, found = resolve_pools(
        "auto", {"phase": "debugging"}, total_tokens=1000, total_entries=20,
        entry_types=["turn", "event", "fact"], collections=collections,
    )  # fmt: skip
    assert found is not None and pools == debugging


def test_a_pool_named_after_a_type_never_takes_a_reserved_or_collection_name():
    plan = plan_for_task("review", total_tokens=90, total_entries=3, entry_types=["semantic", "other", "x"])
    assert [(p.name, p.types) for p in plan] == [
        ("corrections", ("correction",)),
        ("type:other", ("other",)),
        ("type:semantic", ("semantic",)),
        ("x", ("x",)),
    ]


def test_a_store_of_corrections_only_plans_the_corrections_pool():
    assert plan_for_task("review", total_tokens=90, total_entries=3, entry_types=["correction"]) == [
        Pool("corrections", 0, 0, ("correction",))
    ]


def test_an_unnamed_type_still_loads_through_its_own_pool_or_the_catch_all():
    entries = [
        {"id": "h1", "type": "hypothesis", "content": "The cache is stale after deploys."},
        {"id": "e1", "type": "episode", "content": "Deploy on Monday broke the cache."},
        {"id": "c1", "type": "correction", "scope": "always", "content": "Never skip tests."},
    ]
    for entry_types, pool in ((None, "other"), ({e["type"] for e in entries}, "hypothesis")):
        plan = task_pools({"phase": "debugging"}, total_tokens=400, total_entries=8, entry_types=entry_types)
        got = select(entries, plan, {"message": "cache"}, now=NOW)
        assert got.pools[pool] == [entries[0]]
        assert got.pools["corrections"] == [entries[2]]
        assert got.dropped == []


def test_plan_errors_are_clear():
    with pytest.raises(ValueError, match="no preset for task type 'deployment'"):
        plan_for_task("deployment", total_tokens=10, total_entries=1)
    with pytest.raises(ValueError, match="weighs unknown collection"):
        plan_for_task("x", total_tokens=10, total_entries=1, presets={"x": Preset({"episodes": 1})})
    with pytest.raises(ValueError, match="weight 0"):
        plan_for_task("x", total_tokens=10, total_entries=1, presets={"x": Preset({"skills": 0})})
    with pytest.raises(ValueError, match="must not be named 'other'"):
        plan_for_task("debugging", total_tokens=10, total_entries=1, collections={"other": ("x",)})
    with pytest.raises(TypeError, match="total_tokens must be an int"):
        task_pools({}, total_tokens=10.5, total_entries=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="total_entries must be >= 0"):
        task_pools({}, total_tokens=10, total_entries=-1)
    with pytest.raises(ValueError, match="must be finite and >= 0"):
        Preset({"skills": -1})


def test_resolve_pools_for_adapters():
    pools, found = resolve_pools("auto", {"goal": "review the pull request"}, total_tokens=300, total_entries=6)
    assert found is not None and found.type == "review"
    assert pools == plan_for_task("review", total_tokens=300, total_entries=6)
    explicit = [Pool("all", 100, 5)]
    assert resolve_pools(explicit, {"phase": "review"}) == (explicit, None)
    with pytest.raises(ValueError, match="needs total_tokens, the token budget"):
        resolve_pools("auto", {}, total_entries=100)
    # without total_entries, as many entries as the tokens allow
    assert resolve_pools("auto", {}, total_tokens=100)[0] == plan_for_task(
        "implementation", total_tokens=100, total_entries=100
    )
    with pytest.raises(ValueError, match="apply only to pools='auto'"):
        resolve_pools(explicit, {}, total_tokens=100)
    with pytest.raises(ValueError, match="or 'auto', got 'automatic'"):
        resolve_pools("automatic", {})


def test_the_plan_changes_what_loads_on_the_example_store():
    entries = load_store(EXAMPLES / "memory.jsonl")
    context = {"message": "the Monday dedupe job is slow", "project": "pipeline"}
    loaded = {}
    for task_type in TASK_TYPES:
        plan = plan_for_task(task_type, total_tokens=500, total_entries=14, entry_types={e["type"] for e in entries})
        got = select(entries, plan, context, now=NOW)
        for name, stat in got.stats.items():
            assert stat.tokens_used <= stat.max_tokens and stat.entries_used <= stat.max_entries, name
        assert len(got.pools["corrections"]) == 10  # every correction, on every plan
        loaded[task_type] = {name: len(got.pools[name]) for name in COLLECTIONS}
    # Debugging reserves the most for episodes and what failed; exploration for facts and notes.
    assert loaded["debugging"]["episodic"] > loaded["exploration"]["episodic"] > loaded["implementation"]["episodic"]
    assert loaded["exploration"]["semantic"] > loaded["debugging"]["semantic"]
    assert loaded["review"]["anti_patterns"] == max(row["anti_patterns"] for row in loaded.values())


# -- Properties ---------------------------------------------------------------------------

weights_lists = st.lists(st.integers(0, 50), min_size=1, max_size=7).filter(any)


@given(st.integers(0, 10_000), weights_lists)
def test_share_out_adds_up_and_stays_within_one_of_the_quota(total, weights):
    shares = share_out(total, weights)
    assert sum(shares) == total and all(s >= 0 for s in shares)
    whole = sum(weights)
    for share, weight in zip(shares, weights):
        quota = Fraction(total * weight, whole)
        assert quota - 1 < share < quota + 1


presets = st.fixed_dictionaries(
    {name: st.integers(0, 9) for name in [*COLLECTIONS, "other"]},
).filter(lambda w: any(w.values()))


@given(
    st.integers(0, 5_000),
    st.integers(0, 200),
    presets,
    st.one_of(
        st.none(),
        st.sets(st.sampled_from(["episode", "fact", "skill", "growth", "x", "y", "correction", "instruction"])),
    ),
)
def test_plan_budgets_add_up_to_the_totals_and_corrections_come_first(total_tokens, total_entries, weights, types):
    table = {"t": Preset(weights)}
    try:
        plan = plan_for_task(
            "t", total_tokens=total_tokens, total_entries=total_entries, presets=table, entry_types=types
        )
    except ValueError as err:  # never with the store's types known: its types share the budget
        assert "weight 0" in str(err) and types is None
        return
    assert plan[0].name == "corrections" and plan[0].types == ("correction",)
    if types is not None and not types - {"correction"}:
        assert plan == [Pool("corrections", 0, 0, ("correction",))]  # nothing contextual to share out
        return
    assert sum(p.max_tokens for p in plan) == total_tokens
    standing = [p for p in plan if p.name == "standing"]
    assert len(standing) == (1 if types is None or types & {"instruction", "preference"} else 0)
    share = total_entries // 4 if standing and len(plan) > 2 else total_entries if standing else 0
    assert sum(p.max_entries for p in plan if p.name != "standing") == total_entries - share
    if standing:  # its entry cap: its share, raised to its tokens over 12
        assert standing[0].max_entries == max(share, standing[0].max_tokens // 12)
    assert len({p.name for p in plan}) == len(plan)
    # Every type present in the store is admitted by some pool, and a named type by exactly one.
    for entry_type in types or ():
        admitting = [p.name for p in plan if p.admits(entry_type)]
        assert len(admitting) == 1, (entry_type, admitting)


@given(st.text(max_size=40), st.sampled_from([None, "debugging", "qa", "x"]), st.text(max_size=20))
def test_detection_always_names_a_preset_type(goal, phase, action):
    found = detect_task_type({"goal": goal, "phase": phase, "action_type": action})
    assert found.type in DEFAULT_PRESETS
    assert found.scores[found.type] == sum(m.weight for m in found.decided_by)
    assert found.fallback == (max(found.scores.values()) == 0)
