"""Task-aware pool plans: detect what the agent is doing, then share the
budget out accordingly (seed 003).

What an agent needs from memory depends on the task: while debugging, past
incidents and what failed before matter most; while implementing, facts and
proven procedures. One fixed pool plan serves every task the same. Here:

1. [`detect_task_type`][] reads three signals from the retrieval context,
   keywords in ``goal`` (weight 2), ``action_type`` (weight 3) and ``phase``
   (weight 4, the strongest: a phase is an explicit statement of the task),
   scores the five task types and reports which signals decided. With no
   match it falls back to ``implementation``, the type most tasks end in.
2. [`task_pools`][] turns the detected type into a pool plan: a
   corrections pool first, then one pool per collection (episodic, semantic,
   skills, anti-patterns), with the totals shared out by the type's preset
   weights ([`DEFAULT_PRESETS`][], one table, a why for each row) so that
   the budgets add up exactly to the totals.
3. **Any vocabulary.** Given the entry types the store holds
   (``entry_types``: the adapters read them from their source where it can
   list them, or the host declares them), the budget is shared among those
   types only: a collection the store holds none of gets no pool (its share
   goes to the rest), and every type no collection names gets a pool of its
   own, weighing as much as the preset's average collection. Seed 003's
   weights apply to the types they name; a store of ``turn`` and ``event``
   entries gets its whole budget, not the catch-all's 10%. To give your own
   types the seed's weights, map them onto its collections (``collections=``,
   e.g. ``{"episodic": ("episode", "turn", "event"), ...}``). Only when the
   types are unknown does the plan keep the catch-all ``other``
   (``types=None``, the preset's small constant share).

Signals match whole words, case-insensitively (see ``_words``): ``fix``
matches "Fix the login" but not "prefix" or "fixing"; a signal of several
words (``"pull request"``, ``"run_test"``) matches those words in sequence,
whatever separates them. Each distinct signal counts once per field, however
often it occurs. Tables, weights, collections and presets are plain data:
extend them with `extend_signals` or pass your own.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ..poolsplit import MAX_COST, Pool, Reason, Selection, one_slip_from
from ._words import contains, words
from .standing import FACT

__all__ = [
    "AUTO",
    "CATCH_ALL",
    "COLLECTIONS",
    "CORRECTIONS_POOL",
    "CORRECTION_TYPES",
    "DEFAULT_PRESETS",
    "DEFAULT_SIGNALS",
    "FALLBACK_TYPE",
    "KNOWN_TYPES",
    "SIGNAL_FIELDS",
    "SIGNAL_WEIGHTS",
    "STANDING_FLOOR",
    "STANDING_MOST",
    "STANDING_POOL",
    "STANDING_TYPES",
    "SPILLED_NOTE",
    "TASK_TYPES",
    "StandingUnplannedWarning",
    "MatchedSignal",
    "Preset",
    "Signals",
    "TaskDetection",
    "detect_task_type",
    "extend_signals",
    "plan_for_task",
    "planned_pool_names",
    "resolve_pools",
    "share_out",
    "spill_standing",
    "spilled_to",
    "filled_spilling",
    "noted_task",
    "task_pools",
    "warn_unplanned_standing",
]

TASK_TYPES: Tuple[str, ...] = ("exploration", "implementation", "debugging", "review", "refactoring")
#: With no signal at all: most tasks end in writing code, and the
#: implementation plan is the balanced one.
FALLBACK_TYPE = "implementation"
#: The context keys read, in the order ties are broken (strongest first).
SIGNAL_FIELDS: Tuple[str, ...] = ("phase", "action_type", "goal")
#: Points per matching signal. A phase is a deliberate statement of what the
#: agent is doing; an action type is what it is doing right now; a goal is
#: free text that mentions many things.
SIGNAL_WEIGHTS: Mapping[str, int] = MappingProxyType({"goal": 2, "action_type": 3, "phase": 4})
#: Read as the goal when the context has none (a retriever's query).
GOAL_STAND_IN = "message"
#: ``pools="auto"``.
AUTO = "auto"


def _strings(value: Any, what: str) -> Tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
        raise TypeError("%s must be a list of strings, got %s %r" % (what, type(value).__name__, value))
    items = sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    for item in items:
        if not isinstance(item, str):
            raise TypeError("%s must contain only strings, got %s %r" % (what, type(item).__name__, item))
    return tuple(items)


@dataclass(frozen=True)
class Signals:
    """The words that point to one task type, per context field.

    Example:
        ```python
        Signals(goal=("fix", "bug"), action_type=("run_test",), phase=("debugging",))
        ```
    """

    goal: Tuple[str, ...] = ()
    action_type: Tuple[str, ...] = ()
    phase: Tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in SIGNAL_FIELDS:
            object.__setattr__(self, name, _strings(getattr(self, name), "Signals.%s" % name))

    def of(self, field_name: str) -> Tuple[str, ...]:
        """The signals for ``field_name`` ("goal", "action_type" or "phase")."""
        value: Tuple[str, ...] = getattr(self, field_name)
        return value

    def plus(self, other: Signals) -> Signals:
        """These signals followed by ``other``'s (duplicates dropped)."""
        merged = {
            name: tuple(dict.fromkeys(self.of(name) + other.of(name)))  # ordered, unique
            for name in SIGNAL_FIELDS
        }
        return Signals(**merged)


