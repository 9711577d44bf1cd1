"""PoolSplitMemoryMiddleware: long-term memory for ``create_agent``, with the
recall -> promote -> reason -> demote -> write loop of seed 002.

Per agent step (one model call and the tool-loop calls that follow it):

* **Demote + write** (``before_model``): the working set keeps the goal, the
  last ``max_turns`` turns and every open loop; older turns are written to
  long-term memory as ``episode`` entries through the write gate and only
  then removed from the state (``RemoveMessage``). A failed write keeps the
  turn and raises: forgetting must be recallable, never amnesia. What another
  middleware or the host removed first is written too (`agent_unwritten`).
* **Recall + promote** (``wrap_model_call``): corrections by filter and each
  pool's own candidates are read from the store, selected by the core
  (corrections first, then each pool within its budget), rendered with
  provenance markers and an explicit omission line, and put into this call's
  system message, after the agent's own system prompt; the messages never
  hold it. A digest of the selection goes out on ``runtime.stream_writer``
  (``stream_mode="custom"``) so a UI can show why, and as the
  ``poolsplit_selection`` custom callback event (``astream_events``, tracers,
  callback handlers), as the retrievers send it. The selection goes through
  `AdapterCall`, like every adapter's.
* **remember** (a tool the middleware registers): the agent saves a note it
  must not forget; the harness stamps its provenance and the gate refuses
  empty, oversized, duplicate and always-scope notes.
* **expand_memory** (registered with ``RenderConfig(progressive=True)``): the full text of
  an entry the context showed as a summary, read from the same store and
  namespaces as the recall, so the agent can read no more than it may see.
* **Consolidate** (``after_agent``, with ``WriteConfig(consolidator=...)``
  the host's chat model; off by default): once the agent's turn is over,
  the entries the turn wrote are shown to the model beside their nearest stored neighbours
  and its operations (add / update / retire / noop) are validated and
  applied to the store, in the background, debounced per thread
  (`BackgroundConsolidation`,
  `consolidation`). The turn never waits for
  it and never fails because of it; the next selection event of the thread
  reports what it did.

With ``pools="auto"`` each model call plans its pools for the task type
detected from the message and ``runtime.context`` (``goal``,
``action_type``, ``phase``); the selection event records the detection.

The class only wires hooks (sync and async twins over shared parts) and
translates (messages, runtime, state, events); the steps are
`AgentMemory`'s (`poolsplit_adapters.agent_memory`), framework-free. What it
keeps per thread lives in the agent's graph state
(`PoolSplitMemoryState`, private keys): the gate's report not yet shown,
the current step's rendered memory with its reuse key, the messages read and
not yet written. Two processes serving one thread through one checkpointer
agree on them, and a restart loses none. The object itself holds settings, a cache of store
adapters, the last selection it made (process-local, for
[`explain`][poolsplit_adapters.langchain.middleware.PoolSplitMemoryMiddleware.explain]), and, with a consolidator, the
background runs' process-local schedule (deadlines, ids not yet run, reports
not yet shown; see `background`); the ids a
turn wrote wait in the state until the turn's ``after_agent`` hands them over.
"""

from __future__ import annotations

import datetime
import functools
import json
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Optional, Union, cast

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse, PrivateStateAttr
from langchain_core.callbacks import BaseCallbackManager
from langchain_core.callbacks.manager import adispatch_custom_event, dispatch_custom_event
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime
from langgraph.types import Command
from typing_extensions import NotRequired, override

from ..agent_config import RecallConfig, RenderConfig, WriteConfig, removed_keyword_error
from ..agent_memory import (
    DEFAULT_HEADING,
    UNCONSOLIDATED_KEY,
    AgentMemory,
    GateTally,
    Heard,
    Noted,
    PromotedStep,
    Where,
    Writing,
    add_ids,
    add_tallies,
    injected,
    kept_injected,
    step_key,
    thread_id,
)
from ..background import BackgroundConsolidation
from ..call import AdapterCall
from ..checks import ArgumentError, check_flag, check_instance
from ..memory.turns import content_text
from ..memory.working_set import AI, HUMAN, OTHER, TOOL, View
from ..memory.write_gate import Proposal
from ..poolsplit import Pool, Selection
from ..render import explain_last
from ..settings import AgentMemorySettings
from ..stores.langgraph.backends import Backend, Plan
from ..stores.langgraph.store import Namespace, namespace_label
from ..threads import off_loop
from .documents import SELECTION_EVENT
from .memory_tools import ExpandInput, MemoryTools, RememberInput
from .runtime_memory import NamespaceSpec, RuntimeMemory

