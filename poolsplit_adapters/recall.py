"""The recall plan: which candidates each pool asks a vector store for.

Pooling after one shared top-k recall only moves type starvation one stage
earlier: if the store's top 20 for a query holds no skill, no skill pool can
fill. So every pool recalls its own candidates with its types pushed down as
a filter, and always-scope entries are fetched by a scope filter, whatever
their similarity to the query. A namespace filter is pushed down into every
search too: filtered only after recall, a small tenant in a large shared
store would lose its candidates to the other tenants' top-k.

This module says *what* to search for, once, without any framework; each
adapter translates a `Search` into its store's filter dialect
(LangChain: [`poolsplit_adapters.langchain.type_filter`][]; LlamaIndex:
``MetadataFilters``; a LangGraph ``BaseStore``, whose filters have no
``$in``: one ``SearchOp`` per type, in ``BaseStoreMemory``) and embeds the
query once for all of them. A store that can read a namespace exactly and
needs no similarity ranking reads it once and keeps what `RecallPlan.admits`.

**Budgets are filled.** A pool's first search asks for ``fetch_k``
candidates; when the selection over them leaves that pool's budget with
room for an entry as short as one it loaded (`budget_filled`), and
the search came back full (the store may hold more), `FillingRecall`
runs it again with ``k`` at least doubled (more when the budget looks to
need more), up to ``max_fetch_k``, until the budget is full or the store
has nothing more. Which of the two stopped it is in
``selection.notes["recall"]``: a fixed top-k used to fill 462 of 1,024
tokens on a long conversation and say nothing.

**The ranking has a choice.** A full budget is not enough: if a pool's
candidates are only what its budget holds, the scorer's order (words and
vectors fused, [`relevance`][]) can only drop what the
store's own order would have loaded, never bring in a better match that
the store ranked below the budget line. So recall also grows until the
candidates a pool considered hold `RecallPlan.breadth` times its
budget (tokens or entries, whichever cap is its own): with the default 2,
the selection passes over at least as much as it loads. Measured on the
long-horizon set (``benchmarks/eval/README.md``): with candidates only to
fill the budget the vector-store paths were one to three evidence memories
short of the store's own top-k at 256 tokens; with twice the budget they
are above it at every budget.

**What a store lends the scorer.** A scorer that takes a vector store's
answers (`same_vector_space`, `takes_store_scores`) is found by its
capabilities (`poolsplit_adapters.relevance.capabilities`), not by its class:
the store's query vector and similarities serve any scorer with those members.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Dict, Generic, List, Optional, Tuple, TypeVar

from .poolsplit import BUDGET_REASONS, Pool, Selection, Visibility
from .recall_search import Search as Search  # the plan's searches: handed out here too (recall.Search in the docs)
from .relevance.capabilities import capabilities

#: The type an entry without ``type`` has (the entry schema's default). A
#: store filter on ``type`` does not see that default, so the plan adds a
#: search for untyped entries to every pool that admits it.
UNTYPED_DEFAULT = "note"

T = TypeVar("T")


@dataclass(frozen=True)
class RecallPlan:
    """Per-pool recall sizes, and the searches they make for one query.

    Attributes:
        pools: the pool plan the candidates are for.
        fetch_k: results of each pool search's first round. Larger finds
            more candidates for each pool's budget to choose from at once;
            smaller costs less when few candidates fill a budget.
        always_k: results of the always-scope fetch's first round. A fetch
            that comes back full is run again with ``k`` doubled, with no
            cap, until it comes back short (`FillingRecall`): a
            correction cut there would never load, and corrections load
            outside every budget, however many there are.
        max_fetch_k: the most results one pool search grows to
            (`FillingRecall` grows ``k`` while the pool's budget has
            room); a pool that still has room there is reported as
            ``capped``. ``max_fetch_k=fetch_k`` turns growth off; a
            ``fetch_k`` above it never grows.
        breadth: recall also grows until a pool's candidates hold this
            many times its budget (`has_breadth`), so the scorer
            chooses what loads from more than fits (module docstring); 1:
            only until the budget is filled. At least 1.

    Example:
        ```python
        plan = RecallPlan([Pool("skills", 100, 2, ("skill",))], fetch_k=10)
        [s.label for s in plan.searches()]   # ['pool:skills', 'always']
        ```
    """

    pools: Sequence[Pool]
    fetch_k: int = 20
    always_k: int = 1000
    max_fetch_k: int = 1000
    breadth: float = 2.0

    def __post_init__(self) -> None:
        for name in ("fetch_k", "always_k", "max_fetch_k"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError("%s must be a positive int, got %r" % (name, value))
        breadth = self.breadth
        if isinstance(breadth, bool) or not isinstance(breadth, (int, float)) or not 1.0 <= breadth < math.inf:
            raise ValueError("breadth must be a finite number of at least 1, got %r" % (breadth,))
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
            label, name = "pool:%s" % pool.name, pool.name
            plan.append(Search(label, self.fetch_k, types=pool.types, namespaces=namespaces, pool=name))
            if pool.types is not None and UNTYPED_DEFAULT in pool.types:
                plan.append(Search(label + ":untyped", self.fetch_k, untyped=True, namespaces=namespaces, pool=name))
        plan.append(Search("always", self.always_k, always=True, namespaces=namespaces))
        return plan

    def admits(self, entry: Mapping[str, Any], visibility: Optional[Visibility] = None) -> bool:
        """Whether some search of the plan would recall ``entry`` (for a
        store that read the namespace whole instead of searching)."""
        return any(search.admits(entry) for search in self.searches(visibility))

    def collect(self, searches: Sequence[Search], results: Sequence[Sequence[T]]) -> List[T]:
        """Every search's results, in plan order (duplicates included)."""
        found: List[T] = []
        for items in results:
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


