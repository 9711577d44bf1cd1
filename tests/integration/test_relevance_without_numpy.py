"""The relevance-first scorer on words alone imports and ranks without
numpy (a fresh interpreter where numpy cannot be imported)."""

from __future__ import annotations

import subprocess
import sys


def test_words_alone_need_neither_numpy_nor_an_embedder():
    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "from poolsplit_adapters import Pool, select\n"
        "from poolsplit_adapters.relevance import RelevanceScorer\n"
        "entries = [{'id': 'a', 'content': 'refunds'}, {'id': 'b', 'content': 'menu'}]\n"
        "picked = select(entries, [Pool('p', 10, 1)], {'message': 'refund'}, scorer=RelevanceScorer())\n"
        "print([c.entry['id'] for c in picked.chosen])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['a']"
