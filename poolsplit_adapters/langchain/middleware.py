"""PoolSplitMemoryMiddleware: long-term memory for ``create_agent``, with the
recall -> promote -> reason -> demote -> write loop of seed 002.

Per agent step (one model call and the tool-loop calls that follow it):

* **Demote + write** (``before_model``): the working set keeps the goal, the
  last ``max_turns`` turns and every open loop; older turns are written to
  long-term memory as ``episode`` entries through the write gate and only
  then removed from the state (``RemoveMessage``). A failed write keeps the
  turn and raises: forgetting must be recallable, never amnesia.
* **Recall + promote** (``wrap_model_call``): corrections by filter and each
  pool's own candidates are read from the store, selected by the core
  (corrections first, then each pool within its budget), rendered with
  provenance markers and an explicit omission line, and put into this call's
  system message, after the agent's own system prompt. Nothing injected is
  written to the checkpointed state. A digest of the selection goes out on
  ``runtime.stream_writer`` (``stream_mode="custom"``) so a UI can show why.
* **remember** (a tool the middleware registers): the agent saves a note it
  must not forget; the harness stamps its provenance and the gate refuses
  empty, oversized, duplicate and always-scope notes.
* **expand_memory** (registered with ``progressive=True``): the full text of
  an entry the context showed as a summary, read from the same store and
  namespaces as the recall, so the agent can read no more than it may see.

With ``pools="auto"`` each model call plans its pools for the task type
detected from the message and ``runtime.context`` (``goal``,
``action_type``, ``phase``); the selection event records the detection.
"""

from __future__ import annotations

