"""The scorer protocol: a scorer of another library that implements only
``prepare(context, now)`` (no base class of ours, not callable) ranks
through the core's ``select``, ``MemoryIndex.select`` and the LangChain
and LlamaIndex retrievers, its optional capabilities (``warm``, ``admitted``,
``fallback_reason``) are asked and noted; the spec's plain function still
works everywhere; and the package asks a scorer what it can do beyond that
in one place (``relevance.capabilities``)."""

from __future__ import annotations

import datetime
from typing import Any, List, Mapping, Optional, Sequence

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import TextNode

from poolsplit_adapters import Pool, Visibility, select
from poolsplit_adapters.checks import ArgumentError
from poolsplit_adapters.index import MemoryIndex
from poolsplit_adapters.langchain import PoolSplitRetriever
from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaRetriever
from poolsplit_adapters.memory.hash_embedding import HashEmbedder
from poolsplit_adapters.poolsplit import PreparingScorer, ScorerCall, prepare_scorer
from poolsplit_adapters.relevance import RelevanceScorer
from poolsplit_adapters.relevance.capabilities import capabilities
from poolsplit_adapters.relevance.embedding import EmbeddingScorer

NOW = datetime.datetime(2026, 7, 7)
STORE = [
    {"id": "fix", "type": "correction", "scope": "always", "content": "Never deploy on Fridays", "token_count": 5},
    {"id": "a", "type": "note", "content": "deploy checkout to staging", "token_count": 5},
    {"id": "b", "type": "note", "content": "deploy log: checkout green", "token_count": 5},
    {"id": "c", "type": "note", "content": "lunch menu for the team", "token_count": 5, "base_priority": 10},
    {"id": "d", "type": "note", "content": "staging checkout deploy rollback deploy", "token_count": 5},
]
POOLS = [Pool("corrections", 50, 2, ("correction",)), Pool("notes", 12, 2, ("note",))]
CONTEXT = {"message": "deploy checkout"}
# Words of the message in the content, times 10, minus the id's rank: every
# score differs, so the order is the scorer's alone.


def _words_in(entry: Mapping[str, Any], message: str) -> float:
    words = set(message.lower().split())
    rank = "abcd".index(entry["id"]) if entry["id"] in "abcd" else 0
    return 10.0 * len(words.intersection(entry["content"].lower().replace(":", " ").split())) - rank


class ThirdPartyCall:
    """One call of `ThirdPartyScorer`: the protocol's score and relevance,
    and every optional capability, recording what the selector asked."""

    def __init__(self, message: str, log: List[Any]) -> None:
        self.message, self.log = message, log
        self.fallback_reason: Optional[str] = "reranker offline: words only"

    def score(self, entry: Mapping[str, Any]) -> float:
        return _words_in(entry, self.message)

    def relevance(self, entry: Mapping[str, Any]) -> float:
        return _words_in(entry, self.message) / 20.0

    def warm(self, entries: Sequence[Mapping[str, Any]]) -> None:
        self.log.append(("warm", sorted(e["id"] for e in entries)))

    def admitted(self, entries: Sequence[Mapping[str, Any]]) -> None:
        self.log.append(("admitted", [e["id"] for e in entries]))


class ThirdPartyScorer:
    """Implements the protocol only: ``prepare``, nothing of ours, not callable."""

    def __init__(self) -> None:
        self.log: List[Any] = []

    def prepare(self, context: Optional[Mapping[str, Any]], now: Optional[datetime.datetime]) -> ThirdPartyCall:
        self.log.append(("prepare", (context or {}).get("message")))
        return ThirdPartyCall((context or {}).get("message") or "", self.log)


def spec_form(entry: Mapping[str, Any], context: Optional[Mapping[str, Any]], *, now: Any = None) -> float:
    """The spec's plain function form of the same ranking."""
    return _words_in(entry, (context or {}).get("message") or "")


def _chosen(selection: Any) -> List[Any]:
    return [(c.entry["id"], c.score) for c in selection.chosen]


WANTED = [("fix", None), ("a", 20.0), ("b", 19.0)]  # d (17.0) and c (-2.0) left out


def _scores(selection: Any) -> List[Any]:
    return [(i, None if i == "fix" else s) for i, s in _chosen(selection)]


def test_a_third_party_scorer_is_a_preparing_scorer_and_not_callable() -> None:
    scorer = ThirdPartyScorer()
    assert isinstance(scorer, PreparingScorer) and not callable(scorer)
    assert not isinstance(spec_form, PreparingScorer)


@pytest.mark.parametrize("make", [ThirdPartyScorer, lambda: spec_form], ids=["protocol", "spec function"])
def test_the_core_select_ranks_by_a_scorer_of_either_form(make: Any) -> None:
    got = select(STORE, POOLS, CONTEXT, scorer=make(), now=NOW)
    assert _scores(got) == WANTED
    assert [(d.entry["id"], d.reason.value) for d in got.dropped] == [("c", "token_budget"), ("d", "token_budget")]


def test_the_core_asks_each_optional_capability_of_a_prepared_scorer() -> None:
    scorer = ThirdPartyScorer()
    plan = [POOLS[0], Pool("notes", 10, 2, ("note",), min_relevance=0.5)]
    select(STORE, plan, CONTEXT, scorer=scorer, now=NOW)
    assert scorer.log == [
        ("prepare", "deploy checkout"),
        ("admitted", ["a", "b", "c", "d"]),
        ("warm", []),  # the corrections pool ranks no contextual entry
        ("warm", ["a", "b", "c", "d"]),  # before the threshold reads relevance
        ("warm", ["a", "b", "d"]),  # before the ranking of what passed it
    ]


