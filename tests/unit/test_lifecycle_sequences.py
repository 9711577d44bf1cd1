"""Random sequences of the lifecycle verbs on every in-process store,
checked against a small reference model after every step.

The contract tests (``contract_checks``, ``test_store_contract``,
``test_lifecycle_writes``) pin each verb's exact answer once; this runs
them *in any order* (write with repeats, supersede, delete, forget, sweep,
a hostile consolidator, export then import) and checks what must hold
whatever came before: every version chain is a line with at most one active
version and no cycle; ``history`` of any version is its whole chain, in
order, in one namespace; a deleted, forgotten or swept entry is gone from
``get``, ``history`` and ``entries``; an expired entry never loads; a refused
supersede changes nothing; nothing the caller passed is mutated; a model
never closes an always-scope entry. Derandomized, with few examples, so it
is fast and the same on every run.
"""

from __future__ import annotations

import copy
import datetime
import io
import pathlib
import tempfile
from typing import Any, Dict, List, Optional, Set, Tuple

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from store_engines import engines

from poolsplit_adapters import EntryError, Pool
from poolsplit_adapters.memory import UnknownEntryError
from poolsplit_adapters.stores import EntryNotFound
from poolsplit_adapters.stores.files import dump_store, load_store

NOW = datetime.datetime(2026, 7, 7, tzinfo=datetime.timezone.utc)
PAST, FUTURE = "2026-07-01T00:00:00Z", "2099-01-01T00:00:00Z"  # expired (at NOW and today) / not
U1, U2 = "memories.u1", "memories.u2"
POOLS = [Pool("all", 100_000, 1_000, None)]
#: Unrelated sentences: a repeat is an exact one, never a near one.
TEXTS = (
    "Invoices are sent on the first business day.",
    "The staging database lives on host db-7.",
    "Alice prefers answers in bullet points.",
    "Never deploy on a Friday afternoon.",
    "Quarterly reviews happen in the big room.",
    "Coffee beans come from the corner roaster.",
)


STORES = engines(POOLS)


class HostileDecider:
    """A consolidator model that tries everything on every handle: retire and
    update each existing memory, fold each new one into it, claim the always
    scope. The harness must refuse whatever touches an always-scope entry."""

    def decide(self, prompt: Any) -> List[Dict[str, Any]]:
        existing, new = len(prompt.existing), len(prompt.candidates)
        ops: List[Dict[str, Any]] = []
        for old in range(1, existing + 1):
            ops.append({"op": "retire", "old": old})
            for cand in range(existing + 1, existing + new + 1):
                ops.append({"op": "update", "new": cand, "old": old})
                ops.append({"op": "noop", "new": cand, "old": old})
        for cand in range(existing + 1, existing + new + 1):
            ops.append({"op": "add", "new": cand, "scope": "always"})
        return ops

    async def adecide(self, prompt: Any) -> List[Dict[str, Any]]:
        return self.decide(prompt)


