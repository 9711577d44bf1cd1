"""What reaches the model after a long multi-session conversation (issue 39, item 6).

    python benchmarks/conversations/evaluate.py
    python benchmarks/conversations/evaluate.py --budgets 1024 2048 4096 --conversations 8 \\
        --markdown-out docs/benchmarks/_generated/conversations.md
    python benchmarks/conversations/evaluate.py --embedding minilm \\
        --markdown-out docs/benchmarks/_generated/conversations_minilm.md
    python benchmarks/conversations/evaluate.py --plot-only

A table written to ``docs/benchmarks/_generated/conversations.md`` (the one
the docs include) is drawn as ``docs/benchmarks/plots/conversations.svg``
(``benchmarks/plots.py``: recall and the instructions and preferences found,
against the budget, every path against plain vector top-k); ``--plot-only``
redraws it from that table, measuring nothing.

Each conversation of :mod:`make_conversations` (seeded, generated in
memory) is replayed once through a real ``langchain.agents.create_agent``
with :class:`~poolsplit_adapters.langchain.PoolSplitMemoryMiddleware`
(``remember=False``: the fake model calls no tools; defaults otherwise,
``max_turns=12``) over a LangGraph ``InMemoryStore(index=...)`` and an
``InMemorySaver``. Choices, stated once:

* **one thread for the whole conversation** (a user who keeps one chat
  open): each session is a new ``create_agent`` over the same checkpointer,
  store and thread, with the middleware's ``now`` set to the session's day,
  so demoted turns carry the day they were said on. (With one thread per
  session, the last 12 turns of every session would never be demoted and
  never reach the store.) The thread's first message, which the middleware
  pins as the goal, is a greeting that no probe asks about.
* **the embeddings** (``--embedding``): the package's deterministic
  ``HashEmbeddings`` (hashed words and word starts, no model, no network;
  the default) or all-MiniLM-L6-v2 (``minilm``: the eval extra, loaded
  offline by ``benchmarks/eval/evaluate.py``'s builder), each text embedded
  once (:class:`CachedEmbeddings`; a conversation's messages and probes in
  one batch up front), used by the store's index, given to the middleware
  as ``embeddings=`` (the documented way, docs/adapters/agents.md) and by
  every other path and the baseline.
* **the probes** are asked after the replay, each on a fork of the thread's
  final checkpoint (``checkpoint_id``), so no probe sees another. A probe's
  turn demotes the oldest working-set turn as any turn would (the same turn
  for every probe: the store is the same for all of them). The probe
  agents are built per budget and plan; the replay's writes do not depend
  on either (the plan only selects), so one replay serves them all.
* **what reached the model**: the system message of the probe's model call
  (the injected memory; the primary measure) and, separately, the thread's
  working-set messages the model also got.

Paths, per budget ``B`` (tokens: tiktoken ``o200k_base``):

* ``agent auto`` (``pools="auto", total_tokens=B``, ``embeddings=``;
  ``total_entries`` left at its default, as many entries as the tokens
  allow, so that only tokens bind),
  ``agent auto, no embeddings=``, and ``agent explicit plan`` (the plan
  docs/adapters/agents.md writes by hand: corrections, ``standing`` 256
  tokens for the user's instructions and preferences, then ``facts`` (facts
  and notes) and ``recent`` (episodes) sharing the rest of ``B`` as the docs'
  200 and 400 tokens do; ``embeddings=``), and ``LI Memory auto``: the same conversation
  replayed through a LlamaIndex ``Memory`` with ``poolsplit_memory_blocks``
  (``"auto"``, ``total_tokens=B``, ``embeddings=``; see `LlamaReplayed`);
* retrieval over the raw messages (each user and assistant message one
  document, ``type="episode"``, ``created`` its time):
  ``LC from_vectorstore`` (``[Pool("all", B)]``, defaults) and
  ``LC from_vectorstore auto, embeddings=`` over a LangChain
  ``InMemoryVectorStore``; ``LI from_vector_store_index`` over a LlamaIndex
  ``VectorStoreIndex`` of the same vectors; ``core select + hybrid_scorer``;
* baseline ``vector top-k``: cosine with the same embeddings, every message
  ranked, the budget filled greedily in rank order (take what fits, skip
  what does not, go on).

Metrics (text compared after NFKC, casefolding, whitespace collapsed, HTML
entities of the rendered markers undone):

* ``instr``: instruction probes (and the later, contradicting instruction)
  whose key sentence is in the context; ``pref``: the same for preferences;
* ``upd``: updated-fact probes whose current value string is in the
  context; ``stale``: those with a stale value in it and the current absent;
* ``contra``: contradiction probes (a corrected fact, the contradicted
  instruction) with the current statement's value in the context;
  ``c-stale``: a stale one without the current;
* ``recall``: key sentences of the evidence messages in the context / all,
  over the fact, multi-session and temporal probes;
* agent paths: the changed-value columns (``upd``, ``stale``, ``contra``,
  ``c-stale``) read the memory block and the working set together (a newer
  value still in the chat reached the model, see `judge_agent`); every
  other column the memory block alone;
* ``tokens``: mean tokens of what was injected (agent: the memory block of
  the system message; retrieval: the chosen messages' text);
* ``ws``: for the agent, the same instruction/preference share over the
  working-set messages alone (no system message);
* overhead: mean ms per ``agent.invoke`` during the replay, with the
  middleware and without it (same fake model, checkpointer and thread; the
  first ``--overhead`` conversations, 2 by default);
* turns lost: turns whose user message is in no stored entry (with the
  start of its answer) and no longer in the working set, after the replay
  (the write gate refused the evicted pair, e.g. as ``oversized``); the
  same for the LlamaIndex replay (its chat ``Memory`` the working set).
"""