__all__ = [
    "DEFAULT_HEADING",
    "ExpandInput",
    "GateTally",
    "PoolSplitMemoryMiddleware",
    "PoolSplitMemoryState",
    "PromotedStep",
    "RecallConfig",
    "RememberInput",
    "RenderConfig",
    "WriteConfig",
]


class PoolSplitMemoryState(AgentState[Any]):
    """The agent state [`PoolSplitMemoryMiddleware`][] adds (private keys).

    Kept in the graph state, not in the middleware object, so two processes
    serving one thread (through one checkpointer) agree, and a restart
    loses nothing: a gate report not yet shown is shown by the next model
    call wherever it runs, and a step's selection is reused by its tool loop
    after a resume.
    """

    poolsplit_writes: NotRequired[Annotated[Optional[GateTally], PrivateStateAttr, add_tallies]]
    poolsplit_promoted: NotRequired[Annotated[Optional[PromotedStep], PrivateStateAttr]]
    poolsplit_unconsolidated: NotRequired[Annotated[Optional[list[str]], PrivateStateAttr, add_ids]]
    poolsplit_heard: NotRequired[Annotated[Optional[str], PrivateStateAttr]]  # 0.3's; read, never written
    poolsplit_unwritten: NotRequired[Annotated[Optional[list[Noted]], PrivateStateAttr]]
    poolsplit_run_start: NotRequired[Annotated[Optional[str], PrivateStateAttr]]
    poolsplit_injected: NotRequired[Annotated[Optional[list[str]], PrivateStateAttr, add_ids]]


@dataclass(frozen=True)
class _Step:
    """One model call's recall: where, the adapter call (options, plan,
    layering), the plan as the store reads it, and the step's identity."""

    where: Where[Backend]
    call: AdapterCall
    plan: Plan
    identity: str

    @property
    def reading(self) -> tuple[tuple[Namespace, ...], dict[str, Any], Plan]:
        """What the store reads with: the chain, the scoring context, the plan."""
        return self.where.chain, self.call.options.context, self.plan


def _text(message: BaseMessage) -> str:
    """A message's text, with a line naming each block that is not text (an
    image the user sent, a file): a turn of only an image would otherwise
    leave the working set as nothing. A web address is kept; inline data never."""
    if isinstance(message, AIMessage) or isinstance(message.content, str):
        return str(message.text)  # the model's tool calls are lines of their own
    return content_text(message.content)  # each text block a line: message.text joins them with nothing


def _written_by(message: BaseMessage) -> Optional[str]:
    """Who wrote a human message that is not the user's: LangChain marks
    those it writes itself with ``lc_source`` (``SummarizationMiddleware``'s
    summary of the conversation, written by a model), else None."""
    source = message.additional_kwargs.get("lc_source")
    return source if isinstance(source, str) and source else None


def _heard(message: BaseMessage) -> Heard:
    """A message of the state as the write step reads it."""
    text, lines = _text(message), functools.partial(_line, message)
    if isinstance(message, HumanMessage):
        return Heard(View(HUMAN, message.id), text, lines, user=_written_by(message) is None)
    if isinstance(message, AIMessage):
        calls = tuple(str(c["id"]) for c in message.tool_calls if c.get("id"))
        return Heard(View(AI, message.id, calls=calls), text, lines, plain=not message.tool_calls)
    if isinstance(message, ToolMessage):
        return Heard(View(TOOL, message.id, answers=message.tool_call_id), text, lines)
    return Heard(View(OTHER, message.id), text, lines)


def _views(messages: Sequence[BaseMessage]) -> list[View]:
    """Which messages are the user's kind, by id (a summary is not): what `injected` reads, without their text."""
    return [View(HUMAN if isinstance(m, HumanMessage) and _written_by(m) is None else OTHER, m.id) for m in messages]