# The words are this project's own; the three-field shape and the weights are
# seed 003's. No stemming: every form that should match is listed.
DEFAULT_SIGNALS: Mapping[str, Signals] = MappingProxyType(
    {
        "exploration": Signals(
            goal=(
                "explore", "understand", "investigate", "learn", "overview", "architecture",
                "how does", "where is", "where are", "find out", "map", "survey", "onboard",
            ),
            action_type=("read_file", "search_code", "list_files", "browse", "grep", "search"),
            phase=("exploration", "discovery", "research", "onboarding", "planning"),
        ),
        "implementation": Signals(
            goal=(
                "implement", "add", "build", "create", "write", "feature", "support", "integrate",
                "develop", "introduce", "new endpoint",
            ),
            action_type=("write_file", "edit_file", "create_file", "generate_code", "write_code"),
            phase=("implementation", "development", "coding", "build"),
        ),
        "debugging": Signals(
            goal=(
                "fix", "bug", "debug", "error", "errors", "failing", "fails", "failed", "broken", "crash",
                "crashes", "exception", "flaky", "regression", "traceback", "slow", "not working",
            ),
            action_type=("run_test", "run_tests", "debug", "read_logs", "inspect_logs", "reproduce", "bisect"),
            phase=("debugging", "troubleshooting", "triage", "incident", "diagnosis"),
        ),
        "review": Signals(
            goal=(
                "review", "audit", "verify", "feedback", "approve", "critique", "assess",
                "pull request", "code review",
            ),
            action_type=("review_code", "read_diff", "comment", "approve", "request_changes"),
            phase=("review", "code_review", "qa", "verification", "approval"),
        ),
        "refactoring": Signals(
            goal=(
                "refactor", "restructure", "clean up", "cleanup", "simplify", "rename", "extract",
                "reorganise", "reorganize", "deduplicate", "technical debt", "split",
            ),
            action_type=("rename_symbol", "move_file", "extract_function", "refactor"),
            phase=("refactoring", "cleanup", "maintenance"),
        ),
    }
)  # fmt: skip


def extend_signals(base: Mapping[str, Signals], additions: Mapping[str, Signals]) -> Dict[str, Signals]:
    """A new signal table: ``base`` with ``additions`` merged in.

    Signals for an existing type are appended to its own; a new type is added
    at the end (so it loses complete ties to the types before it). Neither
    argument is modified.

    Example:
        ```python
        table = extend_signals(DEFAULT_SIGNALS, {"debugging": Signals(goal=("oncall",))})
        detect_task_type({"goal": "oncall page"}, signals=table).type  # "debugging"
        ```
    """
    table = dict(_check_table(base))
    for name, extra in _check_table(additions).items():
        table[name] = table[name].plus(extra) if name in table else extra
    return table


def _check_table(table: Mapping[str, Signals]) -> Mapping[str, Signals]:
    if not isinstance(table, Mapping):
        raise TypeError("a signal table must be a mapping of task type -> Signals, got %s" % type(table).__name__)
    for name, signals in table.items():
        if not isinstance(name, str) or not name:
            raise TypeError("signal table keys must be non-empty task type names, got %r" % (name,))
        if not isinstance(signals, Signals):
            raise TypeError("signal table[%r] must be a Signals, got %s" % (name, type(signals).__name__))
    return table


@dataclass(frozen=True)
class MatchedSignal:
    """One signal that matched: for which type, in which field, and its points.

    ``field`` is the context key that was read: "goal", "action_type",
    "phase", or "message" when the message stood in for a missing goal.
    """

    task_type: str
    field: str
    signal: str
    weight: int


@dataclass(frozen=True)
class TaskDetection:
    """What [`detect_task_type`][] decided, and why.

    Attributes:
        type: the detected task type.
        scores: task type -> points, for every type of the table.
        matched_signals: every signal that matched, table order then field
            order (phase, action_type, goal).
        fallback: True when nothing matched and ``type`` is the fallback.

    Example:
        ```python
        found = detect_task_type({"goal": "fix the flaky login test", "phase": "debugging"})
        found.type                 # "debugging"
        found.scores["debugging"]  # 4 (phase) + 2 ("fix") + 2 ("flaky") = 8
        [m.signal for m in found.decided_by]  # ["debugging", "fix", "flaky"]
        ```
    """

    type: str
    scores: Mapping[str, int]
    matched_signals: Tuple[MatchedSignal, ...]
    fallback: bool = False

    @property
    def decided_by(self) -> Tuple[MatchedSignal, ...]:
        """The matched signals of the detected type (empty for a fallback)."""
        return tuple(m for m in self.matched_signals if m.task_type == self.type)

    def to_dict(self) -> Dict[str, Any]:
        """A JSON-ready form, for selection reports and events."""
        return {
            "type": self.type,
            "fallback": self.fallback,
            "scores": dict(self.scores),
            "matched_signals": [
                {"task_type": m.task_type, "field": m.field, "signal": m.signal, "weight": m.weight}
                for m in self.matched_signals
            ],
        }