def budget_filled(selection: Selection, pool: str) -> bool:
    """Whether ``pool``'s budget, in ``selection``, is the limit: its entry
    cap is reached, or the tokens left would not hold an entry as short as
    the shortest it loaded. Only then can more recall not load more: the
    fill skips a candidate that does not fit and goes on, so a budget with
    room for a short entry takes one the store has not returned yet (a cut
    candidate shows only that *it* did not fit). A pool that loaded nothing
    is filled when its budget cut something (every candidate was larger
    than it). A pool that is not in the selection counts as filled.

    Example:
        >>> from poolsplit_adapters import Pool, select
        >>> words = lambda text: len(text.split())
        >>> items = [{"id": "a", "content": "one two three"}, {"id": "b", "content": "four five six seven"}]
        >>> budget_filled(select(items, [Pool("p", 6, 9)], token_counter=words), "p")  # 3 left, a took 3
        False
        >>> budget_filled(select(items, [Pool("p", 5, 9)], token_counter=words), "p")  # 2 left
        True
    """
    stats = selection.stats.get(pool)
    if stats is None:
        return True
    if stats.entries_used >= stats.max_entries:
        return True
    room = stats.max_tokens - stats.tokens_used
    if room < 1:
        return True
    loaded = [c.cost for c in selection.chosen if c.pool == pool and not c.always]
    if loaded:
        return room < min(loaded)
    counts = selection.counts
    return any(counts.get((pool, reason), (0, 0))[0] for reason in BUDGET_REASONS)


def considered(selection: Selection, pool: str) -> Tuple[int, int]:
    """``(entries, tokens)`` of the contextual candidates ``pool`` ranked in
    ``selection``: what it loaded and what it passed over (cut by its
    budget, below its threshold, a duplicate, ...)."""
    stats = selection.stats.get(pool)
    if stats is None:
        return 0, 0
    entries, tokens = stats.entries_used, stats.tokens_used
    for (name, _reason), (count, cost) in selection.counts.items():
        if name == pool:
            entries, tokens = entries + count, tokens + cost
    return entries, tokens


