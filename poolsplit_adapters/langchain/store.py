"""BaseStoreMemory: a LangGraph ``BaseStore`` namespace as pool-split
long-term memory, usable alone or under the agent middleware.

LangGraph keeps an agent's long-term memory in a ``BaseStore``
(``InMemoryStore``, ``SqliteStore``, ``PostgresStore``): items under
namespaces such as ``("memories", user_id)``, each a JSON value. Here an item
is an entry: its value holds the entry's fields, its key is the entry ``id``,
and its namespace (labels joined by ``"."``, which LangGraph forbids inside a
label) is the entry ``namespace``.

Reading is where a plain ``store.search`` goes wrong for this job, so the
rules are written once here:

* **Exact namespaces.** ``search`` matches namespace *prefixes*; items in
  child namespaces (``("memories", "u1", "drafts")``) are not this user's
  memory and are dropped. A chain of namespaces (the user's own, then e.g.
  ``("memories", "shared")``) is explicit and scored with the chain penalty.
* **Corrections by filter.** Always-scope entries are fetched with a
  ``scope == "always"`` filter, independent of any query or type.
* **Each pool's types recalled independently.** ``BaseStore`` filters have
  no ``$in``: one ``SearchOp`` per type (plus one for entries without a
  ``type``, which default to ``"note"``), all in one ``batch`` round trip, so
  a rare type is never crowded out by a frequent one.
* **Paged past ``limit``.** ``search`` returns 10 items unless asked for
  more; every op is paged until it comes back short.
* **``query=``** is passed when the store has a vector index, so with
  ``fetch_k`` each type op recalls its nearest items.
* **Counted once.** Token counts are cached by ``(namespace, key,
  updated_at)``: repeated turns over an unchanged store make no tokenizer call.
"""

from __future__ import annotations

import datetime
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Dict, Generator, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchOp
from typing_extensions import TypedDict, Unpack

from ..memory.write_gate import utc_stamp
from ..poolsplit import (
    EntryError,
    Layering,
    Pool,
    Scorer,
    Selection,
    TokenCounter,
    Visibility,
    check_entry,
    check_pools,
    default_scorer,
    given_token_count,
)
from ..reports import select_noted
from ..stores.checks import check_storable
from ..tokens import default_counter

__all__ = ["BaseStoreMemory", "Namespace", "Recall", "check_namespaces", "namespace_label"]

Namespace = Tuple[str, ...]
NamespaceArg = Union[Sequence[str], Sequence[Sequence[str]]]

#: Value keys that are the item's location, not its content.
_LOCATION_KEYS = ("id", "namespace")


def namespace_label(namespace: Namespace) -> str:
    """The entry ``namespace`` string for a LangGraph namespace tuple."""
    return ".".join(namespace)


def chain_visibility(chain: Sequence[Namespace], chain_penalty: float) -> Visibility:
    """What a query over the namespace ``chain`` (own first) may see: the
    entries of those namespaces, each further link scored ``chain_penalty``
    lower."""
    labels = tuple(namespace_label(ns) for ns in chain)
    return Visibility(namespace=labels if len(labels) > 1 else labels[0], chain_penalty=chain_penalty)


def _check_one(value: Any, argument: str) -> Namespace:
    if isinstance(value, str) or not isinstance(value, (tuple, list)) or not value:
        raise ValueError(
            "%s must be a non-empty tuple of strings such as ('memories', 'user-1'), got %r" % (argument, value)
        )
    for label in value:
        if not isinstance(label, str) or not label or "." in label:
            raise ValueError(
                "%s: every label must be a non-empty string without '.', got %r in %r" % (argument, label, value)
            )
    return tuple(value)


def check_namespaces(value: Any, argument: str = "namespace") -> Tuple[Namespace, ...]:
    """A namespace (tuple of labels) or an explicit chain of them (a list or
    tuple of tuples, own namespace first) as a chain. Errors name ``argument``."""
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, (tuple, list)) for v in value):
        chain = tuple(_check_one(v, argument) for v in value)
        if len(set(chain)) != len(chain):
            raise ValueError("%s: the namespace chain repeats a namespace: %r" % (argument, value))
        return chain
    return (_check_one(value, argument),)