import datetime
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import (
    Any,
    Awaitable,
    Callable,
    Dict,
    Hashable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.tools import ToolRuntime
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

from ..memory.expand import UnknownEntryError
from ..memory.expand_tools import EXPAND_TOOL_DESCRIPTION, EXPAND_TOOL_NAME
from ..memory.progressive import ProgressiveLayers, wants_detail
from ..memory.tasks import AUTO, TaskDetection, resolve_pools
from ..memory.working_set import AI, HUMAN, OTHER, TOOL, Demotion, View, plan_demotion
from ..memory.write_gate import GateReport, Proposal, WriteGate, utc_stamp
from ..poolsplit import Pool, Scorer, Selection, TokenCounter, Visibility, check_pools, default_scorer
from ..render import render_context
from ..settings import (
    TASK_FIELDS,
    annotate,
    check_callable,
    check_flag,
    check_now,
    check_project,
    check_tags,
    check_text,
    embedding_scorer_for,
)
from ..tokens import default_counter
from .backends import Backend, BackendSettings, Plan, backend_for
from .documents import SELECTION_EVENT
from .store import Namespace, check_namespaces, namespace_label

__all__ = ["PoolSplitMemoryMiddleware", "RememberInput", "ExpandInput", "DEFAULT_HEADING"]

NamespaceSpec = Union[Sequence[str], Sequence[Sequence[str]], Callable[[Any], Any]]

#: The line above the injected memory in the system message.
DEFAULT_HEADING = (
    'Long-term memory. Entries marked scope="always" are standing corrections from the user: follow them. '
    "Cite an entry by its id when you use it."
)

REMEMBER_DESCRIPTION = (
    "Save a note you must not forget in later turns and sessions: a decision, a stable fact about the user "
    "or the task, a procedure that worked. One self-contained note per call; no chit-chat."
)


class RememberInput(BaseModel):
    """Arguments of the ``remember`` tool, as the model sees them."""

    note: str = Field(description="The note: one self-contained sentence or short paragraph.")
    tags: Optional[List[str]] = Field(default=None, description="Optional topic tags.")
    scope: Optional[str] = Field(
        default=None,
        description='Leave empty. Standing corrections (scope "always") are curated by the user, not saved here.',
    )


class ExpandInput(BaseModel):
    """Arguments of the ``expand_memory`` tool, as the model sees them."""

    entry_id: str = Field(description='The id attribute of a <memory ... layer="summary"> marker.')


@dataclass(frozen=True)
class _Call:
    """What one hook needs to reach the store."""

    source: Backend
    chain: Tuple[Namespace, ...]
    thread: Optional[str]


@dataclass(frozen=True)
class _Promoted:
    version: Hashable
    selection: Selection
    text: str


def _check_int(name: str, value: Any, why: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("%s must be an int >= 1%s, got %r" % (name, " (%s)" % why if why else "", value))


def _context_value(context: Any, key: str) -> Any:
    """``runtime.context[key]`` for a dict, dataclass or model context."""
    if context is None:
        return None
    if isinstance(context, Mapping):
        return context.get(key)
    return getattr(context, key, None)


def _thread_id(runtime: Any) -> Optional[str]:
    info = getattr(runtime, "execution_info", None)
    thread = getattr(info, "thread_id", None)
    if thread is None:
        config = getattr(runtime, "config", None) or {}
        thread = (config.get("configurable") or {}).get("thread_id")
    return None if thread is None else str(thread)


def _view(message: BaseMessage) -> View:
    if isinstance(message, HumanMessage):
        return View(HUMAN, message.id)
    if isinstance(message, AIMessage):
        return View(AI, message.id, calls=tuple(str(c["id"]) for c in message.tool_calls if c.get("id")))
    if isinstance(message, ToolMessage):
        return View(TOOL, message.id, answers=message.tool_call_id)
    return View(OTHER, message.id)


def _line(message: BaseMessage) -> List[str]:
    text = str(message.text).strip()
    if isinstance(message, HumanMessage):
        return ["user: " + text]
    if isinstance(message, AIMessage):
        lines = ["assistant: " + text] if text else []
        for call in message.tool_calls:
            args = json.dumps(call.get("args") or {}, sort_keys=True, ensure_ascii=False, default=str)
            lines.append("assistant called %s(%s)" % (call.get("name"), args))
        return lines
    if isinstance(message, ToolMessage):
        return ["tool %s: %s" % (message.name or message.tool_call_id, text)]
    return ["%s: %s" % (message.type, text)] if text else []


def _transcript(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(line for m in messages for line in _line(m))


def _with_memory(system: Optional[SystemMessage], block: str) -> SystemMessage:
    """The agent's own system message with ``block`` after it."""
    if system is None:
        return SystemMessage(content=block)
    if isinstance(system.content, str):
        content: Any = system.content + "\n\n" + block if system.content else block
    else:
        content = [*system.content, {"type": "text", "text": "\n\n" + block}]
    return system.model_copy(update={"content": content})


class PoolSplitMemoryMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Pool-split long-term memory for a LangChain 1.x agent.

    Args:
        pools: the pool plan (:class:`~poolsplit_adapters.Pool` list). Pools
            pass through to the core unchanged, so per-pool options (such as a
            relevance floor) apply as they do everywhere.
        namespace: the user's namespace, e.g. ``("memories", "u1")``, or a
            callable ``runtime -> namespace`` (e.g.
            ``lambda rt: ("memories", rt.context["user_id"])``). Exact: child
            namespaces are not this user's. An explicit chain (a list of
            namespaces, own first, e.g. ``[("memories", uid), ("memories",
            "shared")]``) widens reads with ``chain_penalty`` per link; writes
            go to the first. Never widened implicitly.
        store: where long-term memory lives: a LangGraph ``BaseStore``
            (default: ``runtime.store``, the one given to
            ``create_agent(store=...)``), a LangChain ``VectorStore`` (recalled
            per pool by :class:`PoolSplitRetriever`), an object following the
            store contract (e.g. the SQLite store), or a list of entries
            (copied; writes stay in this process).
        max_turns: turns kept verbatim in the state (>= 1; default 12).
        write_gate: the :class:`~poolsplit_adapters.memory.WriteGate` for
            evicted turns and notes (default ``WriteGate()``).
        token_counter: cost of an entry without ``token_count`` (default:
            tiktoken ``o200k_base``, offline; counts are cached per item).
        scorer: ranking function (default: the spec's lexical scorer).
        now: fixed reference time for scoring and for ``created`` stamps
            (default: the time of each call).
        chain_penalty: score factor per chain link after the first (0.9).
        page_size: items per store search page (default 100).
        fetch_k: per-type recall size for indexed stores and vector stores
            (default: every item for a LangGraph store; 20 for a vector store).
        remember: register the ``remember`` tool (default True).
        heading: the line above the injected memory.
        episode_type / note_type: entry types of evicted turns and of notes.
        total_tokens / total_entries: with ``pools="auto"``, the budgets
            each call's task-aware plan shares out
            (:func:`~poolsplit_adapters.memory.tasks.resolve_pools`).
        progressive: progressive loading (summaries first, full text for
            the best entries while room remains or when the message asks
            for detail); registers the ``expand_memory`` tool, which reads
            only the namespaces this call may read.
        embeddings: a LangChain ``Embeddings``: rank by embedding similarity
            (an :class:`~poolsplit_adapters.memory.embedding.EmbeddingScorer`
            over it). Give it or ``scorer``, not both.

    ``pools="auto"`` detects the task type per model call from the last
    human message and ``goal``, ``action_type`` and ``phase`` in
    ``runtime.context`` (the message stands in for a missing goal); the
    selection event's ``notes`` carry ``task_type`` and the detection.

    The selection context is the last human message plus ``tags`` and
    ``project`` from ``runtime.context`` when present; the goal is
    ``runtime.context["goal"]`` when given (then shown in the system message),
    else the thread's first human message (then pinned in the state).

    Example::

        from langchain.agents import create_agent
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.store.memory import InMemoryStore
        from poolsplit_adapters import Pool
        from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware

        memory = PoolSplitMemoryMiddleware(
            [Pool("fixes", 0, 0, ("correction",)), Pool("recent", 400, 4, ("episode", "note"))],
            namespace=lambda rt: ("memories", rt.context["user_id"]),
            max_turns=6,
        )
        agent = create_agent(model, tools, middleware=[memory],
                             checkpointer=InMemorySaver(), store=InMemoryStore())
        agent.invoke({"messages": [("user", "hi")]},
                     {"configurable": {"thread_id": "t1"}}, context={"user_id": "u1"})
    """

    def __init__(
        self,
        pools: Union[Sequence[Pool], str],
        *,
        namespace: NamespaceSpec,
        store: Any = None,
        max_turns: int = 12,
        write_gate: Optional[WriteGate] = None,
        token_counter: Optional[TokenCounter] = None,
        scorer: Scorer = default_scorer,
        now: Optional[datetime.datetime] = None,
        chain_penalty: float = 0.9,
        page_size: int = 100,
        fetch_k: Optional[int] = None,
        remember: bool = True,
        heading: str = DEFAULT_HEADING,
        episode_type: str = "episode",
        note_type: str = "note",
        total_tokens: Optional[int] = None,
        total_entries: Optional[int] = None,
        progressive: bool = False,
        embeddings: Any = None,
    ) -> None:
        super().__init__()
        resolve_pools(pools, {}, total_tokens=total_tokens, total_entries=total_entries)  # raises on a bad plan
        self.pools: Union[List[Pool], str] = AUTO if pools == AUTO else check_pools(pools)  # type: ignore[arg-type]
        self.total_tokens = total_tokens
        self.total_entries = total_entries
        self.progressive = check_flag(progressive, "progressive")
        if embeddings is not None:
            if scorer is not default_scorer:
                raise TypeError("give embeddings= or scorer=, not both")
            scorer = embedding_scorer_for(embeddings)
        if callable(namespace):
            self._namespace_fn: Optional[Callable[[Any], Any]] = namespace
            self._namespace: Optional[Tuple[Namespace, ...]] = None
        else:
            self._namespace_fn = None
            self._namespace = check_namespaces(namespace)
        _check_int("max_turns", max_turns, "the current turn always stays")
        _check_int("page_size", page_size)
        if fetch_k is not None:
            _check_int("fetch_k", fetch_k)
        Visibility(namespace="-", chain_penalty=chain_penalty)  # the one check of chain_penalty
        if write_gate is not None and not isinstance(write_gate, WriteGate):
            raise TypeError("write_gate must be a WriteGate, got %s" % type(write_gate).__name__)
        check_callable(scorer, "scorer")
        check_callable(token_counter, "token_counter")
        check_now(now)
        if not isinstance(heading, str):
            raise TypeError("heading must be a string, got %r" % (heading,))
        for name, text in (("episode_type", episode_type), ("note_type", note_type)):
            if not isinstance(text, str) or not text:
                raise TypeError("%s must be a non-empty string, got %r" % (name, text))
        self.max_turns = max_turns
        self.write_gate = write_gate or WriteGate()
        self.now = now
        self.heading = heading
        self.episode_type = episode_type
        self.note_type = note_type
        self.settings = BackendSettings(
            pools=self.pools if isinstance(self.pools, list) else [],
            scorer=scorer,
            token_counter=token_counter,
            now=now,
            chain_penalty=chain_penalty,
            page_size=page_size,
            fetch_k=fetch_k,
        )
        self._store = store
        self._fixed: Optional[Backend] = None if store is None else backend_for(store, self.settings)
        self._runtime_sources: OrderedDict[int, Tuple[Any, Backend]] = OrderedDict()
        self._promoted: OrderedDict[Hashable, _Promoted] = OrderedDict()
        self._pending: Dict[Optional[str], GateReport] = {}
        self._lock = threading.Lock()
        self._summary_counter: TokenCounter = token_counter or default_counter()
        self.tools: List[BaseTool] = []
        if remember:
            self.tools.append(
                StructuredTool.from_function(
                    func=self._remember,
                    coroutine=self._aremember,
                    name="remember",
                    description=REMEMBER_DESCRIPTION,
                    args_schema=RememberInput,
                    infer_schema=False,
                )
            )
        if progressive:
            self.tools.append(
                StructuredTool.from_function(
                    func=self._expand,
                    coroutine=self._aexpand,
                    name=EXPAND_TOOL_NAME,
                    description=EXPAND_TOOL_DESCRIPTION,
                    args_schema=ExpandInput,
                    infer_schema=False,
                    handle_tool_error=True,
                )
            )

    # -- where the memory is --------------------------------------------------------------

    def _chain(self, runtime: Any) -> Tuple[Namespace, ...]:
        if self._namespace is not None:
            return self._namespace
        assert self._namespace_fn is not None
        try:
            value = self._namespace_fn(runtime)
        except Exception as err:
            raise ValueError("namespace(runtime) failed: %s: %s" % (type(err).__name__, err)) from err
        return check_namespaces(value, "namespace(runtime)")

    def _source(self, runtime: Any) -> Backend:
        if self._fixed is not None:
            return self._fixed
        store = getattr(runtime, "store", None)
        if store is None:
            raise ValueError(
                "PoolSplitMemoryMiddleware has no store: pass store= or give one to create_agent(..., store=...)"
            )
        with self._lock:
            found = self._runtime_sources.get(id(store))
            if found is None or found[0] is not store:
                found = (store, backend_for(store, self.settings, argument="runtime.store"))
                self._runtime_sources[id(store)] = found
                if len(self._runtime_sources) > 16:
                    self._runtime_sources.popitem(last=False)
            return found[1]

    def _call(self, runtime: Any) -> _Call:
        return _Call(self._source(runtime), self._chain(runtime), _thread_id(runtime))

    # -- gate reports, shown with the next selection event ---------------------------------

    def _count(self, thread: Optional[str], proposals: Sequence[Proposal]) -> None:
        with self._lock:
            self._pending.setdefault(thread, GateReport()).count(proposals)

    def _take_report(self, thread: Optional[str]) -> GateReport:
        with self._lock:
            return self._pending.pop(thread, None) or GateReport()

    # -- writing through the gate (demoted turns and the remember tool alike) ----------------

    def _write(self, call: _Call, proposals: Sequence[Proposal]) -> List[Proposal]:
        """Settle ``proposals`` against the store (read only when one is
        still fresh), write the accepted ones in one write, then count them
        for the thread's report. Raises, having counted nothing, if the
        write fails."""
        fresh = [p.key for p in proposals if p.refused is None]
        settled = self.write_gate.settle(proposals, call.source.existing(call.chain, fresh) if fresh else set())
        accepted = [p.entry for p in settled if p.refused is None]
        if accepted:
            call.source.write(call.chain, accepted)
        self._count(call.thread, settled)
        return settled

    async def _awrite(self, call: _Call, proposals: Sequence[Proposal]) -> List[Proposal]:
        """Async :meth:`_write`."""
        fresh = [p.key for p in proposals if p.refused is None]
        existing = await call.source.aexisting(call.chain, fresh) if fresh else set()
        settled = self.write_gate.settle(proposals, existing)
        accepted = [p.entry for p in settled if p.refused is None]
        if accepted:
            await call.source.awrite(call.chain, accepted)
        self._count(call.thread, settled)
        return settled

    # -- demote + write ---------------------------------------------------------------------

    def _goal(self, runtime: Any) -> Optional[str]:
        goal = _context_value(getattr(runtime, "context", None), "goal")
        return goal if isinstance(goal, str) and goal.strip() else None

    def _demotion(self, messages: Sequence[BaseMessage], runtime: Any) -> Demotion:
        return plan_demotion([_view(m) for m in messages], self.max_turns, pin_goal=self._goal(runtime) is None)

    def _episodes(self, messages: Sequence[BaseMessage], plan: Demotion, call: _Call) -> List[Proposal]:
        created = utc_stamp(self.now)
        source = "thread:%s" % (call.thread or "none")
        proposals = []
        for turn in plan.demote:
            part = [messages[i] for i in turn.indices]
            if plan.goal is not None and not isinstance(part[0], HumanMessage) and turn.indices[0] > plan.goal:
                part = [messages[plan.goal], *part]  # the answer to the goal reads better with the goal
            proposals.append(
                self.write_gate.propose(
                    _transcript(part),
                    type=self.episode_type,
                    source=source,
                    namespace=namespace_label(call.chain[0]),
                    created=created,
                )
            )
        return proposals

    @staticmethod
    def _removals(messages: Sequence[BaseMessage], plan: Demotion) -> Dict[str, Any]:
        return {"messages": [RemoveMessage(id=str(messages[i].id)) for t in plan.demote for i in t.indices]}

    def before_model(self, state: AgentState[Any], runtime: Any) -> Optional[Dict[str, Any]]:
        """Demote the turns beyond the working set: write each through the
        gate, then remove it. Raises (and removes nothing) if the write fails."""
        messages = state["messages"]
        plan = self._demotion(messages, runtime)
        if not plan.demote:
            return None
        call = self._call(runtime)
        self._write(call, self._episodes(messages, plan, call))
        return self._removals(messages, plan)

    async def abefore_model(self, state: AgentState[Any], runtime: Any) -> Optional[Dict[str, Any]]:
        """Async :meth:`before_model`."""
        messages = state["messages"]
        plan = self._demotion(messages, runtime)
        if not plan.demote:
            return None
        call = self._call(runtime)
        await self._awrite(call, self._episodes(messages, plan, call))
        return self._removals(messages, plan)

    # -- recall + promote -------------------------------------------------------------------

    def _context(self, call: _Call, request: ModelRequest[Any]) -> Tuple[Dict[str, Any], Dict[str, Any], Hashable]:
        """The selection context, the task context (for ``pools="auto"``) and
        the key of this agent step: the thread's last human message (its id)
        under this namespace and context."""
        last = next((m for m in reversed(request.messages) if isinstance(m, HumanMessage)), None)
        ctx = getattr(request.runtime, "context", None)
        tag_list = check_tags(_context_value(ctx, "tags"), "runtime.context['tags']")
        project = check_project(_context_value(ctx, "project"), "runtime.context['project']")
        message = str(last.text) if last is not None else ""
        context: Dict[str, Any] = {"message": message, "tags": tag_list, "project": project}
        task: Dict[str, Any] = {"message": message}
        for name in TASK_FIELDS:
            value = check_text(_context_value(ctx, name), "runtime.context[%r]" % name)
            if value is not None:
                task[name] = value
        step = (
            call.thread,
            call.chain,
            last.id if last is not None else None,
            message,
            tuple(tag_list),
            project,
            tuple(sorted(task.items())),
        )
        return context, task, step

    def _plan(self, task: Mapping[str, Any]) -> Tuple[Plan, Optional[TaskDetection]]:
        """This call's pools (planned for the task with ``pools="auto"``)
        and fill (progressive layers when on)."""
        pools, detection = resolve_pools(
            self.pools, task, total_tokens=self.total_tokens, total_entries=self.total_entries
        )
        layering = None
        if self.progressive:
            layering = ProgressiveLayers(self._summary_counter, detail=wants_detail(task.get("message")))
        return Plan(pools, layering), detection

    def _annotated(self, selection: Selection, plan: Plan, detection: Optional[TaskDetection]) -> Selection:
        # A vector store's selection comes from the retriever, which already
        # recorded its own layers' metrics.
        layering = plan.layering if "metrics" not in selection.notes else None
        return annotate(selection, detection, layering)

    def _reuse(self, step: Hashable, version: Hashable) -> Optional[_Promoted]:
        with self._lock:
            found = self._promoted.get(step)
            if found is not None and found.version == version:
                self._promoted.move_to_end(step)
                return found
            return None

    def _keep(self, step: Hashable, version: Hashable, selection: Selection) -> _Promoted:
        promoted = _Promoted(version, selection, render_context(selection).text)
        with self._lock:
            self._promoted[step] = promoted
            if len(self._promoted) > 1024:
                self._promoted.popitem(last=False)
        return promoted

    def _inject(self, request: ModelRequest[Any], call: _Call, promoted: _Promoted, reused: bool) -> ModelRequest[Any]:
        report = self._take_report(call.thread)
        event = {
            "thread": call.thread,
            "namespace": [list(ns) for ns in call.chain],
            "reused": reused,
            "writes": report.to_dict(),
            **promoted.selection.to_dict(),
        }
        request.runtime.stream_writer({SELECTION_EVENT: event})
        goal = self._goal(request.runtime)
        parts = [p for p in (("Current goal: " + goal) if goal else "", promoted.text) if p]
        if not parts:
            return request
        block = "\n".join([self.heading, *parts]) if self.heading else "\n".join(parts)
        return request.override(system_message=_with_memory(request.system_message, block))

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Put this step's memory into the system message, then call the model."""
        call = self._call(request.runtime)
        context, task, step = self._context(call, request)
        plan, detection = self._plan(task)
        snap = call.source.snapshot(call.chain, context, plan)
        promoted = self._reuse(step, snap.version)
        reused = promoted is not None
        if promoted is None:
            selection = call.source.select(snap, call.chain, context, plan)
            promoted = self._keep(step, snap.version, self._annotated(selection, plan, detection))
        return handler(self._inject(request, call, promoted, reused))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async :meth:`wrap_model_call`."""
        call = self._call(request.runtime)
        context, task, step = self._context(call, request)
        plan, detection = self._plan(task)
        snap = await call.source.asnapshot(call.chain, context, plan)
        promoted = self._reuse(step, snap.version)
        reused = promoted is not None
        if promoted is None:
            selection = await call.source.aselect(snap, call.chain, context, plan)
            promoted = self._keep(step, snap.version, self._annotated(selection, plan, detection))
        return await handler(self._inject(request, call, promoted, reused))

    # -- the remember tool ------------------------------------------------------------------

    def _note(self, note: str, tags: Optional[List[str]], scope: Optional[str], call: _Call) -> Proposal:
        return self.write_gate.propose(
            note,
            type=self.note_type,
            source="agent:thread:%s" % (call.thread or "none"),
            namespace=namespace_label(call.chain[0]),
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
                "duplicate": "this note is already saved as %s." % proposal.key,
                "always_scope": "standing corrections are curated by the user and cannot be saved by the agent.",
            }[proposal.refused.value],
        )

    def _remember(
        self, runtime: ToolRuntime, note: str, tags: Optional[List[str]] = None, scope: Optional[str] = None
    ) -> str:
        call = self._call(runtime)
        return self._answer(self._write(call, [self._note(note, tags, scope, call)])[0])

    async def _aremember(
        self, runtime: ToolRuntime, note: str, tags: Optional[List[str]] = None, scope: Optional[str] = None
    ) -> str:
        call = self._call(runtime)
        return self._answer((await self._awrite(call, [self._note(note, tags, scope, call)]))[0])

    # -- the expand tool --------------------------------------------------------------------

    @staticmethod
    def _full_text(entry: Optional[Mapping[str, Any]], entry_id: str) -> str:
        if entry is None:
            raise ToolException(str(UnknownEntryError(entry_id)))
        content = entry.get("content")
        if not isinstance(content, str):
            raise ToolException("memory %r has no text content" % entry_id)
        return content

    def _expand(self, runtime: ToolRuntime, entry_id: str) -> str:
        call = self._call(runtime)
        return self._full_text(call.source.get(call.chain, entry_id), entry_id)

    async def _aexpand(self, runtime: ToolRuntime, entry_id: str) -> str:
        call = self._call(runtime)
        return self._full_text(await call.source.aget(call.chain, entry_id), entry_id)