def has_breadth(selection: Selection, pool: str, breadth: float) -> bool:
    """Whether ``pool``'s candidates hold ``breadth`` times its budget, in
    tokens or in entries (`RecallPlan.breadth`): enough for the
    scorer's order to choose from. A pool not in the selection has."""
    stats = selection.stats.get(pool)
    if stats is None:
        return True
    entries, tokens = considered(selection, pool)
    return tokens >= breadth * stats.max_tokens or entries >= breadth * stats.max_entries


#: Headroom on the estimate of `grown_k`: the last candidates of a
#: greedy fill often overflow, so aim a quarter past the exact fill.
GROWTH_HEADROOM = 1.25


def grown_k(k: int, selection: Selection, pool: Optional[str], breadth: float = 1.0) -> int:
    """The next round's ``k`` for a search of ``pool`` that returned ``k``
    candidates: at least double, or as many as the budget looks to need
    from what ``k`` candidates loaded (``k x max_tokens / tokens_used``, the
    same for entries, whichever cap comes first, with
    `GROWTH_HEADROOM`), or as many as ``breadth`` times the budget
    looks to need from what the pool considered (`considered`),
    whichever is more, so a pool far from full gets there in one more round
    instead of several."""
    stats = selection.stats.get(pool) if pool is not None else None
    if stats is None or stats.tokens_used <= 0 or stats.entries_used <= 0:
        return 2 * k  # nothing loaded to extrapolate from
    needed = min(k * stats.max_tokens / stats.tokens_used, k * stats.max_entries / stats.entries_used)
    assert pool is not None
    entries, tokens = considered(selection, pool)
    wide = min(k * breadth * stats.max_tokens / tokens, k * breadth * stats.max_entries / entries)
    return max(2 * k, math.ceil(max(needed, wide) * GROWTH_HEADROOM))


#: Rounds in a row that load nothing more before a pool with breadth stops
#: growing for room its budget has left (`FillingRecall.settle`): k at
#: least quadruples over them, so a match the greedy fill over the store's
#: order would take is found unless it ranks far below the last one loaded.
IDLE_ROUNDS = 2


