"""The settings every adapter selects with, declared once, with their docs.

The seven adapter classes (LangChain ``PoolSplitRetriever``,
``PoolSplitCompressor`` and ``PoolSplitMemoryMiddleware``; LlamaIndex
``PoolSplitRetriever``, ``PoolSplitNodePostprocessor`` and the memory blocks
through ``PoolSplitMemoryStore``) select with the settings of
`AdapterSettings`: the pydantic classes inherit it, the others hold
one. Declared here, with their documentation, a default or a meaning cannot
drift between two copies. The per-call overrides are declared here too
(`CallOverrides`); what a call does with both lives in
`poolsplit_adapters.call`, and every check in
`poolsplit_adapters.checks`.

The two defaults a caller may leave out are chosen in one place each:
`default_adapter_scorer` and `default_adapter_counter`.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any, ClassVar, Optional, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from typing_extensions import TypedDict

from .checks import ArgumentError, check_keywords_only, checked_settings, own_keywords
from .defaults import default_adapter_scorer, hybrid_scorer
from .memory.tasks import COLLECTIONS, planned_pool_names
from .poolsplit import Pool, Scorer, Selection, TokenCounter, Visibility
from .render import RenderedCounter
from .tokens import default_counter, llama_index_counter

__all__ = [
    "AdapterSettings",
    "AgentMemorySettings",
    "CallOverrides",
    "Framework",
    "RenderedSettings",
    "TASK_FIELDS",
    "default_adapter_counter",
    "default_adapter_scorer",
    "embedding_scorer_for",
    "recall_options",
    "rendered_counter",
]

_S = TypeVar("_S", bound="AdapterSettings")

#: The task signals a call may carry (read by ``pools="auto"``).
TASK_FIELDS = ("goal", "action_type", "phase")


class Framework(str, Enum):
    """Whose token counter an adapter counts with by default."""

    LANGCHAIN = "langchain"
    """tiktoken ``o200k_base``, offline (also the plain-Python default)."""
    LLAMA_INDEX = "llama_index"
    """LlamaIndex's global tokenizer, the one ``Memory`` counts with."""


def default_adapter_counter(framework: Framework = Framework.LANGCHAIN) -> TokenCounter:
    """The token counter of an adapter given no ``token_counter=``: the one
    place it is chosen. Counts are cached per text, process-wide."""
    if framework is Framework.LLAMA_INDEX:
        return llama_index_counter()
    return default_counter()


def embedding_scorer_for(embeddings: Any, name: str = "embeddings") -> Scorer:
    """The scorer of ``embeddings=``:
    `hybrid_scorer` (words and vectors
    together, as the adapters' default ranks words alone:
    `default_adapter_scorer`), with an error that names the argument
    (``name``). Until 0.5 it was a bare ``EmbeddingScorer`` (cosine alone, no
    exact names or numbers); ``scorer=EmbeddingScorer(e)`` still gives that."""
    try:
        return hybrid_scorer(embeddings)
    except TypeError as err:
        raise ArgumentError("%s: %s" % (name, err)) from None


def rendered_counter(counter: TokenCounter, data: dict[str, Any]) -> RenderedCounter:
    """``counter`` counting each entry's marker beside its text
    (`RenderedCounter`): a marker with the plan's longest pool name (for
    ``"auto"``, the longest the task plans may use), and the summary layer's
    attribute when loading is progressive."""
    pools = data["pools"]
    if isinstance(pools, str):
        names = planned_pool_names({**COLLECTIONS, **(data.get("collections") or {})})
    else:
        names = [pool.name for pool in pools]
    layer = "summary" if data.get("progressive") else "full"
    return RenderedCounter(counter, max(names, key=len, default=None), layer)


def recall_options(options: dict[str, Any], held: Mapping[str, Any], framework: Framework) -> dict[str, Any]:
    """A vector memory's ``select`` options (a store's) as its retriever's
    settings, in place: ``layering`` turns progressive loading on, and
    ``marker_cost`` (what [`MemoryIndex.select`][poolsplit_adapters.index.MemoryIndex.select]
    adds to each counted cost) makes the counter (the call's, else
    ``held``'s, the memory's own options, else the framework's default) a
    `RenderedCounter` with that overhead: an entry's ``token_count`` stays
    as given, every other cost gets its marker, as on the other stores."""
    if options.pop("layering", None) is not None:
        options["progressive"] = True
    marker_cost = options.pop("marker_cost", 0)
    if marker_cost:
        counter = options.get("token_counter") or held.get("token_counter") or default_adapter_counter(framework)
        options["token_counter"] = RenderedCounter(counter, overhead=marker_cost)
    return options