def _line(message: BaseMessage) -> list[tuple[str, str]]:
    """A message's lines in a transcript, as (label, body): who said it, apart
    from what was said (a body's own line breaks never start a speaker)."""
    text = _text(message).strip()
    if isinstance(message, HumanMessage):
        return [("%s: " % (_written_by(message) or "user"), text)]
    if isinstance(message, AIMessage):
        lines = [("assistant: ", text)] if text else []
        for call in message.tool_calls:
            args = json.dumps(call.get("args") or {}, sort_keys=True, ensure_ascii=False, default=str)
            lines.append(("assistant called ", "%s(%s)" % (call.get("name"), args)))
        return lines
    if isinstance(message, ToolMessage):
        return [("tool %s: " % (message.name or message.tool_call_id), text)]
    return [("%s: " % message.type, text)] if text else []


def _check_binds_tools(model: Any) -> None:
    """A clear error, before the model is called, when the agent's model
    cannot bind the memory tools (``remember``, ``expand``): langchain-core's
    own is a bare ``NotImplementedError`` from deep inside the agent."""
    bind = getattr(type(model), "bind_tools", None)
    if isinstance(model, BaseChatModel) and bind is BaseChatModel.bind_tools:
        raise ArgumentError(
            "PoolSplitMemoryMiddleware: the model %s cannot bind tools (its bind_tools is not implemented), "
            "and the middleware registers the remember tool; pass remember=False to its WriteConfig "
            "(write=WriteConfig(remember=False); leave RenderConfig's progressive off, it registers the expand "
            "tool) or use a model that supports tool calling" % type(model).__name__
        )


def _with_memory(system: Optional[SystemMessage], block: str) -> SystemMessage:
    """The agent's own system message with ``block`` after it."""
    if system is None:
        return SystemMessage(content=block)
    if isinstance(system.content, str):
        content: Any = system.content + "\n\n" + block if system.content else block
    else:
        content = [*system.content, {"type": "text", "text": "\n\n" + block}]
    return system.model_copy(update={"content": content})


def _listening() -> Optional[RunnableConfig]:
    """The config of the run this model call is part of, when that run has a
    callback handler to tell (``astream_events``, a tracer, a
    ``BaseCallbackHandler``); else None.

    ``dispatch_custom_event`` raises without a parent run (a direct
    ``wrap_model_call``, as the benchmarks make) and, with no handler, would
    build a callback manager only to drop the event: both cases stop here,
    at the cost of one context-variable read."""
    config = var_child_runnable_config.get()
    callbacks = config.get("callbacks") if config is not None else None
    if isinstance(callbacks, BaseCallbackManager) and callbacks.parent_run_id is not None and callbacks.handlers:
        return config
    return None