class FillingRecall(Generic[T]):
    """One call's per-pool recall, grown until each pool's budget is filled.

    The rule, once for every vector-store path (LangChain and LlamaIndex,
    sync and async): after each round's selection, a pool search is run
    again with a larger ``k`` (`grown_k`, at most the plan's
    ``max_fetch_k``) when it came back full (``len(results) == k``: the
    store may hold more) and its candidates are fewer than the plan's
    ``breadth`` asks (`has_breadth`), or its pool's budget is not
    filled (`budget_filled`) and its last `IDLE_ROUNDS` rounds
    did not all load nothing more. The always-scope fetch runs again, with
    ``k`` doubled and no cap, while it comes back full: every correction
    loads, whatever ``always_k`` was (it sizes the first round). A store has
    no cursor the frameworks share, so a grown search asks again from the
    top: growing by at least double keeps the total work under twice the
    last round's.

    When it stops, `settle` writes ``selection.notes["recall"]``:
    ``fetch_k`` (pool -> the ``k`` its searches reached), ``rounds``, and the
    pools whose budget still has room, with why: ``store_ran_out`` (the
    store has nothing more for them: all there is loaded) and ``capped``
    (recall stopped before the store ran out, at ``max_fetch_k`` or after
    rounds that loaded nothing more: more candidates may exist).

    Example:
        ```python
        recall = FillingRecall(RecallPlan(pools, fetch_k=20), visibility)
        selection = fill(recall, lambda searches: [store_search(s) for s in searches], choose)
        selection.notes["recall"]["store_ran_out"]   # e.g. ['skills']
        ```
    """

    def __init__(self, plan: RecallPlan, visibility: Optional[Visibility] = None) -> None:
        self.plan = plan
        self.searches: List[Search] = plan.searches(visibility)
        self.results: List[Sequence[T]] = [() for _ in self.searches]
        self.rounds = 0
        self._pending = list(range(len(self.searches)))
        self._loaded: Dict[str, Tuple[int, int]] = {}  # pool -> (tokens, entries) it loaded last round
        self._idle: Dict[str, int] = {}  # pool -> rounds in a row that loaded nothing more

    def asks(self) -> List[Search]:
        """The searches this round runs (the first round: all of them)."""
        return [self.searches[i] for i in self._pending]

    def found(self, results: Sequence[Sequence[T]]) -> List[T]:
        """Take this round's results (one list per `asks` search), and
        return every candidate so far, in plan order (`RecallPlan.collect`)."""
        for i, items in zip(self._pending, results):
            self.results[i] = items
        self.rounds += 1
        return self.plan.collect(self.searches, self.results)

    def _room_left(self, selection: Selection) -> List[str]:
        pools = dict.fromkeys(s.pool for s in self.searches if s.pool is not None)
        return [name for name in pools if not budget_filled(selection, name)]

    def settle(self, selection: Selection) -> bool:
        """After a round's selection: True when recall is done (the notes are
        written on ``selection``); else the next round's searches are set."""
        short = set(self._room_left(selection))
        cap, breadth = self.plan.max_fetch_k, self.plan.breadth
        pools = {s.pool for s in self.searches if s.pool is not None}
        stalled = {name for name in short if self._stalled(selection, name)}  # counted every round
        # Grow a pool without breadth yet, or with room its budget has left unless it stalled there.
        wanting = {name for name in pools if not has_breadth(selection, name, breadth)} | (short - stalled)
        grow = [
            i
            for i, search in enumerate(self.searches)
            if search.pool in wanting and len(self.results[i]) >= search.k and search.k < cap
        ]
        # A full always-scope fetch may have cut a correction: every one
        # loads, so it doubles, uncapped, until the store has no more.
        cut = [i for i, search in enumerate(self.searches) if search.always and len(self.results[i]) >= search.k]
        if not grow and not cut:
            selection.notes["recall"] = self.report(short)
            return True
        for i in grow:
            search = self.searches[i]
            self.searches[i] = replace(search, k=min(grown_k(search.k, selection, search.pool, breadth), cap))
        for i in cut:
            self.searches[i] = replace(self.searches[i], k=2 * self.searches[i].k)
        self._pending = grow + cut
        return False

    def _stalled(self, selection: Selection, pool: str) -> bool:
        """Whether ``pool``'s last `IDLE_ROUNDS` rounds loaded nothing
        more: room a short entry left (one short outlier loaded) is no sign
        that the store holds another, so a pool with breadth stops growing
        there instead of asking up to ``max_fetch_k`` on every call."""
        stats = selection.stats.get(pool)
        now = (stats.tokens_used, stats.entries_used) if stats is not None else (0, 0)
        self._idle[pool] = self._idle.get(pool, 0) + 1 if self._loaded.get(pool) == now else 0
        self._loaded[pool] = now
        return self._idle[pool] >= IDLE_ROUNDS

    def report(self, short: Iterable[str]) -> Dict[str, Any]:
        """``notes["recall"]`` for the pools in ``short`` (budget with room)."""
        reached: Dict[str, int] = {}
        full: Dict[str, bool] = {}
        for search, items in zip(self.searches, self.results):
            if search.pool is None:
                continue
            reached[search.pool] = max(reached.get(search.pool, 0), search.k)
            full[search.pool] = full.get(search.pool, False) or len(items) >= search.k
        room = [name for name in reached if name in set(short)]
        return {
            "fetch_k": reached,
            "rounds": self.rounds,
            "store_ran_out": [name for name in room if not full[name]],
            "capped": [name for name in room if full[name]],
        }


#: What the current call does with the texts a search recalled, on the
#: search's own thread, as soon as they arrive (`recalled_texts`): set by
#: the call around its rounds (``StoreCall``), None outside one.
_RECALLED: contextvars.ContextVar[Optional[Callable[[List[str]], None]]] = contextvars.ContextVar(
    "poolsplit_recalled_texts", default=None
)