def _resolved(
    owner: str, data: dict[str, Any], known: Sequence[str], framework: Framework, rendered: bool = False
) -> dict[str, Any]:
    """``data`` checked (naming ``owner``), with the scorer and the token
    counter resolved: the given one, else ``embeddings=``'s scorer, else the
    defaults above; for ``rendered`` settings, the counter counts each
    entry's marker too (`rendered_counter`)."""
    data = checked_settings(owner, data, known)
    embeddings = data.get("embeddings")
    if embeddings is not None:
        if data.get("scorer") is not None:
            raise ArgumentError("%s: give embeddings= or scorer=, not both" % owner)
        data["scorer"] = embedding_scorer_for(embeddings)
    elif data.get("scorer") is None:
        data["scorer"] = default_adapter_scorer()
    if data.get("token_counter") is None:
        data["token_counter"] = default_adapter_counter(framework)
    if rendered:
        data["token_counter"] = rendered_counter(data["token_counter"], data)
    return data


class CallOverrides(TypedDict, total=False):
    """The per-call overrides, declared once: the keywords of LangChain
    ``retriever.invoke(query, ...)`` and of LlamaIndex
    ``retriever.retrieve_with_selection(query, ...)``.

    Example:
        ```python
        retriever.invoke("deploy", k=3, tags=["ops"], namespace=("team-a", "global"))
        ```
    """

    k: Optional[int]
    """Contextual cap for this call (see `AdapterSettings.k`)."""
    tags: Optional[Sequence[str]]
    """Tags of the scoring context (a list; a bare string is refused)."""
    project: Optional[str]
    """Project of the scoring context, instead of `AdapterSettings.project`."""
    now: Optional[datetime.datetime]
    """Reference time of this call, instead of `AdapterSettings.now`."""
    namespace: Union[None, str, Sequence[str]]
    """Replaces the visibility's namespace for this call: one namespace or an explicit chain."""
    goal: Optional[str]
    """The task's goal for ``pools="auto"`` (weight 2; default: the query stands in)."""
    action_type: Optional[str]
    """What the agent is doing, for ``pools="auto"`` (weight 3), e.g. ``"run_tests"``."""
    phase: Optional[str]
    """The task's phase, for ``pools="auto"`` (weight 4, the strongest), e.g. ``"debugging"``."""


