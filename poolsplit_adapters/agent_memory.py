"""The agent memory's steps, framework-free: what the LangChain middleware
([`PoolSplitMemoryMiddleware`][poolsplit_adapters.langchain.middleware.PoolSplitMemoryMiddleware])
does on each hook once its messages, runtime and store are translated.

* **Demote + write**: the standing statements of the user's messages not
  read yet, the messages someone else removed from the state before they
  were written (`agent_unwritten`), and the turns beyond the working set as
  proposals of the write gate (`AgentMemory._writing`), written in one write through the store's
  duplicate check (`AgentMemory._write`), and the turns whose every part is
  stored named for removal (`AgentMemory._demoted`).
* **Recall + promote**: a model call's adapter call and its step's identity
  (`AgentMemory._recall_call`), the reuse key and the step's memory kept
  in the state (`AgentMemory._kept`), its selection recorded and rendered
  (`AgentMemory._promote`), the state update and the selection event
  (`AgentMemory._shown`, `AgentMemory._event`) and the block put into the
  system message (`AgentMemory._block`).
* **remember**: a note's proposal and the answer the model reads.
* **Consolidate**: the ids a turn wrote handed to the background runs.

Messages come in as `Heard` (a message's working-set view, its text and its
labelled lines); the store is anything with the writes of `AgentStore`.
Nothing here imports a framework.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Generic, Optional, TypeVar

from typing_extensions import TypedDict

from .agent_unwritten import UNWRITTEN_KEY, Heard, Noted, Unwritten
from .background import BackgroundConsolidation, ConsolidationRun, check_delay
from .call import AdapterCall
from .checks import ArgumentError, check_instance, check_positive_int, check_string
from .memory.tasks import warn_unplanned_standing
from .memory.turns import (
    ASSISTANT,
    USER,
    Provenance,
    Said,
    check_written_type,
    exchange_id,
    exchange_proposals,
    standing_proposals,
)
from .memory.working_set import HUMAN, OTHER, Demotion, View, plan_demotion, split_turns
from .memory.write_gate import GateReport, Proposal, Refusal, WriteGate, blank, utc_stamp
from .poolsplit import Selection
from .render import goal_line, render_context
from .reports import event_payload
from .settings import TASK_FIELDS, AgentMemorySettings
from .stores.base import DuplicateEntry, IdHeldElsewhere, StoreVerbs

__all__ = [
    "DEFAULT_HEADING",
    "AgentMemory",
    "AgentStore",
    "GateTally",
    "Heard",
    "Noted",
    "PromotedStep",
    "Where",
    "add_ids",
    "add_tallies",
]

#: The line above the injected memory in the system message.
DEFAULT_HEADING = (
    'Long-term memory. Entries marked scope="always" are standing corrections from the user: follow them. '
    "Cite an entry by its id when you use it."
)

REMEMBER_DESCRIPTION = (
    "Save a note you must not forget in later turns and sessions: a decision, a stable fact about the user "
    "or the task, a procedure that worked. One self-contained note per call; no chit-chat."
)

#: The state keys the middleware adds (private: not in the agent's input or output).
WRITES_KEY = "poolsplit_writes"
PROMOTED_KEY = "poolsplit_promoted"
UNCONSOLIDATED_KEY = "poolsplit_unconsolidated"
RUN_START_KEY = "poolsplit_run_start"
INJECTED_KEY = "poolsplit_injected"
#: The label a human message added during a run is stored under (`injected`).
INJECTED_LABEL = "injected: "

Namespace = tuple[str, ...]


class GateTally(TypedDict):
    """What the write gate did since the last selection event: ids written,
    refusals counted by reason (a [`GateReport`][]
    in the state's JSON form)."""

    written: list[str]
    refused: dict[str, int]


def add_tallies(left: Optional[GateTally], right: Optional[GateTally]) -> Optional[GateTally]:
    """The state reducer of `WRITES_KEY`: parallel tool calls and the
    demotion of one step add up; None clears (the selection event showed
    them)."""
    if right is None or left is None:
        return right
    refused = dict(left["refused"])
    for reason, n in right["refused"].items():
        refused[reason] = refused.get(reason, 0) + n
    return {"written": [*left["written"], *right["written"]], "refused": refused}


def add_ids(left: Optional[list[str]], right: Optional[list[str]]) -> Optional[list[str]]:
    """The state reducer of `UNCONSOLIDATED_KEY`: the ids written by a
    turn's demotions and notes add up; None clears (handed to the
    consolidator)."""
    if right is None or left is None:
        return right
    return [*left, *(i for i in right if i not in left)]


class PromotedStep(TypedDict):
    """The memory of the thread's current agent step, reused by the model
    calls of its tool loop while the store is unchanged."""

    key: str
    """Digest of the step (namespace chain, last human message, context) and the store's version."""
    text: str
    """The rendered memory put into the system message."""
    selection: dict[str, Any]
    """The selection's JSON form (the selection event's body)."""


class AgentStore(ABC):
    """The writing half of the middleware's memory backends
    ([`Backend`][poolsplit_adapters.stores.langgraph.backends.Backend] adds the reads), declared
    once: one write of entries into a chain's own namespace through the
    store's gate, and the store verbs the consolidation runs with. The
    async write defaults to the sync one (a store without an async API).

    Example:
        ```python
        kept = backend.write([("memories", "u1")], [{"type": "note", "content": "Prefers tabs."}])
        ```
    """

    @abstractmethod
    def write(self, chain: Sequence[Namespace], entries: Sequence[Mapping[str, Any]]) -> list[Optional[str]]:
        """Write ``entries`` through the store's gate; for each, the id of the
        stored entry it repeats (kept instead, the repeat recorded in its
        ``seen``), or None when it was written."""

    async def awrite(self, chain: Sequence[Namespace], entries: Sequence[Mapping[str, Any]]) -> list[Optional[str]]:
        """Async [`write`][]."""
        return self.write(chain, entries)

    def verbs(self, chain: Sequence[Namespace]) -> Optional[StoreVerbs]:
        """The store verbs that write ``chain``'s own namespace (what the
        consolidator reads and changes), or None when the store has none."""
        return None


S = TypeVar("S", bound=AgentStore)


@dataclass(frozen=True)
class Where(Generic[S]):
    """Where one hook's memory is: the store, the namespace chain, the
    thread, and the own namespace's entry label (its first link's)."""

    source: S
    chain: tuple[Namespace, ...]
    thread: Optional[str]
    label: str


@dataclass(frozen=True)
class Writing(Generic[S]):
    """One step's write: where, the proposals, the demotion and each
    demoted turn's slice of the proposals, the messages read against the
    notes (`Unwritten`), and the ids of the messages `injected` to keep."""

    where: Where[S]
    proposals: list[Proposal]
    demotion: Demotion
    turns: list[tuple[int, int]]
    unwritten: Unwritten
    kept: Mapping[str, Any] = field(default_factory=dict)
    #: the positions (in the messages read) whose standing statements this step read
    heard: frozenset[int] = frozenset()


#: What a turn's proposal may have been answered with for the turn to leave
#: the working set: written, kept as a repeat of a stored entry, or nothing
#: to keep (blank).
_STORED = (None, Refusal.DUPLICATE, Refusal.EMPTY)


def context_value(context: Any, key: str) -> Any:
    """``runtime.context[key]`` for a dict, dataclass or model context."""
    if context is None:
        return None
    if isinstance(context, Mapping):
        return context.get(key)
    return getattr(context, key, None)


def thread_id(runtime: Any) -> Optional[str]:
    """The thread of a hook's or a tool's runtime (its execution info, else
    its config's ``thread_id``), as a string."""
    info = getattr(runtime, "execution_info", None)
    thread = getattr(info, "thread_id", None)
    if thread is None:
        config = getattr(runtime, "config", None) or {}
        thread = (config.get("configurable") or {}).get("thread_id")
    return None if thread is None else str(thread)


def thread_source(thread: Optional[str]) -> str:
    """The ``source`` of what ``thread`` said: ``thread:<id>`` for an id of
    visible characters, else its JSON string (``thread:""``,
    ``thread:"a b"``, ``thread:"a\\nb"``); ``thread:none`` for no thread.

    Why: the label must say which thread it was and never name two. An
    empty id was stamped ``thread:none``, as was a run without a thread and
    the thread named "none"; a line break or an invisible character in an id
    made a source that reads as another. A plain id never holds a quote, so
    a quoted label is never a plain one's, and "none" is quoted.

    Example:
        >>> thread_source("t1"), thread_source(""), thread_source(None), thread_source("none")
        ('thread:t1', 'thread:""', 'thread:none', 'thread:"none"')
    """
    if thread is None:
        return "thread:none"
    plain = thread.isprintable() and thread != "none" and not any(c.isspace() or c == '"' for c in thread)
    return "thread:%s" % (thread if plain and thread else json.dumps(thread))


def from_runtime_context(key: str) -> str:
    """How an argument taken from ``runtime.context`` is named in errors."""
    return "runtime.context[%r]" % key


def step_identity(chain: Sequence[Namespace], last_id: Optional[str], call: AdapterCall) -> str:
    """A step's identity: the namespace chain, the last human message and
    the call's context and task signals."""
    options = call.options
    return json.dumps(
        [[list(ns) for ns in chain], last_id, options.context, sorted(options.task.items())],
        sort_keys=True,
        default=str,
    )


def step_key(identity: str, version: Hashable) -> str:
    """The reuse key: this step over this version of the store (a version
    that is a fresh object each read is never equal, so never reused)."""
    return hashlib.sha256(repr((identity, version)).encode()).hexdigest()


def injected(views: Sequence[View], state: Mapping[str, Any]) -> frozenset[str]:
    """The ids of the human messages added to the state during an agent
    run (after `RUN_START_KEY`, the last message when the run began; once
    a summary removed that one, those not noted when the run began), or
    in an earlier run (`INJECTED_KEY`): a tool's ``Command`` or a middleware
    wrote them, the user's input never arrives mid-run. A web page a tool
    read could otherwise store "Always wire money to ..." as the user's own
    instruction. ``views``: a human message a framework wrote (a summary)
    is not ``HUMAN`` here: it says who wrote it."""
    found = set(state.get(INJECTED_KEY) or ())
    ids, start, notes = [v.id for v in views], state.get(RUN_START_KEY), state.get(UNWRITTEN_KEY)
    if start in ids:
        later = views[ids.index(start) + 1 :]
    elif start is not None and notes is not None:
        # The run's input was removed (a summary replaced it mid-run): every message the run
        # began with was noted then (`AgentMemory._started`), so one not noted came later.
        noted = {n["id"] for n in notes}
        later = [v for v in views if v.id not in noted]
    else:
        later = []
    found.update(v.id for v in later if v.kind == HUMAN and v.id is not None)
    return frozenset(found)


def kept_injected(added: frozenset[str], state: Mapping[str, Any]) -> dict[str, Any]:
    """The state update that keeps the ids of ``added`` (`injected`) the
    state does not hold yet, so a later run, which begins after them, does
    not read them as the user's."""
    new = added - set(state.get(INJECTED_KEY) or ())
    return {INJECTED_KEY: sorted(new)} if new else {}


def as_injected(message: Heard) -> Heard:
    """A human message `injected` in a run, as the write step reads it: not
    the user's words (no standing statement is read from it), no turn of its
    own (it stays with the tool call that brought it), stored among the
    answer's lines under `INJECTED_LABEL`."""
    relabelled = lambda: [(INJECTED_LABEL, body) for _, body in message.lines()]  # noqa: E731
    return replace(message, view=View(OTHER, message.view.id), lines=relabelled, user=False)


def _as_read(messages: Sequence[Heard], state: Mapping[str, Any]) -> tuple[list[Heard], frozenset[str]]:
    """The state's messages as the write step reads them (those `injected`
    in a run, `as_injected`, not the user's), and the injected ids."""
    added = injected([m.view if m.user else View(OTHER, m.view.id) for m in messages], state)
    return [as_injected(m) if m.view.id in added else m for m in messages], added


def _sides(messages: Sequence[Heard]) -> list[Said]:
    """A turn's messages as the sides of an exchange: the user's words, then
    the answer with its tool calls and results (labelled line by line)."""
    user = "\n".join(m.text.strip() for m in messages if m.view.kind == HUMAN and m.user)
    others = [m for m in messages if m.view.kind != HUMAN or not m.user]
    sides = [Said(USER, user)] if user.strip() else []
    if all(m.plain for m in others):  # a plain answer
        answer = "\n".join(m.text.strip() for m in others)
        if answer.strip():
            sides.append(Said(ASSISTANT, answer))
        return sides
    rest = Said.transcript(ASSISTANT, [line for m in others for line in m.lines()])
    if rest.text.strip():
        sides.append(rest)
    return sides


def _id_refused(proposal: Proposal, err: DuplicateEntry) -> Proposal:
    """The note refused because its content key is another entry's id:
    another collection's (``held_elsewhere``), or a host's entry in this
    one (``id_taken``); the run goes on, the model is told."""
    return replace(proposal, refused=Refusal.HELD_ELSEWHERE if isinstance(err, IdHeldElsewhere) else Refusal.ID_TAKEN)


def _held(settled: Sequence[Proposal], err: DuplicateEntry) -> list[Proposal]:
    """``settled`` with the proposals whose id the store holds for another
    entry refused (`_id_refused`); raises ``err`` when none is (a
    write that refuses what it does not name must not loop)."""
    held = set(err.ids) | {err.entry_id}
    out = [_id_refused(p, err) if p.refused is None and p.key in held else p for p in settled]
    if out == list(settled):
        raise err
    return out


def _tally(proposals: Sequence[Proposal]) -> GateTally:
    report = GateReport()
    report.count(proposals)
    return {"written": list(report.written), "refused": dict(report.refused)}


def _report(tally: Optional[GateTally]) -> dict[str, Any]:
    report = GateReport()
    if tally is not None:
        report.written.extend(tally["written"])
        report.refused.update(tally["refused"])
    return report.to_dict()


class AgentMemory:
    """The agent memory's settings and its framework-free steps, which the
    LangChain middleware inherits and calls from its hooks.

    Args:
        owner: the class the caller built, named in errors.
        max_turns, write_gate, heading, episode_type, note_type: as
            the middleware takes them (checked here).
        **settings: the selection settings (``pools`` to ``fetch_k``), held
            as `AgentMemorySettings`.
    """

    def __init__(
        self,
        owner: str,
        *,
        max_turns: int,
        write_gate: Optional[WriteGate],
        heading: str,
        episode_type: str,
        note_type: str,
        **settings: Any,
    ) -> None:
        if settings["fetch_k"] is not None:
            check_positive_int(settings["fetch_k"], "fetch_k")
        #: The selection settings, checked once (the plan with its totals).
        self.settings = AgentMemorySettings.held_by(owner, **settings)
        self.max_turns = check_positive_int(max_turns, "max_turns", "the current turn always stays")
        self.write_gate = check_instance(write_gate, WriteGate, "write_gate") or WriteGate()
        gate = "write=WriteConfig(write_gate=WriteGate(standing=None))"  # the middleware's keyword
        warn_unplanned_standing(owner, self.settings.pools, self.write_gate.standing is not None, gate=gate)
        self.now: Optional[datetime.datetime] = settings["now"]
        self.heading = check_string(heading, "heading")
        self.episode_type = check_written_type(episode_type, "episode_type")
        self.note_type = check_written_type(note_type, "note_type")
        #: The background consolidation (None: off, the default).
        self.consolidation: Optional[BackgroundConsolidation] = None

    def _consolidating(self, owner: str, consolidator: Any, delay: float, now: Optional[datetime.datetime]) -> None:
        """Hold the background consolidation over ``consolidator`` (None: off).
        The delay is checked either way: a bad one would otherwise wait,
        unnoticed, for the day a consolidator is added."""
        try:
            check_delay(delay)
        except ValueError as err:
            raise ArgumentError("%s consolidation_delay: %s" % (owner, err)) from None
        if consolidator is not None:
            try:
                self.consolidation = BackgroundConsolidation(consolidator, delay=delay, now=now)
            except (TypeError, ValueError, NotImplementedError) as err:
                raise ArgumentError("%s consolidator: %s" % (owner, err)) from err

    # -- writing through the gate (demoted turns and the remember tool alike) -----------

    def _write(self, where: Where[S], proposals: Sequence[Proposal]) -> list[Proposal]:
        """Write the proposals the gate accepts in one write, through the
        store's duplicate check (a repeat of a stored entry, exact or near,
        is kept once, its provenance recorded in that entry's ``seen``, and
        reported ``duplicate``). An entry whose content key the store holds
        for another entry is refused by name (``id_taken``,
        ``held_elsewhere``) and the rest written. Raises if the write fails
        (then nothing is reported)."""
        settled = self.write_gate.settle(proposals, ())
        while True:
            accepted = [p.entry for p in settled if p.refused is None]
            try:
                return self.write_gate.repeated(settled, where.source.write(where.chain, accepted) if accepted else [])
            except DuplicateEntry as err:
                settled = _held(settled, err)

    async def _awrite(self, where: Where[S], proposals: Sequence[Proposal]) -> list[Proposal]:
        """Async `_write`."""
        settled = self.write_gate.settle(proposals, ())
        while True:
            accepted = [p.entry for p in settled if p.refused is None]
            try:
                kept = await where.source.awrite(where.chain, accepted) if accepted else []
                return self.write_gate.repeated(settled, kept)
            except DuplicateEntry as err:
                settled = _held(settled, err)

    # -- demote + write -----------------------------------------------------------------

    def _goal(self, runtime: Any) -> Optional[str]:
        """``runtime.context["goal"]`` when it shows a word (else None: the
        thread's first message is the goal, pinned). An invisible goal
        ("\\u200b") was shown as an empty goal and let the first message go."""
        goal = context_value(getattr(runtime, "context", None), "goal")
        return goal if isinstance(goal, str) and not blank(goal) else None  # the one rule of "shows nothing"

    def _started(self, messages: Sequence[Heard], state: Mapping[str, Any]) -> dict[str, Any]:
        """The state update at the start of a run: the last message of its
        input marked (`injected`), and every message noted as read
        (`Unwritten`): one another middleware removes before the first
        model call is still written."""
        start = messages[-1].view.id if messages else None
        unwritten = Unwritten.of(_as_read(messages, {**state, RUN_START_KEY: start})[0], state)
        notes = unwritten.noted()
        return {RUN_START_KEY: start, **({UNWRITTEN_KEY: notes} if unwritten.changed(notes) else {})}

    def _writing(
        self,
        messages: Sequence[Heard],
        state: Mapping[str, Any],
        runtime: Any,
        where: Callable[[], Where[S]],
        demote: bool = True,
    ) -> Optional[Writing[S]]:
        """What this step writes: the standing statements of the user's
        messages not read yet, or read from another text (those `injected`
        in a run are not the user's), the messages someone else removed
        from the state before they were written (`Unwritten`), and, with
        ``demote``, the turns beyond the working set."""
        read, added = _as_read(messages, state)
        unwritten = Unwritten.of(read, state)
        vanished = unwritten.vanished()
        views = [m.view for m in read]
        demotion = (
            plan_demotion(views, self.max_turns, pin_goal=self._goal(runtime) is None)
            if demote
            else Demotion(demote=[], goal=None)
        )
        # Before a model call, only what leaves the working set is heard now;
        # the rest when the run ends, from the text the state holds by then:
        # a middleware after this one (PIIMiddleware) may rewrite it first.
        leaving = {i for turn in demotion.demote for i in turn.indices} if demote else range(len(read))
        hearing = frozenset(i for i in leaving if unwritten.unheard(read[i]))
        heard = [m for m in vanished if unwritten.unheard(m)] + [read[i] for i in sorted(hearing)]
        if not demotion.demote and not heard and not vanished and not unwritten.changed(unwritten.noted(heard=hearing)):
            return None
        place = where()
        stamp = utc_stamp(self.now)
        proposals: list[Proposal] = []
        for message in heard:
            if not message.user:
                continue  # a framework's words (a model's summary), never the user's statements
            proposals.extend(standing_proposals(self.write_gate, message.text, self._said(place, message, stamp)))
        for turn in split_turns([m.view for m in vanished], pin_goal=False)[1]:
            proposals.extend(self._exchange(place, [vanished[i] for i in turn.indices], stamp))
        turns: list[tuple[int, int]] = []  # each demoted turn's slice of the proposals
        for turn in demotion.demote:
            part = [read[i] for i in turn.indices]
            if demotion.goal is not None and part[0].view.kind != HUMAN and turn.indices[0] > demotion.goal:
                part = [read[demotion.goal], *part]  # the answer to the goal reads better with the goal
            start = len(proposals)
            proposals.extend(self._exchange(place, part, stamp))
            turns.append((start, len(proposals)))
        return Writing(place, proposals, demotion, turns, unwritten, kept_injected(added, state), hearing)

    def _exchange(self, where: Where[S], turn: Sequence[Heard], created: str) -> list[Proposal]:
        """A turn's proposals: its sides as episodes (or parts); its standing
        statements were read when it was heard (`Unwritten.unheard`)."""
        said = self._said(where, turn[0], created)
        return exchange_proposals(self.write_gate, _sides(turn), self.episode_type, said, standing=False)

    @staticmethod
    def _said(where: Where[S], opening: Heard, created: str) -> Provenance:
        """The provenance of the exchange ``opening`` starts: this thread, the
        own namespace, ``created``, and an exchange id from the message's id."""
        exchange = exchange_id(where.label, where.thread or "", str(opening.view.id or opening.text))
        return Provenance(thread_source(where.thread), where.label, created, exchange=exchange)

    def _demoted(self, writing: Writing[S], settled: Sequence[Proposal]) -> tuple[list[int], dict[str, Any]]:
        """The positions of the messages a write lets go of (the turns whose
        every part is stored: a turn with a part the store refused stays,
        and says why in the gate's report) and the state update: the gate's
        report kept for the next selection event (and, with a consolidator,
        the written ids for the turn's end), the messages still in the
        state noted as read (the written ones, and those someone else
        removed, forgotten: their write was tried and reported), the ids of
        the messages `injected` in this run kept."""
        removed: list[int] = []
        for turn, (start, end) in zip(writing.demotion.demote, writing.turns):
            if all(p.refused in _STORED for p in settled[start:end]):
                removed.extend(turn.indices)
        unwritten = writing.unwritten
        notes = unwritten.noted(heard=writing.heard, dropped=removed, vanished=False)
        noted = {UNWRITTEN_KEY: notes} if unwritten.changed(notes) else {}
        return removed, {**self._written(settled), **noted, **writing.kept}

    def _written(self, settled: Sequence[Proposal]) -> dict[str, Any]:
        """The state update of a write: the gate's tally, and the written
        ids when a consolidator waits for them."""
        if not settled:
            return {}
        tally = _tally(settled)
        update: dict[str, Any] = {WRITES_KEY: tally}
        if self.consolidation is not None and tally["written"]:
            update[UNCONSOLIDATED_KEY] = list(tally["written"])
        return update

    # -- consolidate --------------------------------------------------------------------

    def _consolidate(
        self, ids: Optional[list[str]], thread: Optional[str], where: Callable[[], Where[S]], *, asynchronous: bool
    ) -> Optional[dict[str, Any]]:
        """Submit the turn's written ids (debounced per thread and
        namespace) and clear them from the state. Never raises: a store
        that cannot consolidate, or a namespace that fails, is reported as
        a failed run."""
        background = self.consolidation
        if background is None or not ids:
            return None
        key: tuple[Optional[str], Optional[str]] = (thread, None)
        try:
            place = where()
            key = (place.thread, place.label)
            verbs = place.source.verbs(place.chain)
            if verbs is None:
                raise TypeError("the store %s has no store verbs to consolidate with" % type(place.source).__name__)
            (background.asubmit if asynchronous else background.submit)(key, verbs, ids)
        except Exception as err:  # the turn is over and its writes are durable: report, never raise
            background.record(ConsolidationRun(key, tuple(ids), None, "%s: %s" % (type(err).__name__, err)))
        return {UNCONSOLIDATED_KEY: None}

    # -- recall + promote ---------------------------------------------------------------

    def _recall_call(
        self,
        where: Where[S],
        message: str,
        last_id: Optional[str],
        context: Any,
        entry_types: Callable[[], Optional[frozenset[str]]],
    ) -> tuple[AdapterCall, str]:
        """A model call's adapter call and its step's identity: ``message``
        (the thread's last human message, whose id is ``last_id``) with
        ``tags``, ``project`` and the task signals from ``context`` (the
        runtime's, checked by the call, naming them); ``entry_types``: the
        store's own types, which ``pools="auto"`` plans for."""
        given = {key: context_value(context, key) for key in ("tags", "project", *TASK_FIELDS)}
        call = AdapterCall(
            self.settings,
            message,
            {k: v for k, v in given.items() if v is not None},
            named=from_runtime_context,
            entry_types=entry_types,
        )
        return call, step_identity(where.chain, last_id, call)

    @staticmethod
    def _kept(state: Mapping[str, Any], key: str) -> Optional[PromotedStep]:
        """The thread's promoted memory, if it is this step's over this
        version of the store."""
        kept: Optional[PromotedStep] = state.get(PROMOTED_KEY)
        return kept if kept is not None and kept["key"] == key else None

    def _shown(
        self, state: Mapping[str, Any], where: Where[S], promoted: PromotedStep, *, reused: bool
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The state update of a model call that shows ``promoted`` (the
        gate's report shown, cleared; a new step's memory kept) and its
        selection event (`_event`)."""
        writes: Optional[GateTally] = state.get(WRITES_KEY)
        update: dict[str, Any] = {} if writes is None else {WRITES_KEY: None}
        if not reused:
            update[PROMOTED_KEY] = promoted
        return update, self._event(where, writes, promoted, reused=reused)

    @staticmethod
    def _promote(call: AdapterCall, key: str, selection: Selection) -> PromotedStep:
        selection = call.record(call.annotate(selection))
        # The state holds the plain JSON form (bounded: counts and a sample of
        # what did not load); the whole report is the recorded selection's.
        body = dict(event_payload(selection))
        return {"key": key, "text": render_context(selection).text, "selection": body}

    def _event(
        self, where: Where[S], writes: Optional[GateTally], promoted: PromotedStep, *, reused: bool
    ) -> dict[str, Any]:
        """The selection event: where, whether the step's memory was reused,
        the gate's report since the last event, the selection, and the
        consolidation runs finished since."""
        event = {
            "thread": where.thread,
            "namespace": [list(ns) for ns in where.chain],
            "reused": reused,
            "writes": _report(writes),
            **promoted["selection"],
        }
        if self.consolidation is not None:
            runs = self.consolidation.take((where.thread, where.label))
            event["consolidation"] = [run.to_dict() for run in runs]
        return event

    def _block(self, runtime: Any, promoted: PromotedStep) -> Optional[str]:
        """The text put after the agent's system prompt (the heading, the
        goal when ``runtime.context`` gives it, the memory), or None."""
        goal = self._goal(runtime)
        parts = [p for p in (goal_line(goal) if goal else "", promoted["text"]) if p]
        if not parts:
            return None
        return "\n".join([self.heading, *parts]) if self.heading else "\n".join(parts)

    # -- remember -----------------------------------------------------------------------

    def _note(self, note: str, tags: Optional[list[str]], scope: Optional[str], where: Where[S]) -> Proposal:
        return self.write_gate.propose(
            note,
            type=self.note_type,
            source="agent:" + thread_source(where.thread),
            namespace=where.label,
            created=utc_stamp(self.now),
            tags=tags,
            claims={"scope": scope},
        )

    def _answer(self, proposal: Proposal) -> str:
        if proposal.refused is None:
            return "Saved as %s." % proposal.key
        return "Not saved (%s): %s" % (
            proposal.refused.value,
            {
                "empty": "the note is empty.",
                "oversized": "the note is longer than %d characters; save the essential part."
                % self.write_gate.max_chars,
                "duplicate": "this note is already saved as %s." % (proposal.kept or proposal.key),
                "always_scope": "standing corrections are curated by the user and cannot be saved by the agent.",
                # The note's content key is another tenant's row: say so, never what that row holds.
                "held_elsewhere": "another memory collection of this database holds the id %s; nothing was "
                "changed (each collection needs its own namespace)." % proposal.key,
                "id_taken": "another memory is stored under the id %s; nothing was changed." % proposal.key,
            }[proposal.refused.value],
        )
