"""One adapter call, step by step; every adapter class goes through it.

The seven adapter classes (LangChain ``PoolSplitRetriever``,
``PoolSplitCompressor`` and ``PoolSplitMemoryMiddleware``; LlamaIndex
``PoolSplitRetriever``, ``PoolSplitNodePostprocessor`` and the two memory
blocks through ``PoolSplitMemoryStore.select_for``) convert framework
objects to entries and back, and leave everything in between to an
`AdapterCall`:

1. **options**: the `AdapterSettings`
   with this call's `CallOverrides`,
   each checked (`check_overrides`);
2. **plan**: the explicit pools (checked at construction; the core's
   ``select`` checks them once per call), or for ``pools="auto"`` the plan
   for the task the message and the signals describe;
3. **layering**: progressive loading's layers (None: the spec's fill);
4. **select**: the core ``select`` over entries, ``MemoryIndex.select``, or
   a selection the caller's store made over its recalled candidates;
5. **annotate**: the task detection, the layers' token metrics and the
   expired ids (``notes["expired"]``) in ``selection.notes`` (an embedding
   scorer's fallback the core notes itself, from the call's own prepared
   scorer);
6. **record**: ``last_selection``, every active
   [`capture_selections`][poolsplit_adapters.langchain.capture_selections]; the framework
   event carries `event_payload`;
7. **cap**: at most ``k`` contextual results, dealt round-robin across
   pools (`cap`).
"""

from __future__ import annotations

import datetime
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Generic, List, Optional, TypeVar, Union

from .checks import ArgumentError, check_callable, check_flag, check_given, check_k, check_overrides
from .memory.expiry import note_expired
from .memory.metrics import token_metrics
from .memory.progressive import ProgressiveLayers, progressive_notes, wants_detail
from .memory.tasks import (
    AUTO,
    TaskDetection,
    filled_spilling,
    noted_task,
    resolve_pools,
    spill_standing,
    spilled_to,
)
from .poolsplit import Chosen, Pool, Scorer, Selection, Visibility
from .recall import (
    FillingRecall,
    RecallPlan,
    Search,
    afill,
    fill,
    present_types,
    store_metric,
    warming_recall,
    with_store_scores,
)
from .render import RenderedCounter
from .reports import record, select_noted
from .settings import TASK_FIELDS, AdapterSettings, CallOverrides
from .tokens import TokenizerCounter

_T = TypeVar("_T")

if TYPE_CHECKING:
    from .index import MemoryIndex

__all__ = [
    "AdapterCall",
    "CallOptions",
    "StoreCall",
    "cap",
    "checked_metric",
    "checked_plan",
    "label_plain",
    "record_selection",
    "select_given",
]


#: The per-call keywords (CallOverrides, declared in settings).
_OVERRIDES = tuple(CallOverrides.__annotations__)


def label_plain(key: str) -> str:
    """How an error names a per-call keyword given as a keyword: itself."""
    return key


@dataclass(frozen=True)
class CallOptions:
    """The settings of one call, per-call overrides applied and checked.

    Attributes:
        context: the scoring context (``message``, ``tags``, ``project``).
        visibility: the visibility filter of this call.
        k: the contextual cap of this call.
        now: the reference time of this call (None: the core's clock).
        pools: this call's pool plan.
        detection: the task detection (``pools="auto"``), else None.
        layering: the progressive fill of this call (None: the spec's).
        task: what the plan was made for (``message`` and the signals given).

    Example:
        ```python
        options = AdapterCall(settings, "deploy", {"k": 2}).options
        options.k, options.context["message"]   # (2, 'deploy')
        ```
    """

    context: dict[str, Any]
    visibility: Optional[Visibility]
    k: Optional[int]
    now: Optional[datetime.datetime]
    pools: tuple[Pool, ...] = ()
    detection: Optional[TaskDetection] = None
    layering: Optional[ProgressiveLayers] = None
    task: dict[str, Any] = field(default_factory=dict)