def recalled_texts(texts: List[str]) -> None:
    """Hand the texts one search recalled to the current call's warm-up
    (`warming_recall`), if any: called by a searcher on the thread of that
    search, while the plan's other searches still wait on the store.

    Why: a round's selection counted the tokens of each candidate it had
    not seen before after the slowest search, on the caller's thread:
    ~0.1 ms per ~700-character text (tiktoken), ~5 ms of its ~12 ms over
    PGVector at 100k rows (``benchmarks/stores_pg_default.py``). Counted
    as each search's rows arrive, by tiktoken, which releases the GIL, the
    counts are cached by the time the selection reads them. Nothing is
    decided here: the selection counts every text itself (a cache hit),
    so a warm-up that fails or is skipped changes nothing."""
    warm = _RECALLED.get()
    if warm is not None and texts:
        with contextlib.suppress(Exception):  # the selection counts again and raises its own clear error
            warm(texts)


@contextlib.contextmanager
def warming_recall(warm: Callable[[List[str]], None]) -> Iterator[None]:
    """`recalled_texts` calls ``warm`` within this block (and on the
    threads a searcher starts from it, which copy the context)."""
    token = _RECALLED.set(warm)
    try:
        yield
    finally:
        _RECALLED.reset(token)


def fill(
    recall: FillingRecall[T],
    search: Callable[[List[Search]], Sequence[Sequence[T]]],
    choose: Callable[[List[T]], Selection],
) -> Selection:
    """Run ``recall``'s rounds: ``search`` runs a round's searches (one
    result list each), ``choose`` selects over every candidate so far."""
    while True:
        selection = choose(recall.found(search(recall.asks())))
        if recall.settle(selection):
            return selection


async def afill(
    recall: FillingRecall[T],
    search: Callable[[List[Search]], Awaitable[Sequence[Sequence[T]]]],
    choose: Callable[[List[T]], Selection],
) -> Selection:
    """`fill` with an async ``search``."""
    while True:
        selection = choose(recall.found(await search(recall.asks())))
        if recall.settle(selection):
            return selection