class PoolSplitMemoryMiddleware(AgentMemory, AgentMiddleware[PoolSplitMemoryState, Any, Any]):
    """Pool-split long-term memory for a LangChain 1.x agent.

    Args:
        pools: the pool plan ([`Pool`][] list, or ``"auto"``). Pools
            pass through to the core unchanged, so per-pool options (such as a
            relevance floor) apply as they do everywhere.
        namespace: the user's namespace, e.g. ``("memories", "u1")``, or a
            callable ``runtime -> namespace`` (e.g.
            ``lambda rt: ("memories", rt.context["user_id"])``). Exact: child
            namespaces are not this user's. An explicit chain (a list of
            namespaces, own first, e.g. ``[("memories", uid), ("memories",
            "shared")]``) widens reads with ``RecallConfig.chain_penalty``
            per link; writes go to the first. Never widened implicitly.
        store: where long-term memory lives: a LangGraph ``BaseStore``
            (default: ``runtime.store``, the one given to
            ``create_agent(store=...)``), a LangChain ``VectorStore`` (recalled
            per pool by [`PoolSplitRetriever`][]), an object following the
            store contract (e.g. the SQLite store), or a list of entries
            (copied; writes stay in this process).
        max_turns: turns kept verbatim in the state (>= 1; default 12).
        now: fixed reference time for scoring, for ``created`` stamps and
            for the consolidator (default: the time of each call).
        recall: what each model call recalls and how it ranks
            ([`RecallConfig`][poolsplit_adapters.agent_config.RecallConfig]:
            ``total_tokens``, ``total_entries``, ``fetch_k``,
            ``chain_penalty``, ``scorer``, ``embeddings``, ``token_counter``).
            Held, checked once, as [`settings`][] (`AgentMemorySettings`).
        write: what is written ([`WriteConfig`][poolsplit_adapters.agent_config.WriteConfig]:
            the ``remember`` tool, the ``write_gate``, the ``episode_type``
            and ``note_type``, the background ``consolidator`` and its
            ``consolidation_delay``). A consolidator is held as
            [`consolidation`][] (``drain()`` / ``await adrain()`` wait for
            it in tests and at shutdown; its ``runs`` report every run).
        render: how memory is shown ([`RenderConfig`][poolsplit_adapters.agent_config.RenderConfig]:
            the ``heading`` line, ``progressive`` loading, which registers
            the ``expand_memory`` tool).

    The flat keywords of 0.2 (``fetch_k=``, ``remember=``, ``heading=``,
    ...) raise an `ArgumentError` (a ``TypeError``) naming the config object
    that holds each now; ``page_size=`` is gone.

    ``pools="auto"`` detects the task type per model call from the last
    human message and ``goal``, ``action_type`` and ``phase`` in
    ``runtime.context`` (the message stands in for a missing goal); the
    selection event's ``notes`` carry ``task_type`` and the detection.

    The selection context is the last human message plus ``tags`` and
    ``project`` from ``runtime.context`` when present; the goal is
    ``runtime.context["goal"]`` when given (then shown in the system message),
    else the thread's first human message (then pinned in the state).

    Example:
        ```python
        from langchain.agents import create_agent
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.store.memory import InMemoryStore
        from poolsplit_adapters import Pool
        from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, RecallConfig

        memory = PoolSplitMemoryMiddleware(
            [
                Pool("fixes", 0, 0, ("correction",)),
                Pool("standing", 640, 20, ("instruction", "preference")),  # what the user states
                Pool("facts", 200, 20, ("fact", "note")),  # a changed fact's newer value, not the older
                Pool("recent", 400, 4, ("episode",)),  # a type no pool names is never read
            ],
            namespace=lambda rt: ("memories", rt.context["user_id"]),
            max_turns=6,
            recall=RecallConfig(fetch_k=40),
        )
        # model: your tool-calling chat model; tools: the agent's own (may be [])
        agent = create_agent(model, tools, middleware=[memory],
                             checkpointer=InMemorySaver(), store=InMemoryStore())
        agent.invoke({"messages": [("user", "hi")]},
                     {"configurable": {"thread_id": "t1"}}, context={"user_id": "u1"})
        print(memory.explain())  # what loaded and what did not, and why
        ```
    """

    state_schema = PoolSplitMemoryState  # type: ignore[assignment]

    #: The selection settings, checked once (the plan with its totals).
    settings: AgentMemorySettings
    #: The background consolidation (None: off, the default).
    consolidation: Optional[BackgroundConsolidation]

    def __init__(
        self,
        pools: Union[Sequence[Pool], str],
        *,
        namespace: NamespaceSpec,
        store: Any = None,
        max_turns: int = 12,
        now: Optional[datetime.datetime] = None,
        recall: Optional[RecallConfig] = None,
        write: Optional[WriteConfig] = None,
        render: Optional[RenderConfig] = None,
        **removed: Any,
    ) -> None:
        owner = "PoolSplitMemoryMiddleware"
        if removed:
            raise removed_keyword_error(owner, removed)
        recall = check_instance(recall, RecallConfig, "recall") or RecallConfig()
        write = check_instance(write, WriteConfig, "write") or WriteConfig()
        render = check_instance(render, RenderConfig, "render") or RenderConfig()
        AgentMiddleware.__init__(self)
        AgentMemory.__init__(
            self,
            owner,
            max_turns=max_turns,
            write_gate=write.write_gate,
            heading=render.heading,
            episode_type=write.episode_type,
            note_type=write.note_type,
            pools=pools,
            progressive=render.progressive,
            now=now,
            **recall.settings(),
        )
        self._memory = RuntimeMemory("PoolSplitMemoryMiddleware", namespace, store, self.settings)
        self._consolidating(owner, write.consolidator, write.consolidation_delay, now)
        tools = MemoryTools(self, self._where)
        #: The tools the agent's model is given: ``remember`` (``WriteConfig.remember``),
        #: ``expand_memory`` (``RenderConfig.progressive``).
        self.tools: list[BaseTool] = [tools.remember()] if check_flag(write.remember, "remember") else []
        if self.settings.progressive:
            self.tools.append(tools.expand())

    @property
    def pools(self) -> Union[list[Pool], str]:
        """The pool plan (a list of pools, or ``"auto"``)."""
        return self.settings.pools

    @property
    def last_selection(self) -> Optional[Selection]:
        """The last selection this middleware made in this process (None
        before the first), as the retrievers keep theirs: safe to read while
        other threads call the agent (one reference, replaced whole), but
        with concurrent threads or users not necessarily yours. A tool-loop
        call that reuses its step's memory makes no new selection, and a
        step selected in another process is not here: for a call's own, use
        [`capture_selections`][] around it or
        the ``poolsplit_selection`` event."""
        return self.settings.last_selection

    def explain(self) -> str:
        """The why/why-not table (`explain`)
        of [`last_selection`][]."""
        return explain_last(self.last_selection)

    # -- hooks: where the run's input ends ---------------------------------------------

    @override
    def before_agent(self, state: PoolSplitMemoryState, runtime: Runtime[Any]) -> Optional[dict[str, Any]]:
        """Mark the last message of the run's input (a human message after it is
        `injected`, not the user's) and note the messages read (`AgentMemory._started`)."""
        return self._started([_heard(m) for m in state["messages"]], state)

    @override
    async def abefore_agent(self, state: PoolSplitMemoryState, runtime: Runtime[Any]) -> Optional[dict[str, Any]]:
        """Async [`before_agent`][]."""
        return self.before_agent(state, runtime)

    # -- hooks: demote + write ----------------------------------------------------------

    @override
    def before_model(self, state: PoolSplitMemoryState, runtime: Runtime[Any]) -> Optional[dict[str, Any]]:
        """Write what must be kept, then let go of what was written: the
        turns beyond the working set (each side its own entry, a long one in
        parts, with the user's statements not read yet). A turn is removed
        only when every part of it is stored; one
        the store refuses stays, and the refusal is reported. Raises (and
        removes nothing) if the write fails."""
        writing = self._writing_of(state, runtime)
        if writing is None:
            return None
        return self._removed(state, writing, self._write(writing.where, writing.proposals))

    @override
    async def abefore_model(self, state: PoolSplitMemoryState, runtime: Runtime[Any]) -> Optional[dict[str, Any]]:
        """Async [`before_model`][]."""
        writing = self._writing_of(state, runtime)
        if writing is None:
            return None
        return self._removed(state, writing, await self._awrite(writing.where, writing.proposals))

    # -- hooks: consolidate -------------------------------------------------------------

    @override
    def after_agent(self, state: PoolSplitMemoryState, runtime: Runtime[Any]) -> Optional[dict[str, Any]]:
        """Write the user's new statements as the state holds them now (after a middleware
        that rewrites them, in either order) and what someone else removed since the last
        model call (`Unwritten`); hand the written ids to the background consolidation."""
        writing = self._writing_of(state, runtime, demote=False)
        written = self._removed(state, writing, self._write(writing.where, writing.proposals)) if writing else {}
        return self._consolidated(state, runtime, written, asynchronous=False)

    @override
    async def aafter_agent(self, state: PoolSplitMemoryState, runtime: Runtime[Any]) -> Optional[dict[str, Any]]:
        """Async [`after_agent`][] (a task on the running loop)."""
        writing = self._writing_of(state, runtime, demote=False)
        written = self._removed(state, writing, await self._awrite(writing.where, writing.proposals)) if writing else {}
        return self._consolidated(state, runtime, written, asynchronous=True)

    # -- hooks: recall + promote --------------------------------------------------------

    @override
    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ExtendedModelResponse[Any]:
        """Put this step's memory into the system message, then call the model."""
        step = self._step(request)
        snap = step.where.source.snapshot(*step.reading)
        key = step_key(step.identity, snap.version)
        promoted = self._kept(request.state, key)
        reused = promoted is not None
        if promoted is None:
            promoted = self._promote(step.call, key, step.where.source.select(snap, *step.reading))
        injected, update, event = self._inject(request, step, promoted, reused=reused)
        config = _listening()
        if config is not None:
            dispatch_custom_event(SELECTION_EVENT, event, config=config)
        return ExtendedModelResponse(handler(injected), Command(update=update) if update else None)

    @override
    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ExtendedModelResponse[Any]:
        """Async [`wrap_model_call`][]."""
        # pools="auto" reads the store's types: an async store's sync read (Postgres, SQLite), from a worker thread.
        away = self._memory.backend(request.runtime).off_loop
        step = await off_loop(self._step, request) if away else self._step(request)
        snap = await step.where.source.asnapshot(*step.reading)
        key = step_key(step.identity, snap.version)
        promoted = self._kept(request.state, key)
        reused = promoted is not None
        if promoted is None:
            promoted = self._promote(step.call, key, await step.where.source.aselect(snap, *step.reading))
        injected, update, event = self._inject(request, step, promoted, reused=reused)
        config = _listening()
        if config is not None:
            await adispatch_custom_event(SELECTION_EVENT, event, config=config)
        return ExtendedModelResponse(await handler(injected), Command(update=update) if update else None)

    # -- the translations the hooks share (the steps are AgentMemory's) -------------------

    def _where(self, runtime: Any) -> Where[Backend]:
        chain = self._memory.chain(runtime)
        return Where(self._memory.backend(runtime), chain, thread_id(runtime), namespace_label(chain[0]))

    def _writing_of(self, state: PoolSplitMemoryState, runtime: Any, demote: bool = True) -> Optional[Writing[Backend]]:
        """What this step writes (`AgentMemory._writing`), over the state's messages."""
        return self._writing(list(map(_heard, state["messages"])), state, runtime, lambda: self._where(runtime), demote)

    def _removed(
        self, state: PoolSplitMemoryState, writing: Writing[Backend], settled: Sequence[Proposal]
    ) -> dict[str, Any]:
        """The state update of a write (`AgentMemory._demoted`), the turns it
        lets go of removed."""
        messages = state["messages"]
        removed, update = self._demoted(writing, settled)
        if removed:
            update["messages"] = [RemoveMessage(id=str(messages[i].id)) for i in removed]
        return update

    def _consolidated(
        self, state: PoolSplitMemoryState, runtime: Any, written: dict[str, Any], *, asynchronous: bool
    ) -> Optional[dict[str, Any]]:
        """Hand the run's written ids (and ``written``'s, the end's own) to the consolidation;
        keep the ids of the messages `injected` in this run (read as the user's by a later run)."""
        ids = [*cast("list[str]", state.get(UNCONSOLIDATED_KEY) or []), *written.get(UNCONSOLIDATED_KEY, [])]
        where = lambda: self._where(runtime)  # noqa: E731
        update = {**written, **(self._consolidate(ids, thread_id(runtime), where, asynchronous=asynchronous) or {})}
        update.update(kept_injected(injected(_views(state["messages"]), state), state))
        return update or None

    def _step(self, request: ModelRequest[Any]) -> _Step:
        """This model call's recall: the thread's last human message and
        ``runtime.context`` (`AgentMemory._recall_call`), planned by the adapter call."""
        where = self._where(request.runtime)
        added = injected(_views(request.messages), request.state)  # not the user's: never the query
        last = next((m for m in reversed(request.messages) if isinstance(m, HumanMessage) and m.id not in added), None)
        message, last_id = (str(last.text), last.id) if last is not None else ("", None)
        context = getattr(request.runtime, "context", None)
        types = lambda: where.source.entry_types(where.chain)  # noqa: E731 - pools="auto": the store's own types
        call, identity = self._recall_call(where, message, last_id, context, types)
        return _Step(where, call, Plan.of(call), identity)

    def _inject(
        self, request: ModelRequest[Any], step: _Step, promoted: PromotedStep, *, reused: bool
    ) -> tuple[ModelRequest[Any], dict[str, Any], dict[str, Any]]:
        """The request with the memory after the agent's system prompt, the
        state update (the gate report shown, cleared; a new step's memory
        kept) and the selection event, already written to the stream; the
        twins send it to the run's callbacks (the async one must await)."""
        if self.tools:
            _check_binds_tools(request.model)
        update, event = self._shown(request.state, step.where, promoted, reused=reused)
        request.runtime.stream_writer({SELECTION_EVENT: event})
        block = self._block(request.runtime, promoted)
        if block is None:
            return request, update, event
        return request.override(system_message=_with_memory(request.system_message, block)), update, event