class AdapterCall:
    """One adapter call: options, plan and layering when built; then select,
    annotate, record and cap.

    Args:
        settings: the adapter's settings.
        message: the query (the scoring context's ``message``).
        overrides: this call's `CallOverrides`
            (checked here; an unknown key raises).
        named: how an error names an override (default: its keyword; the
            middleware's come from ``runtime.context``).
        entry_types: for ``pools="auto"`` only (not called otherwise): the
            entry types the adapter's source holds, or None when it cannot
            list them; the settings' ``entry_types`` take precedence.

    Example:
        ```python
        call = AdapterCall(retriever, "did the deploy finish?", {"k": 3})
        selection = call.select(entries)          # steps 4-5
        returned = call.finish(selection)         # steps 6-7
        ```
    """

    def __init__(
        self,
        settings: AdapterSettings,
        message: str,
        overrides: Optional[Mapping[str, Any]] = None,
        *,
        named: Callable[[str], str] = label_plain,
        entry_types: Optional[Callable[[], Optional[Collection[str]]]] = None,
    ) -> None:
        self.settings = settings
        if not isinstance(message, str):  # before any search embeds it or any store sees it
            raise ArgumentError("the query must be a string, got %s %r" % (type(message).__name__, message))
        # 1. options
        given = check_overrides(overrides or {}, _OVERRIDES, named)
        own = {"goal": settings.goal, "action_type": settings.action_type, "phase": settings.phase}
        task: dict[str, Any] = {"message": message}
        for name in TASK_FIELDS:
            value = given.get(name)
            value = value if value is not None else own[name]
            if value is not None:
                task[name] = value
        # 2. plan
        types: Optional[Collection[str]] = settings.entry_types
        if types is None and entry_types is not None and settings.pools == AUTO:
            types = entry_types()  # what the source holds: the plan shares the budget among those types
        pools, detection = resolve_pools(
            settings.pools,
            task,
            total_tokens=settings.total_tokens,
            total_entries=settings.total_entries,
            entry_types=types if settings.pools == AUTO else None,
            collections=settings.collections,
        )
        namespace = given.get("namespace")
        project, k, now = given.get("project"), given.get("k"), given.get("now")
        self.options = CallOptions(
            context={
                "message": message,
                "tags": given["tags"],
                "project": project if project is not None else settings.project,
            },
            visibility=settings.visibility if namespace is None else _with_namespace(settings.visibility, namespace),
            k=k if k is not None else settings.k,
            now=now if now is not None else settings.now,
            pools=tuple(pools),
            detection=detection,
            # 3. layering
            layering=self._layering(message),
            task=task,
        )

    def _layering(self, message: str) -> Optional[ProgressiveLayers]:
        """Progressive loading's layers when ``progressive`` is on; a query
        asking for detail ("exact", "details", ...) gets full text."""
        if not self.settings.progressive:
            return None
        return ProgressiveLayers(self.settings.token_counter, detail=wants_detail(message))

    @property
    def scorer(self) -> Scorer:
        """The scorer of this call (the settings', resolved at construction)."""
        return self.settings.scorer

    # 4. select (+ 5. annotate) ---------------------------------------------------------

    def select(self, entries: Sequence[Mapping[str, Any]], *, scorer: Optional[Scorer] = None) -> Selection:
        """The core ``select`` over ``entries`` (``scorer``: this call's
        view of the scorer, e.g. with a vector store's scores)."""
        options = self.options
        return self.annotate(
            self.filled(
                lambda pools: select_noted(
                    entries,
                    pools,
                    options.context,
                    scorer=scorer if scorer is not None else self.scorer,
                    token_counter=self.settings.token_counter,
                    now=options.now,
                    visibility=options.visibility,
                    layering=options.layering,
                )
            )
        )

    def select_in(self, index: MemoryIndex) -> Selection:
        """The same selection from a prepared [`MemoryIndex`][]."""
        options = self.options
        return self.annotate(
            self.filled(
                lambda pools: index.select(
                    pools,
                    options.context,
                    now=options.now,
                    scorer=self.scorer,
                    visibility=options.visibility,
                    layering=options.layering,
                )
            )
        )

    def filled(self, fill: Callable[[List[Pool]], Selection]) -> Selection:
        """``fill`` of this call's plan; for a task plan (``pools="auto"``,
        no progressive layering), filled again when its standing pool's
        unused room can go to pools that cut entries (`spill_standing`)."""
        return filled_spilling(self.options.pools, fill) if self._spills else fill(list(self.options.pools))

    async def afilled(self, fill: Callable[[List[Pool]], Awaitable[Selection]]) -> Selection:
        """Async `filled`."""
        selection = await fill(list(self.options.pools))
        again = spill_standing(self.options.pools, selection) if self._spills else None
        return selection if again is None else spilled_to(await fill(again), self.options.pools, again)

    @property
    def _spills(self) -> bool:
        """Whether this call's plan may fill twice (`filled`): a task plan
        (``pools="auto"``) without progressive layering."""
        return self.settings.pools == AUTO and self.options.layering is None

    def annotate(self, selection: Selection) -> Selection:
        """5. Record in ``selection.notes`` what this call decided around the
        core: ``task_type`` and ``task`` (the detection: scores, matched
        signals) for ``pools="auto"``; ``metrics`` (tokens per layer,
        savings), ``detail`` and ``deepened`` for progressive loading;
        ``expired``, the ids the selection dropped as expired
        (`note_expired`, as every
        store's ``select`` notes them): every adapter's selection passes
        here, whichever path made it.

        Notes a selection already has are kept: a selection made by a nested
        adapter call (the middleware over a vector store goes through the
        retriever) was annotated by the call whose layering it used.
        """
        layering = self.options.layering
        noted_task(selection, self.options.detection)
        if layering is not None and "metrics" not in selection.notes:
            selection.notes.update(
                progressive_notes(token_metrics(selection.chosen), detail=layering.detail, deepened=layering.deepened)
            )
        return note_expired(selection)

    # 6. record, 7. cap ------------------------------------------------------------------

    def record(self, selection: Selection) -> Selection:
        """6. `record_selection` for this call's settings."""
        return record_selection(self.settings, selection)

    def finish(self, selection: Selection) -> list[Chosen]:
        """6 and 7: what the call returns (the selection capped by the call's
        ``k``), then record ``selection``. When ``k`` cut entries, the
        progressive token metrics describe what was returned, not what the
        fill loaded before the cut (whose entries the cut line reports)."""
        returned = cap(selection, self.options.k)
        layering = self.options.layering
        if layering is not None and len(returned) < len(selection.chosen):
            metrics = token_metrics(returned)
            selection.notes.update(progressive_notes(metrics, detail=layering.detail, deepened=layering.deepened))
        self.record(selection)
        return returned


