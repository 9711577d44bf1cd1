"""The store behind LlamaIndex's memory blocks, framework-free: curated
entries in a [`MemoryIndex`][], an optional durable store, per-session
recall of flushed chat, and the write of flushed lines through the one write
gate (a failed write kept and retried), the selection both blocks share and
the pooled block's text ([`PooledRender`][], truncated entry by entry). The
LlamaIndex adapter's ``PoolSplitMemoryStore`` adds the translation: chat
messages to lines, the selection's event, the expand tool.

[`ChatMemoryEntries`][] satisfies the store contract
([`MemoryStore`][]): its verbs are [`StoreVerbs`][]', over its index, or
over the durable ``store`` it was given.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..call import AdapterCall, cap, record_selection
from ..checks import check_callable, check_flag
from ..errors import ArgumentError
from ..index import MemoryIndex
from ..memory.consolidate import ConsolidationOp, ConsolidationResult
from ..memory.expiry import Moment, note_expired
from ..memory.tasks import warn_unplanned_standing
from ..memory.turns import USER, Provenance, Said, check_written_type, exchange_id, exchange_proposals
from ..memory.write_gate import GateReport, Proposal, WriteGate, utc_stamp
from ..poolsplit import Chosen, EntryError, Pool, Selection, check_entry
from ..recall import VisibleEntries, present_types
from ..render import marker, omission_line, omitted_by_pool, selected_line
from ..settings import AdapterSettings, Framework
from .base import Change, MemoryStore, StoreVerbs, WriteReport
from .checks import storable_text
from .memory import IdLookup, commit_to_index

__all__ = ["SESSION_KEY", "ChatMemoryEntries", "PooledRender", "session_text"]

#: Entry key naming the chat session a flushed message came from. An entry
#: with it belongs to that session: other sessions do not recall it unless
#: the store shares chat (``share_chat=True``).
SESSION_KEY = "session"


# How many recent renders of the pooled block are remembered, so that
# Memory's truncation call can be answered from the structured selection.
_RENDERS_KEPT = 256


@dataclass(frozen=True)
class PooledRender:
    """The pooled block's text for one selection, with what it is made of.

    Truncation works on ``items`` (never by re-reading the text, where an
    entry's content could imitate an omission line).

    Attributes:
        items: (chosen entry, its marker), in render order.
        budget: pool -> entries left out by a budget or ``k``.
        budget_cause: how the budget line names its cause.
        pools: the pool order, which the omission lines follow.
        cut: pool -> entries the context limit left out (after truncation).

    Example:
        ```python
        rendered = store.render_pooled(store.select_for("deploy", "alice"))
        rendered.without_lowest().text   # one entry fewer, and a line that says so
        ```
    """

    items: Tuple[Tuple[Chosen, str], ...]
    budget: Mapping[str, int]
    budget_cause: str
    pools: Tuple[str, ...]
    cut: Mapping[str, int] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The entries, then what was left out of them: by budget (or
        ``k``), then by the context limit; no line for a cause that left
        nothing out."""
        lines = [text for _, text in self.items]
        lines.append(omission_line(self.budget, self.budget_cause))
        lines.append(omission_line(self.cut, "by the context limit"))
        return "\n".join(line for line in lines if line)

    def ledger(self, place: str) -> str:
        """What the never-truncated corrections block says about this text
        (`render.selected_line`): how many entries
        it holds per pool and what budgets left out, true whether or not
        the text survives.

        ``Memory`` drops a truncatable block whole when even its omission
        lines do not fit (measured: 6 of 40 turns of the LlamaIndex
        notebook); stated in a priority-0 block, the counts survive that.
        """
        return selected_line(self.per_pool(), place, self.budget)

    def without_lowest(self) -> PooledRender:
        """One entry fewer: the lowest-ranked of the pool holding the most
        (the last such pool on a tie), so every pool keeps what it can."""
        sizes = self.per_pool()
        largest = max(sizes.values())
        pool = [p for p in sizes if sizes[p] == largest][-1]
        victim = max(i for i, (chosen, _) in enumerate(self.items) if chosen.pool == pool)
        counts = dict(self.cut)
        counts[pool] = counts.get(pool, 0) + 1
        cut = {name: counts[name] for name in self.pools if name in counts}
        return dataclasses.replace(self, items=self.items[:victim] + self.items[victim + 1 :], cut=cut)

    def per_pool(self) -> Dict[str, int]:
        """pool -> how many entries this text holds, in pool order."""
        sizes: Dict[str, int] = {}
        for chosen, _ in self.items:
            sizes[chosen.pool] = sizes.get(chosen.pool, 0) + 1
        return sizes


class ChatMemoryEntries(StoreVerbs):
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
        self.settings = AdapterSettings.held_by("PoolSplitMemoryStore", Framework.LLAMA_INDEX, pools=pools, **settings)
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
        self._ids = IdLookup(self.index)
        self.long_term = store
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
        session or either version changes)."""
        if session_id:
            session_text(session_id)
        key = (message, session_id, self.index.version, self._long_term_version())
        memo = self._memo
        if memo is not None and memo[0] == key:
            return record_selection(self.settings, memo[1]), None
        call = AdapterCall(self.settings, message, entry_types=self._entry_types)
        if self.long_term is None and (self.share_chat or self._sessions_in_index() <= {session_id}):
            selection = call.select_in(self.index)  # nothing to hide: the prepared index
        else:
            selection = call.select_in(self._candidate_index(session_id))
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
        (read when asked), within the visibility."""
        store = self

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

    # -- write-back -----------------------------------------------------------------

    def _line_proposals(
        self, lines: Sequence[Tuple[int, str, str, Any]], refused: Optional[List[str]] = None
    ) -> List[Proposal]:
        """The gate's judgement of flushed lines (position among the flushed
        messages, role, text, session), stamped now: a user's line opens an
        exchange, the answers after it join it. A line whose session id no
        store can hold (`session_text`) is left out and its error appended
        to ``refused`` (raised at once when ``refused`` is None): one bad
        line must not stop the batch's other lines from being written."""
        stamp = utc_stamp(self.settings.now or datetime.datetime.now(datetime.timezone.utc))
        visibility = self.settings.visibility
        namespace = visibility.chain[0] if visibility is not None and visibility.chain else None
        proposals: List[Proposal] = []
        exchange: Optional[str] = None
        for n, role, text, session in lines:
            try:
                owner = session_text(session) if session else None
            except ArgumentError as error:
                if refused is None:
                    raise
                refused.append("message %d: %s" % (n, error))
                continue
            source = "session:%s" % session if session else "chat"
            if role == USER:  # a user's line opens an exchange; the answers after it join it
                exchange = exchange_id(namespace, owner or "", stamp, str(n), text)
            where = Provenance(source, namespace, stamp, exchange=exchange, owner=owner)
            proposals.extend(exchange_proposals(self.write_gate, [Said(role, text)], self.episode_type, where))
        return proposals

    def _write_pending(self, candidates: List[Proposal], refused: Sequence[str] = ()) -> List[Dict[str, Any]]:
        """Write the lines a failed flush kept, then ``candidates`` (one
        write); kept again, in order, when the write raises (see the
        adapter's ``flush``). Then, when lines were ``refused``
        (`_line_proposals`), an `ArgumentError` naming each: the others
        are written by then."""
        with self._lock:
            pending, self._unflushed = self._unflushed, []
        batch = pending + candidates
        try:
            written = self._write_flushed(batch)
        except Exception:
            with self._lock:
                self._unflushed = batch + self._unflushed
            raise
        if refused:
            raise ArgumentError(
                "flush refused %s; the other lines were written (%d)" % ("; ".join(refused), len(written))
            )
        return written

    @property
    def unflushed(self) -> int:
        """Flushed lines whose write failed, kept for the next flush (see ``flush``)."""
        return len(self._unflushed)

    def _write_flushed(self, proposals: List[Proposal]) -> List[Dict[str, Any]]:
        """Write the proposals the gate accepts (one write); count every refusal."""
        stamp = proposals[0].entry["created"] if proposals else utc_stamp()
        settled = self.write_gate.settle(proposals, ())
        accepted: List[Dict[str, Any]] = []
        for proposal in settled:
            if proposal.refused is None:
                entry = dict(proposal.entry)
                if entry["type"] == self.episode_type:
                    # a raw line of the chat; the user's standing statements rank as the
                    # middleware ranks them (the default), never as a transcript line
                    entry["base_priority"] = self.episode_priority
                session = entry["source"][len("session:") :] if entry["source"].startswith("session:") else None
                if session:
                    entry[SESSION_KEY] = session
                accepted.append(entry)
        target = self.holder
        if accepted and self.consolidator is not None and isinstance(target, StoreVerbs):
            report, result = target.consolidate(accepted, model=self.consolidator, at=stamp)
            self.last_consolidation = result
            kept: List[Optional[str]] = _consolidated(accepted, report, result)
        else:
            kept = self.write(accepted).kept if accepted else []
        settled = self.write_gate.repeated(settled, kept)
        self.gate_report.count(settled)
        return [entry for entry, repeat in zip(accepted, kept) if repeat is None]

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
                found.append(dict(entry))
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
        return self.long_term if isinstance(self.long_term, StoreVerbs) else self

    def commit(self, change: Change) -> None:
        """Apply ``change`` to the index (one ``MemoryIndex`` edit per entry,
        under the store's lock)."""
        commit_to_index(self.index, change, self._lock, self._ids)

    def write(self, entries: Iterable[Mapping[str, Any]]) -> WriteReport:
        """The contract's ``write`` (``add`` with its report): in the durable
        store when one was given, else in `index`."""
        if isinstance(self.long_term, StoreVerbs):
            return self.long_term.write(entries)
        if self.long_term is not None:
            rows = list(entries)
            return WriteReport(self.long_term.add(rows), [])
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
        if self.long_term is not None:
            gone = self.long_term.delete(entry_id) or gone
        return gone

    def forget(self, *, namespace: str) -> int:
        """The contract's ``forget``: every entry of ``namespace``, from the
        index and from the durable store; how many ids went."""
        count = super().forget(namespace=namespace)
        if isinstance(self.long_term, StoreVerbs):
            self.long_term.forget(namespace=namespace)
        return count

    def sweep_expired(self, now: Optional[Moment] = None) -> List[str]:
        """The contract's ``sweep_expired``, on the index and the durable store."""
        gone = super().sweep_expired(now)
        if isinstance(self.long_term, StoreVerbs):
            gone += [i for i in self.long_term.sweep_expired(now) if i not in gone]
        return gone

    def select(self, pools: Sequence[Pool], context: Optional[Mapping[str, Any]] = None, **options: Any) -> Selection:
        """The core's ``select`` over every entry (the index's and the durable
        store's; no session filter: that is ``select_for``'s), ranked by
        this store's scorer (the adapters' default, or ``embeddings=``'s
        fused one) unless ``scorer=`` is given."""
        options.setdefault("scorer", self.settings.scorer)
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

    # -- the pooled block's text ----------------------------------------------------

    def render_pooled(self, selection: Selection) -> PooledRender:
        """The pooled (contextual) part of ``selection``, remembered so that
        [`truncate_pooled`][] can cut it entry by entry. Both blocks ask
        for the same selection on one ``get``: it is rendered once."""
        with self._lock:
            last: Optional[Tuple[Selection, PooledRender]] = self._last_render
        if last is not None and last[0] is selection:
            return last[1]
        returned = cap(selection, self.settings.k)
        rendered = PooledRender(
            items=tuple((c, marker(c.entry, c.pool, c.layer)) for c in returned if not c.always),
            budget=omitted_by_pool(selection, returned),
            budget_cause="by budget" if self.settings.k is None else "by budget or k",
            pools=tuple(selection.stats),
        )
        text = rendered.text
        with self._lock:
            self._renders[text] = rendered
            self._renders.move_to_end(text)
            while len(self._renders) > _RENDERS_KEPT:
                self._renders.popitem(last=False)
            self._last_render = (selection, rendered)
        return rendered

    def truncate_pooled(self, content: str, tokens_to_truncate: int) -> str:
        """``content`` (a text [`render_pooled`][] made) at least
        ``tokens_to_truncate`` tokens shorter where it can be, entries
        dropped from the least relevant end; the result always ends with
        the explicit omission lines (budget, and the context limit)."""
        with self._lock:
            rendered: Optional[PooledRender] = self._renders.get(content)
        if rendered is None:
            # Not a text this store made (or one long gone): nothing to
            # cut entry by entry, but never silently.
            return "[long-term memory left out by the context limit]"
        size = self.token_counter(content)
        while rendered.items and size - self.token_counter(rendered.text) < tokens_to_truncate:
            rendered = rendered.without_lowest()
        return rendered.text


