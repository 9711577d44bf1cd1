"""The recall plan: which candidates each pool asks a vector store for.

Pooling after one shared top-k recall only moves type starvation one stage
earlier: if the store's top 20 for a query holds no skill, no skill pool can
fill. So every pool recalls its own candidates with its types pushed down as
a filter, and always-scope entries are fetched by a scope filter, whatever
their similarity to the query. A namespace filter is pushed down into every
search too: filtered only after recall, a small tenant in a large shared
store would lose its candidates to the other tenants' top-k.

This module says *what* to search for, once, without any framework; each
adapter translates a :class:`Search` into its store's filter dialect
(LangChain: :func:`poolsplit_adapters.langchain.type_filter`; LlamaIndex:
``MetadataFilters``; a LangGraph ``BaseStore``, whose filters have no
``$in``: one ``SearchOp`` per type, in ``BaseStoreMemory``) and embeds the
query once for all of them. A store that can read a namespace exactly and
needs no similarity ranking reads it once and keeps what :meth:`RecallPlan.admits`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Protocol, Tuple, TypeVar, runtime_checkable

from .poolsplit import Pool, Visibility

#: The type an entry without ``type`` has (the entry schema's default). A
#: store filter on ``type`` does not see that default, so the plan adds a
#: search for untyped entries to every pool that admits it.
UNTYPED_DEFAULT = "note"

T = TypeVar("T")


@dataclass(frozen=True)
class Search:
    """One similarity search of the plan, in no particular filter dialect.

    Attributes:
        label: names the search in traces: ``"pool:<name>"``,
            ``"pool:<name>:untyped"`` or ``"always"``.
        k: how many results to ask for.
        types: the ``type`` metadata must be one of these; None: any type
            (or, with ``untyped``, none).
        untyped: only entries *without* ``type`` metadata (they count as
            :data:`UNTYPED_DEFAULT`). A dialect that cannot say "missing"
            searches without a type condition instead and lets the selector
            sort the candidates out.
        always: only entries with ``scope == "always"``.
        namespaces: the ``namespace`` metadata must be one of these; empty:
            no namespace condition (also when the visibility chain has a
            ``None`` link).

    Example::

        Search("pool:skills", 20, types=("skill",), namespaces=("team-a",))
    """

    label: str
    k: int
    types: Optional[Tuple[str, ...]] = None
    untyped: bool = False
    always: bool = False
    namespaces: Tuple[str, ...] = ()

    def admits(self, entry: Mapping[str, Any]) -> bool:
        """Whether this search's filter matches ``entry``, as a store filter
        would (``type`` as written, not its default): for a store that reads
        a namespace whole and keeps what the plan's searches would find."""
        if self.namespaces and entry.get("namespace") not in self.namespaces:
            return False
        if self.always:
            return entry.get("scope") == "always"
        if self.untyped:
            return entry.get("type") is None
        return self.types is None or entry.get("type") in self.types


