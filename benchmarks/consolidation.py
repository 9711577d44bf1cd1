"""Consolidation benchmark: facts that change over time, with repeats.

    python benchmarks/consolidation.py [--seed N] [--updates U] [--repeats R] [--nearest K]

A deterministic timeline (``facts.timeline``): 24 facts (12 subjects and
their near-identical twins, "staging" / "production database"), each
stated, then changed ``U`` times, every value re-stated ``R`` times in other
words from other threads. The writes go to the store in time order under
three write paths:

* **none**: every write is stored;
* **rules**: the duplicate finder (exact + near, word overlap) drops
  repeats and records their provenance on the kept entry (``seen``);
* **rules + consolidator**: as rules, then every write that is not a
  repeat goes to :func:`~poolsplit_adapters.memory.consolidate.consolidate`
  beside its ``K`` nearest active entries (``DuplicateFinder.nearest``),
  driven by LangChain's ``GenericFakeChatModel`` scripted to emit the right
  operation for what it is shown (noop for a repeat, update for a new value,
  add for a new fact); accepted writes are applied (supersedes close the old
  version), unresolved candidates are added.

The scripted model knows the truth of every text, so the third row measures
the plumbing (nearest-neighbour recall, handles, validation, supersede), not a
model's judgement: a real model is at most this good.

Then one question per fact ("Which host is the staging database?") runs
through ``select`` with a facts pool (``--entries``, default 5, and 200
tokens; the spec's default scorer). Printed as markdown: the share of questions whose current
value loads, the share where a stale value of the same fact loads beside it,
the share of loaded slots spent on a stale value or a second copy of the
current one, entries stored and active, duplicates stored per 1,000 writes
(an entry whose fact and value an earlier, still open entry held; a repeat
the consolidator's noop stored closed is history, not a duplicate), and the
facts whose ``history`` holds every value in order.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import docs_tables  # noqa: E402
import facts  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402

from poolsplit_adapters import Pool, select  # noqa: E402
from poolsplit_adapters.memory.consolidate import consolidate  # noqa: E402
from poolsplit_adapters.memory.duplicates import DuplicateFinder, record_repeat  # noqa: E402
from poolsplit_adapters.memory.validity import history  # noqa: E402
from poolsplit_adapters.poolsplit import default_is_active  # noqa: E402
from poolsplit_adapters.stores import SQLiteMemoryStore  # noqa: E402

#: The facts pool's entry cap (``--entries``); 200 tokens.
ENTRIES = 5
NAMESPACE = "team"

Truth = Dict[str, Tuple[int, int]]  # text -> (fact, value index)


class ScriptedConsolidator(GenericFakeChatModel):
    """LangChain's fake chat model answering every consolidation with the
    right plan for what the prompt shows (it knows each text's fact and
    value), through the same tool call a real model would make."""

    truth: Dict[str, Tuple[int, int]]

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedConsolidator:  # type: ignore[override]
        return self

    def _generate(self, messages: List[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        payload = json.loads(str(next(m for m in messages if isinstance(m, HumanMessage)).content))
        ops = []
        for row in payload["new"]:
            fact, value = self.truth[row["text"]]
            same = [e for e in payload["existing"] if self.truth.get(e["text"], (-1, -1))[0] == fact]
            if not same:
                ops.append({"op": "add", "new": row["handle"]})
            elif self.truth[same[0]["text"]][1] == value:
                ops.append({"op": "noop", "new": row["handle"], "old": same[0]["handle"]})
            else:
                ops.append({"op": "update", "new": row["handle"], "old": same[0]["handle"]})
        call = {"name": "ConsolidationPlan", "args": {"operations": ops}, "id": "plan"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


def as_entry(index: int, write: facts.Write) -> Dict[str, Any]:
    return {
        "id": "w-%04d" % index,
        "type": "fact",
        "content": write.text,
        "source": write.source,
        "created": write.at,
        "namespace": NAMESPACE,
    }


def store_everything(writes: Sequence[facts.Write]) -> List[Dict[str, Any]]:
    return [as_entry(i, w) for i, w in enumerate(writes)]


def store_with_rules(
    writes: Sequence[facts.Write], model: Optional[ScriptedConsolidator], nearest: int
) -> List[Dict[str, Any]]:
    """The write path with the duplicate finder, and the consolidator when
    ``model`` is given. Returns every stored entry (closed versions too)."""
    store: Dict[str, Dict[str, Any]] = {}
    finder = DuplicateFinder()
    for i, write in enumerate(writes):
        candidate = as_entry(i, write)
        hit = finder.find(candidate)
        if hit is not None:
            kept = store[str(hit.kept["id"])]
            store[kept["id"]] = record_repeat(kept, source=write.source, at=write.at)
            finder = _rebuilt(store)
            continue
        if model is None:
            store[candidate["id"]] = candidate
            finder.add(candidate)
            continue
        shown = [entry for entry, _ in finder.nearest(candidate, k=nearest)]
        result = consolidate([candidate], shown, model=model, at=write.at)
        assert not result.refused, result.refused
        for written in result.writes():
            store[written["id"]] = written
        for index in result.unresolved:
            store[candidate["id"]] = dict([candidate][index])
        finder = _rebuilt(store)
    return list(store.values())


def store_write(writes: Sequence[facts.Write]) -> List[Dict[str, Any]]:
    """What a host gets with no model: each write through a real store's
    ``add`` (SQLite, in time order), which keeps a repeat once and links a
    changed value to the version it changes (``memory/changes.py``).
    Returns every stored entry, closed versions too."""
    with tempfile.TemporaryDirectory() as folder, SQLiteMemoryStore(os.path.join(folder, "m.db")) as store:
        for i, write in enumerate(writes):
            store.add([as_entry(i, write)])
        return store.entries()


def _rebuilt(store: Dict[str, Dict[str, Any]]) -> DuplicateFinder:
    # The finder holds the entry objects it was given; after a write replaced
    # some of them (a repeat recorded, a version closed) it is rebuilt from
    # the store, as a host rebuilds it from its store on the next turn.
    return DuplicateFinder(store.values())


def truth_of(writes: Sequence[facts.Write]) -> Truth:
    return {w.text: (w.subject, w.value) for w in writes}


def current_values(writes: Sequence[facts.Write]) -> Dict[int, int]:
    out: Dict[int, int] = {}
    for w in writes:
        out[w.subject] = w.value
    return out


def measure(entries: List[Dict[str, Any]], writes: Sequence[facts.Write], cap: int = ENTRIES) -> Dict[str, float]:
    pools = [Pool("facts", 200, cap, ("fact",))]
    truth = truth_of(writes)
    current = current_values(writes)
    now = datetime.datetime.fromisoformat(writes[-1].at.rstrip("Z")) + datetime.timedelta(hours=1)
    loads_current = loads_stale = slots = wasted = 0
    questions = facts.questions()
    for fact, question in questions:
        chosen = select(entries, pools, {"message": question}, now=now).pools["facts"]
        values = [truth[e["content"]][1] for e in chosen if truth[e["content"]][0] == fact]
        loads_current += current[fact] in values
        loads_stale += any(v != current[fact] for v in values)
        slots += len(chosen)
        # A slot is wasted on a stale value or a second copy of the current one.
        wasted += sum(1 for v in values if v != current[fact]) + max(0, values.count(current[fact]) - 1)
    # A stored duplicate: an entry whose (fact, value) an earlier entry held
    # and still held (not closed) when it was written. A repeat closed as it
    # was written (a consolidator's noop keeps it so, as history) was never
    # open: it is no duplicate.
    duplicates = 0
    for e in entries:
        if e.get("valid_until") is not None and e["valid_until"] <= e["created"]:
            continue
        pair = truth[e["content"]]
        duplicates += any(
            other is not e
            and truth[other["content"]] == pair
            and other["created"] < e["created"]
            and (other.get("valid_until") is None or other["valid_until"] > e["created"])
            for other in entries
        )
    complete = 0
    for fact in current:
        heads = [e for e in entries if default_is_active(e) and truth[e["content"]][0] == fact]
        if len(heads) != 1:
            continue
        chain = [truth[v.content][1] for v in history(entries, str(heads[0]["id"]))]
        stated = []
        for w in writes:
            if w.subject == fact and (not stated or stated[-1] != w.value):
                stated.append(w.value)
        complete += chain == stated
    return {
        "current": loads_current / len(questions),
        "stale": loads_stale / len(questions),
        "wasted": wasted / slots if slots else 0.0,
        "stored": len(entries),
        "active": sum(1 for e in entries if default_is_active(e)),
        "duplicates_per_1000": 1000.0 * duplicates / len(writes),
        "history": complete / len(current),
    }


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--updates", type=int, default=3, help="changes per fact after its first value")
    parser.add_argument("--repeats", type=int, default=2, help="re-wordings after each statement")
    parser.add_argument("--entries", type=int, default=ENTRIES, help="the facts pool's entry cap")
    parser.add_argument("--nearest", type=int, default=5, help="existing entries shown to the consolidator")
    args = parser.parse_args(argv)
    writes = facts.timeline(args.seed, updates=args.updates, repeats=args.repeats)
    model = ScriptedConsolidator(messages=iter(()), truth=truth_of(writes))
    rows = [
        ("none", store_everything(writes)),
        ("rules (duplicate finder)", store_with_rules(writes, None, args.nearest)),
        ("a store's write (repeats kept once, changes linked; no model)", store_write(writes)),
        ("rules + consolidator (scripted model)", store_with_rules(writes, model, args.nearest)),
    ]
    lines = [
        "%d writes: %d facts, %d updates each, %d repeats per statement (seed %d); %d questions, "
        "facts pool of %d entries\n"
        % (
            len(writes),
            2 * len(facts.SUBJECTS),
            args.updates,
            args.repeats,
            args.seed,
            len(facts.questions()),
            args.entries,
        ),
        "| write path | current value loads | stale value loads beside it | loaded slots on stale or repeated values "
        "| entries stored | active | duplicates stored per 1,000 writes | full history |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, entries in rows:
        m = measure(entries, writes, args.entries)
        lines.append(
            "| %s | %.0f%% | %.0f%% | %.0f%% | %d | %d | %.0f | %.0f%% |"
            % (
                name,
                100 * m["current"],
                100 * m["stale"],
                100 * m["wasted"],
                m["stored"],
                m["active"],
                m["duplicates_per_1000"],
                100 * m["history"],
            )
        )
    text = "\n".join(lines)
    print(text)
    if argv is None and not sys.argv[1:]:  # the default run is the one the docs show
        docs_tables.write_table("consolidation", text)


if __name__ == "__main__":
    main()
