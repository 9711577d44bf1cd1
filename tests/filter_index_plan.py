"""The plan both filter-index test modules run (LangChain ``PGVector`` and
LlamaIndex ``PGVectorStore``): one tenant with many notes, a dozen skills
and three growth notes, sessions that must use an index with the HNSW scan
cut to its first batch, and the pools and page size that make a rare pool
need the filter-first read. One copy, so the two stores are held to the
same case.
"""

from __future__ import annotations

from poolsplit_adapters import Pool

QUERY = "deploy the checkout service to staging"
NOTES, SKILLS, GROWTH, OTHER = 300, 12, 3, 300
#: Sessions that must use an index, with the HNSW scan cut to its first batch.
SHORT_SCANS = {"options": "-c enable_seqscan=off -c hnsw.max_scan_tuples=1"}
POOLS = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("content", 200, 3, ("note",)),
    Pool("skills", 10_000, 100, ("skill",)),
    Pool("growth", 10_000, 100, ("growth",)),
]
K = 5
