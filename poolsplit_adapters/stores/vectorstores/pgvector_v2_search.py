"""The recall plan's pool searches over langchain-postgres v2's ``PGVectorStore``, as our own statements.

``PGVectorStore`` (over a ``PGEngine``) answers a filtered similarity search
with one ``ORDER BY embedding <=> :query LIMIT k`` on its table. Through an
HNSW index that looks at the ``hnsw.ef_search`` (40) nearest rows and then
filters: a pool whose types are a small part of the table got a few of its
``fetch_k``, and the short page read as "the store has nothing more"
(``notes["recall"]["store_ran_out"]``). So each pool search of the plan is
one statement of ours on the store's own table, engine and event loop,
after the store's own ``index_query_options`` and the sizing
`hnsw_search_settings` (``ef_search``
at least ``k``, pgvector's iterative scan on), all in one transaction of one
pooled connection.

**A short page is checked, not believed.** A pool search that still returns
fewer than ``k`` rows (the iterative scan stops at ``hnsw.max_scan_tuples``)
is run again exactly on the same connection (index scans off for that
transaction: no HNSW), so "the store ran out" is what the table says.

What is taken from the store, as it declares it (never guessed): its schema
and table, its id, content and embedding columns, its metadata columns and
its JSON metadata column (a metadata key is read from its own column when
the store declares one, else from the JSON column, as the store's own filter
reads it), its distance strategy (the operator it orders by, the function
whose value it returns as the score) and its ``index_query_options``. Its
documents come back as its own search builds them. The names are the store's
configuration, quoted by SQLAlchemy; every value (the query vector, types,
namespaces, ``k``, each query option) is a bound parameter
(`metadata_condition`).

Not taken over: a store with a ``hybrid_search_config`` keeps its own search
(its score fuses a text search we would not reproduce), and so does a
caller's own ``filter_builder``. The always-scope fetch is the store's exact
``get(where=...)`` already
(`PGVectorStoreAlwaysFetch`).
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun as AsyncRun
from langchain_core.callbacks import CallbackManagerForRetrieverRun as SyncRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, PrivateAttr

from ...errors import ArgumentError
from ...recall import Search
from ..internals import moved
from ..postgres import exact_search_settings, hnsw_search_settings, metadata_condition

__all__ = ["PGVectorStorePlanSearch", "StoreTable", "serves_pgvectorstore"]


def serves_pgvectorstore(store: VectorStore) -> bool:
    """Whether ``store`` is langchain-postgres v2's ``PGVectorStore`` (looked
    up in ``sys.modules``: never imports langchain-postgres)."""
    module = sys.modules.get("langchain_postgres.v2.vectorstores")
    return module is not None and isinstance(store, module.PGVectorStore)


class _AsText:
    """A metadata column read as text: the ``.astext`` that
    `metadata_condition` reads of
    every key, so the one filter rule serves columns and JSON alike."""

    def __init__(self, column: Any) -> None:
        self.astext = column


class _Fields:
    """Each metadata key as the store's own filter reads it: its column when
    the store declares one, else the JSON column's ``->>`` (what
    `metadata_condition` indexes)."""

    def __init__(self, table: StoreTable, columns: Dict[str, Any]) -> None:
        self.table = table
        self.columns = columns

    def __getitem__(self, key: str) -> Any:
        table = self.table
        if key in table.metadata_columns:
            return _AsText(self.columns[key])
        if table.metadata_json_column is None:
            raise ArgumentError(
                "PGVectorStore table %r has no column %r and no metadata JSON column, and the recall filters "
                "by %r: give the table that metadata column, or keep a metadata_json_column" % (table.name, key, key)
            )
        return self.columns[table.metadata_json_column][key]


@dataclasses.dataclass(frozen=True)
class StoreTable:
    """A ``PGVectorStore``'s table as the store declares it, and the
    statements of a pool search on it.

    Attributes:
        schema: the store's ``schema_name``.
        name: the store's ``table_name``.
        id_column, content_column, embedding_column: the store's columns for
            the document id, its text and its vector.
        metadata_columns: metadata keys the store keeps in their own columns.
        metadata_json_column: the JSON column holding every other key (None:
            the store keeps none).
        distance: the store's ``DistanceStrategy`` (its ``operator`` orders,
            its ``search_function`` is the score it returns).
        query_options: the store's ``index_query_options`` as ``(name,
            value)`` settings (``hnsw.ef_search`` ...), for each search's
            transaction, as the store's own search sets them.

    Example:
        ```python
        table = StoreTable.of(pg_vector_store)
        statement = table.statement(Search("pool:notes", 20, types=("note",)), vector)
        ```
    """

    schema: str
    name: str
    id_column: str
    content_column: str
    embedding_column: str
    metadata_columns: Tuple[str, ...]
    metadata_json_column: Optional[str]
    distance: Any
    query_options: Tuple[Tuple[str, str], ...]

    @classmethod
    def of(cls, store: VectorStore) -> StoreTable:
        """The table ``store`` (a ``PGVectorStore``) declares. Its settings
        live on the async store it wraps, which it keeps private."""
        inner: Any = _inner(store)
        options = inner.index_query_options
        return cls(
            schema=inner.schema_name,
            name=inner.table_name,
            id_column=inner.id_column,
            content_column=inner.content_column,
            embedding_column=inner.embedding_column,
            metadata_columns=tuple(inner.metadata_columns),
            metadata_json_column=inner.metadata_json_column,
            distance=inner.distance_strategy,
            query_options=tuple(_setting(p) for p in options.to_parameter()) if options is not None else (),
        )

    # -- the statement ----------------------------------------------------------------

    def _columns(self) -> Dict[str, Any]:
        import sqlalchemy
        from sqlalchemy.dialects import postgresql

        columns = {
            self.id_column: sqlalchemy.column(self.id_column),
            self.content_column: sqlalchemy.column(self.content_column, sqlalchemy.Text),
            self.embedding_column: sqlalchemy.column(self.embedding_column),
        }
        for name in self.metadata_columns:
            columns[name] = sqlalchemy.column(name, sqlalchemy.Text)
        if self.metadata_json_column is not None:
            columns[self.metadata_json_column] = sqlalchemy.column(self.metadata_json_column, postgresql.JSON)
        sqlalchemy.table(self.name, *columns.values(), schema=self.schema)
        return columns

    def statement(self, search: Search, vector: Sequence[float]) -> Any:
        """``search`` (a pool search) as one ``SELECT``: the store's
        documents, its score and the ordering key, nearest first, ``k`` rows,
        every value bound."""
        import sqlalchemy

        columns = self._columns()
        embedding = columns[self.embedding_column]
        # The vector's text form, bound untyped as the store binds it:
        # Postgres reads it as the embedding column's type (a typed string
        # parameter would be cast to varchar, which no distance takes).
        text = str([float(x) for x in vector])
        query: Any = sqlalchemy.bindparam("query_vector", text, type_=sqlalchemy.types.NullType())
        order = embedding.op(self.distance.operator, return_type=sqlalchemy.Float)(query)
        score = getattr(sqlalchemy.func, self.distance.search_function)(embedding, query, type_=sqlalchemy.Float)
        # "No type" as the store's own dict filter says it (it cannot): no
        # type condition, the untyped entries among the nearest of any type,
        # as over PGVector.
        condition = dataclasses.replace(search, untyped=False) if search.untyped else search
        shown = [columns[self.id_column], columns[self.content_column], *(columns[c] for c in self.metadata_columns)]
        if self.metadata_json_column is not None:
            shown.append(columns[self.metadata_json_column])
        return (
            sqlalchemy.select(*shown, score, order)
            .select_from(embedding.table)
            .where(metadata_condition(_Fields(self, columns), condition))
            .order_by(order)
            .limit(search.k)
        )

    def settings(self, k: int) -> List[Any]:
        """The transaction's settings before a pool search: the store's own
        query options (each ``set_config`` with its name and value bound),
        then the HNSW scan sized to ``k`` (which keeps a larger ``ef_search``
        the store chose)."""
        import sqlalchemy

        own = [
            sqlalchemy.text("SELECT set_config(:name, :value, true)").bindparams(name=name, value=value)
            for name, value in self.query_options
        ]
        return own + [hnsw_search_settings(k)]

    # -- results ------------------------------------------------------------------------

    def documents(self, rows: Sequence[Any]) -> List[Tuple[Document, float]]:
        """Each row as the store's own search returns it (metadata: the JSON
        column's keys, then each metadata column's), with its score, in the
        store's order (an iterative scan in ``relaxed_order`` returns rows
        nearly in order: they are put in order here, ties by id)."""
        ranked = sorted(rows, key=lambda r: (r[-1], str(r[0])))
        found: List[Tuple[Document, float]] = []
        for row in ranked:
            values = list(row)
            kept = values[2 : 2 + len(self.metadata_columns)]
            metadata: Dict[str, Any] = {}
            if self.metadata_json_column is not None:
                metadata = dict(values[2 + len(self.metadata_columns)] or {})
            metadata.update(zip(self.metadata_columns, kept))
            found.append((Document(id=str(values[0]), page_content=values[1], metadata=metadata), float(values[-2])))
        return found


def _inner(store: Any) -> Any:
    """The async store a ``PGVectorStore`` wraps (its settings and engine;
    it exposes no public accessor)."""
    return store._PGVectorStore__vs


def _takes_our_statement(store: Any) -> bool:
    """Whether our statement can run over ``store``: it is not hybrid, and it
    has the private parts this module reads (the wrapped async store, the
    engine's two runners), which a langchain-postgres release may rename; then
    the store's own search serves it, never an ``AttributeError`` from inside
    a search."""
    inner, engine = getattr(store, "_PGVectorStore__vs", None), getattr(store, "_engine", None)
    reaches = (
        ("PGVectorStore.__vs", inner is not None and hasattr(inner, "hybrid_search_config"), "the wrapped async store"),
        ("PGVectorStore._engine", engine is not None, "the store's PGEngine"),
        (
            "PGEngine._run_as_sync() / _run_as_async()",
            all(callable(getattr(engine, name, None)) for name in ("_run_as_sync", "_run_as_async")),
            "the engine's two runners",
        ),
    )
    for internal, present, expected in reaches:
        if not present:
            moved(
                "langchain-postgres",
                internal,
                expected,
                "poolsplit_adapters/stores/vectorstores/pgvector_v2_search.py",
                "the store's own similarity search serves the pool searches",
            )
            return False
    return inner is not None and inner.hybrid_search_config is None


def _setting(parameter: str) -> Tuple[str, str]:
    """``"hnsw.ef_search = 40"`` (a ``QueryOptions.to_parameter()`` item) as ``(name, value)``."""
    name, _, value = parameter.partition("=")
    return name.strip(), value.strip()


class PGVectorStorePlanSearch(BaseRetriever):
    """One pool search of a recall plan over v2 ``PGVectorStore`` as a
    retriever run: our statement on the store's table (`StoreTable`),
    the HNSW scan sized to ``k``, a short page completed exactly.

    `scores` holds the store's distance per document id (when
    ``with_scores``), `completed` whether the last run's index page was
    short and an exact scan ran it again.

    Example:
        ```python
        run = PGVectorStorePlanSearch(store=pg_vector_store, search=search, vector=store.embeddings.embed_query(q))
        docs = run.invoke(q)
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: VectorStore
    search: Search
    vector: List[float]
    with_scores: bool = False

    _scores: Dict[str, float] = PrivateAttr(default_factory=dict)
    _completed: bool = PrivateAttr(default=False)

    @property
    def scores(self) -> Dict[str, float]:
        """Document id -> the store's distance (``with_scores``), from the last run."""
        return self._scores

    @property
    def completed(self) -> bool:
        """Whether the index scan returned the last run's page short and an exact scan then ran it again."""
        return self._completed

    def _short(self, rows: Sequence[Any]) -> bool:
        """A pool page with fewer rows than asked (the untyped side search is
        not checked: its pool's typed search says whether the pool is full)."""
        return not self.search.untyped and len(rows) < self.search.k

    async def _rows(self, table: StoreTable) -> List[Any]:
        """The search on one pooled connection of the store's engine: sized
        and run in one transaction, completed exactly in a second when short."""
        statement = table.statement(self.search, self.vector)
        engine: Any = _inner(self.store).engine
        async with engine.connect() as conn:
            for setting in table.settings(self.search.k):
                await conn.execute(setting)
            rows = list((await conn.execute(statement)).all())
            await conn.commit()
            self._completed = self._short(rows)
            if self._completed:
                await conn.execute(exact_search_settings())
                rows = list((await conn.execute(statement)).all())
                await conn.commit()
        return rows

    def _finish(self, table: StoreTable, rows: Sequence[Any]) -> List[Document]:
        found = table.documents(rows)
        self._scores = {str(doc.id): score for doc, score in found} if self.with_scores else {}
        return [doc for doc, _ in found]

    def _get_relevant_documents(self, query: str, *, run_manager: SyncRun) -> List[Document]:
        pg: Any = self.store
        table = StoreTable.of(self.store)
        return self._finish(table, pg._engine._run_as_sync(self._rows(table)))  # on the store's own loop

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncRun) -> List[Document]:
        pg: Any = self.store
        table = StoreTable.of(self.store)
        return self._finish(table, await pg._engine._run_as_async(self._rows(table)))


def plan_search(
    store: VectorStore, search: Search, vector: Optional[List[float]], with_scores: bool
) -> Optional[PGVectorStorePlanSearch]:
    """Our statement for ``search`` when ``store`` is a v2 ``PGVectorStore``
    searched by vector, ``search`` is a pool search and the store is not
    hybrid; else None (the store's own search, or the exact always fetch)."""
    if vector is None or search.always or not serves_pgvectorstore(store):
        return None
    if not _takes_our_statement(store):
        return None
    return PGVectorStorePlanSearch(store=store, search=search, vector=vector, with_scores=with_scores)
