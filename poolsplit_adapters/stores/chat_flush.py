"""The write-back of LlamaIndex's memory blocks: flushed chat lines judged
by the write gate (a user's line opens an exchange, the answers join it),
written in one write through the store's duplicate check, or through the
host's consolidator, a failed write kept, in order, for the next flush
(during a ``Memory`` turn: warned and noted, never the turn's failure).
"""

from __future__ import annotations

import datetime
import threading
import warnings
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import ArgumentError
from ..memory.consolidate import ConsolidationOp, ConsolidationResult
from ..memory.turns import USER, Provenance, Said, exchange_id, exchange_proposals
from ..memory.write_gate import GateReport, Proposal, WriteGate, utc_stamp
from ..settings import AdapterSettings
from .base import MemoryStore, StoreVerbs, WriteReport
from .checks import storable_text

__all__ = ["ChatFlush", "SESSION_KEY", "UNFLUSHED_NOTE", "UnflushedWarning", "session_text"]

#: Entry key naming the chat session a flushed message came from. An entry
#: with it belongs to that session: other sessions do not recall it unless
#: the store shares chat (``share_chat=True``).
SESSION_KEY = "session"

#: The selection note (``selection.notes``) of flushed lines a failed write
#: kept: ``{"lines": n, "store": <class name>, "error": "<Type>: <reason>"}``.
UNFLUSHED_NOTE = "unflushed"


class UnflushedWarning(UserWarning):
    """A flush's write failed during a ``Memory`` turn (the store is down,
    the file read-only, the disk full): its lines are kept, in order, and
    written first by the next flush; the turn goes on. The message names
    the store and the reason; the selection notes them too
    (`UNFLUSHED_NOTE`) until a flush writes them.

    Example:
        ```python
        import warnings
        warnings.simplefilter("error", UnflushedWarning)  # a test that must see every write succeed
        ```
    """


class ChatFlush(StoreVerbs):
    """The write-back of [`ChatMemoryEntries`][poolsplit_adapters.stores.chat_memory.ChatMemoryEntries]
    (see the module docstring)."""

    settings: AdapterSettings
    write_gate: WriteGate
    gate_report: GateReport
    consolidator: Any
    last_consolidation: Optional[ConsolidationResult]
    episode_type: str
    episode_priority: float
    long_term: Optional[MemoryStore]
    flush_filter: Callable[[Any], bool]
    _lock: threading.Lock
    _unflushed: List[Proposal]
    _flush_failure: Optional[str]

    def _filtered(self, messages: Sequence[Any], refused: List[str]) -> List[Tuple[int, Any]]:
        """(position, message) of each flushed message `flush_filter`
        accepts. A message the filter raises on (a host's filter reading
        ``m.content``, None on a tool call) is refused, its error appended
        to ``refused`` (`_write_pending` names it once the others are
        written): raised from here, it lost the whole batch, which
        LlamaIndex's ``Memory`` had archived already."""
        accepted: List[Tuple[int, Any]] = []
        for n, message in enumerate(messages):
            try:
                if self.flush_filter(message):
                    accepted.append((n, message))
            except Exception as error:
                refused.append("message %d: flush_filter raised %s: %s" % (n, type(error).__name__, error))
        return accepted

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
        except Exception as err:
            with self._lock:
                self._unflushed = batch + self._unflushed
                self._flush_failure = "%s: %s" % (type(err).__name__, err)
            raise
        with self._lock:
            if not self._unflushed:
                self._flush_failure = None
        if refused:
            raise ArgumentError(
                "flush refused %s; the other lines were written (%d)" % ("; ".join(refused), len(written))
            )
        return written

    def _write_or_keep(self, candidates: List[Proposal], refused: Sequence[str] = ()) -> List[Dict[str, Any]]:
        """`_write_pending` for a flush inside a ``Memory`` turn: a write
        that raises leaves its lines kept (as ever) and an
        `UnflushedWarning` naming the store and the reason, and returns
        nothing written; the turn answers. LlamaIndex's ``Memory`` has
        archived the lines before this runs, so raising saved nothing and
        failed the turn, its answer with it. A refused line
        (`ArgumentError`) still raises: it is not kept, and only the error
        says so (the warning names it when the write failed too)."""
        try:
            return self._write_pending(candidates, refused)
        except ArgumentError:
            raise
        except Exception:
            note = self.unflushed_note()
            assert note is not None
            warnings.warn(
                "PoolSplitMemoryStore: the write of flushed chat to %s failed (%s); %d line(s) kept, "
                "written first by the next flush (unflushed)%s"
                % (
                    note["store"],
                    note["error"],
                    note["lines"],
                    "; refused, not kept: %s" % "; ".join(refused) if refused else "",
                ),
                UnflushedWarning,
                stacklevel=3,
            )
            return []

    @property
    def unflushed(self) -> int:
        """Flushed lines whose write failed, kept for the next flush (see ``flush``)."""
        return len(self._unflushed)

    def unflushed_note(self) -> Optional[Dict[str, Any]]:
        """What the selection notes (`UNFLUSHED_NOTE`) while lines are kept:
        how many, the store that refused them, the last failure; None when
        none are."""
        with self._lock:
            lines, failure = len(self._unflushed), self._flush_failure
        if not lines:
            return None
        store = self.long_term if self.long_term is not None else self
        return {"lines": lines, "store": type(store).__name__, "error": failure}

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
        if accepted and self.consolidator is not None:
            report, result = target.consolidate(accepted, model=self.consolidator, at=stamp)
            self.last_consolidation = result
            kept: List[Optional[str]] = _consolidated(accepted, report, result)
        else:
            kept = self.write(accepted).kept if accepted else []
        settled = self.write_gate.repeated(settled, kept)
        self.gate_report.count(settled)
        return [entry for entry, repeat in zip(accepted, kept) if repeat is None]


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


def session_text(session: Any) -> str:
    """A session id as the flushed chat's owner: every store must hold it as
    it is, so one with NUL or a lone surrogate is refused (written with the
    replacement character it became another session's, "alice\\ufffd", and
    the session that wrote it could no longer recall it)."""
    return storable_text(str(session), "session_id")