@dataclass(frozen=True)
class RecallPlan:
    """Per-pool recall sizes, and the searches they make for one query.

    Attributes:
        pools: the pool plan the candidates are for.
        fetch_k: results per pool search. Larger finds more candidates for
            each pool's budget to choose from, at the cost of a bigger search.
        always_k: results of the one always-scope fetch. It should exceed
            the number of corrections the store can hold: a fetch that comes
            back full is warned about (:meth:`check_always_fetch`), since a
            correction cut there would never load.

    Example::

        plan = RecallPlan([Pool("skills", 100, 2, ("skill",))], fetch_k=10)
        [s.label for s in plan.searches()]   # ['pool:skills', 'always']
    """

    pools: Sequence[Pool]
    fetch_k: int = 20
    always_k: int = 1000

    def __post_init__(self) -> None:
        for name in ("fetch_k", "always_k"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError("%s must be a positive int, got %r" % (name, value))
        object.__setattr__(self, "pools", tuple(self.pools))

    def searches(self, visibility: Optional[Visibility] = None) -> List[Search]:
        """The searches for one query, in a fixed order: each pool's (pool
        order), then the always-scope fetch."""
        chain = visibility.chain if visibility is not None else ()
        # A None link (entries without a namespace) is not pushed down: store
        # filter dialects cannot all say "missing". The search then has no
        # namespace condition and the selector's visibility check, which is
        # exact, sorts the candidates out.
        namespaces: Tuple[str, ...] = () if None in chain else tuple(n for n in chain if n is not None)
        plan: List[Search] = []
        for pool in self.pools:
            if not pool.loads_contextual:
                continue  # nothing contextual can load; its always-scope entries come below
            label = "pool:%s" % pool.name
            plan.append(Search(label, self.fetch_k, types=pool.types, namespaces=namespaces))
            if pool.types is not None and UNTYPED_DEFAULT in pool.types:
                plan.append(Search(label + ":untyped", self.fetch_k, untyped=True, namespaces=namespaces))
        plan.append(Search("always", self.always_k, always=True, namespaces=namespaces))
        return plan

    def admits(self, entry: Mapping[str, Any], visibility: Optional[Visibility] = None) -> bool:
        """Whether some search of the plan would recall ``entry`` (for a
        store that read the namespace whole instead of searching)."""
        return any(search.admits(entry) for search in self.searches(visibility))

    def collect(self, searches: Sequence[Search], results: Sequence[Sequence[T]]) -> List[T]:
        """Every search's results, in plan order (duplicates included).

        Warns when the always-scope fetch came back full: it may have been
        truncated, and a correction cut there would never load.
        """
        found: List[T] = []
        for search, items in zip(searches, results):
            if search.always and len(items) >= self.always_k:
                warnings.warn(
                    "the always-scope fetch returned always_k=%d results and may have been truncated: "
                    "raise always_k so that every correction loads" % self.always_k,
                    stacklevel=4,
                )
            found += items
        return found


def merge_recalled(found: Iterable[T], key: Callable[[T], Optional[str]]) -> List[T]:
    """The candidates of all searches, each id once, in id order.

    The searches overlap (an always-scope skill is found by the skill pool
    and by the always fetch), and one id is one stored object. Recall order
    is similarity order, which changes with every query; id order keeps the
    always-scope entries (and complete ties) in a stable order. Candidates
    without an id are kept, after the others, in recall order.
    """
    by_id: Dict[str, T] = {}
    anonymous: List[T] = []
    for item in found:
        item_id = key(item)
        if item_id is None:
            anonymous.append(item)
        else:
            by_id.setdefault(item_id, item)
    return [by_id[i] for i in sorted(by_id)] + anonymous


def store_metric(store: Any, given: Any = None) -> Any:
    """The :class:`~poolsplit_adapters.memory.similarity.StoreMetric` of a
    vector store's scores: ``given`` (a metric or its name: ``"cosine"``,
    ``"cosine_distance"``, ``"euclidean"``, ...), else the known rule for the
    store (:func:`~poolsplit_adapters.memory.similarity.metric_for`: e.g.
    cosine for LangChain's ``InMemoryVectorStore``), else None: an unknown
    store's score is never guessed at (a distance read as a similarity would
    invert the ranking), and the scorer embeds the recalled entries itself
    instead. This is the ``store_metric`` setting of both frameworks' vector
    store retrievers."""
    from .memory.similarity import StoreMetric, metric_for

    if given is not None:
        try:
            return StoreMetric(given)
        except ValueError:
            raise ValueError(
                "store_metric must be one of %s, got %r" % (", ".join(m.value for m in StoreMetric), given)
            ) from None
    try:
        return metric_for(store)
    except ValueError:
        return None


@runtime_checkable
class EmbeddingScorerLike(Protocol):
    """An optional capability of a scorer: it embeds with a model
    (``EmbeddingScorer``), so a vector store's scores can stand in for its
    own cosines when both use the same model."""

    embedder: Any
    model_id: str


def same_vector_space(scorer: Any, embeddings: Any) -> bool:
    """Whether ``scorer`` (an EmbeddingScorer) embeds with ``embeddings``, the
    store's model: the same object, or the same model id. Only then is the
    store's score the cosine the scorer would compute."""
    if embeddings is None or not isinstance(scorer, EmbeddingScorerLike) or scorer.embedder is None:
        return False
    if scorer.embedder is embeddings:
        return True
    from .memory.embedding import EmbeddingScorer

    try:
        return bool(scorer.model_id == EmbeddingScorer(embeddings).model_id)
    except TypeError:
        return False


def with_store_scores(scorer: Any, scores: Mapping[str, float], metric: Any) -> Any:
    """``scorer`` taking the relevance of the recalled entries from the store
    (``scores``: entry id -> the store's score, turned into a cosine by
    :func:`~poolsplit_adapters.memory.similarity.relevance_from_store_score`)
    instead of embedding them again on every query. Unchanged when there are
    no scores or no metric."""
    if not scores or metric is None:
        return scorer
    from .memory.similarity import relevance_from_store_score

    return scorer.with_known_relevance({i: relevance_from_store_score(s, metric) for i, s in scores.items()})


class VisibleEntries:
    """The entries a query may see, as a source for the expand tool
    (:func:`~poolsplit_adapters.memory.expand.expand`): ``get(id)`` answers
    only for an entry that ``visibility`` (and ``allowed``, when given)
    admits, so an agent cannot read another namespace's memory by guessing
    an id. Inactive (superseded) entries stay readable by id: the marker a
    model saw may be older than the supersession.

    Example::

        tool = langchain_expand_tool(VisibleEntries(index, Visibility(namespace="team-a")))
    """

    def __init__(
        self,
        entries: Iterable[Mapping[str, Any]],
        visibility: Optional[Visibility] = None,
        allowed: Optional[Callable[[Mapping[str, Any]], bool]] = None,
    ) -> None:
        self.entries = entries
        self.visibility = visibility
        self.allowed = allowed

    def visible(self, entry: Mapping[str, Any]) -> bool:
        """Whether a query may see ``entry``."""
        if self.visibility is not None and self.visibility.judge(entry)[0] is not None:
            return False
        return self.allowed is None or self.allowed(entry)

    def get(self, entry_id: str) -> Optional[Mapping[str, Any]]:
        """The visible entry with this id (the first, in input order), else None."""
        for entry in self.entries:
            if isinstance(entry, Mapping) and entry.get("id") == entry_id and self.visible(entry):
                return entry
        return None