def _field_text(context: Mapping[str, Any], key: str) -> str:
    value = context.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError("context[%r] must be a string or None, got %s %r" % (key, type(value).__name__, value))
    return value


def detect_task_type(
    context: Optional[Mapping[str, Any]],
    *,
    signals: Mapping[str, Signals] = DEFAULT_SIGNALS,
    fallback: str = FALLBACK_TYPE,
    weights: Mapping[str, int] = SIGNAL_WEIGHTS,
) -> TaskDetection:
    """Detect the task type from ``context["goal"]``, ``["action_type"]`` and
    ``["phase"]``.

    Each distinct signal of a type that matches a field adds that field's
    weight (goal 2, action_type 3, phase 4) to the type's score. When the
    context has no goal, ``context["message"]`` is read in its place (a
    retriever only has the query), with the goal's weight.

    The highest score wins. **Ties** go to the type with more points from
    the strongest field (phase, then action_type, then goal), then to the
    type listed first in the table. With no match at all the result is
    ``fallback`` (``implementation``) with ``fallback=True``.

    Raises:
        TypeError: the context is not a mapping, one of the three fields (or
            the message) is not a string, or the table is malformed.
    """
    if context is None:
        context = {}
    if not isinstance(context, Mapping):
        raise TypeError("context must be a mapping or None, got %s" % type(context).__name__)
    _check_table(signals)
    if not isinstance(fallback, str) or not fallback:
        raise TypeError("fallback must be a task type name, got %r" % (fallback,))
    texts: Dict[str, Tuple[str, Tuple[str, ...]]] = {}  # signal field -> (context key read, its words)
    for key in SIGNAL_FIELDS:
        texts[key] = (key, words(_field_text(context, key)))
    if not texts["goal"][1]:
        texts["goal"] = (GOAL_STAND_IN, words(_field_text(context, GOAL_STAND_IN)))

    matched: List[MatchedSignal] = []
    ranks: Dict[str, Tuple[int, ...]] = {}
    for task_type, table in signals.items():
        per_field = []
        for key in SIGNAL_FIELDS:
            read_as, haystack = texts[key]
            points = 0
            for signal in dict.fromkeys(table.of(key)):  # each distinct signal once
                if haystack and contains(haystack, signal):
                    weight = int(weights[key])
                    matched.append(MatchedSignal(task_type, read_as, signal, weight))
                    points += weight
            per_field.append(points)
        ranks[task_type] = (sum(per_field), *per_field)
    scores = {task_type: rank[0] for task_type, rank in ranks.items()}
    if not scores or max(scores.values()) == 0:
        return TaskDetection(fallback, MappingProxyType(scores), tuple(matched), fallback=True)
    # max() keeps the first of equal keys: table order breaks complete ties.
    winner = max(ranks, key=lambda task_type: ranks[task_type])
    return TaskDetection(winner, MappingProxyType(scores), tuple(matched))


# -- Pool plans -------------------------------------------------------------------

#: The seed's four collections, as the entry types that fill them.
#: "anti_patterns" holds what-failed entries: ``anti_pattern`` and this
#: project's ``growth`` notes (the agent's lessons from its own mistakes).
COLLECTIONS: Mapping[str, Tuple[str, ...]] = MappingProxyType(
    {
        "episodic": ("episode",),
        "semantic": ("fact", "note", "task"),
        "skills": ("skill",),
        "anti_patterns": ("anti_pattern", "growth"),
    }
)
#: Entry types the corrections pool admits.
CORRECTION_TYPES: Tuple[str, ...] = ("correction",)
CORRECTIONS_POOL = "corrections"
#: The user's standing instructions and preferences
#: (`standing`): a pool of their own in every
#: plan, filled right after the corrections, so they load whenever the budget
#: allows, however little the message resembles them.
STANDING_TYPES: Tuple[str, ...] = ("instruction", "preference")
STANDING_POOL = "standing"


class StandingUnplannedWarning(UserWarning):
    """An explicit pool plan admits in no pool a type the write path stores
    (the user's standing types, facts, the turns it demotes), or names a
    type one slip away from a known one (``"episodes"``, ``"corection"``),
    which no entry has (`warn_unplanned_standing`).

    Example:
        ```python
        import warnings
        from poolsplit_adapters import StandingUnplannedWarning
        warnings.simplefilter("error", StandingUnplannedWarning)  # a plan without them is a bug here
        ```
    """


