"""Memory over a framework's vector store: the engines the adapters
translate for.

LangChain: the one recall plan over a ``VectorStore`` (`langchain_search`,
with its filter builders in `langchain_filters`), the exact searches over
``PGVector`` (`pgvector_search`) and the v2 ``PGVectorStore``
(`pgvector_v2_search`), and the id claims that keep a write from taking an
id another namespace holds (`pgvector_ids`). LlamaIndex: the one recall plan
over a ``VectorStoreIndex`` and the exact searches over its
``PGVectorStore`` (`llama_index_search`), its writes, which lose
nothing if they fail (`llama_index_writes`), and the chat messages its
memory blocks are given (`llama_index_messages`). Both sides' writes lock ids
under the same keys (`id_locks`). Each side imports its own framework
only. The public names are exported by
``poolsplit_adapters.langchain`` and ``poolsplit_adapters.llama_index``.
"""
