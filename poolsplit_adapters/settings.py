"""The selection settings every adapter class shares, declared once.

The five adapter classes (LangChain ``PoolSplitRetriever`` and
``PoolSplitCompressor``; LlamaIndex ``PoolSplitRetriever``,
``PoolSplitNodePostprocessor`` and ``PoolSplitMemoryStore``) select with the
same seven settings. They are declared here, with their documentation, so
that a default or a meaning cannot drift between two copies: the pydantic
classes inherit :class:`SelectionSettings`, the others hold one.

Arguments are checked here too, for the constructor and for per-call
overrides alike, with errors that name the argument: a bare string ``tags``
would otherwise be read as a set of letters, and a string ``k`` fail deep
inside a framework.
"""

from __future__ import annotations

import datetime
import os
import sys
import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from typing_extensions import TypedDict, Unpack

from .memory.metrics import token_metrics
from .memory.progressive import ProgressiveLayers, progressive_notes, wants_detail
from .memory.tasks import AUTO, TaskDetection, resolve_pools
from .poolsplit import Chosen, Pool, Scorer, Selection, TokenCounter, Visibility, default_scorer
from .poolsplit import check_pools as core_check_pools
from .reports import record, select_noted

if TYPE_CHECKING:
    from .index import MemoryIndex

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_S = TypeVar("_S", bound="SelectionSettings")


class ArgumentError(ValueError, TypeError):
    """A bad argument to an adapter (constructor or per call); the message
    names the argument. Both a ``ValueError`` and a ``TypeError``, so either
    ``except`` catches it.

    Example::

        try:
            retriever.invoke("deploy", tags="ops")
        except ArgumentError as err:
            print(err)   # tags must be a list of strings, not the bare string 'ops' (...)
    """


def _got(value: Any) -> str:
    return "got %s %r" % (type(value).__name__, value)


