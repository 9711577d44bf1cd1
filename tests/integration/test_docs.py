"""Every Python example of the documentation (README.md and every page under
docs/) runs, offline, as written, from the repository root, and prints
exactly what its ``#> `` lines say it prints. Examples fenced
```` ```python {.postgres} ```` need a server and run in
tests/integration/test_postgres_readme.py instead; those fenced
```` ```python {.provider} ```` need a model provider and are compiled and
import-checked in tests/integration/test_real_models_page.py."""

from __future__ import annotations

import pytest
from doc_blocks import ROOT, claimed_output, code_blocks, indented_python_fences, wide_code_lines

BLOCKS = code_blocks("python")


def test_the_docs_have_examples_with_printed_output():
    files = {name for name, _, _ in BLOCKS}
    assert "README.md" in files
    assert len(files) >= 8, files  # the home page, concepts, core, adapters, lifecycle, stores, ...
    assert sum(1 for _, _, code in BLOCKS if claimed_output(code)) >= 8


def test_no_python_example_is_hidden_in_an_indented_fence():
    assert indented_python_fences() == []


def test_every_code_block_of_the_site_fits_88_columns():
    # Wider lines scroll sideways on the page; a reader loses the end of a call.
    assert wide_code_lines(88) == []


@pytest.mark.parametrize("where", BLOCKS, ids=["%s-%d" % (name, n) for name, n, _ in BLOCKS])
def test_docs_example_runs_and_prints_what_it_says(where, capsys, monkeypatch):
    name, number, code = where
    monkeypatch.chdir(ROOT)  # examples name files such as examples/memory.jsonl
    exec(compile(code, "%s example %d" % (name, number), "exec"), {"__name__": "__docs__"})
    printed = capsys.readouterr().out.splitlines()
    claimed = claimed_output(code)
    if claimed or printed:
        assert printed == claimed, "%s example %d prints what its #> lines say" % (name, number)