class Run:
    """One store and the reference model of what it holds."""

    def __init__(self, kind: str, tmp: pathlib.Path) -> None:
        self.kind, self.tmp = kind, tmp
        self.store = STORES[kind](tmp)
        # A LangGraph store wrapper holds one namespace: its entries take its label.
        self.spaces: Tuple[str, ...] = (U1,) if kind.startswith("basestore") else (U1, U2)
        self.model: Dict[str, Dict[str, Any]] = {}  # id -> what the store must hold of it
        self.gone: Set[str] = set()  # ids stored once, deleted since
        self.fresh = 0

    def new_id(self) -> str:
        self.fresh += 1
        return "e%d" % self.fresh

    # -- the model's view ---------------------------------------------------------------

    def active(self, entry_id: str) -> bool:
        row = self.model[entry_id]
        return row.get("superseded_by") is None and row.get("status", "active") == "active"

    def live(self, entry_id: str) -> bool:
        return self.active(entry_id) and self.model[entry_id].get("expires") != PAST

    def chain(self, entry_id: str) -> List[str]:
        """The model's chain of ``entry_id``, oldest first."""
        first = entry_id
        while self.model[first].get("supersedes") in self.model:
            before = self.model[first]["supersedes"]
            if self.model[before].get("superseded_by") != first:
                break  # a forgotten predecessor's id, reused by another entry: no link
            first = before
        out = [first]
        while self.model[out[-1]].get("superseded_by") is not None:
            out.append(self.model[out[-1]]["superseded_by"])
        return out

    def drop(self, ids: List[str]) -> None:
        for i in ids:
            self.model.pop(i, None)
            self.gone.add(i)

    def predecessors(self, entry_id: str) -> List[str]:
        """``entry_id`` and the versions it supersedes, as delete follows them."""
        out = [entry_id]
        while True:
            before = self.model[out[-1]].get("supersedes")
            if before not in self.model or before in out or self.model[before].get("superseded_by") != out[-1]:
                return out  # a forgotten predecessor's id, reused by another entry, is no version of it
            out.append(before)

    def reopen(self) -> None:
        """A restart in the middle of the sequence: the store's file closed
        and opened again by a new store object (a new process, in effect)."""
        self.store.close()
        self.store = STORES[self.kind](self.tmp)

    def resync(self) -> None:
        """The model taken from the store (after a consolidation, whose
        accepted operations a model decides)."""
        self.model = {e["id"]: self.modelled(e) for e in self.store.entries()}

    @staticmethod
    def modelled(entry: Dict[str, Any]) -> Dict[str, Any]:
        keys = ("content", "namespace", "scope", "expires", "supersedes", "superseded_by", "status")
        return {k: entry.get(k) for k in keys if entry.get(k) is not None}

    # -- the invariants -----------------------------------------------------------------

    def check(self) -> None:
        rows = {e["id"]: e for e in self.store.entries()}
        assert sorted(rows) == sorted(self.model), self.kind
        for entry_id, row in rows.items():
            assert self.modelled(row) == self.model[entry_id], (self.kind, entry_id)
            after = row.get("superseded_by")
            if after is not None:  # a closed version's successor is stored and names it back
                assert after in rows and rows[after].get("supersedes") == entry_id, (entry_id, after)
        for entry_id in rows:
            chain = self.chain(entry_id)
            assert len(chain) == len(set(chain)), chain  # no cycle
            assert sum(1 for i in chain if self.active(i)) <= 1, chain
            assert all(self.active(i) is False for i in chain[:-1]), chain
            assert {rows[i].get("namespace") for i in chain} == {rows[entry_id].get("namespace")}, chain
            assert [v.id for v in self.store.history(entry_id)] == chain, (self.kind, entry_id)
        for gone in self.gone:
            assert self.store.get(gone) is None, gone
            with pytest.raises(UnknownEntryError):
                self.store.history(gone)
        chosen = [c.entry["id"] for c in self.store.select(POOLS, {"message": "anything"}, now=NOW).chosen]
        assert len(chosen) == len(set(chosen))
        assert set(chosen) <= {i for i in rows if self.live(i)}, self.kind
        expired = {i for i in rows if self.model[i].get("expires") == PAST}
        assert {e["id"] for e in self.store.expired(NOW)} == expired

    # -- the verbs ----------------------------------------------------------------------

    def write(self, given: List[Dict[str, Any]]) -> None:
        shown = copy.deepcopy(given)
        expected: List[Optional[str]] = []  # the kept id of each repeat, else None
        batch: List[Tuple[Dict[str, Any], str]] = []
        for entry in given:
            same = [
                i
                for i in self.model
                if self.live(i)
                and (self.model[i]["content"], self.model[i].get("namespace"), self.model[i].get("scope"))
                == (entry["content"], entry.get("namespace"), entry.get("scope"))
            ] + [
                i
                for e, i in batch
                if (e["content"], e.get("namespace"), e.get("scope"))
                == (entry["content"], entry.get("namespace"), entry.get("scope"))
            ]
            if entry.get("supersedes") is not None or entry.get("expires") == PAST:
                same = []  # a version of a history, an entry expired already: each keeps its own id
            # two live entries with the text: the repeat goes to the first written, on every store
            first = min(same, key=lambda i: (self.store.get(i)["created"], i)) if len(same) > 1 else None
            expected.append(first or (same[0] if same else None))
            if not same and entry.get("expires") != PAST and entry.get("supersedes") is None:
                batch.append((entry, entry["id"]))  # an expired entry, a version: each absorbs no repeat of the write
        report = self.store.write(given)
        assert given == shown  # nothing the caller passed is mutated
        assert report.kept == expected, (self.kind, given)
        for entry, kept in zip(given, expected):
            if kept is None:
                self.model[entry["id"]] = self.modelled(entry)
                self.gone.discard(entry["id"])

    def supersede(self, old: str, new: Dict[str, Any]) -> None:
        shown = copy.deepcopy(new)
        before = self.store.entries()
        why: List[type] = []  # each refusal that applies (the store names one of them)
        if old not in self.model:
            why.append(EntryNotFound)
        elif not self.active(old):
            why.append(ValueError)
        elif new.get("namespace") not in (None, self.model[old].get("namespace")):
            why.append(EntryError)
        # A closed (or expired) version's id with its text, in its place: a fact that returned.
        # Said again in a later second (a new sighting) it opens under its returned_id, in the
        # same second it is the id's own retry and refused: either answer, by the clock.
        returning = (
            not why
            and new["id"] in self.model
            and new["id"] != old
            and not self.live(new["id"])
            and (self.model[new["id"]]["content"], self.model[new["id"]].get("scope"))
            == (new["content"], new.get("scope"))
            and self.model[new["id"]].get("namespace") == self.model[old].get("namespace")
        )
        if new["id"] in self.model or new["id"] == old:
            why.append(EntryError)
        given_id = None
        if returning:
            try:
                given_id = self.store.supersede(old, new)
            except EntryError:
                assert self.store.entries() == before, (self.kind, old, new)
            else:
                assert given_id != new["id"] and given_id not in self.model, (self.kind, given_id)
        elif why:
            with pytest.raises(tuple(why)):
                self.store.supersede(old, new)
            assert self.store.entries() == before, (self.kind, old, new)  # a refusal changes nothing
        else:
            given_id = self.store.supersede(old, new)
            assert given_id == new["id"]
        if given_id is not None:
            opened = self.modelled(dict(new, id=given_id))
            opened["namespace"] = self.model[old].get("namespace")
            opened["supersedes"] = old
            self.model[given_id] = opened
            self.model[old]["superseded_by"] = given_id
            self.gone.discard(given_id)
        assert new == shown

    def delete(self, entry_id: str) -> None:
        existed = entry_id in self.model
        assert self.store.delete(entry_id) is existed
        if existed:
            self.drop(self.predecessors(entry_id))

    def forget(self, namespace: str) -> None:
        doomed = [i for i, row in self.model.items() if row.get("namespace") == namespace]
        assert self.store.forget(namespace=namespace) == len(doomed)
        self.drop(doomed)

    def sweep(self) -> None:
        doomed: List[str] = []
        for entry_id, row in self.model.items():
            if row.get("expires") == PAST:
                doomed += [i for i in self.predecessors(entry_id) if i not in doomed]
        assert sorted(self.store.sweep_expired(NOW)) == sorted(doomed), self.kind
        self.drop(doomed)

    def consolidate(self, given: List[Dict[str, Any]]) -> None:
        always = {e["id"]: e for e in self.store.entries() if e.get("scope") == "always"}
        shown = copy.deepcopy(given)
        self.store.consolidate(given, model=HostileDecider(), at="2026-07-06T00:00:00Z")
        assert given == shown
        after = {e["id"]: e for e in self.store.entries()}
        for entry_id, entry in always.items():  # a model never touches one (a repeat adds to ``seen``)
            assert dict(after[entry_id], seen=None) == dict(entry, seen=None), (self.kind, entry_id)
        assert set(self.model) <= set(after)  # a consolidation deletes nothing
        for entry in given:  # nothing lost: each stored, or a repeat folded into a kept entry
            assert entry["id"] in after or any(
                row.get("content") == entry["content"] and row.get("namespace") == entry.get("namespace")
                for row in after.values()
            )
        self.resync()

    def export_import(self) -> None:
        out = io.StringIO()
        dump_store(self.store.entries(), out)
        path = self.tmp / ("export%d.jsonl" % self.fresh)
        path.write_text(out.getvalue(), encoding="utf-8")
        (self.tmp / ("again%d" % self.fresh)).mkdir()
        again = STORES[self.kind](self.tmp / ("again%d" % self.fresh))
        lines = load_store(path, for_writing=True)
        report = again.write(lines)
        assert report.duplicates == []
        assert sorted(e["id"] for e in again.entries()) == sorted(self.model)
        for entry in again.entries():
            assert self.modelled(entry) == self.model[entry["id"]], (self.kind, entry["id"])
        self.fresh += 1