#: The entry types this package writes or reads by name: a plan's type one
#: slip away from one of these (and not one of them) is a typo
#: (`warn_unplanned_standing`).
KNOWN_TYPES: Tuple[str, ...] = tuple(sorted(set(CORRECTION_TYPES + STANDING_TYPES).union(*COLLECTIONS.values())))
#: The type of the turns the write path demotes.
EPISODE = "episode"


def warn_unplanned_standing(
    owner: str,
    pools: Union[Sequence[Pool], str],
    recognising: bool,
    *,
    stacklevel: int = 4,
    gate: str = "write_gate=WriteGate(standing=None)",
) -> None:
    """Warn once, where a memory is built, when an explicit plan ``pools``
    admits in no pool a type its write path stores: the turns it demotes
    (``episode``) and, when it recognises the user's standing
    instructions, preferences and facts (``recognising``: the write gate's
    ``standing`` rules are on), `STANDING_TYPES` and ``fact``. Those
    entries would be written and never load, and recall, which asks only
    for the plan's types, would not even report them. A pool type one slip
    away from a `KNOWN_TYPES` one (``"episodes"``, ``"corection"``: no
    entry has it) is named with the type meant, whether or not it leaves a
    written type unadmitted (a misspelt correction type would keep every
    correction from loading). ``"auto"`` and the presets plan them all
    (`task_pools`). Why a warning and not an error: a host may want entries
    stored for another reader, or have a type of its own, and says so by
    ``warnings.filterwarnings``; or turns the recognition off
    (``WriteGate(standing=None)``, given as ``gate`` says)."""
    if isinstance(pools, str):
        return
    written = (EPISODE,) + (STANDING_TYPES + (FACT,) if recognising else ())
    missing = [t for t in written if not any(pool.admits(t) for pool in pools)]
    slips = [
        "pool %r names %r: did you mean %r?" % (pool.name, named, meant)
        for pool in pools
        for named in pool.types or ()
        for meant in [one_slip_from(named, KNOWN_TYPES)]
        if meant is not None
    ]
    if not missing and not slips:
        return
    fixes = []
    if set(missing) & set(STANDING_TYPES):
        fixes.append("add Pool(%r, %d, 20, %r) after the corrections" % (STANDING_POOL, STANDING_FLOOR, STANDING_TYPES))
    fixes += ["name %r in a pool" % t for t in (FACT, EPISODE) if t in missing]
    said = []
    if missing:
        user = [t for t in missing if t != EPISODE]
        named = ", ".join(user[:-1]) + " and " + user[-1] if len(user) > 1 else "".join(user)
        stored = (["the user's %s entries" % named] if user else []) + (
            ["the turns it demotes (episode entries)"] if EPISODE in missing else []
        )
        off = ", or pass %s to store none (from poolsplit_adapters.memory import WriteGate)" % gate if user else ""
        said.append(
            "the write path stores %s but no pool admits them: they would never load; %s (docs/lifecycle.md)%s"
            % (" and ".join(stored), " and ".join(fixes), off)
        )
    warnings.warn(
        "%s: %s" % (owner, "; ".join(slips + said)),
        StandingUnplannedWarning,
        stacklevel=stacklevel,
    )


#: The standing pool's share of ``total_tokens``, taken before the preset
#: shares the rest out: a quarter, but never less than `STANDING_FLOOR`
#: tokens while that is at most `STANDING_MOST` of the budget.
STANDING_SHARE = Fraction(1, 4)
#: The standing pool's least room: ten short statements (some 12 tokens
#: each) with their markers (some 52), as the adapters that render markers
#: into a prompt count them (`RenderedCounter`). A user's instructions and
#: preferences are few and must all load; a quarter of 1,024 or 2,048
#: tokens held four or eight of them.
STANDING_FLOOR = 640
#: The most of ``total_tokens`` `STANDING_FLOOR` may take: the other pools
#: keep three eighths (at 1,024 tokens, 384).
STANDING_MOST = Fraction(5, 8)
#: The standing pool's entry cap is its token budget over this (a short
#: sentence's tokens), never less than its share of ``total_entries``: a
#: user's instructions are many short entries, and a cap taken from a total
#: sized for long episodes would cut them while their tokens fit.
STANDING_ENTRY_TOKENS = 12
#: The pool for entry types no collection names, so that nothing starves.
CATCH_ALL = "other"