@dataclass(frozen=True)
class Recall:
    """What one read of the store returned.

    Attributes:
        entries: the candidates, own namespace first, then each chain link;
            within a namespace by creation time, then key (so corrections load
            in the order they were written).
        fingerprint: ``(namespace, key, updated_at)`` of every item read: equal
            fingerprints mean an unchanged store for this read.
    """

    entries: List[Dict[str, Any]]
    fingerprint: Tuple[Tuple[str, str, str], ...]


class SelectKeywords(TypedDict, total=False):
    """The keywords of :meth:`BaseStoreMemory.select` and ``aselect``,
    declared once for both.

    Example::

        memory.select(pools, {"message": "deploy"}, now=datetime.datetime(2025, 1, 6, tzinfo=datetime.timezone.utc))
    """

    now: Optional[datetime.datetime]
    """Reference time for recency (default: the time of the call)."""
    scorer: Scorer
    """Ranking function ``scorer(entry, context, *, now=None) -> float`` (default: the spec's scorer)."""


@dataclass(frozen=True)
class _Spec:
    link: int
    filter: Optional[Dict[str, Any]]
    query: Optional[str]
    cap: Optional[int]


class _Counts:
    """Token counts (and the validity check) by ``(namespace, key, updated_at)``."""

    def __init__(self, counter: TokenCounter, size: int) -> None:
        self.counter = counter
        self.size = size
        self._data: OrderedDict[Tuple[Namespace, str, str], int] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Tuple[Namespace, str, str]) -> Optional[int]:
        with self._lock:
            found = self._data.get(key)
            if found is not None:
                self._data.move_to_end(key)
            return found

    def put(self, key: Tuple[Namespace, str, str], count: int) -> None:
        with self._lock:
            self._data[key] = count
            if len(self._data) > self.size:
                self._data.popitem(last=False)


