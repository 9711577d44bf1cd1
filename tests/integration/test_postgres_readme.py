"""The documentation's Postgres examples (docs/stores.md) run, as written,
against the test server.

They are fenced as ```` ```python {.postgres} ```` (rendered as Python; skipped
by tests/integration/test_docs.py, which runs only plain ```` ```python ````
blocks offline) and read the one connection setting ``POOLSPLIT_PG_URL``
(each store gets its form through ``PostgresConnection``), which this test
points at a fresh database on the embedded server. Each example's
last line prints a list and says in a comment what it prints.
"""

from __future__ import annotations

import pytest
from doc_blocks import code_blocks, promised_output

BLOCKS = code_blocks("python {.postgres}")


def test_the_postgres_examples_exist():
    assert len(BLOCKS) >= 3  # LangChain, LlamaIndex, the agent


@pytest.mark.parametrize("where", BLOCKS, ids=["%s-%d" % (name, n) for name, n, _ in BLOCKS])
def test_postgres_example_runs_and_prints_what_it_says(where, pg_database, monkeypatch, capsys):
    name, number, block = where
    monkeypatch.setenv("POOLSPLIT_PG_URL", pg_database.url)
    exec(compile(block, "%s postgres example %d" % (name, number), "exec"), {"__name__": "__readme__"})
    promised = promised_output(block)
    assert promised, "the example should say what it prints last"
    assert capsys.readouterr().out.strip().splitlines()[-len(promised) :] == promised
