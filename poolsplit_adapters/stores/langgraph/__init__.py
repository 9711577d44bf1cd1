"""Memory over a LangGraph ``BaseStore``: the store engine the LangChain
adapters translate for.

`store.BaseStoreMemory` (the `MemoryStore` contract and the one recall plan
over any ``BaseStore``), `prepared.PreparedRecall` (a middleware's recall
kept between turns, checked by the store's watermark), the ranked type
searches over ``InMemoryStore(index=)`` (`memory_store_search`) and
``PostgresStore(index=)`` (`postgres_store_search`: the store's tables read
by our SQL), and `namespaces.namespace_label` (a namespace tuple as an
entry namespace). The public names are exported by
``poolsplit_adapters.langchain``.
"""