def present_types(entries: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """The entry types among ``entries`` (entries, or the metadata of
    documents and nodes), each as the selector reads it (no ``type``:
    `UNTYPED_DEFAULT`): what ``pools="auto"`` shares the budget among
    (`plan_for_task`)."""
    found = (entry.get("type", UNTYPED_DEFAULT) for entry in entries)
    return frozenset(t for t in found if isinstance(t, str))


def store_metric(store: Any, given: Any = None) -> Any:
    """The `StoreMetric` of a
    vector store's scores: ``given`` (a metric or its name: ``"cosine"``,
    ``"cosine_distance"``, ``"euclidean"``, ...), else the known rule for the
    store (`metric_for`: e.g.
    cosine for LangChain's ``InMemoryVectorStore``), else None: an unknown
    store's score is never guessed at (a distance read as a similarity would
    invert the ranking), and the scorer embeds the recalled entries itself
    instead. This is the ``store_metric`` setting of both frameworks' vector
    store retrievers."""
    from .relevance.similarity import StoreMetric, metric_for

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


def with_query_vector(scorer: Any, text: str, vector: Optional[Sequence[float]]) -> Any:
    """``scorer`` reusing ``vector``, the query embedding a vector store's
    search was made with, for the message ``text`` (one query embedding per
    call); unchanged without a vector or for a scorer that cannot take one
    (`capabilities`' ``store_answers``).
    The caller checks `same_vector_space` first: a vector of another
    model would be a wrong relevance, not a saving."""
    answers = capabilities(scorer).store_answers
    if vector is None or answers is None:
        return scorer
    return answers.with_query_vector(text, vector)


def same_vector_space(scorer: Any, embeddings: Any) -> bool:
    """Whether ``scorer``'s embedding part (`capabilities`' ``vectors``: an
    EmbeddingScorer, or the one a RelevanceScorer fuses) embeds with
    ``embeddings``, the store's model: the same object, or the same model
    id. Only then is the store's score the cosine the scorer would
    compute."""
    vectors = capabilities(scorer).vectors
    if embeddings is None or vectors is None or vectors.embedder is None:
        return False
    if vectors.embedder is embeddings:
        return True
    from .relevance.embedding import EmbeddingScorer

    try:
        return bool(vectors.model_id == EmbeddingScorer(embeddings).model_id)
    except TypeError:
        return False


def takes_store_scores(scorer: Any, embeddings: Any) -> bool:
    """Whether a vector store's scores (converted to cosines) serve
    ``scorer`` as the similarity of the entries it recalled (a scorer that
    takes them: `capabilities`' ``store_answers``):

    * the adapters' default, a words scorer without an embedder
      ([`RelevanceScorer`][poolsplit_adapters.relevance.RelevanceScorer]):
      the store's similarity is the vector half of the
      fused relevance (BM25 the other), so the default over a vector store
      never discards the ranking the store alone would give;
    * a scorer that embeds (``EmbeddingScorer``, a fused ``RelevanceScorer``)
      with the store's own model (`same_vector_space`): the store's
      score is the cosine it would compute, so nothing is embedded again;
    * any other scorer (another model, a custom ranking): no, it ranks alone.

    The caller still needs the score's metric (`store_metric`): an
    unknown one is never guessed at."""
    found = capabilities(scorer)
    if found.store_answers is None:
        return False
    if found.words is not None and found.words.embedding is None:
        return True
    return same_vector_space(scorer, embeddings)


def store_scoring(scorer: Any, embeddings: Any, metric: Any) -> Tuple[bool, bool]:
    """What a retriever over a store takes from it, decided once (the
    scorer, the store's ``embeddings`` and its ``metric`` are fixed):
    whether the query vector of the store's searches serves the scorer
    (`same_vector_space`: one query embedding per call), and whether the
    store's scores do (`takes_store_scores`: the vector half of the default
    scorer's fused relevance, or an embedding scorer's cosines in the
    store's own space), only when their metric is known."""
    return same_vector_space(scorer, embeddings), metric is not None and takes_store_scores(scorer, embeddings)


def with_store_scores(scorer: Any, scores: Mapping[Any, float], metric: Any) -> Any:
    """``scorer`` taking the relevance of the recalled entries from the store
    (``scores``: entry id -> the store's score, turned into a cosine by
    `relevance_from_store_score`)
    instead of embedding them again on every query. Unchanged when there are
    no scores or no metric.

    A score that is not a finite number is not taken: the scorer computes
    that entry's relevance itself. Why: a store's cosine of a zero vector
    (an entry or a query that embeds to nothing: ``"..."``, an empty
    message) is ``0 / 0``, NaN on LlamaIndex's ``SimpleVectorStore`` and on
    pgvector, where the scorer's own rule says 0 (`cosine`); taken, it
    failed the whole call for one degenerate vector."""
    if not scores or metric is None:
        return scorer
    from .relevance.similarity import relevance_from_store_score

    known = {i: relevance_from_store_score(s, metric) for i, s in scores.items() if math.isfinite(float(s))}
    return scorer.with_known_relevance(known) if known else scorer


class VisibleEntries:
    """The entries a query may see, as a source for the expand tool
    ([`expand`][poolsplit_adapters.memory.expand.expand]): ``get(id)`` answers
    only for an entry that ``visibility`` (and ``allowed``, when given)
    admits, so an agent cannot read another namespace's memory by guessing
    an id. Inactive (superseded) entries stay readable by id: the marker a
    model saw may be older than the supersession.

    Example:
        ```python
        tool = langchain_expand_tool(VisibleEntries(index, Visibility(namespace="team-a")))
        ```
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

    def visible_entries(self) -> List[Mapping[str, Any]]:
        """Every entry a query may see (what ``pools="auto"`` plans for)."""
        return [e for e in self.entries if isinstance(e, Mapping) and self.visible(e)]

    def get(self, entry_id: str) -> Optional[Mapping[str, Any]]:
        """The visible entry with this id (the first, in input order), else None."""
        for entry in self.entries:
            if isinstance(entry, Mapping) and entry.get("id") == entry_id and self.visible(entry):
                return entry
        return None