@dataclass(frozen=True)
class Preset:
    """How one task type shares the budget out over the collections.

    ``weights`` maps a collection name (or `CATCH_ALL`) to a
    non-negative weight; a missing name weighs 0 (its pool is still in the
    plan, with no room, so its entries are reported rather than silently
    absent). Only ratios matter; the defaults sum to 100 to read as percent.

    Example:
        ```python
        Preset({"episodic": 40, "semantic": 20, "skills": 20, "anti_patterns": 10, "other": 10},
               why="incidents first")
        ```
    """

    weights: Mapping[str, Union[int, float]]
    why: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.weights, Mapping):
            raise TypeError("Preset weights must be a mapping of collection -> weight")
        for name, weight in self.weights.items():
            if not isinstance(name, str):
                raise TypeError("Preset weight keys must be collection names, got %r" % (name,))
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight != weight:
                raise TypeError("Preset weight for %r must be a number, got %r" % (name, weight))
            if weight < 0 or weight == float("inf"):
                raise ValueError("Preset weight for %r must be finite and >= 0, got %r" % (name, weight))
        object.__setattr__(self, "weights", MappingProxyType(dict(self.weights)))

    def weight(self, name: str) -> Union[int, float]:
        return self.weights.get(name, 0)

    def unnamed_weight(self, collections: Sequence[str]) -> Fraction:
        """The weight of an entry type no collection names, in a plan that
        knows the store's types: the mean of ``collections``' weights. The
        preset says nothing about such a type, so it weighs like an average
        collection (22.5 of 100 for every default preset), never the
        catch-all's small constant, which only insures against types a plan
        cannot see."""
        if not collections:
            return Fraction(1)
        return sum((Fraction(self.weight(name)) for name in collections), Fraction(0)) / len(collections)


# One table: task type -> collection weights. Read a row as "of the budget
# left after the always tier, this task gives X% to ...". The columns are the
# collections in COLLECTIONS order, then the catch-all, which gets a small
# constant share: types a host adds must never starve.
_PRESET_COLUMNS: Tuple[str, ...] = (*COLLECTIONS, CATCH_ALL)
# fmt: off
_PRESET_WEIGHTS: Mapping[str, Tuple[int, ...]] = {
    #                  episodic  semantic  skills  anti_patterns  other
    "exploration":    (25,       45,       10,     10,            10),
    "implementation": (15,       35,       30,     10,            10),
    "debugging":      (35,       15,       20,     20,            10),
    "review":         (15,       30,       10,     35,            10),
    "refactoring":    (15,       25,       30,     20,            10),
}
# fmt: on
# Why each row weighs what it does.
_PRESET_WHY: Mapping[str, str] = {
    "exploration": "Understanding comes first: facts and notes about the system (semantic) carry most of it, and "
    "past episodes say what was already tried; procedures and failure lessons matter little before any change.",
    "implementation": "Building needs the facts and open tasks it must respect (semantic) and the proven "
    "procedures for doing it (skills); episodes and known failures are a check, not the main input.",
    "debugging": "A bug is most often a repeat: past incidents and how they were resolved (episodic) and what "
    "failed before (anti-patterns) lead, debugging techniques (skills) next; general facts matter least.",
    "review": "Reviewing checks a change against what went wrong before (anti-patterns) and against the "
    "conventions and preferences on record (semantic); episodes and procedures support it.",
    "refactoring": "Restructuring safely relies on proven procedures (skills) and on what broke the last time "
    "code was moved (anti-patterns); the system's structure (semantic) next, episodes least.",
}
DEFAULT_PRESETS: Mapping[str, Preset] = MappingProxyType(
    {task: Preset(dict(zip(_PRESET_COLUMNS, row)), why=_PRESET_WHY[task]) for task, row in _PRESET_WEIGHTS.items()}
)


def share_out(total: int, weights: Sequence[Union[int, float, Fraction]]) -> List[int]:
    """Split ``total`` into integers proportional to ``weights`` that add up
    to exactly ``total`` (largest remainder: each share is its exact quota
    rounded down, and the units left over go to the largest fractional parts,
    earlier positions first on a tie).

    Exact arithmetic (fractions), so the result never depends on float
    rounding. All weights 0 raises ``ValueError``.

    Example:
        ```python
        share_out(10, [1, 1, 1])  # [4, 3, 3]
        ```
    """
    exact = [Fraction(w) for w in weights]
    whole = sum(exact, Fraction(0))
    if whole <= 0:
        raise ValueError("cannot share a budget out over weights that are all 0")
    quotas = [Fraction(total) * w / whole for w in exact]
    shares = [int(q) for q in quotas]  # floor: quotas are >= 0
    left = total - sum(shares)
    by_remainder = sorted(range(len(quotas)), key=lambda i: (-(quotas[i] - shares[i]), i))
    for i in by_remainder[:left]:
        shares[i] += 1
    return shares