class AdapterSettings(BaseModel):
    """What every adapter selects with; the per-call overrides
    (`CallOverrides`) replace some of these for one call only.

    Checked once, at construction, naming the argument (and the class the
    caller used). The
    scorer and the token counter are resolved here, so ``scorer`` and
    ``token_counter`` are never None on a built object.

    Example:
        The settings alone; adapters take the same keywords:

        ```python
        settings = AdapterSettings(pools=[Pool("notes", 400, 6)], k=3)
        call = AdapterCall(settings, "deploy", {"tags": ["ops"]})
        call.finish(call.select(entries))   # <= 3 contextual entries
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    #: Whose counter a subclass counts with by default (the LlamaIndex
    #: postprocessor sets LLAMA_INDEX; held settings say so in held_by).
    framework: ClassVar[Framework] = Framework.LANGCHAIN
    #: Whether the holder renders the selection into a prompt as markers
    #: (`RenderedSettings`): then each entry's marker counts in its cost.
    rendered: ClassVar[bool] = False

    pools: Union[list[Pool], str] = Field(
        description=(
            "The pool plan: reserved token and entry budgets per group of types, filled in order. Or 'auto': "
            "each call detects the task type (query, goal, action_type, phase) and shares total_tokens and "
            "total_entries out by that type's preset (memory.tasks.resolve_pools)."
        )
    )
    total_tokens: Optional[int] = Field(default=None, description="pools='auto': the token budget to share out.")
    total_entries: Optional[int] = Field(
        default=None, description="pools='auto': the entry budget to share out (None: as many as the tokens allow)."
    )
    goal: Optional[str] = Field(default=None, description="pools='auto': the task's goal (per call: goal=).")
    action_type: Optional[str] = Field(
        default=None, description="pools='auto': what the agent is doing (per call: action_type=)."
    )
    phase: Optional[str] = Field(default=None, description="pools='auto': the task's phase (per call: phase=).")
    entry_types: Optional[list[str]] = Field(
        default=None,
        description=(
            "pools='auto': the entry types the store holds, so the budget is shared among them "
            "(memory.tasks.plan_for_task). None: read from the source where it can list them (documents=, "
            "nodes=, InMemoryVectorStore, SimpleVectorStore), else a catch-all pool takes unknown types."
        ),
    )
    collections: Optional[dict[str, list[str]]] = Field(
        default=None,
        description=(
            "pools='auto': collection -> the entry types that fill it, merged over memory.tasks.COLLECTIONS. "
            "Map your own types onto the seed's collections (episodic, semantic, skills, anti_patterns) so that "
            "its task weights apply to them."
        ),
    )
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
            "The framework's embeddings object (LangChain Embeddings, LlamaIndex BaseEmbedding): ranks with a "
            "RelevanceScorer fusing BM25 and its cosine (embedding_scorer_for). Give it or scorer=, not both."
        ),
    )
    k: Optional[int] = Field(
        default=None,
        description=(
            "Cap on contextual results per call, dealt round-robin across pools (a small k still reaches "
            "every pool); always-scope results come on top of it. None: the pools' own caps only."
        ),
    )
    token_counter: TokenCounter = Field(  # given None, _resolved picks the framework's
        default_factory=default_adapter_counter,
        exclude=True,
        description=(
            "Cost of an entry without a positive token_count. None: the framework's counter "
            "(default_adapter_counter: tiktoken o200k_base, offline; for the LlamaIndex classes its global "
            "tokenizer, the one Memory uses)."
        ),
    )
    scorer: Scorer = Field(  # given None, _resolved picks embeddings='s scorer or the default
        default_factory=default_adapter_scorer,
        exclude=True,
        description=(
            "The ranking: a function scorer(entry, context, *, now=None) -> float, or any object with "
            "prepare(context, now) (PreparingScorer). None: words and vectors fused over "
            "embeddings= when given (embedding_scorer_for), else the adapters' default (default_adapter_scorer)."
        ),
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

    def __init__(self, *given: Any, **data: Any) -> None:
        # Checked before pydantic sees them, so a bad argument raises an
        # error that names it instead of a wrapped validation report, and
        # pydantic's lax mode cannot turn k="3" into 3.
        check_keywords_only(type(self).__name__, given)
        super().__init__(**_resolved(type(self).__name__, data, self.known_keywords(), self.framework, self.rendered))

    @classmethod
    def held_by(
        cls: type[_S], owner: str, framework: Framework = Framework.LANGCHAIN, own: Any = None, /, **data: Any
    ) -> _S:
        """Settings held by a class that is not a pydantic model (errors name
        ``owner``, the class the caller used),
        checked once (and so built without a second validation). ``own``,
        the owner's constructor: its own keywords are listed beside the
        settings' when an unknown one is refused, so a misspelt
        ``share_chat`` is told what it may be."""
        known = [*cls.known_keywords(), *own_keywords(own)]
        return cls.model_construct(**_resolved(owner, data, known, framework, cls.rendered))

    @classmethod
    def known_keywords(cls) -> list[str]:
        """The constructor keywords: every declared field."""
        return list(cls.model_fields)

    @property
    def last_selection(self) -> Optional[Selection]:
        """The selection of the call that finished last (None before the
        first). With concurrent calls on one object that is not necessarily
        yours: use [`capture_selections`][poolsplit_adapters.langchain.capture_selections]
        (or the framework's selection event) for a call's own selection."""
        return self._last

    def keep_last(self, selection: Selection) -> None:
        """Keep ``selection`` as `last_selection` (the call module's
        record step)."""
        self._last = selection


class RenderedSettings(AdapterSettings):
    """`AdapterSettings` of a holder that renders its selection into a
    prompt as markers (the LlamaIndex memory blocks; the agent middleware's
    `AgentMemorySettings`): each entry costs its text and its marker
    (`rendered_counter`), so the injected block keeps to the budget.

    Example:
        ```python
        settings = RenderedSettings.held_by("PoolSplitMemoryStore", Framework.LLAMA_INDEX, pools=pools)
        ```
    """

    rendered: ClassVar[bool] = True

    @property
    def text_counter(self) -> TokenCounter:
        """The counter of an entry's text alone (``token_counter`` without
        the marker): what a store the holder builds counts with, the marker
        coming per call (`marker_cost`), so it is counted once."""
        counter = self.token_counter
        return counter.inner if isinstance(counter, RenderedCounter) else counter

    @property
    def marker_cost(self) -> int:
        """The tokens ``token_counter`` adds to each count: a marker's
        (`RenderedCounter.overhead`), what a store of the contract adds to
        each cost it counted (``select(..., marker_cost=...)``)."""
        counter = self.token_counter
        return counter.overhead if isinstance(counter, RenderedCounter) else 0


class AgentMemorySettings(RenderedSettings):
    """`AdapterSettings` plus how the agent middleware reads its
    store (the middleware holds one; its backends read these).

    Example:
        ```python
        settings = AgentMemorySettings.held_by("PoolSplitMemoryMiddleware", pools=pools, fetch_k=50)
        ```
    """

    chain_penalty: float = Field(
        default=0.9, description="Score factor per namespace-chain link after the first (0 < x <= 1)."
    )
    fetch_k: Optional[int] = Field(
        default=None,
        description=(
            "Per-type recall size for indexed stores and vector stores (None: every item for a LangGraph "
            "store; for a vector store 20, its first round: it grows while a pool's budget has room)."
        ),
    )