def record_selection(settings: AdapterSettings, selection: Selection) -> Selection:
    """Keep ``selection`` as ``settings.last_selection`` and hand it to every
    active [`capture_selections`][poolsplit_adapters.langchain.capture_selections] (also for
    a selection an adapter reuses, as the two memory blocks of one
    ``Memory.aget`` share one)."""
    settings.keep_last(selection)
    return record(selection)


def _with_namespace(visibility: Optional[Visibility], namespace: Union[str, Sequence[str]]) -> Visibility:
    chain: Any = tuple(namespace) if isinstance(namespace, list) else namespace
    try:
        return replace(visibility or Visibility(), namespace=chain)
    except (TypeError, ValueError) as err:
        raise ArgumentError("namespace: %s" % err) from None


def cap(selection: Selection, k: Optional[int]) -> list[Chosen]:
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
    per_pool: dict[str, list[Chosen]] = {}
    for c in selection.chosen:
        if not c.always:
            per_pool.setdefault(c.pool, []).append(c)
    keep: dict[str, int] = {name: 0 for name in per_pool}
    left = k
    while left > 0 and any(keep[n] < len(v) for n, v in per_pool.items()):
        for name, ranked in per_pool.items():
            if left > 0 and keep[name] < len(ranked):
                keep[name] += 1
                left -= 1
    return always + [c for name, ranked in per_pool.items() for c in ranked[: keep[name]]]