class BaseStoreMemory:
    """Pool-split long-term memory over one namespace of a LangGraph store.

    Args:
        store: any LangGraph ``BaseStore``.
        namespace: the user's namespace, e.g. ``("memories", "u1")``, or an
            explicit chain ``[("memories", "u1"), ("memories", "shared")]``:
            reads see exactly these namespaces (never their children), links
            after the first score ``x chain_penalty ** link``; writes go to the
            first.
        chain_penalty: score factor per chain link after the first (default 0.9).
        token_counter: cost of an entry without ``token_count`` (default:
            tiktoken ``o200k_base``, offline); results are cached.
        page_size: items per search op and page (default 100).
        fetch_k: with a vector-indexed store, how many nearest items each type
            op recalls (default None: every item, paged).
        cache_size: how many token counts to keep (default 65536).

    Example::

        from langgraph.store.memory import InMemoryStore
        from poolsplit_adapters import Pool
        from poolsplit_adapters.langchain import BaseStoreMemory

        memory = BaseStoreMemory(InMemoryStore(), ("memories", "u1"))
        memory.put({"id": "fix-1", "content": "Amounts in cents.", "type": "correction", "scope": "always"})
        memory.put({"content": "Deployed checkout on Monday.", "type": "episode"})
        pools = [Pool("fixes", 0, 0, ("correction",)), Pool("episodes", 300, 3, ("episode",))]
        selection = memory.select(pools, {"message": "when did checkout deploy?"})
    """

    def __init__(
        self,
        store: BaseStore,
        namespace: NamespaceArg,
        *,
        chain_penalty: float = 0.9,
        token_counter: Optional[TokenCounter] = None,
        page_size: int = 100,
        fetch_k: Optional[int] = None,
        cache_size: int = 65536,
    ) -> None:
        if not isinstance(store, BaseStore):
            raise TypeError("BaseStoreMemory store must be a LangGraph BaseStore, got %s" % type(store).__name__)
        self.store = store
        self.chain = check_namespaces(namespace)
        self.namespace = self.chain[0]
        self.visibility = chain_visibility(self.chain, chain_penalty)
        for name, value in (("page_size", page_size), ("cache_size", cache_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError("BaseStoreMemory %s must be an int >= 1, got %r" % (name, value))
        if fetch_k is not None and (isinstance(fetch_k, bool) or not isinstance(fetch_k, int) or fetch_k < 1):
            raise ValueError("BaseStoreMemory fetch_k must be None or an int >= 1, got %r" % (fetch_k,))
        if token_counter is not None and not callable(token_counter):
            raise TypeError("BaseStoreMemory token_counter must be callable, got %r" % (token_counter,))
        self.page_size = page_size
        self.fetch_k = fetch_k
        self._counts = _Counts(token_counter or default_counter(), cache_size)

    def __repr__(self) -> str:
        return "BaseStoreMemory(%s, %r)" % (type(self.store).__name__, list(self.chain))

    @property
    def indexed(self) -> bool:
        """Whether the store has a vector index (then recall passes ``query=``)."""
        return bool(getattr(self.store, "index_config", None))

    # -- the read plan ----------------------------------------------------------------

    def _plan(self, pools: Optional[Sequence[Pool]], query: Optional[str]) -> List[_Spec]:
        """The search ops of one recall: per namespace, the corrections by
        filter, then one op per type a pool can still fill."""
        specs: List[_Spec] = []
        use_query = query if (query and self.indexed) else None
        cap = self.fetch_k if use_query else None
        for link in range(len(self.chain)):
            if pools is None:  # entries(): everything
                specs.append(_Spec(link, None, None, None))
                continue
            specs.append(_Spec(link, {"scope": "always"}, None, None))
            types: List[Optional[str]] = []
            for pool in pools:
                if not pool.loads_contextual:
                    continue  # only always-scope entries can load: fetched above
                if pool.types is None:
                    types = [None]
                    break
                types += [t for t in pool.types if t not in types]
            if types == [None]:
                specs.append(_Spec(link, None, use_query, cap))
                continue
            for name in types:
                specs.append(_Spec(link, {"type": name}, use_query, cap))
                if name == "note":  # the default type: entries that do not say
                    specs.append(_Spec(link, {"type": None}, use_query, cap))
        return specs

    def _pages(self, specs: Sequence[_Spec]) -> Generator[List[SearchOp], List[Any], List[Tuple[int, List[Item]]]]:
        """Drive the paged search: yields one batch of ops per round, receives
        their results, returns ``(link, items)`` pairs. Written once for the
        sync and async drivers."""
        pending = [(spec, 0) for spec in specs]
        found: List[Tuple[int, List[Item]]] = []
        while pending:
            ops = []
            for spec, offset in pending:
                limit = self.page_size if spec.cap is None else min(self.page_size, spec.cap - offset)
                ops.append(
                    SearchOp(self.chain[spec.link], filter=spec.filter, limit=limit, offset=offset, query=spec.query)
                )
            results = yield ops
            following = []
            for (spec, offset), op, items in zip(pending, ops, results):
                found.append((spec.link, list(items)))
                nxt = offset + op.limit
                if len(items) >= op.limit and (spec.cap is None or nxt < spec.cap):
                    following.append((spec, nxt))
            pending = following
        return found

    def _run(self, specs: Sequence[_Spec]) -> List[Tuple[int, List[Item]]]:
        driver = self._pages(specs)
        ops = next(driver)
        while True:
            try:
                ops = driver.send(self.store.batch(ops))
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]

    async def _arun(self, specs: Sequence[_Spec]) -> List[Tuple[int, List[Item]]]:
        driver = self._pages(specs)
        ops = next(driver)
        while True:
            try:
                ops = driver.send(await self.store.abatch(ops))
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]

    # -- items -> entries ---------------------------------------------------------------

    def _entry(self, item: Item, *, counted: bool) -> Dict[str, Any]:
        entry: Dict[str, Any] = dict(item.value)
        entry["id"] = item.key
        entry["namespace"] = namespace_label(item.namespace)
        if not entry.get("created"):
            entry["created"] = utc_stamp(item.created_at)
        if not counted:
            return entry
        cache_key = (tuple(item.namespace), item.key, _precise(item.updated_at))
        cost = self._counts.get(cache_key)
        if cost is None:
            try:
                check_entry(entry)
            except EntryError as err:
                where = "field %r " % err.field if err.field else ""
                raise EntryError(
                    "store item %r in namespace %r: %s%s" % (item.key, entry["namespace"], where, err.problem),
                    entry_id=item.key,
                    field=err.field,
                    problem=err.problem,
                ) from None
            given = given_token_count(entry)
            cost = given if given is not None else max(1, int(self._counts.counter(str(entry["content"]))))
            self._counts.put(cache_key, cost)
        if given_token_count(entry) is None:
            entry["token_count"] = cost
        return entry

    def _collect(self, found: Iterable[Tuple[int, List[Item]]], *, counted: bool) -> Recall:
        seen: Dict[Tuple[Namespace, str], Tuple[int, Item]] = {}
        for link, items in found:
            own = self.chain[link]
            for item in items:
                if tuple(item.namespace) != own:
                    continue  # a child namespace: search matched the prefix, not the namespace
                seen.setdefault((own, item.key), (link, item))
        ordered = sorted(seen.values(), key=lambda li: (li[0], li[1].created_at, li[1].key))
        entries = [self._entry(item, counted=counted) for _, item in ordered]
        fingerprint = tuple(
            (namespace_label(item.namespace), item.key, _precise(item.updated_at)) for _, item in ordered
        )
        return Recall(entries, fingerprint)

    # -- reading ----------------------------------------------------------------------

    def recall(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None) -> Recall:
        """The candidates :meth:`select` would see (one batched, paged read),
        with token counts filled in from the cache."""
        pools = check_pools(pools)
        return self._collect(self._run(self._plan(pools, _query(context))), counted=True)

    async def arecall(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None) -> Recall:
        """Async :meth:`recall`."""
        pools = check_pools(pools)
        return self._collect(await self._arun(self._plan(pools, _query(context))), counted=True)

    def select_from(
        self,
        recall: Recall,
        pools: Sequence[Pool],
        context: Optional[Mapping[str, Any]] = None,
        *,
        now: Optional[datetime.datetime] = None,
        scorer: Scorer = default_scorer,
        layering: Optional[Layering] = None,
    ) -> Selection:
        """Select over a :class:`Recall` (the core selector, unchanged;
        ``layering``: progressive loading, see
        :class:`~poolsplit_adapters.memory.progressive.ProgressiveLayers`)."""
        return select_noted(
            recall.entries,
            pools,
            context,
            scorer=scorer,
            token_counter=self._counts.counter,
            now=now,
            visibility=self.visibility,
            layering=layering,
        )

    def get(self, entry_id: str) -> Optional[Dict[str, Any]]:
        """The entry stored under ``entry_id`` in this memory's namespaces
        (own first, then the chain; exact, never a child namespace), else
        None. One batch. The expand tool reads full text through it."""
        results = self.store.batch([GetOp(ns, entry_id) for ns in self.chain])
        for item in results:
            if isinstance(item, Item):
                return self._entry(item, counted=False)
        return None

    async def aget(self, entry_id: str) -> Optional[Dict[str, Any]]:
        """Async :meth:`get`."""
        results = await self.store.abatch([GetOp(ns, entry_id) for ns in self.chain])
        for item in results:
            if isinstance(item, Item):
                return self._entry(item, counted=False)
        return None

    def select(
        self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Unpack[SelectKeywords]
    ) -> Selection:
        """Recall from the store, then select: corrections first, then each
        pool's entries (the core's :func:`~poolsplit_adapters.select`).
        ``options``: ``now``, ``scorer`` (:class:`SelectKeywords`)."""
        return self.select_from(self.recall(pools, context), pools, context, **options)

    async def aselect(
        self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Unpack[SelectKeywords]
    ) -> Selection:
        """Async :meth:`select`."""
        return self.select_from(await self.arecall(pools, context), pools, context, **options)

    def entries(self) -> List[Dict[str, Any]]:
        """Every entry in the namespace (and chain), as fresh dicts."""
        return self._collect(self._run(self._plan(None, None)), counted=False).entries

    async def aentries(self) -> List[Dict[str, Any]]:
        """Async :meth:`entries`."""
        return self._collect(await self._arun(self._plan(None, None)), counted=False).entries

    # -- writing ----------------------------------------------------------------------

    def _put_ops(self, entries: Sequence[Mapping[str, Any]]) -> Tuple[List[PutOp], List[str]]:
        ops, ids = [], []
        own = namespace_label(self.namespace)
        for position, entry in enumerate(entries):
            if not isinstance(entry, Mapping):
                raise EntryError(
                    "entry at position %d must be a mapping, got %s" % (position, type(entry).__name__),
                    index=position,
                )
            check_entry(entry, position)
            check_storable(entry, position)
            where = entry.get("namespace")
            if where is not None and where != own:
                raise EntryError(
                    "entry %r: field 'namespace' is %r but this memory writes to %r"
                    % (entry.get("id") or position, where, own),
                    index=position,
                    entry_id=entry.get("id"),
                    field="namespace",
                )
            key = entry.get("id") or uuid.uuid4().hex
            value = {k: v for k, v in entry.items() if k not in _LOCATION_KEYS}
            value.setdefault("created", utc_stamp())
            ops.append(PutOp(self.namespace, str(key), value))
            ids.append(str(key))
        return ops, ids

    def put_many(self, entries: Sequence[Mapping[str, Any]]) -> List[str]:
        """Write ``entries`` to the own namespace in one batch; returns their
        ids (``id``, else a new one). Validated first: a malformed entry raises
        :class:`~poolsplit_adapters.EntryError` and nothing is written. The
        caller's dicts are not changed."""
        ops, ids = self._put_ops(entries)
        if ops:
            self.store.batch(ops)
        return ids

    async def aput_many(self, entries: Sequence[Mapping[str, Any]]) -> List[str]:
        """Async :meth:`put_many`."""
        ops, ids = self._put_ops(entries)
        if ops:
            await self.store.abatch(ops)
        return ids

    def put(self, entry: Mapping[str, Any]) -> str:
        """Write one entry (host-curated: always-scope allowed); returns its id."""
        return self.put_many([entry])[0]

    async def aput(self, entry: Mapping[str, Any]) -> str:
        """Async :meth:`put`."""
        return (await self.aput_many([entry]))[0]

    def existing(self, ids: Iterable[str]) -> Set[str]:
        """Which of ``ids`` are stored in the own namespace (one batch)."""
        keys = list(dict.fromkeys(ids))
        if not keys:
            return set()
        results = self.store.batch([GetOp(self.namespace, k) for k in keys])
        return {k for k, item in zip(keys, results) if item is not None}

    async def aexisting(self, ids: Iterable[str]) -> Set[str]:
        """Async :meth:`existing`."""
        keys = list(dict.fromkeys(ids))
        if not keys:
            return set()
        results = await self.store.abatch([GetOp(self.namespace, k) for k in keys])
        return {k for k, item in zip(keys, results) if item is not None}

    def _supersede_ops(
        self, old: Optional[Item], entry_id: str, new_entry: Mapping[str, Any]
    ) -> Tuple[List[PutOp], str]:
        if old is None:
            raise KeyError("no entry %r in namespace %r" % (entry_id, namespace_label(self.namespace)))
        ops, ids = self._put_ops([new_entry])
        if ids[0] == entry_id:
            raise ValueError("supersede: the new entry must have a new id, got the old one %r" % entry_id)
        retired = dict(old.value)
        retired["superseded_by"] = ids[0]
        # One batch: the new entry and the retired old one land together.
        return ops + [PutOp(self.namespace, entry_id, retired)], ids[0]

    def supersede(self, entry_id: str, new_entry: Mapping[str, Any]) -> str:
        """Replace ``entry_id`` by ``new_entry``: the old one gets
        ``superseded_by`` (it stays for audit and never loads again).
        Returns the new id. Raises ``KeyError`` when ``entry_id`` is not stored."""
        ops, new_id = self._supersede_ops(self.store.get(self.namespace, entry_id), entry_id, new_entry)
        self.store.batch(ops)
        return new_id

    async def asupersede(self, entry_id: str, new_entry: Mapping[str, Any]) -> str:
        """Async :meth:`supersede`."""
        old = await self.store.aget(self.namespace, entry_id)
        ops, new_id = self._supersede_ops(old, entry_id, new_entry)
        await self.store.abatch(ops)
        return new_id

    def delete(self, entry_id: str) -> bool:
        """Forget ``entry_id`` for real; False when it was not stored."""
        if self.store.get(self.namespace, entry_id) is None:
            return False
        self.store.delete(self.namespace, entry_id)
        return True

    async def adelete(self, entry_id: str) -> bool:
        """Async :meth:`delete`."""
        if await self.store.aget(self.namespace, entry_id) is None:
            return False
        await self.store.adelete(self.namespace, entry_id)
        return True


def _query(context: Optional[Mapping[str, Any]]) -> Optional[str]:
    if context is None:
        return None
    message = context.get("message")
    return message if isinstance(message, str) and message.strip() else None


def _precise(moment: Any) -> str:
    """An item's ``updated_at`` to the microsecond: part of the cache key."""
    return moment.isoformat() if isinstance(moment, datetime.datetime) else str(moment)
