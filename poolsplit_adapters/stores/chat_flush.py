"""The write-back of LlamaIndex's memory blocks: flushed chat lines judged
by the write gate (a user's line opens an exchange, the answers join it),
written in one write through the store's duplicate check, or through the
host's consolidator, a failed write kept, in order, for the next flush.
"""

from __future__ import annotations

import datetime
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import ArgumentError
from ..memory.consolidate import ConsolidationOp, ConsolidationResult
from ..memory.turns import USER, Provenance, Said, exchange_id, exchange_proposals
from ..memory.write_gate import GateReport, Proposal, WriteGate, utc_stamp
from ..settings import AdapterSettings
from .base import StoreVerbs, WriteReport
from .checks import storable_text

__all__ = ["ChatFlush", "SESSION_KEY", "session_text"]

#: Entry key naming the chat session a flushed message came from. An entry
#: with it belongs to that session: other sessions do not recall it unless
#: the store shares chat (``share_chat=True``).
SESSION_KEY = "session"


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
    _lock: threading.Lock
    _unflushed: List[Proposal]

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
