"""Exact namespaces, tags-AND and provenance: who may see what, on every path."""

from __future__ import annotations

import dataclasses
import datetime
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.documents import Document
from llama_index.core.schema import TextNode
from strategies import contexts, nows, pools, scopes, stores

from poolsplit_adapters import Pool, Reason, Visibility, default_scorer, retrieve_pools, select
from poolsplit_adapters.index import MemoryIndex
from poolsplit_adapters.langchain import PoolSplitRetriever as LCRetriever
from poolsplit_adapters.llama_index import PoolSplitRetriever as LIRetriever

NOW = datetime.datetime(2026, 7, 7)
ALL = [Pool("all", 1000, 50)]

# Random plans may leave a correction's type unadmitted: the warning is
# expected there (its own tests pin it in test_core_errors).
RANDOM_PLANS = pytest.mark.filterwarnings("ignore::poolsplit_adapters.UnadmittedCorrectionWarning")


def e(eid, **kw):
    return {"id": eid, "content": "deploy notes " + eid, "token_count": 1, **kw}


STORE = [
    e("a1", namespace="A", tags=["ops", "db"], source="ci"),
    e("a2", namespace="A", tags=["ops"]),
    e("b1", namespace="B", tags=["ops", "db"], source="ci"),
    e("g1", namespace="global", source="wiki"),
    e("n1"),
    e("fix-a", namespace="A", scope="always", type="correction", source="user"),
    e("fix-b", namespace="B", scope="always", type="correction", source="user"),
]


def ids(entries):
    return sorted(x["id"] for x in entries)


def test_namespace_is_an_exact_match_without_fallback():
    got = retrieve_pools(STORE, ALL, now=NOW, visibility=Visibility(namespace="A"))["all"]
    assert ids(got) == ["a1", "a2", "fix-a"]
    sel = select(STORE, ALL, now=NOW, visibility=Visibility(namespace="A"))
    assert {d.entry["id"]: d.reason for d in sel.dropped} == {
        "b1": Reason.NAMESPACE,
        "g1": Reason.NAMESPACE,
        "n1": Reason.NAMESPACE,
        "fix-b": Reason.NAMESPACE,
    }


def test_an_explicit_chain_widens_with_a_penalty_per_link():
    sel = select(STORE, ALL, now=NOW, visibility=Visibility(namespace=("A", "global")))
    assert ids(sel.entries()) == ["a1", "a2", "fix-a", "g1"]
    score = {c.entry["id"]: c.score for c in sel.chosen}
    assert score["g1"] == default_scorer(STORE[3], None, now=NOW) * 0.9
    assert score["a1"] == default_scorer(STORE[0], None, now=NOW)
    strict = Visibility(namespace=("A", "global"), chain_penalty=0.5)
    assert select(STORE, ALL, now=NOW, visibility=strict).chosen[-1].score == 2.5


def test_the_chain_and_whether_it_filters_are_derived_again_on_replace():
    # chain and active are computed once, at construction; dataclasses.replace
    # runs __post_init__ again, so a copy never keeps the original's answer.
    tenant = Visibility(namespace="t1")
    assert (tenant.chain, tenant.active) == (("t1",), True)
    assert (Visibility().chain, Visibility().active) == ((), False)
    widened = dataclasses.replace(tenant, namespace=["t1", None])
    assert (widened.namespace, widened.chain, widened.active) == (("t1", None), ("t1", None), True)
    cleared = dataclasses.replace(tenant, namespace=None)
    assert (cleared.chain, cleared.active) == ((), False)
    assert dataclasses.replace(cleared, require_source=True).active is True
    assert cleared == Visibility() and "chain=" not in repr(cleared) and "active=" not in repr(cleared)


def test_a_visibility_not_built_by_its_constructor_fails_instead_of_filtering_less():
    # The derived fields have no default: a pickle of a version without them,
    # restored by __dict__ as pickle does, must not read as "no namespace".
    tenant = Visibility(namespace="t1", since="2026-01-01")
    assert pickle.loads(pickle.dumps(tenant)).chain == ("t1",)
    old = object.__new__(Visibility)
    old.__dict__.update({k: v for k, v in tenant.__dict__.items() if k not in ("chain", "active")})
    with pytest.raises(AttributeError, match="chain|active"):
        select(STORE, ALL, now=NOW, visibility=old)


def test_required_tags_are_anded_and_narrow():
    assert ids(retrieve_pools(STORE, ALL, now=NOW, visibility=Visibility(require_tags=["ops"]))["all"]) == [
        "a1",
        "a2",
        "b1",
    ]
    assert ids(retrieve_pools(STORE, ALL, now=NOW, visibility=Visibility(require_tags=["ops", "db"]))["all"]) == [
        "a1",
        "b1",
    ]
    sel = select(STORE, ALL, now=NOW, visibility=Visibility(namespace="A", require_tags=["db"]))
    assert {d.entry["id"]: d.reason for d in sel.dropped}["a2"] == Reason.TAGS


def test_require_source_drops_unsourced_entries_with_a_reason():
    sel = select(STORE, ALL, now=NOW, visibility=Visibility(require_source=True))
    assert ids(sel.entries()) == ["a1", "b1", "fix-a", "fix-b", "g1"]
    assert {d.entry["id"]: d.reason for d in sel.dropped} == {"a2": Reason.NO_SOURCE, "n1": Reason.NO_SOURCE}