from __future__ import annotations

import argparse
import datetime
import html
import os
import platform
import re
import statistics
import sys
import time
import unicodedata
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from make_conversations import make_conversations  # noqa: E402
from pydantic import Field, PrivateAttr  # noqa: E402

from poolsplit_adapters import Pool  # noqa: E402
from poolsplit_adapters.memory.standing import sentences

BUDGETS = (1024, 2048, 4096)
NAMESPACE = ("memories", "u1")
#: The LlamaIndex ``Memory`` path (its own replay: `LlamaReplayed`).
LLAMA_PLAN = "LI Memory auto"
AGENT_PLANS = ("agent auto", "agent explicit plan", LLAMA_PLAN, "agent auto, no embeddings=")
#: What a run measures unless ``--plans`` says otherwise (the last costs a third more time).
DEFAULT_PLANS = AGENT_PLANS[:3]
RETRIEVAL_PATHS = (
    "LC from_vectorstore",
    "LC from_vectorstore auto, embeddings=",
    "LI from_vector_store_index",
    "core select + hybrid_scorer",
    "vector top-k (baseline)",
)
COLUMNS = ("instr", "pref", "upd", "stale", "contra", "c-stale", "recall", "tokens")


class CachedEmbeddings(Embeddings):
    """An embedder behind LangChain's interface, each text embedded once."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_id = getattr(inner, "model_id", type(inner).__name__)
        self.memo: Dict[str, List[float]] = {}

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if missing:
            self.memo.update(zip(missing, self.inner.embed_documents(missing)))
        return [self.memo[t] for t in texts]

    def embed_query(self, text: str) -> List[float]:
        if text not in self.memo:
            self.memo[text] = self.inner.embed_query(text)
        return self.memo[text]


class RecordingModel(GenericFakeChatModel):
    """A fake chat model that answers ``answer`` (set before each call) and
    records the messages of its last call."""

    messages: Iterator[Any] = Field(default_factory=lambda: iter(()))
    answer: Any = "ok"
    seen: List[BaseMessage] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: List[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.seen = list(messages)
        self.messages = iter([self.answer])
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def normal(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", html.unescape(text)).casefold()).strip()


def _when(iso: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(iso)


EMBEDDINGS = ("hash", "minilm")
#: How the table names each embedder.
EMBEDDING_NAMES = {"hash": "HashEmbeddings", "minilm": "all-MiniLM-L6-v2"}


def _eval_module() -> Any:
    """``benchmarks/eval/evaluate.py``, whose ``embedder_named`` builds the
    embedders (the one place the MiniLM model is loaded), imported by its
    path under a name of its own: this script is an ``evaluate`` too."""
    import importlib.util

    name = "eval_evaluate"
    if name not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "eval", "evaluate.py")
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def embeddings_for_run(embedding: str = "hash") -> CachedEmbeddings:
    """``hash``: the package's ``HashEmbedder`` (the vectors of
    ``HashEmbeddings``); ``minilm``: all-MiniLM-L6-v2, offline (the eval
    extra). Each text is embedded once (the memo), in batches."""
    return CachedEmbeddings(_eval_module().embedder_named(embedding))


#: The standing pool of docs/adapters/agents.md's explicit plan (tokens, entries).
STANDING = (640, 20)


def explicit_plan(budget: int) -> List[Pool]:
    """The plan docs/adapters/agents.md writes by hand, for ``budget``
    tokens: corrections, the user's standing instructions and preferences
    (`STANDING`), then the rest split as the docs split it (facts and
    notes 200, episodes 400): facts 1/3 at one entry per 10 tokens,
    episodes 2/3 at one entry per 100."""
    tokens, entries = STANDING
    rest = budget - tokens
    facts = rest // 3
    return [
        Pool("corrections", 0, 0, ("correction",)),
        Pool("standing", tokens, entries, ("instruction", "preference")),
        Pool("facts", facts, max(1, facts // 10), ("fact", "note")),
        Pool("recent", rest - facts, max(1, (rest - facts) // 100), ("episode",)),
    ]


def _middleware(plan: str, budget: int, now: datetime.datetime, cached: CachedEmbeddings) -> Any:
    from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, RecallConfig, WriteConfig

    options: Dict[str, Any] = {"namespace": NAMESPACE, "write": WriteConfig(remember=False), "now": now}
    if plan == "agent auto":
        return PoolSplitMemoryMiddleware("auto", **options, recall=RecallConfig(total_tokens=budget, embeddings=cached))
    if plan == "agent auto, no embeddings=":
        return PoolSplitMemoryMiddleware("auto", **options, recall=RecallConfig(total_tokens=budget))
    if plan == "agent explicit plan":
        return PoolSplitMemoryMiddleware(explicit_plan(budget), **options, recall=RecallConfig(embeddings=cached))
    raise ValueError(plan)


def lost_turns(conversation: Dict[str, Any], kept: Callable[[Dict[str, Any]], bool], stored: str) -> List[str]:
    """The user message ids of the turns in neither place: not ``kept`` in
    the working set, and ``stored`` (every stored entry's text) does not
    hold every sentence of the user's message and of its answer's start, in
    whatever entries (one per turn, one per side, or parts)."""
    lost = []
    for turn in conversation["turns"]:
        if kept(turn):
            continue
        said = sentences(turn["user"]) + sentences(turn["assistant"])[:3]
        if not all(sentence in stored for sentence in said):
            lost.append(turn["user_id"])
    return lost


class Replayed:
    """A conversation replayed through the agent: its store, checkpointer,
    thread and final checkpoint, and the per-turn timings."""

    def __init__(self, conversation: Dict[str, Any], cached: CachedEmbeddings, budget: int, memory: bool) -> None:
        from langchain.agents import create_agent
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.store.memory import InMemoryStore

        dims = len(cached.embed_query("dimension probe"))
        self.store = InMemoryStore(index={"dims": dims, "embed": cached, "fields": ["content"]})
        self.saver = InMemorySaver()
        self.model = RecordingModel()
        self.config: Dict[str, Any] = {"configurable": {"thread_id": conversation["id"]}}
        self.ms: List[float] = []
        by_session: Dict[int, List[Dict[str, Any]]] = {}
        for turn in conversation["turns"]:
            by_session.setdefault(turn["session"], []).append(turn)
        for session in conversation["sessions"]:
            middleware = [_middleware("agent auto", budget, _when(session["day"]), cached)] if memory else []
            agent = create_agent(self.model, middleware=middleware, checkpointer=self.saver, store=self.store)
            for turn in by_session.get(session["index"], []):
                self.model.answer = AIMessage(turn["assistant"], id=turn["assistant_id"])
                start = time.perf_counter()
                agent.invoke({"messages": [HumanMessage(turn["user"], id=turn["user_id"])]}, self.config)
                self.ms.append((time.perf_counter() - start) * 1000.0)
        state = agent.get_state(self.config)
        self.final = state.config
        self.lost = self._lost(conversation, state.values["messages"]) if memory else []

    def _lost(self, conversation: Dict[str, Any], working: Sequence[BaseMessage]) -> List[str]:
        """The user message ids of the turns in neither place after the
        replay: the turn's user message left the working set and the store
        does not hold every sentence of it and of its answer's start, in
        whatever entries (one per turn, one per side, or parts)."""
        kept = {m.id for m in working}
        stored = "\n".join(str(item.value.get("content", "")) for item in self.store.search(NAMESPACE, limit=10**6))
        return lost_turns(conversation, lambda turn: turn["user_id"] in kept, stored)

    def ask(self, agent: Any, question: str, probe_id: str) -> List[BaseMessage]:
        """The messages the model got for ``question``, on a fork of the final checkpoint."""
        self.model.answer = AIMessage("ok")
        agent.invoke({"messages": [HumanMessage(question, id=probe_id)]}, self.final)
        return list(self.model.seen)


def agent_contexts(
    replayed: Replayed, conversation: Dict[str, Any], plan: str, budget: int, cached: CachedEmbeddings
) -> List[Dict[str, str]]:
    """Per probe: the injected memory (system message) and the working set."""
    from langchain.agents import create_agent

    now = _when(conversation["after"])
    agent = create_agent(
        replayed.model,
        middleware=[_middleware(plan, budget, now, cached)],
        checkpointer=replayed.saver,
        store=replayed.store,
    )
    out = []
    for probe in conversation["probes"]:
        seen = replayed.ask(agent, probe["question"], probe["id"])
        system = "\n".join(str(m.text) for m in seen if isinstance(m, SystemMessage))
        working = "\n".join(str(m.text) for m in seen if not isinstance(m, SystemMessage) and m.id != probe["id"])
        out.append({"context": system, "working": working})
    return out


class LlamaReplayed:
    """A conversation replayed through a LlamaIndex ``Memory`` with the
    package's blocks (``poolsplit_memory_blocks([], "auto", store=...)``,
    ``embeddings=`` the same cached embedder as a ``BaseEmbedding``),
    ``Memory``'s defaults otherwise: every user and assistant message
    ``put`` in order, the oldest flushed to the blocks (the write path)
    when the chat passes its share of ``token_limit``. The blocks are made
    again for each session with ``now`` its day (a host's clock), over one
    durable ``InProcessStore``; the probes swap in each budget's blocks over
    that store and read ``Memory.get(input=question)``."""

    def __init__(self, conversation: Dict[str, Any], cached: CachedEmbeddings, budget: int) -> None:
        from llama_index.core.base.llms.types import ChatMessage, MessageRole
        from llama_index.core.memory import Memory

        from poolsplit_adapters.stores import InProcessStore

        self.durable = InProcessStore()
        self.embed = LlamaEmbedding(cached)
        sessions = conversation["sessions"]
        self.memory = Memory.from_defaults(
            session_id=conversation["id"], memory_blocks=self.blocks(budget, _when(sessions[0]["day"]))
        )
        by_session: Dict[int, List[Dict[str, Any]]] = {}
        for turn in conversation["turns"]:
            by_session.setdefault(turn["session"], []).append(turn)
        for session in sessions:
            self.memory.memory_blocks = self.blocks(budget, _when(session["day"]))
            for turn in by_session.get(session["index"], []):
                self.memory.put(ChatMessage(role=MessageRole.USER, content=turn["user"]))
                self.memory.put(ChatMessage(role=MessageRole.ASSISTANT, content=turn["assistant"]))
        self.lost = self._lost(conversation)

    def _lost(self, conversation: Dict[str, Any]) -> List[str]:
        """The user message ids of the turns in neither place: not in the
        chat ``Memory`` kept, and the durable store does not hold every
        sentence of the message and of its answer's start (as `Replayed`)."""
        kept = {str(m.content) for m in self.memory.get_all()}
        stored = "\n".join(str(e.get("content", "")) for e in self.durable.entries())
        return lost_turns(conversation, lambda turn: turn["user"] in kept, stored)

    def blocks(self, budget: int, now: datetime.datetime) -> List[Any]:
        from poolsplit_adapters.llama_index import poolsplit_memory_blocks

        return poolsplit_memory_blocks(
            [], "auto", store=self.durable, total_tokens=budget, embeddings=self.embed, now=now
        )

    def contexts(self, conversation: Dict[str, Any], budget: int) -> List[Dict[str, str]]:
        """Per probe: the blocks' system message and the chat ``Memory`` kept."""
        from llama_index.core.base.llms.types import MessageRole

        self.memory.memory_blocks = self.blocks(budget, _when(conversation["after"]))
        out = []
        for probe in conversation["probes"]:
            messages = self.memory.get(input=probe["question"])
            system = "\n".join(str(m.content or "") for m in messages if m.role == MessageRole.SYSTEM)
            working = "\n".join(str(m.content or "") for m in messages if m.role != MessageRole.SYSTEM)
            out.append({"context": system, "working": working})
        return out


def _documents(conversation: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The raw messages as entries: one per user and per assistant message."""
    out = []
    for turn in conversation["turns"]:
        for role, mid in (("user", "user_id"), ("assistant", "assistant_id")):
            out.append({"id": turn[mid], "content": turn[role], "type": "episode", "created": turn["at"], "role": role})
    return out


def retrieval_paths(
    conversation: Dict[str, Any], cached: CachedEmbeddings, counts: Dict[str, int]
) -> Dict[str, Callable[[str, int], List[str]]]:
    """Each retrieval path over the raw messages: ``(question, budget) -> chosen texts``."""
    import numpy as np
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    from poolsplit_adapters import select
    from poolsplit_adapters.defaults import hybrid_scorer
    from poolsplit_adapters.langchain import PoolSplitRetriever
    from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaRetriever

    entries = _documents(conversation)
    for e in entries:
        e["token_count"] = counts[e["content"]]
    now = _when(conversation["after"])
    texts = [e["content"] for e in entries]
    matrix = np.array(cached.embed_documents(texts), dtype=float)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    store = InMemoryVectorStore(embedding=cached)
    store.add_documents(
        [
            Document(
                page_content=e["content"],
                id=e["id"],
                metadata={k: v for k, v in e.items() if k not in ("content", "id", "token_count")},
            )
            for e in entries
        ]
    )
    nodes = []
    for e in entries:
        metadata = {k: v for k, v in e.items() if k not in ("content", "id", "token_count")}
        nodes.append(
            TextNode(text=e["content"], id_=e["id"], metadata=metadata, excluded_embed_metadata_keys=list(metadata))
        )
    index = VectorStoreIndex(nodes, embed_model=LlamaEmbedding(cached))
    hybrid = hybrid_scorer(cached)
    made: Dict[Any, Any] = {}

    def once(key: Any, build: Callable[[], Any]) -> Any:
        if key not in made:
            made[key] = build()
        return made[key]

    def lc_default(question: str, budget: int) -> List[str]:
        r = once(
            ("lc", budget), lambda: PoolSplitRetriever.from_vectorstore(store, [Pool("all", budget, 10**6)], now=now)
        )
        return [d.page_content for d in r.invoke(question)]

    def lc_auto(question: str, budget: int) -> List[str]:
        r = once(
            ("lc-auto", budget),
            lambda: PoolSplitRetriever.from_vectorstore(
                store, "auto", total_tokens=budget, total_entries=10**6, embeddings=cached, now=now
            ),
        )
        return [d.page_content for d in r.invoke(question)]

    def li(question: str, budget: int) -> List[str]:
        r = once(
            ("li", budget), lambda: LlamaRetriever.from_vector_store_index(index, [Pool("all", budget, 10**6)], now=now)
        )
        return [n.node.get_content() for n in r.retrieve(question)]

    def core(question: str, budget: int) -> List[str]:
        chosen = select(entries, [Pool("all", budget, 10**6)], {"message": question}, scorer=hybrid, now=now)
        return [c.entry["content"] for c in chosen.chosen]

    def top_k(question: str, budget: int) -> List[str]:
        query = np.array(cached.embed_query(question), dtype=float)
        query /= max(float(np.linalg.norm(query)), 1e-12)
        order = np.argsort(-(matrix @ query), kind="stable")
        left, taken = budget, []
        for k in order:
            cost = entries[k]["token_count"]
            if cost <= left:
                taken.append(texts[k])
                left -= cost
        return taken

    return dict(zip(RETRIEVAL_PATHS, (lc_default, lc_auto, li, core, top_k)))


class LlamaEmbedding(BaseEmbedding):
    """The same cached embedder behind LlamaIndex's ``BaseEmbedding``."""

    _cached: Any = PrivateAttr()

    def __init__(self, cached: CachedEmbeddings) -> None:
        super().__init__(model_name=cached.model_id)
        self._cached = cached

    def _get_query_embedding(self, query: str) -> List[float]:
        return self._cached.embed_query(query)  # type: ignore[no-any-return]

    async def _aget_query_embedding(self, query: str) -> List[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> List[float]:
        return self._cached.embed_documents([text])[0]  # type: ignore[no-any-return]

    def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        return self._cached.embed_documents(texts)  # type: ignore[no-any-return]


def judge(probe: Dict[str, Any], text: str) -> Dict[str, Optional[float]]:
    """One probe's scores on one context (None: the metric does not apply)."""
    got = normal(text)
    present = [normal(s) in got for s in probe["key_sentences"]]
    kind = probe["kind"]
    out: Dict[str, Optional[float]] = {c: None for c in COLUMNS if c != "tokens"}
    out["evidence"] = None
    if kind in ("instruction", "preference"):
        out["instr" if kind == "instruction" else "pref"] = float(all(present))
    if kind in ("fact", "multi-session", "temporal"):
        out["recall"] = float(sum(present))
        out["evidence"] = float(len(present))
    if "current" in probe:
        current = normal(probe["current"]) in got
        stale = any(normal(s) in got for s in probe["stale"]) and not current
        first, second = ("upd", "stale") if kind == "updated" else ("contra", "c-stale")
        out[first], out[second] = float(current), float(stale)
        if probe.get("also") == "instruction":
            out["instr"] = float(current)
    return out


#: The columns of a changed value: judged on everything the model got.
VALUE_COLUMNS = ("upd", "stale", "contra", "c-stale")


def judge_agent(probe: Dict[str, Any], got: Dict[str, str]) -> Dict[str, Optional[float]]:
    """An agent path's scores: the memory block (``context``) for every
    column but the changed value's (`VALUE_COLUMNS`), which read the block
    and the working set together: a newer value the chat still holds (not
    yet written to memory) reached the model, so an older one in the block
    is not "only the stale value"."""
    scores = judge(probe, got["context"])
    whole = judge(probe, got["context"] + "\n" + got["working"])
    scores.update({column: whole[column] for column in VALUE_COLUMNS})
    return scores


def summarise(scored: List[Dict[str, Optional[float]]], tokens: List[int]) -> Dict[str, float]:
    row: Dict[str, float] = {}
    for column in COLUMNS:
        if column == "tokens":
            row[column] = statistics.fmean(tokens) if tokens else float("nan")
        elif column == "recall":
            hits = sum(s["recall"] or 0.0 for s in scored if s["recall"] is not None)
            total = sum(s["evidence"] or 0.0 for s in scored if s["evidence"] is not None)
            row[column] = hits / total if total else float("nan")
        else:
            values = [s[column] for s in scored if s[column] is not None]
            row[column] = statistics.fmean(values) if values else float("nan")
    return row


def run(
    conversations: Sequence[Dict[str, Any]],
    budgets: Sequence[int] = BUDGETS,
    plans: Sequence[str] = DEFAULT_PLANS,
    retrieval: bool = True,
    overhead: int = 2,
    embedding: str = "hash",
) -> Dict[str, Any]:
    """Every path at every budget: rows of metrics, the turns lost by the
    write path, and the overhead timings (with and without the middleware,
    on the first ``overhead`` conversations). Without agent ``plans`` and
    with ``overhead=0`` nothing is replayed (the retrieval paths need only
    the raw messages) and the turns lost are not measured."""
    from poolsplit_adapters.tokens import TiktokenCounter

    counter = TiktokenCounter()
    cached = embeddings_for_run(embedding)
    replay = any(plan != LLAMA_PLAN for plan in plans) or overhead > 0
    scored: Dict[tuple, List[Dict[str, Optional[float]]]] = {}
    tokens: Dict[tuple, List[int]] = {}
    working: Dict[tuple, List[Dict[str, Optional[float]]]] = {}
    with_ms: List[float] = []
    without_ms: List[float] = []
    lost: List[str] = []
    llama_lost: List[str] = []
    evidence: List[str] = []
    for conversation in conversations:
        texts = [t[k] for t in conversation["turns"] for k in ("user", "assistant")]
        counts = dict(zip(texts, counter.count_many(texts)))
        evidence.extend(m for p in conversation["probes"] for m in p["evidence"])
        if replay:
            replayed = Replayed(conversation, cached, budgets[0], memory=True)
            lost.extend(replayed.lost)
            if len(without_ms) < overhead * len(conversation["turns"]):
                with_ms.extend(replayed.ms)
                without_ms.extend(Replayed(conversation, cached, budgets[0], memory=False).ms)
        # Every raw message and probe in one batch (after the timed replay,
        # which pays for its own embeddings as a host would).
        cached.embed_documents(texts + [p["question"] for p in conversation["probes"]])
        llama = LlamaReplayed(conversation, cached, budgets[0]) if LLAMA_PLAN in plans else None
        if llama is not None:
            llama_lost.extend(llama.lost)
        for plan in plans:
            for budget in budgets:
                key = (plan, budget)
                if llama is not None and plan == LLAMA_PLAN:
                    contexts = llama.contexts(conversation, budget)
                else:
                    contexts = agent_contexts(replayed, conversation, plan, budget, cached)
                for probe, got in zip(conversation["probes"], contexts):
                    scored.setdefault(key, []).append(judge_agent(probe, got))
                    working.setdefault(key, []).append(judge(probe, got["working"]))
                    block = got["context"]
                    tokens.setdefault(key, []).append(counter(block) if block else 0)
        if not retrieval:
            continue
        for name, path in retrieval_paths(conversation, cached, counts).items():
            for budget in budgets:
                key = (name, budget)
                for probe in conversation["probes"]:
                    chosen = path(probe["question"], budget)
                    scored.setdefault(key, []).append(judge(probe, "\n".join(chosen)))
                    tokens.setdefault(key, []).append(sum(counts.get(t) or counter(t) for t in chosen))
    # How many probes (key sentences for recall) each column averages over.
    first = next(iter(scored.values()), [])
    sizes = {c: sum(1 for s in first if s[c] is not None) for c in COLUMNS if c not in ("tokens", "recall")}
    sizes["recall"] = int(sum(s["evidence"] or 0.0 for s in first))
    rows = []
    for (name, budget), values in scored.items():
        row = {"path": name, "budget": budget, **summarise(values, tokens[(name, budget)])}
        if (name, budget) in working:
            ws = summarise(working[(name, budget)], [])
            row["ws"] = statistics.fmean([ws["instr"], ws["pref"]])
        rows.append(row)
    return {
        "rows": rows,
        "embedding": EMBEDDING_NAMES.get(embedding, embedding),
        "replayed": replay,
        "with_ms": with_ms,
        "sizes": sizes,
        "lost": lost,
        "evidence_lost": sorted(set(lost) & set(evidence)),
        "llama_lost": llama_lost if LLAMA_PLAN in plans else None,
        "llama_evidence_lost": sorted(set(llama_lost) & set(evidence)),
        "evidence": len(set(evidence)),
        "without_ms": without_ms,
        "probes": sum(len(c["probes"]) for c in conversations),
        "turns": sum(len(c["turns"]) for c in conversations),
        "conversations": len(conversations),
    }


def _ms(values: Sequence[float]) -> str:
    if not values:
        return "not measured"
    return "mean %.1f ms, p50 %.1f ms" % (statistics.fmean(values), statistics.median(values))


def render(result: Dict[str, Any], command: str) -> str:
    rows = result["rows"]
    budgets = sorted({r["budget"] for r in rows})
    names = list(dict.fromkeys(r["path"] for r in rows))
    by = {(r["path"], r["budget"]): r for r in rows}
    machine = "Python %s, %s, %d cores" % (platform.python_version(), platform.machine(), os.cpu_count() or 0)
    lines = [
        "<!-- written by benchmarks/conversations/evaluate.py on %s: %s -->"
        % (datetime.date.today().isoformat(), command),
        "*`%s`, %s (%s).*" % (command, datetime.date.today().isoformat(), machine),
        "",
        "%d conversations, %d turns, %d probes; tokens: tiktoken o200k_base; embeddings: %s"
        % (result["conversations"], result["turns"], result["probes"], result.get("embedding", "HashEmbeddings")),
        "",
    ]
    header = ["path", "budget", *COLUMNS, "ws instr+pref"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" for _ in header) + "|")
    for name in names:
        for budget in budgets:
            row = by.get((name, budget))
            if row is None:
                continue
            cells = [name, str(budget)]
            for column in COLUMNS:
                value = row[column]
                cells.append("%.0f" % value if column == "tokens" else "%.2f" % value)
            cells.append("%.2f" % row["ws"] if "ws" in row else "")
            lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "Each column averages over: %s."
        % ", ".join(
            "%s %d %s" % (c, n, "key sentences" if c == "recall" else "probes") for c, n in result["sizes"].items()
        )
    )
    lines.append("")
    if result.get("replayed", True):
        lines.append(
            "Turns lost by the write path (the user message in no stored entry and out of the working set): "
            "%d of %d; of the probes' evidence messages: %d of %d."
            % (len(result["lost"]), result["turns"], len(result["evidence_lost"]), result["evidence"])
        )
    else:
        lines.append("Turns lost by the write path: not measured (no agent path, nothing replayed).")
    if result.get("llama_lost") is not None:
        lines.append("")
        lines.append(
            "Turns lost by the LlamaIndex flush (the user message in no stored entry and out of the chat"
            " `Memory` kept): %d of %d; of the probes' evidence messages: %d of %d."
            % (len(result["llama_lost"]), result["turns"], len(result["llama_evidence_lost"]), result["evidence"])
        )
    lines.append("")
    lines.append(
        "Per agent.invoke during the replay (%d turns): with the middleware %s; without %s."
        % (len(result["with_ms"]), _ms(result["with_ms"]), _ms(result["without_ms"]))
    )
    return "\n".join(lines) + "\n"


def _plots() -> Any:
    """``benchmarks/plots.py`` (matplotlib), imported only when a plot is drawn."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import plots

    return plots


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument("--conversations", type=int, default=8)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--seed", type=int, default=39)
    parser.add_argument(
        "--embedding", default="hash", choices=list(EMBEDDINGS), help="minilm: all-MiniLM-L6-v2 (the eval extra)"
    )
    parser.add_argument("--plans", nargs="*", default=list(DEFAULT_PLANS), choices=list(AGENT_PLANS))
    parser.add_argument("--no-retrieval", action="store_true", help="the agent paths only")
    parser.add_argument(
        "--overhead",
        type=int,
        default=2,
        metavar="N",
        help="time agent.invoke with and without the middleware on the first N conversations (0: not)",
    )
    parser.add_argument("--markdown-out", help="write the table here as well")
    parser.add_argument(
        "--plot-only", action="store_true", help="redraw the plot from the docs' table, measuring nothing"
    )
    args = parser.parse_args(argv)
    if args.plot_only:
        _plots().conversations()
        return {}
    start = time.perf_counter()
    conversations = make_conversations(args.conversations, args.turns, args.seed)
    result = run(conversations, args.budgets, args.plans, not args.no_retrieval, args.overhead, args.embedding)
    command = "python benchmarks/conversations/evaluate.py " + " ".join(sys.argv[1:] if argv is None else argv)
    table = render(result, command.strip())
    print(table)
    if args.markdown_out:
        os.makedirs(os.path.dirname(args.markdown_out) or ".", exist_ok=True)
        with open(args.markdown_out, "w", encoding="utf-8") as out:
            out.write(table)
        plots = _plots()
        if os.path.abspath(args.markdown_out) == str(plots.GENERATED / "conversations.md"):
            plots.conversations()
    print("took %.1f s" % (time.perf_counter() - start))
    return result


if __name__ == "__main__":
    main()