@pytest.mark.parametrize("make", [ThirdPartyScorer, lambda: spec_form], ids=["protocol", "spec function"])
def test_memory_index_ranks_by_a_scorer_of_either_form(make: Any) -> None:
    per_call = MemoryIndex(STORE).select(POOLS, CONTEXT, now=NOW, scorer=make())
    own = MemoryIndex(STORE, scorer=make()).select(POOLS, CONTEXT, now=NOW)
    bare = MemoryIndex(STORE, use_numpy=False, scorer=make()).select(POOLS, CONTEXT, now=NOW)
    for got in (per_call, own, bare):
        assert _scores(got) == WANTED


def test_the_fallback_a_prepared_scorer_reports_is_noted_on_the_selection() -> None:
    assert MemoryIndex(STORE).select(POOLS, CONTEXT, now=NOW, scorer=ThirdPartyScorer()).notes["scorer_fallback"] == (
        "reranker offline: words only"
    )
    assert "scorer_fallback" not in MemoryIndex(STORE).select(POOLS, CONTEXT, now=NOW, scorer=spec_form).notes


def _documents() -> List[Document]:
    return [
        Document(page_content=e["content"], id=e["id"], metadata={k: v for k, v in e.items() if k != "content"})
        for e in STORE
    ]


@pytest.mark.parametrize("make", [ThirdPartyScorer, lambda: spec_form], ids=["protocol", "spec function"])
def test_a_langchain_retriever_ranks_by_a_scorer_of_either_form(make: Any) -> None:
    retriever = PoolSplitRetriever(documents=_documents(), pools=POOLS, scorer=make(), now=NOW)
    docs = retriever.invoke("deploy checkout")
    assert [d.id for d in docs] == ["fix", "a", "b"]
    assert _scores(retriever.last_selection) == WANTED


def test_a_langchain_retriever_notes_a_third_party_scorers_fallback() -> None:
    retriever = PoolSplitRetriever(documents=_documents(), pools=POOLS, scorer=ThirdPartyScorer(), now=NOW)
    retriever.invoke("deploy checkout")
    assert retriever.last_selection.notes["scorer_fallback"] == "reranker offline: words only"


@pytest.mark.parametrize("make", [ThirdPartyScorer, lambda: spec_form], ids=["protocol", "spec function"])
def test_a_llama_index_retriever_ranks_by_a_scorer_of_either_form(make: Any) -> None:
    nodes = [
        TextNode(text=e["content"], id_=e["id"], metadata={k: v for k, v in e.items() if k not in ("content", "id")})
        for e in STORE
    ]
    retriever = LlamaRetriever(POOLS, nodes, scorer=make(), now=NOW)
    assert [n.node.node_id for n in retriever.retrieve("deploy checkout")] == ["fix", "a", "b"]
    assert _scores(retriever.last_selection) == WANTED


def test_what_is_no_scorer_is_refused_by_name() -> None:
    with pytest.raises(ArgumentError, match=r"scorer must be callable or have prepare\(context, now\), got object"):
        PoolSplitRetriever(documents=_documents(), pools=POOLS, scorer=object())
    with pytest.raises(TypeError, match="scorer must be callable or have prepare"):
        select(STORE, POOLS, CONTEXT, scorer=object())  # type: ignore[arg-type]


def test_prepare_scorer_answers_every_capability_of_any_scorer() -> None:
    call = prepare_scorer(spec_form, CONTEXT, NOW)
    entry = STORE[1]
    assert (call.score(entry), call.relevance(entry), call.fallback_reason, call.default) == (20.0, 20.0, None, None)
    call.warm([entry])  # a no-op for a scorer without it
    call.admitted([entry])
    assert ScorerCall.of(call) is call


def test_the_capabilities_beyond_the_protocol_are_found_by_members() -> None:
    words, embedding = RelevanceScorer(), EmbeddingScorer(HashEmbedder())
    fused = RelevanceScorer(HashEmbedder())
    assert (capabilities(words).words, capabilities(words).vectors) == (words, None)
    assert (capabilities(embedding).words, capabilities(embedding).vectors) == (None, embedding)
    assert capabilities(fused).vectors is fused.embedding
    for scorer in (words, embedding, fused):
        assert capabilities(scorer).store_answers is scorer
    assert capabilities(ThirdPartyScorer()) == capabilities(spec_form) == type(capabilities(words))()


def test_memory_index_ranks_a_fused_scorer_back_in_time_as_select_does() -> None:
    """A relevance scorer fusing an embedder, asked about the past
    (``Visibility.as_of``: the generic path), ranks by its fused relevance
    over the index's statistics, as ``select`` over the same entries does,
    not by its embedder's cosine alone."""
    store = [
        {"id": "a", "content": "refund rounding rule for cents", "created": "2026-01-01T00:00:00Z"},
        {"id": "b", "content": "refund policy rounding", "created": "2026-02-01T00:00:00Z", "base_priority": 9},
        {"id": "c", "content": "lunch menu friday", "created": "2026-03-01T00:00:00Z", "base_priority": 10},
    ]
    scorer = RelevanceScorer(HashEmbedder())
    view = Visibility(as_of=datetime.datetime(2026, 6, 1))
    pools, context = [Pool("all", 100, 3)], {"message": "refund rounding"}
    got = MemoryIndex(store, scorer=scorer).select(pools, context, now=NOW, visibility=view)
    expected = select(store, pools, context, now=NOW, visibility=view, scorer=scorer.over(store))
    assert _chosen(got) == _chosen(expected)