def check_k(value: Any, name: str = "k") -> Optional[int]:
    """``k``: None, or an int >= 0 (not a bool, not a numeric string)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError("%s must be an int >= 0 or None, %s" % (name, _got(value)))
    if value < 0:
        raise ArgumentError("%s must be >= 0, got %r" % (name, value))
    return value


def check_tags(value: Any, name: str = "tags") -> List[str]:
    """Scoring-context tags: a list or tuple of strings (None: no tags)."""
    if value is None:
        return []
    if isinstance(value, str):
        raise ArgumentError(
            "%s must be a list of strings, not the bare string %r (did you mean [%r]?)" % (name, value, value)
        )
    if not isinstance(value, (list, tuple)) or not all(isinstance(tag, str) for tag in value):
        raise ArgumentError("%s must be a list or tuple of strings, %s" % (name, _got(value)))
    return list(value)


def check_project(value: Any, name: str = "project") -> Optional[str]:
    if value is not None and not isinstance(value, str):
        raise ArgumentError("%s must be a string or None, %s" % (name, _got(value)))
    return value


def check_now(value: Any, name: str = "now") -> Optional[datetime.datetime]:
    if value is not None and not isinstance(value, datetime.datetime):
        raise ArgumentError("%s must be a datetime or None, %s" % (name, _got(value)))
    return value


def check_visibility(value: Any, name: str = "visibility") -> Optional[Visibility]:
    if value is not None and not isinstance(value, Visibility):
        raise ArgumentError("%s must be a Visibility or None, %s" % (name, _got(value)))
    return value


def check_pools(value: Any, name: str = "pools") -> Union[List[Pool], str]:
    """The pool plan as a list, checked by the core itself (every item a
    :class:`Pool`, names unique) so that a bad plan fails at construction
    rather than on the first query; or ``"auto"`` (a task-aware plan per
    call, see :func:`~poolsplit_adapters.memory.tasks.resolve_pools`)."""
    if value == AUTO:
        return AUTO
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)):
        raise ArgumentError("%s must be a list of Pool objects or 'auto', %s" % (name, _got(value)))
    try:
        return core_check_pools(value)
    except (TypeError, ValueError) as err:
        raise ArgumentError("%s: %s" % (name, err)) from None


def check_text(value: Any, name: str) -> Optional[str]:
    """A task signal (``goal``, ``action_type``, ``phase``): a string or None."""
    if value is not None and not isinstance(value, str):
        raise ArgumentError("%s must be a string or None, %s" % (name, _got(value)))
    return value


def check_flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ArgumentError("%s must be True or False, %s" % (name, _got(value)))
    return value


def check_callable(value: Any, name: str) -> Any:
    if value is not None and not callable(value):
        raise ArgumentError("%s must be callable, %s" % (name, _got(value)))
    return value


_CHECKS = {
    "pools": check_pools,
    "k": check_k,
    "project": check_project,
    "now": check_now,
    "visibility": check_visibility,
    "scorer": lambda v, name: default_scorer if v is None else check_callable(v, name),
    "token_counter": check_callable,
    "total_tokens": check_k,  # None, or an int >= 0, like k
    "total_entries": check_k,
    "goal": check_text,
    "action_type": check_text,
    "phase": check_text,
    "progressive": check_flag,
}

#: The task signals a call may carry (read by ``pools="auto"``).
TASK_FIELDS = ("goal", "action_type", "phase")


def embedding_scorer_for(embeddings: Any, name: str = "embeddings") -> Any:
    """An :class:`~poolsplit_adapters.memory.embedding.EmbeddingScorer` over
    a framework's embeddings object (LangChain ``Embeddings``, LlamaIndex
    ``BaseEmbedding``); the error names the argument. Imported here, on
    use: the scorer needs numpy."""
    from .memory.embedding import EmbeddingScorer

    if isinstance(embeddings, EmbeddingScorer):
        return embeddings
    try:
        return EmbeddingScorer(embeddings)
    except TypeError as err:
        raise ArgumentError("%s: %s" % (name, err)) from None


def is_embedding_scorer(scorer: Any) -> bool:
    """Whether ``scorer`` is an EmbeddingScorer (without importing numpy
    when the embedding module was never loaded)."""
    module = sys.modules.get("poolsplit_adapters.memory.embedding")
    return module is not None and isinstance(scorer, module.EmbeddingScorer)


def _caller_level() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside
    this package and pydantic (constructors nest at different depths)."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not (path.startswith(_PACKAGE_DIR) or "%spydantic%s" % (os.sep, os.sep) in path):
            return level
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def checked_settings(owner: str, data: Dict[str, Any], known: Sequence[str]) -> Dict[str, Any]:
    """``data`` (constructor keywords of ``owner``) with the deprecated
    ``scope=`` renamed to ``visibility=`` and every shared setting checked.

    Unknown keywords raise: a misspelt option silently ignored is a filter
    silently not applied (``scope=`` used to be dropped without a word).
    """
    data = dict(data)
    if "scope" in data:
        warnings.warn(
            "%s(scope=...) is deprecated; use visibility=" % owner, DeprecationWarning, stacklevel=_caller_level()
        )
        scope = data.pop("scope")
        if data.get("visibility") is not None:
            raise ArgumentError("%s: give visibility= only (scope= is its deprecated name)" % owner)
        data["visibility"] = scope
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ArgumentError(
            "%s got unexpected keyword argument(s) %s (known: %s)"
            % (owner, ", ".join(map(repr, unknown)), ", ".join(sorted(known)))
        )
    if "pools" not in data:
        raise ArgumentError("%s needs pools= (a list of Pool objects)" % owner)
    for name, check in _CHECKS.items():
        if name in data:
            data[name] = check(data[name], name)
    try:  # "auto" needs both totals; explicit pools take none (one rule: resolve_pools)
        resolve_pools(
            data["pools"],
            {},
            total_tokens=data.get("total_tokens"),
            total_entries=data.get("total_entries"),
        )
    except (TypeError, ValueError) as err:
        raise ArgumentError("%s: %s" % (owner, err)) from None
    embeddings = data.get("embeddings")
    if embeddings is not None:
        scorer = data.get("scorer")
        # (settings held by a class are checked twice: the second time the
        # scorer is the one built here from these embeddings)
        built_here = scorer is embeddings or getattr(scorer, "embedder", None) is embeddings
        if scorer not in (None, default_scorer) and not built_here:
            raise ArgumentError("%s: give embeddings= or scorer=, not both" % owner)
        if not built_here:
            data["scorer"] = embedding_scorer_for(embeddings)
    return data


class CallOverrides(TypedDict, total=False):
    """The per-call overrides, declared once: the keywords of LangChain
    ``retriever.invoke(query, ...)`` and of LlamaIndex
    ``retriever.retrieve_with_selection(query, ...)``.

    Example::

        retriever.invoke("deploy", k=3, tags=["ops"], namespace=("team-a", "global"))
    """

    k: Optional[int]
    """Contextual cap for this call (see :attr:`SelectionSettings.k`)."""
    tags: Optional[Sequence[str]]
    """Tags of the scoring context (a list; a bare string is refused)."""
    project: Optional[str]
    """Project of the scoring context, instead of :attr:`SelectionSettings.project`."""
    now: Optional[datetime.datetime]
    """Reference time of this call, instead of :attr:`SelectionSettings.now`."""
    namespace: Union[None, str, Sequence[str]]
    """Replaces the visibility's namespace for this call: one namespace or an explicit chain."""
    goal: Optional[str]
    """The task's goal for ``pools="auto"`` (weight 2; default: the query stands in)."""
    action_type: Optional[str]
    """What the agent is doing, for ``pools="auto"`` (weight 3), e.g. ``"run_tests"``."""
    phase: Optional[str]
    """The task's phase, for ``pools="auto"`` (weight 4, the strongest), e.g. ``"debugging"``."""


