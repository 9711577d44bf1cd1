"""``poolsplit demo`` / ``make demo``: the bundled example store through the
core selector, a LangChain LCEL chain and a LlamaIndex ``Memory``.

Each part shows the two things pools change: every kind of memory gets its
reserved room, and the behavioural corrections reach the model first,
however much fresh content competes with them.
"""

from __future__ import annotations

import asyncio
import datetime
import importlib.util
from collections import Counter
from typing import Any, Dict, List, Sequence, TextIO, Tuple

from .poolsplit import Pool, select
from .render import explain, parse_markers, render_context

DEMO_NOW = datetime.datetime(2026, 11, 20, 9, 0, 0)
DEMO_QUERIES = [
    ("checkout", ["money"], "rounding bug in refunds"),
    ("pipeline", ["etl"], "why is the Monday dedupe job slow"),
    (None, ["review"], "prepare the pull request for review"),
]
KINDS = ["correction", "task", "fact", "note", "episode", "skill", "growth"]


def _type_counts(entries: Sequence[Any]) -> Counter[str]:
    return Counter(e.get("type", "note") for e in entries)


def _rule(out: TextIO, title: str) -> None:
    print("\n" + "=" * 78 + "\n" + title + "\n" + "=" * 78, file=out)


#: Printed once before the first query: what each part of a report means,
#: in the words a first reader has (the report's own terms in quotes).
HOW_TO_READ = """\
How to read each query's report:
  the table      what loaded, pool by pool: "score" ranks the entries (higher first),
                 "always" marks a correction, which loads on every query outside every
                 budget; "tokens" is what the entry costs in the prompt.
  per pool       "contextual 8/8 entries, 138/300 tokens" means the pool loaded 8 entries
                 of the 8 it may hold, for 138 of its 300 tokens; "always-scope" counts
                 the corrections, which use no budget.
  tokens         what the whole selection puts in the prompt.
  not loaded     what stayed out, and why: "entry_cap" (its pool held as many entries as
                 it may), "token_budget" (its pool had too few tokens left), "inactive"
                 (retired or replaced by a newer entry).
  last table     the same query with one shared budget of the same total size, as most
                 memory retrieval does: how many entries of each type each way loads."""


def core_demo(entries: List[Dict[str, Any]], pools: List[Pool], out: TextIO) -> None:
    """Pools vs one shared budget of the same total size, on each query."""
    single = [Pool("single", sum(p.max_tokens for p in pools), sum(p.max_entries for p in pools))]
    # The usual retrieval: one scorer, one budget, corrections ranked like the rest.
    flat = [{k: v for k, v in e.items() if k != "scope"} for e in entries]
    corrections = sum(1 for e in entries if e.get("scope") == "always")
    print("\n" + HOW_TO_READ, file=out)
    for project, tags, message in DEMO_QUERIES:
        context = {"project": project, "tags": tags, "message": message}
        pooled = select(entries, pools, context, now=DEMO_NOW)
        shared = select(flat, single, context, now=DEMO_NOW)
        _rule(out, "core: %r  (project=%s, tags=%s)" % (message, project, tags))
        print(explain(pooled, limit=3), file=out)
        a, b = _type_counts(shared.entries()), _type_counts(pooled.entries())
        print("\nentries loaded, per type   one shared budget   pools", file=out)
        for kind in KINDS:
            print("  %-24s %8d %14d" % (kind, a.get(kind, 0), b.get(kind, 0)), file=out)
        print(
            "corrections loaded: %d of %d with one shared budget, %d of %d with pools"
            % (a.get("correction", 0), corrections, b.get("correction", 0), corrections),
            file=out,
        )
    context = {"project": "checkout", "tags": ["money"], "message": DEMO_QUERIES[0][2]}
    rendered = render_context(select(entries, pools, context, now=DEMO_NOW))
    _rule(out, "what the model receives for the first query (render_context)")
    print(rendered.text, file=out)