def _entry(run: Run, data: Any, *, namespace: bool = True) -> Dict[str, Any]:
    entry: Dict[str, Any] = {"id": run.new_id(), "type": "note", "content": data.draw(st.sampled_from(TEXTS))}
    if namespace:
        entry["namespace"] = data.draw(st.sampled_from(run.spaces))
    if data.draw(st.booleans()):
        entry["scope"] = "always"
    expires = data.draw(st.sampled_from((None, PAST, FUTURE)))
    if expires is not None:
        entry["expires"] = expires
    return entry


def _written(run: Run, data: Any) -> Dict[str, Any]:
    """An entry to write: now and then under a deleted entry's id, or naming
    a deleted version as the one it supersedes (a line of an old export)."""
    entry = _entry(run, data)
    if run.gone and data.draw(st.integers(0, 3)) == 0:
        entry["supersedes"] = data.draw(st.sampled_from(sorted(run.gone)))
    if run.gone and data.draw(st.integers(0, 3)) == 0:
        entry["id"] = data.draw(st.sampled_from(sorted(run.gone)))
        if entry["id"] == entry.get("supersedes"):
            del entry["supersedes"]
    return entry


def _known(run: Run, data: Any) -> str:
    return data.draw(st.sampled_from(sorted(run.model) + sorted(run.gone) + ["missing"]))