def test_scope_argument_errors():
    with pytest.raises(TypeError, match="scope"):  # 0.1's name of visibility=, removed in 0.3
        select(STORE, ALL, visibility=Visibility(namespace="A"), scope=Visibility(namespace="B"))
    with pytest.raises(TypeError, match="visibility must be a Visibility"):
        select(STORE, ALL, visibility="A")
    with pytest.raises(ValueError, match="repeats a link"):
        Visibility(namespace=("A", "A"))
    with pytest.raises(ValueError, match="chain_penalty"):
        Visibility(namespace=("A", "B"), chain_penalty=0)
    with pytest.raises(TypeError, match="require_tags"):
        Visibility(require_tags="ops")
    with pytest.raises(ValueError, match="field 'namespace'"):
        select([e("x", namespace=3)], ALL)


def _visible(entry, scope):
    return scope is None or scope.judge(entry)[0] is None


@RANDOM_PLANS
@given(stores(), pools(), contexts, nows, scopes)
def test_every_path_agrees_and_no_entry_outside_the_scope_is_returned(store, plan, context, now, scope):
    unique = list({id(x): x for x in store}.values())
    stateless = retrieve_pools(unique, plan, context, now=now, visibility=scope)
    report = select(unique, plan, context, now=now, visibility=scope)
    vector = MemoryIndex(unique).select(plan, context, now=now, visibility=scope)
    generic = MemoryIndex(unique, use_numpy=False).select(plan, context, now=now, visibility=scope)
    for result in (stateless, report.pools, vector.pools, generic.pools):
        assert {k: [id(x) for x in v] for k, v in result.items()} == {
            k: [id(x) for x in v] for k, v in stateless.items()
        }
        assert all(_visible(x, scope) for chosen in result.values() for x in chosen)
    for sel in (vector, generic):
        assert [(d.index, d.reason, d.pool) for d in sel.dropped] == [
            (d.index, d.reason, d.pool) for d in report.dropped
        ]


@pytest.mark.filterwarnings("error::poolsplit_adapters.poolsplit.UnadmittedCorrectionWarning")
@given(
    st.lists(
        st.tuples(st.sampled_from(["A", "B"]), st.booleans(), st.sampled_from(["fact", "skill"])),
        min_size=1,
        max_size=30,
    ),
    contexts,
)
def test_tenant_isolation_through_both_adapters(rows, context):
    docs, nodes = [], []
    for n, (tenant, always, kind) in enumerate(rows):
        metadata = {"namespace": tenant, "type": kind, "created": "2026-07-0%dT00:00:00Z" % (1 + n % 6)}
        if always:
            metadata["scope"] = "always"
        docs.append(Document(page_content="memory %d of tenant %s" % (n, tenant), id="d%d" % n, metadata=metadata))
        nodes.append(TextNode(text="memory %d of tenant %s" % (n, tenant), id_="d%d" % n, metadata=dict(metadata)))
    plan = [Pool("facts", 200, 5, ("fact",)), Pool("skills", 100, 2, ("skill",))]
    message = (context or {}).get("message") or "memory"
    lc = LCRetriever(documents=docs, pools=plan, now=NOW, visibility=Visibility(namespace="A")).invoke(message)
    li = LIRetriever(plan, nodes, now=NOW, visibility=Visibility(namespace="A")).retrieve(message)
    per_call = LCRetriever(documents=docs, pools=plan, now=NOW).invoke(message, namespace="A")
    assert all(d.metadata["namespace"] == "A" for d in lc + per_call)
    assert all(n.node.metadata["namespace"] == "A" for n in li)
    assert [d.id for d in lc] == [n.node.node_id for n in li] == [d.id for d in per_call]
    # Always-scope documents of tenant A: pool order, then input order.
    expected_always = [
        d.id
        for kind in ("fact", "skill")
        for d in docs
        if d.metadata["namespace"] == "A" and d.metadata.get("scope") == "always" and d.metadata["type"] == kind
    ]
    assert [d.id for d in lc if d.metadata["poolsplit"]["always"]] == expected_always


@pytest.mark.filterwarnings("error::poolsplit_adapters.poolsplit.UnadmittedCorrectionWarning")
def test_namespace_is_pushed_down_into_vector_store_recall():
    # Tenant B floods the store with skills that match the query better than
    # tenant A's; filtering only after recall would leave A without skills.
    from langchain_core.vectorstores import InMemoryVectorStore
    from lc_helpers import WordHashEmbedding
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    rows = [("b%03d" % n, "B", "Skill: deploy staging checkout fast, variant %d." % n) for n in range(200)]
    rows += [("a1", "A", "Skill: bisect a failing deploy."), ("a2", "A", "Skill: read the deploy logs first.")]
    plan = [Pool("skills", 500, 5, ("skill",))]
    docs = [Document(page_content=t, id=i, metadata={"type": "skill", "namespace": ns}) for i, ns, t in rows]
    store = InMemoryVectorStore(WordHashEmbedding())
    store.add_documents(docs)
    lc = LCRetriever.from_vectorstore(store, plan, fetch_k=5, now=NOW, visibility=Visibility(namespace="A"))
    assert sorted(d.id for d in lc.invoke("deploy staging checkout")) == ["a1", "a2"]
    per_call = LCRetriever.from_vectorstore(store, plan, fetch_k=5, now=NOW)
    assert sorted(d.id for d in per_call.invoke("deploy staging checkout", namespace="A")) == ["a1", "a2"]
    nodes = [TextNode(text=t, id_=i, metadata={"type": "skill", "namespace": ns}) for i, ns, t in rows]
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))
    li = LIRetriever.from_vector_store_index(index, plan, fetch_k=5, now=NOW, visibility=Visibility(namespace="A"))
    assert sorted(n.node.node_id for n in li.retrieve("deploy staging checkout")) == ["a1", "a2"]
    li_per_call = LIRetriever.from_vector_store_index(index, plan, fetch_k=5, now=NOW)
    got, _ = li_per_call.retrieve_with_selection("deploy staging checkout", namespace="A")
    assert sorted(n.node.node_id for n in got) == ["a1", "a2"]