def _consolidated(
    entries: Sequence[Mapping[str, Any]], report: WriteReport, result: ConsolidationResult
) -> List[Optional[str]]:
    """For each flushed line, None when it was stored as an active memory,
    else the id of the entry it repeats (what [`WriteGate.repeated`][]
     takes): a line a
    consolidator's noop closed repeats the entry the noop named (its text
    is stored, closed; the kept entry's ``seen`` names it); a line the
    ordinary write found a repeat is reported under its own id."""
    applied = [op for op in result.accepted if not any(op is f for f, _ in result.failed)]
    repeats: Dict[str, str] = {}
    changed: set[str] = set()
    for op in applied:
        if op.as_given:  # written by the ordinary write, which reports it
            continue
        if op.op is ConsolidationOp.NOOP and op.target is not None:
            kept = str(op.target["id"])
            repeats.update({str(row["id"]): kept for row in op.writes if str(row["id"]) != kept})
        else:
            changed.update(str(row["id"]) for row in op.writes)
    written = set(report.written) | changed
    return [None if e["id"] in written else repeats.get(e["id"], e["id"]) for e in entries]


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


def session_text(session: Any) -> str:
    """A session id as the flushed chat's owner: every store must hold it as
    it is, so one with NUL or a lone surrogate is refused (written with the
    replacement character it became another session's, "alice\\ufffd", and
    the session that wrote it could no longer recall it)."""
    return storable_text(str(session), "session_id")
