"""The store behind LlamaIndex's memory blocks, framework-free: curated
entries in a [`MemoryIndex`][], an optional durable store, per-session
recall of flushed chat, the selection both blocks share; the write of
flushed lines through the one write gate (`chat_flush`: a failed write kept
and retried) and the pooled block's text (`chat_render`: a
[`PooledRender`][], truncated entry by entry) are its mixins. The
LlamaIndex adapter's ``PoolSplitMemoryStore`` adds the translation: chat
messages to lines, the selection's event, the expand tool.

[`ChatMemoryEntries`][] satisfies the store contract
([`MemoryStore`][]): its verbs are [`StoreVerbs`][]', over its index, or
over the durable ``store`` it was given.
"""

from __future__ import annotations

import collections
import threading
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..call import AdapterCall, record_selection
from ..checks import check_callable, check_flag
from ..errors import ArgumentError
from ..index import MemoryIndex
from ..memory.consolidate import ConsolidationResult
from ..memory.expiry import Moment, note_expired
from ..memory.tasks import warn_unplanned_standing
from ..memory.turns import check_written_type
from ..memory.write_gate import GateReport, Proposal, WriteGate, check_scope
from ..poolsplit import EntryError, Pool, Selection, check_entry
from ..recall import VisibleEntries, present_types
from ..settings import Framework, RenderedSettings
from .base import Change, MemoryStore, StoreVerbs, WriteReport
from .chat_flush import SESSION_KEY, UNFLUSHED_NOTE, ChatFlush, session_text
from .chat_render import PooledRender, PooledRenders
from .checks import fresh_copy, storable_text
from .memory import IdLookup, commit_to_index
from .protocol_store import contract_of

__all__ = ["SESSION_KEY", "ChatMemoryEntries", "PooledRender", "session_text"]