def langchain_demo(entries: List[Dict[str, Any]], pools: List[Pool], out: TextIO) -> None:
    """The retriever as a drop-in in an LCEL RAG chain with a fake chat model."""
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough

    from .langchain import PoolSplitRetriever, format_documents

    class Spy(BaseCallbackHandler):
        prompt = ""

        def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
            Spy.prompt = "\n".join(str(m.content) for batch in messages for m in batch)

    docs = [
        Document(
            page_content=e["content"], id=e["id"], metadata={k: v for k, v in e.items() if k not in ("content", "id")}
        )
        for e in entries
    ]
    retriever = PoolSplitRetriever(documents=docs, pools=pools, now=DEMO_NOW)
    prompt = ChatPromptTemplate.from_messages([("system", "Memory:\n{context}"), ("human", "{question}")])
    model = GenericFakeChatModel(messages=iter([AIMessage(content="(fake model reply)")]))
    chain = {"context": retriever | format_documents, "question": RunnablePassthrough()} | prompt | model
    question = "fix the rounding bug in the refunds total"
    reply = chain.invoke(question, config={"callbacks": [Spy()]})
    _rule(out, "LangChain: retriever | format_documents | prompt | GenericFakeChatModel")
    markers = parse_markers(Spy.prompt)
    print("question: %r -> %d memories in the prompt, reply %r" % (question, len(markers), reply.content), file=out)
    for m in markers:
        print("  %-12s %-10s %s" % (m.get("pool"), m.get("id"), m["content"][:52]), file=out)
    first = [m.get("scope") == "always" for m in markers]
    print(
        "the %d corrections come first in the prompt: %s"
        % (sum(first), "yes" if first == sorted(first, reverse=True) and any(first) else "no"),
        file=out,
    )


def llama_index_demo(entries: List[Dict[str, Any]], pools: List[Pool], out: TextIO) -> None:
    """Memory blocks inside llama_index.core.memory.Memory under a chat flood."""
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory import Memory

    from .llama_index import PooledMemoryBlock, poolsplit_memory_blocks

    async def run() -> List[ChatMessage]:
        # the user's standing instructions and preferences, which the flush recognises, get a pool
        standing = Pool("standing", 150, 12, ("instruction", "preference"))
        blocks = poolsplit_memory_blocks(entries, [*pools[:1], standing, *pools[1:]], now=DEMO_NOW)
        memory = Memory.from_defaults(session_id="demo", token_limit=1500, memory_blocks=blocks)
        for n in range(150):
            await memory.aput(
                ChatMessage(role="user", content="Status %d: is the checkout deploy on staging done?" % n)
            )
            await memory.aput(ChatMessage(role="assistant", content="Deploy %d done; tests green, 2 warnings." % n))
        await memory.aput(ChatMessage(role="user", content="the refunds total is off by a cent again"))
        messages = await memory.aget()
        pooled = blocks[1]
        assert isinstance(pooled, PooledMemoryBlock)
        episodes = sum(1 for e in pooled.store.index if e.get("type") == "episode")
        print(
            "after 300 chat messages, Memory had moved %d of them out of the chat history into "
            "long-term memory (as episodes)" % episodes,
            file=out,
        )
        return messages

    _rule(out, "LlamaIndex: Memory(memory_blocks=poolsplit_memory_blocks(...)), token_limit=1500")
    messages = asyncio.run(run())
    system = next(m for m in messages if m.role == "system")
    markers = parse_markers(system.content or "")
    always = sum(1 for m in markers if m.get("scope") == "always")
    print(
        "the system message holds %d memories; the first %d are the corrections (a block Memory never cuts)"
        % (len(markers), always),
        file=out,
    )
    for m in markers[: always + 4]:
        print("  %-12s %-10s %s" % (m.get("pool"), m.get("id"), m["content"][:52]), file=out)
    tail = (system.content or "").split("</long_term_memory>")[0].strip().splitlines()[-1]
    print("  ...\n  %s" % tail, file=out)


#: (part, module it needs, extra that installs it)
FRAMEWORK_PARTS = [
    ("the LangChain LCEL chain", "langchain_core", "langchain"),
    ("the LlamaIndex Memory", "llama_index.core", "llama-index"),
]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_parts() -> List[Tuple[str, str]]:
    """(part, extra) for each framework part whose framework is not installed."""
    return [(part, extra) for part, module, extra in FRAMEWORK_PARTS if not _installed(module)]


def skipped_line(missing: Sequence[Tuple[str, str]]) -> str:
    """The one line that says which extra shows the parts not run."""
    extra = missing[0][1] if len(missing) == 1 else "all"
    return '(%s skipped: install the "%s" extra to see %s, e.g. pip install ".[%s]" from a clone)' % (
        " and ".join(part for part, _ in missing),
        extra,
        "it" if len(missing) == 1 else "them",
        extra,
    )


def run(entries: List[Dict[str, Any]], pools: List[Pool], out: TextIO, *, frameworks: bool = True) -> None:
    """The whole demo: the core part always, each framework part when its
    extra is installed, and one line naming the extra for the rest."""
    print(
        "The example store: %d memories of a coding agent; the pool plan reserves a budget for each of: %s"
        % (len(entries), ", ".join(p.name for p in pools)),
        file=out,
    )
    core_demo(entries, pools, out)
    if not frameworks:
        return
    missing = missing_parts()
    if not any(extra == "langchain" for _, extra in missing):
        langchain_demo(entries, pools, out)
    if not any(extra == "llama-index" for _, extra in missing):
        llama_index_demo(entries, pools, out)
    if missing:
        print("\n" + skipped_line(missing), file=out)