class SelectionSettings(BaseModel):
    """What every adapter selects with; the per-call overrides of the
    LangChain retriever (``k``, ``tags``, ``project``, ``now``,
    ``namespace``) replace these for one call only.

    Example (the settings alone; adapters take the same keywords)::

        settings = SelectionSettings(pools=[Pool("notes", 400, 6)], k=3)
        options = settings.options_for("deploy", tags=["ops"])
        settings.returned(settings.select_from(entries, options), options)   # <= 3 contextual
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    pools: Union[List[Pool], str] = Field(
        description=(
            "The pool plan: reserved token and entry budgets per group of types, filled in order. Or 'auto': "
            "each call detects the task type (query, goal, action_type, phase) and shares total_tokens and "
            "total_entries out by that type's preset (memory.tasks.resolve_pools)."
        )
    )
    total_tokens: Optional[int] = Field(default=None, description="pools='auto': the token budget to share out.")
    total_entries: Optional[int] = Field(default=None, description="pools='auto': the entry budget to share out.")
    goal: Optional[str] = Field(default=None, description="pools='auto': the task's goal (per call: goal=).")
    action_type: Optional[str] = Field(
        default=None, description="pools='auto': what the agent is doing (per call: action_type=)."
    )
    phase: Optional[str] = Field(default=None, description="pools='auto': the task's phase (per call: phase=).")
    progressive: bool = Field(
        default=False,
        description=(
            "Progressive loading (seed 003): summaries for breadth, full text for the best entries while room "
            "remains or when the query asks for detail; returned objects say which layer loaded. Off: seed 001."
        ),
    )
    embeddings: Optional[Any] = Field(
        default=None,
        exclude=True,
        description=(
            "The framework's embeddings object (LangChain Embeddings, LlamaIndex BaseEmbedding): ranks with an "
            "EmbeddingScorer over it (cosine relevance). Give it or scorer=, not both."
        ),
    )
    k: Optional[int] = Field(
        default=None,
        description=(
            "Cap on contextual results per call, dealt round-robin across pools (a small k still reaches "
            "every pool); always-scope results come on top of it. None: the pools' own caps only."
        ),
    )
    token_counter: Optional[TokenCounter] = Field(
        default=None,
        exclude=True,
        description=(
            "Cost of an entry without a positive token_count. None: the framework's counter (LangChain: "
            "tiktoken o200k_base, offline; LlamaIndex: its global tokenizer, the one Memory uses)."
        ),
    )
    scorer: Scorer = Field(
        default=default_scorer,
        exclude=True,
        description="Ranking function scorer(entry, context, *, now=None) -> float (default: the spec's scorer).",
    )
    visibility: Optional[Visibility] = Field(
        default=None,
        description=(
            "Which entries a query may see at all: exact namespace or an explicit chain, required tags (AND), "
            "required source. None: no filter. Provenance is not required by default: dropping an unsourced "
            "correction would be worse than showing it with an empty source, which the marker makes visible."
        ),
    )
    project: Optional[str] = Field(default=None, description="Project of the scoring context (same x1.5, other x0.5).")
    now: Optional[datetime.datetime] = Field(
        default=None, description="Fixed reference time for recency (None: the time of each call)."
    )

    _last: Optional[Selection] = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        # Checked before pydantic sees them, so a bad argument raises an
        # error that names it instead of a wrapped validation report, and
        # pydantic's lax mode cannot turn k="3" into 3.
        data = checked_settings(type(self).__name__, data, self.known_keywords())
        super().__init__(**data)
        if self.token_counter is None:
            self.token_counter = self.fallback_counter()

    @classmethod
    def held_by(cls: Type[_S], owner: str, **data: Any) -> _S:
        """Settings held by a class that is not a pydantic model (errors and
        the deprecation warning name ``owner``, the class the caller used)."""
        return cls(**checked_settings(owner, data, cls.known_keywords()))

    @classmethod
    def known_keywords(cls) -> List[str]:
        """The constructor keywords: every declared field."""
        return list(cls.model_fields)

    @classmethod
    def fallback_counter(cls) -> TokenCounter:
        """The token counter used when none is given (tiktoken
        ``o200k_base``; LlamaIndex classes use LlamaIndex's tokenizer)."""
        from .tokens import default_counter

        return default_counter()

    @property
    def last_selection(self) -> Optional[Selection]:
        """The selection of the call that finished last (None before the
        first). With concurrent calls on one object that is not necessarily
        yours: use :func:`~poolsplit_adapters.reports.capture_selections`
        (or the framework's selection event) for a call's own selection."""
        return self._last

    def record(self, selection: Selection) -> Selection:
        """Keep ``selection`` as :attr:`last_selection` and hand it to every
        active :func:`~poolsplit_adapters.reports.capture_selections`."""
        self._last = selection
        return record(selection)

    def options_for(self, message: str, **overrides: Unpack[CallOverrides]) -> CallOptions:
        """One call's options: these settings, with the per-call
        :class:`CallOverrides` that were given (each checked, naming the
        argument; an unknown one raises)."""
        unknown = sorted(set(overrides) - set(CallOverrides.__annotations__))
        if unknown:
            raise ArgumentError(
                "unexpected per-call keyword argument(s) %s (known: %s)"
                % (", ".join(map(repr, unknown)), ", ".join(CallOverrides.__annotations__))
            )
        k, tags, project = overrides.get("k"), overrides.get("tags"), overrides.get("project")
        now, namespace = overrides.get("now"), overrides.get("namespace")
        task: Dict[str, Any] = {"message": message}
        for name in TASK_FIELDS:
            given = overrides.get(name)
            value = check_text(given, name) if given is not None else getattr(self, name)
            if value is not None:
                task[name] = value
        pools, detection = self.plan_for(task)
        return CallOptions(
            context={
                "message": message,
                "tags": check_tags(tags),
                "project": check_project(project) if project is not None else self.project,
            },
            visibility=self.visibility if namespace is None else self._with_namespace(namespace),
            k=check_k(k) if k is not None else self.k,
            now=check_now(now) if now is not None else self.now,
            pools=tuple(pools),
            detection=detection,
        )

    def plan_for(self, task: Mapping[str, Any]) -> Tuple[List[Pool], Optional[TaskDetection]]:
        """The pool plan of one call: the explicit pools, or (``pools="auto"``)
        the plan for the task ``task`` describes (``message``, ``goal``,
        ``action_type``, ``phase``), with the detection."""
        return resolve_pools(self.pools, task, total_tokens=self.total_tokens, total_entries=self.total_entries)

    def layering_for(self, options: CallOptions) -> Optional[ProgressiveLayers]:
        """The progressive fill of one call (None when ``progressive`` is off).
        A query asking for detail ("exact", "details", ...) gets full text."""
        if not self.progressive:
            return None
        assert self.token_counter is not None
        return ProgressiveLayers(self.token_counter, detail=wants_detail(options.context.get("message")))

    def annotate(
        self, selection: Selection, options: CallOptions, layering: Optional[ProgressiveLayers] = None
    ) -> Selection:
        """Add what this call decided to ``selection.notes``: the task
        detection (``task_type``, ``task``) and the progressive layers' token
        metrics (``metrics``, ``detail``, ``deepened``); an embedding
        scorer's fallback (``scorer_fallback``) the core records itself."""
        annotate(selection, options.detection, layering)
        return selection

    def _with_namespace(self, namespace: Union[str, Sequence[str]]) -> Visibility:
        chain: Any = tuple(namespace) if isinstance(namespace, list) else namespace
        try:
            return replace(self.visibility or Visibility(), namespace=chain)
        except (TypeError, ValueError) as err:
            raise ArgumentError("namespace: %s" % err) from None

    def select_from(
        self, entries: Sequence[Mapping[str, Any]], options: CallOptions, *, scorer: Optional[Scorer] = None
    ) -> Selection:
        """The core ``select`` over ``entries`` for one call (``scorer``:
        this call's view of the scorer, e.g. with a vector store's scores)."""
        assert self.token_counter is not None
        layering = self.layering_for(options)
        selection = select_noted(
            entries,
            list(options.pools),
            options.context,
            scorer=scorer if scorer is not None else self.scorer,
            token_counter=self.token_counter,
            now=options.now,
            visibility=options.visibility,
            layering=layering,
        )
        return self.annotate(selection, options, layering)

    def select_in(self, index: MemoryIndex, options: CallOptions) -> Selection:
        """The same selection from a prepared :class:`~poolsplit_adapters.MemoryIndex`."""
        layering = self.layering_for(options)
        selection = index.select(
            list(options.pools),
            options.context,
            now=options.now,
            scorer=self.scorer,
            visibility=options.visibility,
            layering=layering,
        )
        return self.annotate(selection, options, layering)

    def returned(self, selection: Selection, options: CallOptions) -> List[Chosen]:
        """What a call returns: ``selection`` capped by the call's ``k``."""
        return cap_round_robin(selection, options.k)


@dataclass(frozen=True)
class CallOptions:
    """The settings of one call, per-call overrides applied and checked.

    Attributes:
        context: the scoring context (``message``, ``tags``, ``project``).
        visibility: the visibility filter of this call.
        k: the contextual cap of this call.
        now: the reference time of this call (None: the core's clock).

    Example::

        options = settings.options_for("deploy", k=2)
        options.k, options.context["message"]   # (2, 'deploy')
    """

    context: Dict[str, Any]
    visibility: Optional[Visibility]
    k: Optional[int]
    now: Optional[datetime.datetime]
    pools: Tuple[Pool, ...] = ()
    detection: Optional[TaskDetection] = None


def annotate(
    selection: Selection,
    detection: Optional[TaskDetection],
    layering: Optional[ProgressiveLayers],
) -> Selection:
    """Record in ``selection.notes`` what a call decided around the core:
    ``task_type`` and ``task`` (the detection: scores, matched signals) for
    ``pools="auto"``; ``metrics`` (tokens per layer, savings), ``detail`` and
    ``deepened`` for progressive loading. (``scorer_fallback``, when an
    embedding scorer ranked lexically, the core records from the call's own
    prepared scorer: a scorer shared by concurrent calls cannot say which
    call fell back.) One rule, shared by every adapter and the agent
    middleware."""
    if detection is not None:
        selection.notes["task_type"] = detection.type
        selection.notes["task"] = detection.to_dict()
    if layering is not None:
        selection.notes.update(
            progressive_notes(token_metrics(selection.chosen), detail=layering.detail, deepened=layering.deepened)
        )
    return selection


def cap_round_robin(selection: Selection, k: Optional[int]) -> List[Chosen]:
    """The selection's render order, with at most ``k`` contextual entries.

    Always-scope entries are never cut (they are on top of ``k``). The ``k``
    contextual slots are dealt round-robin across pools in pool order, by
    rank within each pool, so a small ``k`` still reaches every pool instead
    of being eaten by the first one (which would bring type starvation back).
    """
    if check_k(k) is None:
        return list(selection.chosen)
    assert k is not None
    always = [c for c in selection.chosen if c.always]
    per_pool: Dict[str, List[Chosen]] = {}
    for c in selection.chosen:
        if not c.always:
            per_pool.setdefault(c.pool, []).append(c)
    keep: Dict[str, int] = {name: 0 for name in per_pool}
    left = k
    while left > 0 and any(keep[n] < len(v) for n, v in per_pool.items()):
        for name, ranked in per_pool.items():
            if left > 0 and keep[name] < len(ranked):
                keep[name] += 1
                left -= 1
    return always + [c for name, ranked in per_pool.items() for c in ranked[: keep[name]]]