def _check_total(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be an int, got %s %r" % (name, type(value).__name__, value))
    if value < 0:
        raise ValueError("%s must be >= 0, got %r" % (name, value))
    if value > MAX_COST:
        # the budgets shared out of it are reported in every selection event and kept in an
        # agent's state: beyond the core's largest cost, a checkpointer cannot store them
        raise ValueError("%s is %d, beyond MAX_COST (%d, the largest budget a report holds)" % (name, value, MAX_COST))
    return value


def planned_pool_names(collections: Iterable[str]) -> List[str]:
    """The names a task plan over ``collections`` gives its pools, besides
    one named after a type no collection names (`plan_for_task`, step 4):
    the corrections, the standing pool, the catch-all, the collections."""
    return [CORRECTIONS_POOL, STANDING_POOL, CATCH_ALL, *collections]


def spill_standing(pools: Sequence[Pool], selection: Selection) -> Optional[List[Pool]]:
    """The plan ``pools`` again with the `STANDING_POOL`'s unused tokens
    given to the pools whose token budget cut entries, or None when there
    is nothing to move.

    A task plan reserves the standing pool's room before it knows how many
    instructions and preferences the user has: at 1,024 tokens that is 640,
    of which a user with five short ones uses some 350. The core fills pools
    independently (a pool's budget is its own, seed 001), so the room is
    moved in the plan, between two fills: after a fill in which the standing
    pool cut nothing for its budget or its cap, its budget becomes what it
    used (the same entries fit again: they did, in the same order) and the
    rest goes to the pools that cut entries for tokens, in proportion to
    their budgets (`share_out`); the adapter fills once more with that plan.
    Only a task plan's (``pools="auto"``) standing pool; an explicit plan's
    budgets are the host's.

    Example:
        ```python
        again = spill_standing(pools, selection)
        selection = select(entries, again) if again is not None else selection
        ```
    """
    names = [pool.name for pool in pools]
    stats = selection.stats.get(STANDING_POOL)
    if STANDING_POOL not in names or stats is None or not isinstance(stats.max_tokens, int):
        return None
    counts = selection.counts
    if counts.get((STANDING_POOL, Reason.TOKEN_BUDGET)) or counts.get((STANDING_POOL, Reason.ENTRY_CAP)):
        return None  # the standing pool wants all its room
    spare = int(stats.max_tokens) - stats.tokens_used
    cut = [
        n
        for n, pool in enumerate(pools)
        if pool.name != STANDING_POOL
        and isinstance(pool.max_tokens, int)
        and pool.max_tokens > 0
        and counts.get((pool.name, Reason.TOKEN_BUDGET))
    ]
    if spare <= 0 or not cut:
        return None
    out = list(pools)
    standing = names.index(STANDING_POOL)
    out[standing] = dataclasses.replace(pools[standing], max_tokens=stats.tokens_used)
    for n, more in zip(cut, share_out(spare, [pools[n].max_tokens for n in cut])):
        out[n] = dataclasses.replace(pools[n], max_tokens=pools[n].max_tokens + more)
    return out


#: The selection note that says where a task plan's standing room went (`spilled_to`).
SPILLED_NOTE = "standing_spilled"


def spilled_to(selection: Selection, planned: Sequence[Pool], filled: Sequence[Pool]) -> Selection:
    """``selection``, filled with ``filled`` (`spill_standing` of
    ``planned``), noting the tokens each pool gained (negative: the
    standing pool's unused room) under `SPILLED_NOTE`, so a report says why
    a pool's budget is not the plan's."""
    before = {pool.name: pool.max_tokens for pool in planned}
    moved = {pool.name: pool.max_tokens - before[pool.name] for pool in filled if pool.max_tokens != before[pool.name]}
    selection.notes[SPILLED_NOTE] = moved
    return selection


def filled_spilling(pools: Sequence[Pool], fill: Callable[[List[Pool]], Selection]) -> Selection:
    """``fill(pools)``, and when a task plan's standing pool left room that
    pools which cut entries can use (`spill_standing`), ``fill`` again with
    that plan, noted (`spilled_to`): the two fills of a task plan, for
    every caller that fills one synchronously (the adapters'
    `AdapterCall.filled`, ``poolsplit select --pools auto``)."""
    selection = fill(list(pools))
    again = spill_standing(pools, selection)
    return selection if again is None else spilled_to(fill(again), pools, again)


def noted_task(selection: Selection, detection: Optional[TaskDetection]) -> Selection:
    """``selection`` with the task its plan was made for in its notes
    (``task_type``, and ``task``: the detection's scores and signals), so a
    report says why the budget was shared as it was; notes a selection
    already has are kept (a nested call's). Every caller of a task plan
    notes it here: the adapters (`AdapterCall.annotate`) and ``poolsplit
    select --pools auto``."""
    if detection is not None and "task_type" not in selection.notes:
        selection.notes["task_type"] = detection.type
        selection.notes["task"] = detection.to_dict()
    return selection


def plan_for_task(
    task_type: str,
    *,
    total_tokens: int,
    total_entries: int,
    presets: Mapping[str, Preset] = DEFAULT_PRESETS,
    collections: Mapping[str, Sequence[str]] = COLLECTIONS,
    entry_types: Optional[Iterable[str]] = None,
) -> List[Pool]:
    """The pool plan of ``task_type``'s preset.

    The plan, in fill order:

    1. ``corrections`` (`CORRECTION_TYPES`) with no contextual room:
       corrections are always-scope and load outside every budget, so room
       reserved for them would sit unused on every call. (A correction that
       is not always-scope is reported as cut by this pool's budget.)
    2. ``standing`` (`STANDING_TYPES`: the user's instructions and
       preferences): `STANDING_SHARE` of ``total_tokens`` (at least
       `STANDING_FLOOR` tokens, at most `STANDING_MOST` of them), and as many
       entries as its tokens over `STANDING_ENTRY_TOKENS` (at least its
       share of ``total_entries``); the rest of both totals is shared out
       below. Given ``entry_types``, only when the store holds one of them.
    3. one pool per collection, named after it, admitting its entry types,
       weighed by the preset. Given ``entry_types`` (the types the store
       holds), only the collections that hold one of them.
    4. Given ``entry_types``: one pool per present type that no collection
       names (sorted; named after the type, or ``type:<name>`` when that
       name is taken), each weighing `Preset.unnamed_weight`.
       Without them: the catch-all ``other`` (``types=None``, the preset's
       ``other`` weight), filled last, so it also takes what the collection
       pools' budgets cut.

    ``total_tokens`` is shared out (the standing pool's, then the rest over
    the plan's weights with `share_out`): the budgets add up exactly to
    it. So does ``total_entries``, except that the standing pool's cap may
    exceed its share (step 2). A
    store whose types all weigh 0 in the preset shares the budget equally
    among them rather than leave it unused.

    Raises:
        ValueError: no preset for ``task_type``; a preset naming an unknown
            collection or weighing everything 0 (types unknown); a
            collection named ``corrections`` or ``other``; a negative total.
        TypeError: a total that is not an int.
    """
    total_tokens = _check_total("total_tokens", total_tokens)
    total_entries = _check_total("total_entries", total_entries)
    if task_type not in presets:
        raise ValueError("no preset for task type %r (presets: %s)" % (task_type, ", ".join(presets)))
    preset = presets[task_type]
    if not isinstance(preset, Preset):
        raise TypeError("presets[%r] must be a Preset, got %s" % (task_type, type(preset).__name__))
    names = list(collections)
    for reserved in (CORRECTIONS_POOL, CATCH_ALL):
        if reserved in names:
            raise ValueError("a collection must not be named %r: the plan uses that pool name" % reserved)
    unknown = sorted(set(preset.weights) - set(names) - {CATCH_ALL})
    if unknown:
        raise ValueError(
            "preset %r weighs unknown collection(s) %s (collections: %s, plus %r)"
            % (task_type, ", ".join(map(repr, unknown)), ", ".join(names), CATCH_ALL)
        )
    members = {n: _strings(collections[n], "collection %r" % n) for n in names}
    parts: List[Tuple[str, Optional[Tuple[str, ...]], Union[int, float, Fraction]]] = []
    present: set[str] = set()
    if entry_types is None:
        parts = [(n, members[n], preset.weight(n)) for n in names] + [(CATCH_ALL, None, preset.weight(CATCH_ALL))]
        if not any(weight for _, _, weight in parts):
            raise ValueError("preset %r gives every pool of this plan weight 0" % task_type)
    else:
        present = set(_strings(list(entry_types), "entry_types"))
        parts = [(n, members[n], preset.weight(n)) for n in names if present & set(members[n])]
        taken = set(planned_pool_names(names))
        named = set(CORRECTION_TYPES).union(STANDING_TYPES, *(set(m) for m in members.values()))
        unnamed = preset.unnamed_weight(names)
        for entry_type in sorted(present - named):
            pool_name = entry_type if entry_type not in taken else "type:%s" % entry_type
            taken.add(pool_name)
            parts.append((pool_name, (entry_type,), unnamed))
        if parts and not any(weight for _, _, weight in parts):
            parts = [(name, types, 1) for name, types, _ in parts]  # nothing weighed: share equally
    plan = [Pool(CORRECTIONS_POOL, 0, 0, CORRECTION_TYPES)]
    standing = entry_types is None or bool(present & set(STANDING_TYPES))
    if standing and STANDING_POOL not in names:
        parts = [p for p in parts if p[0] not in STANDING_TYPES]  # never a pool of their own twice
        if parts:
            room = int(min(total_tokens * STANDING_MOST, max(total_tokens * STANDING_SHARE, Fraction(STANDING_FLOOR))))
            share = int(total_entries * STANDING_SHARE)
            plan.append(Pool(STANDING_POOL, room, max(share, room // STANDING_ENTRY_TOKENS), STANDING_TYPES))
            total_tokens, total_entries = total_tokens - room, total_entries - share
        else:  # the store holds nothing else contextual: the whole budget is theirs
            cap = max(total_entries, total_tokens // STANDING_ENTRY_TOKENS)
            plan.append(Pool(STANDING_POOL, total_tokens, cap, STANDING_TYPES))
            return plan
    if not parts:  # the store holds corrections only: nothing contextual to share out
        return plan
    tokens = share_out(total_tokens, [weight for _, _, weight in parts])
    entries = share_out(total_entries, [weight for _, _, weight in parts])
    for i, (name, types, _) in enumerate(parts):
        plan.append(Pool(name, tokens[i], entries[i], types))
    return plan


def task_pools(
    context: Optional[Mapping[str, Any]],
    *,
    total_tokens: int,
    total_entries: int,
    presets: Mapping[str, Preset] = DEFAULT_PRESETS,
    signals: Mapping[str, Signals] = DEFAULT_SIGNALS,
    collections: Mapping[str, Sequence[str]] = COLLECTIONS,
    entry_types: Optional[Iterable[str]] = None,
) -> List[Pool]:
    """The pool plan for the task ``context`` describes: [`detect_task_type`][]
    then `plan_for_task`.

    Example:
        ```python
        pools = task_pools({"phase": "debugging"}, total_tokens=600, total_entries=12)
        [(p.name, p.max_tokens, p.max_entries) for p in pools]
        # [('corrections', 0, 0), ('episodic', 210, 4), ('semantic', 90, 2),
        #  ('skills', 120, 3), ('anti_patterns', 120, 2), ('other', 60, 1)]
        ```
    """
    return _detect_and_plan(context, total_tokens, total_entries, presets, signals, collections, entry_types)[0]


def _detect_and_plan(
    context: Optional[Mapping[str, Any]],
    total_tokens: int,
    total_entries: int,
    presets: Mapping[str, Preset],
    signals: Mapping[str, Signals],
    collections: Mapping[str, Sequence[str]],
    entry_types: Optional[Iterable[str]],
) -> Tuple[List[Pool], TaskDetection]:
    # What "auto" means, in one place: detect the task, then plan its preset.
    found = detect_task_type(context, signals=signals)
    plan = plan_for_task(
        found.type,
        total_tokens=total_tokens,
        total_entries=total_entries,
        presets=presets,
        collections=collections,
        entry_types=entry_types,
    )
    return plan, found


def resolve_pools(
    pools_or_auto: Union[str, Sequence[Pool]],
    context: Optional[Mapping[str, Any]],
    *,
    total_tokens: Optional[int] = None,
    total_entries: Optional[int] = None,
    entry_types: Optional[Iterable[str]] = None,
    presets: Mapping[str, Preset] = DEFAULT_PRESETS,
    signals: Mapping[str, Signals] = DEFAULT_SIGNALS,
    collections: Optional[Mapping[str, Sequence[str]]] = None,
) -> Tuple[List[Pool], Optional[TaskDetection]]:
    """The one call an adapter makes for its ``pools`` setting.

    ``pools="auto"`` detects the task type from ``context`` and returns its
    plan (`plan_for_task`, over ``entry_types`` when the adapter knows
    them, and `COLLECTIONS` with the host's ``collections`` merged
    over it: name only the collections you change) with the detection, which the adapter puts in its selection report. Explicit
    pools come back as a list, with detection None.

    Example:
        ```python
        pools, found = resolve_pools("auto", {"message": "why does the import crash"},
                                     total_tokens=800, total_entries=16)
        found.type  # "debugging" (the message stands in for the missing goal)
        ```

    ``total_entries`` None: as many entries as ``total_tokens`` allows (the
    tokens bind).

    Raises:
        ValueError: ``"auto"`` without ``total_tokens``, totals (or
            ``entry_types``, ``collections``) with explicit pools (they would
            be silently ignored), or another string.
    """
    if isinstance(pools_or_auto, str):
        if pools_or_auto != AUTO:
            raise ValueError("pools must be a sequence of Pool objects or %r, got %r" % (AUTO, pools_or_auto))
        if total_tokens is None:
            raise ValueError(
                "pools='auto' needs total_tokens, the token budget it shares out (total_tokens= to a retriever, a "
                "compressor or the LlamaIndex blocks; recall=RecallConfig(total_tokens=...) to the agent middleware "
                "and the search tool)"
            )
        if total_entries is None:
            total_entries = total_tokens  # as many entries as the tokens allow: an entry costs one at least
        chosen = COLLECTIONS if collections is None else {**COLLECTIONS, **collections}
        return _detect_and_plan(context, total_tokens, total_entries, presets, signals, chosen, entry_types)
    if total_tokens is not None or total_entries is not None:
        raise ValueError("total_tokens/total_entries apply only to pools='auto'; explicit pools carry their budgets")
    if entry_types is not None or collections is not None:
        raise ValueError("entry_types/collections apply only to pools='auto'; explicit pools name their types")
    if isinstance(pools_or_auto, Pool):
        raise TypeError("pools must be a sequence of Pool objects, not a single Pool (wrap it in a list)")
    return list(pools_or_auto), None