class ChatMemoryEntries(ChatFlush, PooledRenders):
    """The entries, the durable store and the sessions of LlamaIndex's
    memory blocks, under the store contract: the engine of the adapter's
    ``PoolSplitMemoryStore`` (whose constructor's arguments these are).
    """

    def __init__(
        self,
        entries: Iterable[Mapping[str, Any]],
        pools: Sequence[Pool],
        *,
        store: Any = None,
        share_chat: bool = False,
        episode_type: str = "episode",
        episode_priority: float = 2,
        flush_filter: Optional[Callable[[Any], bool]] = None,
        write_gate: Optional[WriteGate] = None,
        consolidator: Any = None,
        **settings: Any,
    ) -> None:
        own = ChatMemoryEntries.__init__  # its keywords are listed when one is misspelt
        self.settings = RenderedSettings.held_by(
            "PoolSplitMemoryStore", Framework.LLAMA_INDEX, own, pools=pools, **settings
        )
        if store is not None and not isinstance(store, MemoryStore):
            raise ArgumentError(
                "store must be a MemoryStore (add, get, supersede, delete, entries, select, version), got %r" % (store,)
            )
        if write_gate is not None and not isinstance(write_gate, WriteGate):
            hint = " (a message predicate is flush_filter= since 0.3)" if callable(write_gate) else ""
            raise ArgumentError("write_gate must be a WriteGate, got %r%s" % (write_gate, hint))
        visibility = self.settings.visibility
        for link in visibility.chain if visibility is not None else ():
            # Flushed chat is written under the first: refused now, not on the
            # first flush, after LlamaIndex has already archived the lines.
            if isinstance(link, str):
                storable_text(link, "visibility namespace")
        assert self.settings.token_counter is not None
        self.token_counter = self.settings.token_counter
        # Built with the scorer's structures: the first call costs what the others do.
        self.index = MemoryIndex(entries, token_counter=self.token_counter, prepare_for=(self.settings.scorer,))
        for position, entry in enumerate(self.index.entries):  # "Always": a correction that never loads
            check_scope(entry, position)
        self._ids = IdLookup(self.index)
        self.long_term = store
        #: The durable store under the contract (None: none given).
        self._durable: Optional[StoreVerbs] = None if store is None else contract_of(store)
        self.share_chat = check_flag(share_chat, "share_chat")
        self.episode_type = check_written_type(episode_type, "episode_type")
        self.episode_priority = _episode_priority(episode_priority)
        self.flush_filter = check_callable(flush_filter, "flush_filter") or self._default_filter
        self.write_gate = write_gate or WriteGate()
        warn_unplanned_standing("PoolSplitMemoryStore", pools, self.write_gate.standing is not None, stacklevel=4)
        #: What the write gate did to flushed chat: ids written, refusals by reason.
        self.gate_report = GateReport()
        if consolidator is not None:
            _check_consolidator(consolidator)
        self.consolidator = consolidator
        #: The last flush's consolidation (None: no consolidator, or nothing new).
        self.last_consolidation: Optional[ConsolidationResult] = None
        #: Name of the block that renders the contextual entries (set by
        #: that block), which a corrections block's last line names.
        self.pooled_block: Optional[str] = None
        self._memo: Optional[Tuple[Tuple[Any, ...], Selection]] = None
        self._sessions: Tuple[int, FrozenSet[str]] = (-1, frozenset())
        self._types: Optional[Tuple[Any, FrozenSet[str]]] = None
        self._renders: collections.OrderedDict[str, Any] = collections.OrderedDict()  # the adapter's renders
        self._last_render: Optional[Tuple[Selection, Any]] = None  # both blocks of one get share it
        self._recallable: Optional[Tuple[Tuple[Any, ...], MemoryIndex]] = None
        self._lock = threading.Lock()
        self._unflushed: List[Proposal] = []  # lines whose write failed, in order (see flush)
        self._flush_failure: Optional[str] = None  # why the last write of them failed
        self._contents: Optional[Tuple[Tuple[Any, ...], MemoryIndex]] = None

    @property
    def last_selection(self) -> Optional[Selection]:
        """The selection of the call that finished last (any session)."""
        return self.settings.last_selection

    @staticmethod
    def _default_filter(message: Any) -> bool:
        """Which flushed messages are candidates when no ``flush_filter`` is
        given: the adapter says (every message here)."""
        return True

    # -- recall ---------------------------------------------------------------------

    def _selected(self, message: str, session_id: Optional[str]) -> Tuple[Selection, Optional[AdapterCall]]:
        """The selection for ``message`` in ``session_id`` and the call that
        made it (to announce and record), or the kept one, recorded, and
        None (the adapter's ``select_for``: kept until the message, the
        session, either version or the lines a failed flush kept change;
        those are noted, `UNFLUSHED_NOTE`). ``session_id`` is read as the
        flush writes it (`session_text`: ``7`` is session ``"7"``): read as
        given, an int session id wrote chat it never recalled."""
        session_id = session_text(session_id) if session_id else None
        unflushed = self.unflushed_note()
        kept_lines = None if unflushed is None else (unflushed["lines"], unflushed["error"])
        key = (message, session_id, self.index.version, self._long_term_version(), kept_lines)
        memo = self._memo
        if memo is not None and memo[0] == key:
            return record_selection(self.settings, memo[1]), None
        call = AdapterCall(self.settings, message, entry_types=self._entry_types)
        if self.long_term is None and (self.share_chat or self._sessions_in_index() <= {session_id}):
            selection = call.select_in(self.index)  # nothing to hide: the prepared index
        else:
            selection = call.select_in(self._candidate_index(session_id))
        if unflushed is not None:
            selection.notes[UNFLUSHED_NOTE] = unflushed
        self._memo = (key, selection)
        return selection, call

    def _entry_types(self) -> FrozenSet[str]:
        """The types this store holds (the index's and the long-term
        store's, within the visibility), for ``pools="auto"``: read once per
        change of either version, not once per message."""
        key = (self.index.version, self._long_term_version())
        kept = self._types
        if kept is None or kept[0] != key:
            entries = list(self.index.entries)
            if self.long_term is not None:
                chain = self.settings.visibility.chain if self.settings.visibility is not None else ()
                for namespace in chain or (None,):
                    entries += self.long_term.entries(namespace)
            kept = (key, present_types(entries))
            self._types = kept
        return kept[1]

    def _long_term_version(self) -> Any:
        return self.long_term.version if self.long_term is not None else None

    def _sessions_in_index(self) -> FrozenSet[str]:
        version, sessions = self._sessions
        if version != self.index.version:
            current = self.index.version
            sessions = frozenset(e[SESSION_KEY] for e in self.index.entries if isinstance(e.get(SESSION_KEY), str))
            self._sessions = (current, sessions)
        return sessions

    def _visible(self, entry: Mapping[str, Any], session_id: Optional[str]) -> bool:
        owner = entry.get(SESSION_KEY)
        return self.share_chat or owner is None or owner == session_id

    def _candidate_index(self, session_id: Optional[str]) -> MemoryIndex:
        """`_candidates` as a prepared index, kept while the session
        and both versions stay the same: the store is read, and the texts
        counted, once per change instead of once per message."""
        key = (session_id, self.index.version, self._long_term_version())
        with self._lock:
            kept = self._recallable
        if kept is None or kept[0] != key:
            kept = (key, MemoryIndex(self._candidates(session_id), token_counter=self.token_counter))
            with self._lock:
                self._recallable = kept
        return kept[1]

    def _readable(self, session_id: Optional[str]) -> VisibleEntries:
        """What the expand tool of ``session_id`` may read: `_candidates`
        (read when asked), within the visibility; ``session_id`` read as
        `_selected` reads it."""
        store, session_id = self, session_text(session_id) if session_id else None

        class _Entries:
            def __iter__(self) -> Any:
                return iter(store._candidate_index(session_id).entries)

        return VisibleEntries(_Entries(), self.settings.visibility, lambda e: self._visible(e, session_id))

    def _candidates(self, session_id: Optional[str]) -> List[Mapping[str, Any]]:
        """What ``session_id`` may recall: the index's entries, then the
        long-term store's (each id once), other sessions' chat left out."""
        found = [e for e in self.index.entries if self._visible(e, session_id)]
        if self.long_term is not None:
            seen = {e.get("id") for e in found if e.get("id") is not None}
            chain = self.settings.visibility.chain if self.settings.visibility is not None else ()
            for namespace in chain or (None,):
                for entry in self.long_term.entries(namespace):
                    if entry.get("id") not in seen and self._visible(entry, session_id):
                        seen.add(entry.get("id"))
                        found.append(entry)
        return found

    # -- the store contract ---------------------------------------------------------

    @property
    def version(self) -> Tuple[Any, Any]:
        """(the index's version, the durable store's): changes with either."""
        return (self.index.version, self._long_term_version())

    def read(self, ids: Optional[Sequence[str]] = None, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """Copies of the entries with these ids, or of every entry (of
        ``namespace`` when given): the index's, then the durable store's,
        each id once."""
        found: List[Dict[str, Any]] = []
        seen: set[Any] = set()
        wanted = None if ids is None else set(ids)
        for entry in self.index.entries:
            if (wanted is None or entry.get("id") in wanted) and (
                namespace is None or entry.get("namespace") == namespace
            ):
                found.append(fresh_copy(entry))
                seen.add(entry.get("id"))
        if self.long_term is not None:
            if ids is None:
                more = self.long_term.entries(namespace)
            else:
                more = [e for e in (self.long_term.get(i) for i in dict.fromkeys(ids)) if e is not None]
            found += [e for e in more if e.get("id") is None or e.get("id") not in seen]
        return found

    @property
    def holder(self) -> StoreVerbs:
        """The durable store when one was given (its writes land there), else this store."""
        durable = self._durable
        return durable if durable is not None and durable.commits else self

    def commit(self, change: Change) -> None:
        """Apply ``change`` to the index (one ``MemoryIndex`` edit per entry,
        under the store's lock)."""
        commit_to_index(self.index, change, self._lock, self._ids)

    def write(self, entries: Iterable[Mapping[str, Any]]) -> WriteReport:
        """The contract's ``write`` (``add`` with its report): in the durable
        store when one was given, else in `index`."""
        if self._durable is not None:
            return self._durable.write(entries)
        return super().write(entries)

    def consolidate(
        self, entries: Iterable[Mapping[str, Any]], *, model: Any, at: Optional[Moment] = None, nearest: int = 5
    ) -> Tuple[WriteReport, ConsolidationResult]:
        """The contract's ``consolidate``, in the durable store when one was
        given (its operations applied there: committed to the index, an
        update's target was not found and the operation fell to a plain write)."""
        holder = self.holder
        if holder is not self:
            return holder.consolidate(entries, model=model, at=at, nearest=nearest)
        return super().consolidate(entries, model=model, at=at, nearest=nearest)

    def supersede(self, entry_id: str, new_entry: Mapping[str, Any]) -> str:
        """The contract's ``supersede``, in the durable store when one was given."""
        if self.long_term is not None:
            return self.long_term.supersede(entry_id, new_entry)
        return super().supersede(entry_id, new_entry)

    def delete(self, entry_id: str, *, history: bool = True) -> bool:
        """The contract's ``delete``: from the index, and from the durable store."""
        gone = super().delete(entry_id, history=history)
        if self._durable is not None:  # the contract's view of it: ``history`` as the caller said
            gone = self._durable.delete(entry_id, history=history) or gone
        return gone

    def forget(self, *, namespace: str) -> int:
        """The contract's ``forget``: every entry of ``namespace``, from the
        index and from the durable store; how many ids went."""
        count = super().forget(namespace=namespace)
        if self._durable is not None and self._durable.commits:
            self._durable.forget(namespace=namespace)
        return count

    def sweep_expired(self, now: Optional[Moment] = None) -> List[str]:
        """The contract's ``sweep_expired``, on the index and the durable store."""
        gone = super().sweep_expired(now)
        if self._durable is not None and self._durable.commits:
            gone += [i for i in self._durable.sweep_expired(now) if i not in gone]
        return gone

    # LlamaIndex's blocks call the sync verbs; the async twins are theirs,
    # so that they too write through to the durable store.
    async def awrite(self, entries: Iterable[Mapping[str, Any]]) -> WriteReport:
        """Async [`write`][] (the sync one: in the durable store when one was given)."""
        return self.write(entries)

    async def asupersede(self, entry_id: str, new_entry: Mapping[str, Any]) -> str:
        """Async [`supersede`][] (the sync one)."""
        return self.supersede(entry_id, new_entry)

    async def adelete(self, entry_id: str, *, history: bool = True) -> bool:
        """Async [`delete`][] (the sync one)."""
        return self.delete(entry_id, history=history)

    async def aforget(self, *, namespace: str) -> int:
        """Async [`forget`][] (the sync one)."""
        return self.forget(namespace=namespace)

    async def asweep_expired(self, now: Optional[Moment] = None) -> List[str]:
        """Async [`sweep_expired`][] (the sync one: the index and the durable store)."""
        return self.sweep_expired(now)

    def select(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any) -> Selection:
        """The core's ``select`` over every entry (the index's and the durable
        store's; no session filter: that is ``select_for``'s), ranked by
        this store's scorer (the adapters' default, or ``embeddings=``'s
        fused one) unless ``scorer=`` is given."""
        options.setdefault("scorer", self.settings.scorer)
        options.pop("marker_cost", None)  # its counter counts each marker already (RenderedSettings)
        if self.long_term is None:
            return note_expired(self.index.select(pools, context, **options))
        key = self.version
        with self._lock:
            kept = self._contents
        if kept is None or kept[0] != key:
            kept = (key, MemoryIndex(self.read(), token_counter=self.token_counter))
            with self._lock:
                self._contents = kept
        return note_expired(kept[1].select(pools, context, **options))


def _episode_priority(value: Any) -> Any:
    """``episode_priority``, checked by the core's rule for the
    ``base_priority`` it becomes: found on the first flush instead, the
    error would come after LlamaIndex archived the lines, and every later
    flush would fail on the kept lines again."""
    try:
        check_entry({"content": "-", "base_priority": value})
    except EntryError as err:
        raise ArgumentError("episode_priority %s" % err.problem) from None
    return value


def _check_consolidator(model: Any) -> None:
    """A consolidator the flush can drive (a chat model, a LlamaIndex
    ``LLM``, a ``Decider``), checked when the store is built, not on the
    first flush after LlamaIndex archived its lines."""
    from ..memory.consolidate_models import decider_for

    try:
        decider_for(model)
    except (TypeError, ValueError, NotImplementedError) as err:
        raise ArgumentError("consolidator: %s" % err) from None
