"""Construction benchmark: each adapter's build against a bare MemoryIndex
over the same entries with the same token counter, in one run.

    python benchmarks/construction.py                     # 20k and 100k
    python benchmarks/construction.py --sizes 20000 --repeats 3
    python benchmarks/construction.py --sizes 100000 1000000   # what make bench runs

From ``--large`` entries on (default 500k) a size runs the ``len/4`` counter
only, once: a million texts through a real tokenizer, four builds each, would
take most of the run. The ratios go to ``docs/benchmarks/_generated/construction.md``.

For each size and counter it times, best of ``--repeats``:

* ``MemoryIndex(entries)``, the baseline;
* ``MemoryIndex(entries).prepare_for(default_adapter_scorer())``: the index
  with the BM25 postings of the adapters' default scorer, built after it;
* ``MemoryIndex(entries, prepare_for=[default_adapter_scorer()])``: the same
  built with the entries, as every adapter below builds it (one split of the
  texts for the index's words and the postings);
* LangChain ``PoolSplitRetriever(documents=...)``;
* LlamaIndex ``PoolSplitRetriever(nodes=...)``;
* LlamaIndex ``poolsplit_memory_blocks(entries, ...)``;

and prints each time as a ratio to the baseline (the issue's bar: <= x2),
on the wall clock and on CPU time.
The documents, nodes and dicts are built before the clock starts: what is
timed is what a caller pays when handing over a memory it already holds.

Counters: ``len/4`` is the core's ``default_token_counter``; ``tiktoken`` is a
fresh :class:`~poolsplit_adapters.tokens.TiktokenCounter` (o200k_base) per
build, so every build tokenises every text (cold cache); ``llama`` is a fresh
counter over LlamaIndex's global tokenizer (the LlamaIndex classes' default).
Wall-clock seconds and process CPU seconds, each the best of the runs (on a
busy machine the wall clock is mostly other processes' time).

A last table times tokenising 20k texts four ways: one by one,
``TiktokenCounter.count_many`` (what the index calls: one by one over the
distinct uncached texts), contiguous chunks on 2 threads (tiktoken releases
the GIL), and tiktoken's own ``encode_ordinary_batch`` (a thread pool with one
task per text): the figures behind ``count_many``'s choice.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import docs_tables  # noqa: E402
import synth  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402

from poolsplit_adapters import MemoryIndex  # noqa: E402
from poolsplit_adapters.defaults import default_adapter_scorer  # noqa: E402
from poolsplit_adapters.langchain import PoolSplitRetriever as LangChainRetriever  # noqa: E402
from poolsplit_adapters.llama_index import PoolSplitRetriever as LlamaIndexRetriever  # noqa: E402
from poolsplit_adapters.llama_index import poolsplit_memory_blocks  # noqa: E402
from poolsplit_adapters.poolsplit import default_token_counter  # noqa: E402
from poolsplit_adapters.relevance.words import _cached_terms  # noqa: E402
from poolsplit_adapters.tokens import TiktokenCounter, TokenizerCounter, load_encoding  # noqa: E402

Counter = Callable[[str], int]


def llama_counter() -> Counter:
    """A fresh counter over LlamaIndex's tokenizer (cold cache, like the
    fresh TiktokenCounter), built the way the adapters build theirs."""
    from llama_index.core.utils import get_tokenizer

    return TokenizerCounter(get_tokenizer())


COUNTERS: Dict[str, Callable[[], Counter]] = {
    "len/4": lambda: default_token_counter,
    "tiktoken": TiktokenCounter,
    "llama": llama_counter,
}


def timed(fn: Callable[[], Any], repeats: int) -> Tuple[float, float]:
    """(best wall seconds, best CPU seconds) over ``repeats`` runs, each
    minimum taken on its own: the least disturbed run by either clock."""
    walls, cpus = [], []
    for _ in range(repeats):
        # Every build analyses its texts afresh: the process-wide cache of
        # analysed texts would otherwise hand the later builds the earlier
        # ones' work.
        _cached_terms.cache_clear()
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def inputs(size: int) -> Tuple[List[Dict[str, Any]], List[Document], List[TextNode]]:
    store = synth.make_store(size)
    metadata = [{k: v for k, v in e.items() if k not in ("content", "id")} for e in store]
    documents = [Document(page_content=e["content"], metadata=m, id=e["id"]) for e, m in zip(store, metadata)]
    nodes = [TextNode(text=e["content"], metadata=m, id_=e["id"]) for e, m in zip(store, metadata)]
    return store, documents, nodes


def bench_size(size: int, counters: List[str], repeats: int) -> List[List[str]]:
    store, documents, nodes = inputs(size)
    pools = synth.POOLS
    builds: List[Tuple[str, Callable[[Counter], Any]]] = [
        ("MemoryIndex", lambda c: MemoryIndex(store, token_counter=c)),
        # What the adapters build: the index and the BM25 postings of their
        # default scorer (prepare_for), so their first call costs what every
        # later one does.
        (
            "MemoryIndex + prepare_for(default_adapter_scorer())",
            lambda c: MemoryIndex(store, token_counter=c).prepare_for(default_adapter_scorer()),
        ),
        (
            "MemoryIndex(prepare_for=[default_adapter_scorer()])",
            lambda c: MemoryIndex(store, token_counter=c, prepare_for=[default_adapter_scorer()]),
        ),
        (
            "LangChain PoolSplitRetriever(documents=)",
            lambda c: LangChainRetriever(documents=documents, pools=pools, token_counter=c),
        ),
        ("LlamaIndex PoolSplitRetriever(nodes=)", lambda c: LlamaIndexRetriever(pools, nodes=nodes, token_counter=c)),
        ("LlamaIndex poolsplit_memory_blocks", lambda c: poolsplit_memory_blocks(store, pools, token_counter=c)),
    ]
    rows: List[List[str]] = []
    for name in counters:
        make = COUNTERS[name]
        make()("warm up")  # the tokenizer's one-time load is not construction
        print("\n%d entries, counter %s, best of %d" % (size, name, repeats))
        print("  %-42s %8s %8s %8s %8s" % ("construction", "wall s", "cpu s", "x wall", "x cpu"))
        base: Tuple[float, float] = (0.0, 0.0)
        for label, build in builds:
            wall, cpu = timed(lambda build=build, make=make: build(make()), repeats)
            base = base if base[0] else (wall, cpu)
            print("  %-42s %8.3f %8.3f %7.2fx %7.2fx" % (label, wall, cpu, wall / base[0], cpu / base[1]))
            ratios = "x%.2f" % (wall / base[0]), "x%.2f" % (cpu / base[1])
            rows.append([f"{size:,}", name, label, "%.2f s" % wall, "%.2f s" % cpu, *ratios])
    return rows


def bench_tokens(count: int, repeats: int) -> None:
    texts = [e["content"] for e in synth.make_store(count, seed=3)]
    encoding = load_encoding()
    encode = encoding.encode_ordinary

    def in_chunks(threads: int) -> List[int]:
        size = -(-len(texts) // threads)
        chunks = [texts[i : i + size] for i in range(0, len(texts), size)]
        with ThreadPoolExecutor(threads) as pool:
            parts = list(pool.map(lambda chunk: [max(1, len(encode(t))) for t in chunk], chunks))
        return [count for part in parts for count in part]

    ways: List[Tuple[str, Callable[[], List[int]]]] = [
        ("one by one (encode_ordinary)", lambda: [max(1, len(encode(t))) for t in texts]),
        ("TiktokenCounter().count_many", lambda: TiktokenCounter().count_many(texts)),
        ("contiguous chunks on 2 threads", lambda: in_chunks(2)),
        ("tiktoken encode_ordinary_batch", lambda: [max(1, len(x)) for x in encoding.encode_ordinary_batch(texts)]),
    ]
    print(
        "\ntokenising %d distinct texts of ~%d chars (o200k_base), best of %d"
        % (count, sum(map(len, texts)) // count, repeats)
    )
    print("  %-42s %8s %8s %8s %8s" % ("way", "wall s", "cpu s", "x wall", "x cpu"))
    base: Tuple[float, float] = (0.0, 0.0)
    for label, way in ways:
        wall, cpu = timed(way, repeats)
        base = base if base[0] else (wall, cpu)
        print("  %-42s %8.3f %8.3f %7.2fx %7.2fx" % (label, wall, cpu, wall / base[0], cpu / base[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--counters", nargs="+", choices=sorted(COUNTERS), default=["len/4", "tiktoken", "llama"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--token-texts", type=int, default=20_000)
    parser.add_argument("--large", type=int, default=500_000, help="from this size on: len/4 only, one run")
    args = parser.parse_args()
    print(
        "machine: %s, %d cores, load %.1f, Python %s"
        % (platform.machine(), os.cpu_count() or 0, os.getloadavg()[0], platform.python_version())
    )
    rows: List[List[str]] = []
    for size in args.sizes:
        large = size >= args.large
        rows += bench_size(size, ["len/4"] if large else args.counters, 1 if large else args.repeats)
    bench_tokens(args.token_texts, args.repeats)
    print("\nload at the end %.1f" % os.getloadavg()[0])
    header = ["entries", "counter", "construction", "wall", "cpu", "÷ MemoryIndex (wall)", "÷ MemoryIndex (cpu)"]
    docs_tables.write_table("construction", docs_tables.markdown_table(header, rows, "lllrrrr"))


if __name__ == "__main__":
    main()
