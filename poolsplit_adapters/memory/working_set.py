"""The working set (seed 002): which turns stay in the context window, and
which are demoted to long-term memory.

Short-term memory is the context window: every token of it is read at full
fidelity, so a place in it is earned by what the *next* decision needs, not
by mere relevance. A turn's working set holds:

* the goal (the user's current objective): always;
* the last ``max_turns`` turns verbatim (for reasoning in progress, recency
  beats relevance);
* every open loop (a tool call still waiting for its result).

Everything older is a candidate for demotion. This module only *plans* the
demotion, over a framework-neutral view of the messages; the caller writes
each demoted turn to long-term memory and removes it from the working set
only after that write returned ("recallable forgetting", not amnesia).

Rules, each stated once here:

1. A turn is a human message and every message after it up to the next human
   message (messages before the first human message form a turn of their own).
2. The goal message, when pinned, belongs to no turn: it is never demoted and
   does not count against ``max_turns``.
3. A tool call and its result are never separated: turns linked by a call in
   one and its result in another are demoted together or not at all.
4. An open loop is never demoted: a group holding a tool call without a
   result stays, however old.
5. A turn holding a message without an id cannot be removed by id, so it stays
   (removing it some other way would rewrite the whole history).

Example:
    >>> from poolsplit_adapters.memory import View, plan_demotion
    >>> views = [View("human", "m1"), View("ai", "m2"),
    ...          View("human", "m3"), View("ai", "m4"),
    ...          View("human", "m5")]
    >>> plan = plan_demotion(views, max_turns=1, pin_goal=True)
    >>> [t.indices for t in plan.demote]
    [(1,), (2, 3)]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

__all__ = ["View", "Turn", "Demotion", "split_turns", "plan_demotion", "HUMAN", "AI", "TOOL", "OTHER"]

HUMAN = "human"
AI = "ai"
TOOL = "tool"
OTHER = "other"
_KINDS = (HUMAN, AI, TOOL, OTHER)


@dataclass(frozen=True)
class View:
    """What the working-set policy needs to know about one message.

    Attributes:
        kind: ``"human"``, ``"ai"``, ``"tool"`` or ``"other"``.
        id: the message id (needed to remove it; None: cannot be removed).
        calls: ids of the tool calls an AI message makes.
        answers: the id of the tool call a tool result answers.
    """

    kind: str
    id: Optional[str] = None
    calls: Tuple[str, ...] = ()
    answers: Optional[str] = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError("View kind must be one of %s, got %r" % (", ".join(_KINDS), self.kind))


@dataclass(frozen=True)
class Turn:
    """Message positions (in order) that make up one turn."""

    indices: Tuple[int, ...]


@dataclass(frozen=True)
class Demotion:
    """The plan for one pass.

    Attributes:
        demote: turns to write to long-term memory and then remove, oldest
            first.
        goal: position of the pinned goal message (kept), if any.
        kept: turns kept in the working set, oldest first (the recent ones and
            the open loops).
        open_loops: the kept turns that are older than the last ``max_turns``
            (kept because a tool call in them, or linked to them, is pending or
            because a message cannot be removed by id).
    """

    demote: List[Turn]
    goal: Optional[int]
    kept: List[Turn] = field(default_factory=list)
    open_loops: List[Turn] = field(default_factory=list)


def split_turns(views: Sequence[View], *, pin_goal: bool = True) -> Tuple[Optional[int], List[Turn]]:
    """``(goal position, turns)`` for ``views`` (rules 1 and 2)."""
    goal = next((i for i, v in enumerate(views) if v.kind == HUMAN), None) if pin_goal else None
    turns: List[List[int]] = []
    for i, view in enumerate(views):
        if i == goal:
            continue
        if view.kind == HUMAN or not turns:
            turns.append([])
        turns[-1].append(i)
    return goal, [Turn(tuple(t)) for t in turns]


def plan_demotion(views: Sequence[View], max_turns: int, *, pin_goal: bool = True) -> Demotion:
    """Which turns leave the working set (oldest first) and which stay.

    ``pin_goal``: keep the first human message as the goal (pass False when
    the host states the goal elsewhere, e.g. in the system prompt).
    """
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise ValueError("max_turns must be an int >= 1 (the current turn always stays), got %r" % (max_turns,))
    goal, turns = split_turns(views, pin_goal=pin_goal)
    if len(turns) <= max_turns:
        return Demotion(demote=[], goal=goal, kept=turns)

    turn_of: Dict[int, int] = {i: t for t, turn in enumerate(turns) for i in turn.indices}
    if goal is not None:
        turn_of[goal] = -1  # the goal is never demoted, so neither is anything linked to it
    parent = list(range(len(turns)))

    def find(t: int) -> int:
        while parent[t] != t:
            parent[t] = parent[parent[t]]
            t = parent[t]
        return t

    blocked: Set[int] = set()  # groups (roots) that must stay
    call_turn: Dict[str, int] = {}
    for i, view in enumerate(views):
        for call in view.calls:
            call_turn[call] = turn_of[i]
    answered: Set[str] = set()
    for i, view in enumerate(views):
        if view.kind != TOOL or view.answers is None:
            continue
        answered.add(view.answers)
        origin = call_turn.get(view.answers)
        here = turn_of[i]
        if origin is None or here < 0:
            continue
        if origin < 0:
            blocked.add(here)  # linked to the goal: stays with it
            continue
        parent[find(origin)] = find(here)  # rule 3
    for call, t in call_turn.items():
        if call not in answered and t >= 0:
            blocked.add(t)  # rule 4: a pending call
    for t, turn in enumerate(turns):
        if any(views[i].id is None for i in turn.indices):
            blocked.add(t)  # rule 5
    recent = set(range(len(turns) - max_turns, len(turns)))
    blocked_roots = {find(t) for t in blocked} | {find(t) for t in recent}

    demote, kept, open_loops = [], [], []
    for t, turn in enumerate(turns):
        if find(t) in blocked_roots:
            kept.append(turn)
            if t not in recent:
                open_loops.append(turn)
        else:
            demote.append(turn)
    return Demotion(demote=demote, goal=goal, kept=kept, open_loops=open_loops)
