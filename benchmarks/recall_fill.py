"""Does per-pool recall over a vector store fill the budget? (issue 19, item 3-4)

    python benchmarks/recall_fill.py            # every 6th question of the long-horizon set
    python benchmarks/recall_fill.py --every 1  # all of them

Over LangChain's ``InMemoryVectorStore`` holding the long-horizon set of
``benchmarks/eval/long_horizon.py`` (types ``turn``, ``event``, ``fact``,
``preference``, ``task``; hash embedding, tiktoken costs), with
``embeddings=`` the store's own model, per budget: the tokens that loaded
(mean per question) and the evidence recall, for

* one pool of every type with the recall fixed at ``fetch_k=20`` (what
  ``from_vectorstore`` did before: ``max_fetch_k=20``) and growing (now);
* ``pools="auto"`` with the store's types unknown (the catch-all plan, 10%
  for every type the presets do not name, recall fixed at 20: before) and
  read from the store, recall growing (now).
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from typing import Any, Dict, Optional, Sequence

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "eval"))

import evaluate_long  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402

from poolsplit_adapters import Pool  # noqa: E402
from poolsplit_adapters.langchain import HashEmbeddings, PoolSplitRetriever, capture_selections  # noqa: E402


class TypesUnknown(PoolSplitRetriever):
    """The plan before: the retriever could not say which types the store holds."""

    def _entry_types(self) -> Optional[frozenset[str]]:
        return None


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=6, help="evaluate every n-th question")
    args = parser.parse_args(argv)
    entries, questions = evaluate_long.load()
    questions = questions[:: args.every]
    embeddings = evaluate_long.CachedEmbeddings(HashEmbeddings())
    store = InMemoryVectorStore(embeddings)
    store.add_documents(
        [
            Document(e["content"], id=e["id"], metadata={k: v for k, v in e.items() if k not in ("id", "content")})
            for e in entries
        ]
    )
    latest = max(e["created"] for e in entries)
    now = datetime.datetime.fromisoformat(latest.replace("Z", "+00:00")).replace(tzinfo=None)
    print("%d memories, %d questions; hash embedding; mean per question" % (len(entries), len(questions)))
    print("| budget | plan | recall | tokens loaded | evidence recall | ms per call |")
    print("|---|---|---|---|---|---|")
    for budget in (1024, 2048):
        one = [Pool("all", budget, 10_000)]
        auto: Dict[str, Any] = {"total_tokens": budget, "total_entries": 10_000}
        configs = [
            ("one pool", "fetch_k=20 fixed", PoolSplitRetriever, one, {"max_fetch_k": 20}),
            ("one pool", "growing", PoolSplitRetriever, one, {}),
            ("auto, types unknown", "fetch_k=20 fixed", TypesUnknown, "auto", {**auto, "max_fetch_k": 20}),
            ("auto, the store's types", "growing", PoolSplitRetriever, "auto", auto),
        ]
        for plan, recall, cls, pools, options in configs:
            retriever = cls.from_vectorstore(store, pools, embeddings=embeddings, now=now, **options)
            tokens = hit = total = 0
            start = time.perf_counter()
            for question in questions:
                with capture_selections() as mine:
                    retriever.invoke(question["message"])
                loaded = {c.entry["id"] for c in mine[0].chosen}
                tokens += sum(c.cost for c in mine[0].chosen)
                hit += len(set(question["evidence"]) & loaded)
                total += len(question["evidence"])
            took = 1000 * (time.perf_counter() - start) / len(questions)
            print(
                "| %d | %s | %s | %.0f | %.3f | %.0f |"
                % (budget, plan, recall, tokens / len(questions), hit / total, took)
            )


if __name__ == "__main__":
    main()
