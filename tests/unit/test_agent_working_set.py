"""The working-set policy (seed 002), framework-neutral: exact plans for the
rules, and a property over random conversations with tool calls."""

from __future__ import annotations

from typing import Dict, List, Set, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from poolsplit_adapters.memory import View, plan_demotion, split_turns


def H(i: str) -> View:
    return View("human", i)


def A(i: str, *calls: str) -> View:
    return View("ai", i, calls=tuple(calls))


def T(i: str, answers: str) -> View:
    return View("tool", i, answers=answers)


def demoted(plan) -> List[Tuple[int, ...]]:
    return [t.indices for t in plan.demote]


def test_short_conversation_demotes_nothing():
    views = [H("h1"), A("a1"), H("h2"), A("a2")]
    plan = plan_demotion(views, 2)
    assert plan.demote == [] and plan.goal == 0


def test_goal_is_pinned_and_does_not_count_as_a_turn():
    views = [H("h1"), A("a1"), H("h2"), A("a2"), H("h3"), A("a3")]
    # turns: (1,) the goal's answer, (2, 3), (4, 5); keep the last two
    assert demoted(plan_demotion(views, 2)) == [(1,)]
    assert demoted(plan_demotion(views, 1)) == [(1,), (2, 3)]


def test_without_a_pinned_goal_the_first_turn_is_an_ordinary_turn():
    views = [H("h1"), A("a1"), H("h2"), A("a2"), H("h3")]
    plan = plan_demotion(views, 1, pin_goal=False)
    assert plan.goal is None
    assert demoted(plan) == [(0, 1), (2, 3)]


def test_a_tool_call_leaves_with_its_results():
    views = [H("g"), H("h1"), A("a1", "c1", "c2"), T("t1", "c1"), T("t2", "c2"), A("a1b"), H("h2"), A("a2")]
    assert demoted(plan_demotion(views, 1)) == [(1, 2, 3, 4, 5)]


def test_a_pending_tool_call_is_never_demoted():
    views = [H("g"), H("h1"), A("a1", "c1"), H("h2"), A("a2"), H("h3"), A("a3")]
    plan = plan_demotion(views, 1)
    assert demoted(plan) == [(3, 4)]
    assert [t.indices for t in plan.open_loops] == [(1, 2)]


def test_turns_linked_by_a_late_result_stay_together():
    # c1 is called in turn h1 and answered after h2 arrived: h1 and h2 are one group
    views = [H("g"), H("h1"), A("a1", "c1"), H("h2"), T("t1", "c1"), A("a2"), H("h3"), A("a3"), H("h4")]
    assert demoted(plan_demotion(views, 2)) == [(1, 2), (3, 4, 5)]
    # with h3 recent and linked to nothing, h1+h2 go together; when h2 is recent, h1 stays with it
    plan = plan_demotion(views, 3)
    assert demoted(plan) == [] and [t.indices for t in plan.open_loops] == [(1, 2)]


def test_a_turn_with_a_message_without_id_stays():
    views = [H("g"), H("h1"), View("ai", None), H("h2"), A("a2"), H("h3")]
    plan = plan_demotion(views, 1)
    assert demoted(plan) == [(3, 4)] and [t.indices for t in plan.open_loops] == [(1, 2)]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3", None])
def test_max_turns_must_be_a_positive_int(bad):
    with pytest.raises(ValueError, match="max_turns"):
        plan_demotion([H("h")], bad)


def test_unknown_kind_is_refused_with_its_name():
    with pytest.raises(ValueError, match="'robot'"):
        View("robot", "x")


# -- property ---------------------------------------------------------------------------

# A turn: a human message, then rounds of (calls made, which of them answered
# now, answered in the next turn instead), then maybe a closing AI message.
ROUND = st.tuples(st.integers(0, 3), st.integers(0, 3), st.booleans())
TURN = st.tuples(st.lists(ROUND, max_size=3), st.booleans(), st.booleans())


@st.composite
def conversations(draw) -> List[View]:
    views: List[View] = []
    late: List[str] = []  # results owed to the next turn
    n = 0
    turns = draw(st.lists(TURN, min_size=1, max_size=14))
    prelude = draw(st.booleans())
    if prelude:
        views.append(A("pre"))
    for t, (rounds, closing, no_id) in enumerate(turns):
        views.append(H("h%d" % t))
        for call_id in late:
            views.append(T("r-%s" % call_id, call_id))
        late = []
        for made, answered, defer in rounds:
            calls = ["c%d" % (n + k) for k in range(made)]
            n += made
            views.append(A("a%d" % n if not no_id else None, *calls))
            now, rest = calls[: min(answered, made)], calls[min(answered, made) :]
            for call_id in now:
                views.append(T("r-%s" % call_id, call_id))
            if defer:
                late = rest  # answered after the next human message; else left pending
        if closing:
            views.append(A("z%d" % t))
    return views


def _links(views: List[View]) -> Dict[int, Set[int]]:
    """Message positions linked by a call and its result, both ways."""
    where = {c: i for i, v in enumerate(views) for c in v.calls}
    links: Dict[int, Set[int]] = {i: set() for i in range(len(views))}
    for i, v in enumerate(views):
        if v.answers in where:
            links[i].add(where[v.answers])
            links[where[v.answers]].add(i)
    return links


@settings(max_examples=300, deadline=None)
@given(conversations(), st.integers(1, 5), st.booleans())
def test_demotion_never_separates_calls_and_bounds_the_working_set(views, max_turns, pin_goal):
    plan = plan_demotion(views, max_turns, pin_goal=pin_goal)
    goal, turns = split_turns(views, pin_goal=pin_goal)
    out = {i for t in plan.demote for i in t.indices}
    kept = {i for t in plan.kept for i in t.indices}
    everything = set(range(len(views))) - ({goal} if goal is not None else set())
    assert out | kept == everything and not (out & kept)
    assert goal is None or goal not in out

    # no tool result ever loses its call (and no call its results)
    for i, linked in _links(views).items():
        for j in linked:
            assert (i in out) == (j in out), (i, j)
    # a pending call is never demoted, nor is a message without an id
    answered = {v.answers for v in views if v.answers}
    for i, v in enumerate(views):
        if any(c not in answered for c in v.calls) or v.id is None:
            assert i not in out
    # at most max_turns turns plus the open loops (and the goal)
    assert len(plan.kept) <= max_turns + len(plan.open_loops)
    assert plan.kept[-min(max_turns, len(turns)) :] == turns[-min(max_turns, len(turns)) :]
    # demotion is oldest first and only of whole turns
    assert plan.demote == [t for t in turns if t in plan.demote]
    # every open loop is justified: linked (transitively) to a pending call,
    # an id-less message, the goal, or a recent turn
    recent = {i for t in turns[-max_turns:] for i in t.indices}
    anchors = {i for i in kept if i in recent or views[i].id is None}
    anchors |= {i for i, v in enumerate(views) if any(c not in answered for c in v.calls)}
    if goal is not None:
        anchors.add(goal)
    turn_of = {i: k for k, t in enumerate(turns) for i in t.indices}
    reach = set(anchors)
    frontier = list(anchors)
    links = _links(views)
    while frontier:
        i = frontier.pop()
        group = set(links[i]) | ({j for j in turns[turn_of[i]].indices} if i in turn_of else set())
        for j in group - reach:
            reach.add(j)
            frontier.append(j)
    for loop in plan.open_loops:
        assert set(loop.indices) & reach, loop