class StoreCall(Generic[_T]):
    """One call's per-pool recall over a vector store, grown round by round
    until the budgets are filled (`FillingRecall`), each round selecting
    over every candidate so far, with the store's scores when they serve
    the scorer: both retrievers' (LangChain's over a ``VectorStore``,
    LlamaIndex's over a ``VectorStoreIndex``), whose searcher's
    `run` gives each round's hits.

    Args:
        call: the adapter call.
        plan: the recall's search sizes; the call's own pools are planned
            with them.
        scorer: the call's scorer (holding the query's vector when the
            store's vector space is the scorer's).
        metric: what the store's scores measure (None: unknown, unused).
        entries: the candidates (the searcher's hits) as entries, and the
            way back to each.
        scores_of: the store's scores of the candidates by id, read from
            the hits (None: the scorer takes none).
    """

    def __init__(
        self,
        call: AdapterCall,
        plan: RecallPlan,
        scorer: Any,
        metric: Any,
        entries: Callable[[list[_T]], tuple[list[dict[str, Any]], dict[int, Any]]],
        scores_of: Optional[Callable[[list[_T]], Mapping[str, float]]] = None,
    ) -> None:
        self.call, self.scorer, self.metric, self.entries, self.scores_of = call, scorer, metric, entries, scores_of
        plan = replace(plan, pools=tuple(call.options.pools))
        self.rounds: FillingRecall[_T] = FillingRecall(plan, call.options.visibility)
        self.source: dict[int, Any] = {}

    def fill(self, search: Callable[[list[Search]], Sequence[Sequence[_T]]]) -> Selection:
        """Run the rounds (`fill`): ``search`` runs a round's searches (one
        result list each), each round selects over every candidate so far
        (`choose`); the last round's selection. A searcher that runs its
        searches on threads hands each one's texts to `warm` as they arrive
        (`recalled_texts`)."""
        with warming_recall(self.warm):
            return fill(self.rounds, search, self.choose)

    async def afill(self, search: Callable[[list[Search]], Awaitable[Sequence[Sequence[_T]]]]) -> Selection:
        """`fill` with an async ``search``."""
        return await afill(self.rounds, search, self.choose)

    def warm(self, texts: List[str]) -> None:
        """Count the tokens of ``texts`` (recalled candidates' contents) into
        the cache this call's selection reads, when the call counts with a
        cached tokenizer of this package (`TokenizerCounter`, the default).
        Thread-safe; decides nothing: the selection then finds each count
        in the cache (`recalled_texts`). The words are left to the
        selection: their analysis is Python under the GIL, and done here it
        held back the other searches' threads (measured: the round grew by
        about what the selection saved)."""
        counter = self.call.settings.token_counter
        inner = counter.inner if isinstance(counter, RenderedCounter) else counter
        if isinstance(inner, TokenizerCounter):
            inner.count_many(texts)

    def choose(self, candidates: list[_T]) -> Selection:
        """The selection over every candidate so far."""
        scores = {} if self.scores_of is None else self.scores_of(candidates)
        entries, self.source = self.entries(candidates)
        return self.call.select(entries, scorer=with_store_scores(self.scorer, scores, self.metric))


def checked_plan(**sizes: Any) -> RecallPlan:
    """A recall plan of the search sizes only (each call's pools are its
    own), a bad size an `ArgumentError`."""
    try:
        return RecallPlan([], **sizes)
    except ValueError as err:
        raise ArgumentError(str(err)) from None


def check_recall_options(options: Mapping[str, Any], sources: Mapping[str, tuple[type, str]] = {}) -> None:
    """A vector-store adapter's own recall options (``fetch_k``,
    ``always_k``, ``max_fetch_k``, ``breadth``, ``setup_store``,
    ``filter_builder``) checked as the caller gave them, before pydantic's
    lax mode reads ``True`` as a search of 1 or ``"5"`` as 5 (the shared
    settings are checked first for the same reason, `AdapterSettings`),
    and each of its ``sources`` given (name -> the framework's class and
    what it is), before pydantic's four-line error for another kind."""
    for name, (kind, what) in sources.items():
        if options.get(name) is not None:
            check_given(options[name], kind, name, what)
    checked_plan(**{k: options[k] for k in ("fetch_k", "always_k", "max_fetch_k", "breadth") if k in options})
    if "setup_store" in options:
        check_flag(options["setup_store"], "setup_store")
    check_callable(options.get("filter_builder"), "filter_builder")


def checked_metric(store: Any, given: Any) -> Any:
    """`store_metric` of ``store`` (``given``: the caller's), a bad one an `ArgumentError`."""
    try:
        return store_metric(store, given)
    except ValueError as err:
        raise ArgumentError(str(err)) from None


def select_given(
    settings: AdapterSettings, query: str, entries: list[dict[str, Any]]
) -> tuple[Selection, list[Chosen]]:
    """One call over the entries a caller handed over (the LangChain
    compressor's documents, the LlamaIndex postprocessor's nodes), whose
    types ``pools="auto"`` plans for: the selection and what it returns."""
    call = AdapterCall(settings, query, entry_types=lambda: present_types(entries))
    selection = call.select(entries)
    return selection, call.finish(selection)
