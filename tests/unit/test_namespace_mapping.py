"""One mapping from a LangGraph namespace tuple to an entry's namespace
string (``namespace_label``), and the always-scope entries a namespace kept
out, counted in ``explain()`` and the middleware's selection event.

Before: ``("memories", "ana")`` became ``"memories.ana"`` in the SQLite store
by a join nobody could call; a correction added as ``namespace="ana"`` never
loaded, and only one ``namespace`` reason among the event's dropped rows
said so.
"""

from __future__ import annotations

import datetime
import doctest
import functools
import pathlib
import re

import pytest
from agent_fakes import ToolCallingFakeModel, scripted_agent, thread

import poolsplit_adapters
from poolsplit_adapters import Pool, Visibility, select
from poolsplit_adapters.checks import ArgumentError
from poolsplit_adapters.langchain import SELECTION_EVENT, PoolSplitMemoryMiddleware, RecallConfig, namespace_label
from poolsplit_adapters.poolsplit import default_token_counter
from poolsplit_adapters.render import always_outside_namespace, explain
from poolsplit_adapters.reports import event_payload
from poolsplit_adapters.stores import SQLiteMemoryStore

NOW = datetime.datetime(2026, 7, 1, 8, 30)
ANA = ("memories", "ana")
POOLS = [Pool("fixes", 0, 0, ("correction",)), Pool("notes", 300, 5, ("note", "episode"))]


def fix(entry_id: str, namespace: str) -> dict:
    return {"id": entry_id, "type": "correction", "scope": "always", "content": "Use cents.", "namespace": namespace}


def test_namespace_label_joins_the_labels_and_refuses_a_bare_string():
    assert namespace_label(ANA) == "memories.ana"
    assert namespace_label(["memories", "ana", "drafts"]) == "memories.ana.drafts"
    with pytest.raises(ArgumentError, match="takes a tuple of labels"):
        namespace_label("ana")  # type: ignore[arg-type]


def test_the_package_maps_namespaces_in_one_place():
    package = pathlib.Path(poolsplit_adapters.__file__).parent
    joins = [
        "%s:%d" % (path.relative_to(package), n)
        for path in sorted(package.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"""["']\.["']\.join\(""", line)
    ]
    assert joins == [
        "stores/langgraph/namespaces.py:%d" % _join_line(package / "stores" / "langgraph" / "namespaces.py")
    ]


def _join_line(path: pathlib.Path) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("def namespace_label("))
    return next(n for n, line in enumerate(lines[start:], start + 1) if '".".join(' in line)


def test_always_scope_entries_outside_the_namespace_are_counted_and_explained():
    entries = [fix("ours", "memories.ana"), fix("typo", "ana"), fix("other", "memories.bo"), {"content": "x"}]
    selection = select(entries, POOLS, visibility=Visibility(namespace="memories.ana"))
    assert [c.entry["id"] for c in selection.chosen] == ["ours"]
    assert always_outside_namespace(selection) == 2
    assert "2 always-scope entries outside this namespace (not loaded: reason namespace" in explain(selection)
    assert event_payload(selection)["always_outside_namespace"] == 2
    alone = select([fix("ours", "memories.ana")], POOLS, visibility=Visibility(namespace="memories.ana"))
    assert always_outside_namespace(alone) == 0 and "outside this namespace" not in explain(alone)
    assert event_payload(alone)["always_outside_namespace"] == 0


@pytest.mark.parametrize("use_numpy", [True, False])
def test_the_index_counts_corrections_kept_out_by_namespace_without_a_row(use_numpy, monkeypatch):
    """A shared store: MemoryIndex counts the always-scope entries the
    namespace kept out from its columns (no dropped row built), the same
    number as the list path; the JSON form is the same on both paths."""
    from poolsplit_adapters import Selection
    from poolsplit_adapters.index import MemoryIndex
    from poolsplit_adapters.render import selection_dict

    entries = [fix("ours", "memories.ana"), fix("typo", "ana"), fix("other", "memories.bo")]
    entries += [
        {"id": "n%d" % n, "type": "note", "content": "note %d" % n, "namespace": "memories.bo"} for n in range(50)
    ]
    view = Visibility(namespace="memories.ana")
    listed = select(entries, POOLS, visibility=view)
    indexed = MemoryIndex(entries, use_numpy=use_numpy).select(POOLS, visibility=view)
    assert selection_dict(indexed, dropped=None) == selection_dict(listed, dropped=None)
    built: list = []
    build = Selection.__dict__["dropped"].func  # the core's cached property

    def counted(self: Selection) -> list:
        built.append(1)
        return build(self)

    counting = functools.cached_property(counted)
    counting.__set_name__(Selection, "dropped")
    monkeypatch.setattr(Selection, "dropped", counting)
    fresh = MemoryIndex(entries, use_numpy=use_numpy).select(POOLS, visibility=view)
    assert always_outside_namespace(fresh) == 2 and event_payload(fresh)["always_outside_namespace"] == 2
    assert built == ([] if use_numpy else [1])  # the generic path counts from rows


def test_the_agent_loads_a_correction_stored_under_namespace_label_and_counts_one_stored_as_ana(tmp_path):
    store = SQLiteMemoryStore(tmp_path / "memory.db")
    store.add([fix("ours", namespace_label(ANA)), fix("typo", "ana")])
    middleware = PoolSplitMemoryMiddleware(
        POOLS,
        namespace=ANA,
        store=store,
        now=NOW,
        max_turns=1,
        recall=RecallConfig(token_counter=default_token_counter),
    )
    agent = scripted_agent(middleware, model=ToolCallingFakeModel())
    for text in ("first", "second"):
        events = [
            chunk[SELECTION_EVENT]
            for chunk in agent.stream({"messages": [("user", text)]}, thread("t1"), stream_mode="custom")
        ]
    event = events[-1]
    assert [c["id"] for c in event["chosen"] if c["always"]] == ["ours"]
    assert event["always_outside_namespace"] == 1
    assert {e["namespace"] for e in store.entries() if e["type"] == "episode"} == {namespace_label(ANA)}


def test_the_docstring_examples_run():
    from poolsplit_adapters import render
    from poolsplit_adapters.stores.langgraph import store

    for module in (render, store):
        assert doctest.testmod(module).failed == 0, module.__name__


def test_the_count_builds_no_dropped_rows_when_the_namespace_kept_nothing_out():
    from poolsplit_adapters.poolsplit import CountedSelection, Reason

    def rows() -> list:
        raise AssertionError("the dropped rows were built")

    counted = {(None, Reason.TOKEN_BUDGET): (40, 900)}
    quiet = CountedSelection({}, [], rows, {}, counts=lambda: counted, sample=lambda per_key: rows())
    assert always_outside_namespace(quiet) == 0  # from the counts alone
    real = select([fix("ours", "memories.ana")], POOLS, visibility=Visibility(namespace="memories.ana"))
    assert always_outside_namespace(real) == 0


def test_a_selector_that_counted_it_is_believed():
    selection = select([fix("typo", "ana")], POOLS, visibility=Visibility(namespace="memories.ana"))
    selection.notes["always_outside_namespace"] = 7
    assert always_outside_namespace(selection) == 7