def _batch(entries: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """``entries`` without a second use of one id (a batch may not repeat
    one) and without a link to an entry of the batch (a history written in
    one go: the contract tests pin it)."""
    seen: Set[str] = set()
    out = [e for e in entries if not (e["id"] in seen or seen.add(e["id"]))]  # type: ignore[func-returns-value]
    for entry in out:
        if entry.get("supersedes") in seen:
            del entry["supersedes"]
    return out


def step(run: Run, data: Any, verb: str) -> None:
    """One step of a random lifecycle sequence: ``verb`` with drawn arguments."""
    if verb == "write":
        run.write(_batch([_written(run, data) for _ in range(data.draw(st.integers(1, 3)))]))
    elif verb == "supersede":
        old = _known(run, data)
        new = _entry(run, data, namespace=data.draw(st.booleans()))
        if run.model and data.draw(st.integers(0, 4)) == 0:
            new["id"] = _known(run, data)  # an id stored (or once stored) already
        run.supersede(old, new)
    elif verb == "delete":
        run.delete(_known(run, data))
    elif verb == "forget":
        run.forget(data.draw(st.sampled_from(run.spaces)))
    elif verb == "sweep":
        run.sweep()
    elif verb == "consolidate":
        run.consolidate([_entry(run, data) for _ in range(data.draw(st.integers(1, 2)))])
    else:
        run.export_import()


VERBS = ("write", "write", "supersede", "supersede", "delete", "forget", "sweep", "consolidate", "export")


@pytest.mark.parametrize("kind", sorted(STORES))
@settings(
    max_examples=12,  # about 8 s a store; the same sequences on every run
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure prints its draws at once
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_random_lifecycle_sequences_keep_every_invariant(kind: str, data: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = Run(kind, pathlib.Path(tmp))
        for _ in range(data.draw(st.integers(4, 12), label="steps")):
            step(run, data, data.draw(st.sampled_from(VERBS), label="verb"))
            run.check()


@settings(
    max_examples=12,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_random_lifecycle_sequences_with_restarts_keep_every_invariant_on_a_sqlite_file(data: Any) -> None:
    """The sequences above on a SQLite file, closed and opened again (a
    restart) between any two steps: what was acknowledged before it holds."""
    with tempfile.TemporaryDirectory() as tmp:
        run = Run("sqlite", pathlib.Path(tmp))
        for _ in range(data.draw(st.integers(4, 12), label="steps")):
            verb = data.draw(st.sampled_from(VERBS + ("reopen", "reopen")), label="verb")
            if verb == "reopen":
                run.reopen()
            else:
                step(run, data, verb)
            run.check()
        run.store.close()
