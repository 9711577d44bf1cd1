"""The labelled evaluation set: loading it, and the rule that makes a query a
*paraphrase* of its relevant entries.

A paraphrase shares no content word with any of its relevant entries: no
significant word (the core's definition, the words the lexical scorer
compares) and not even a word stem (an inflection such as "rounded" /
"rounding" counts as the same word, since a person would say it is). Half
the queries or more are paraphrases, so a scorer that only matches words
cannot find their entries by construction.
"""

from __future__ import annotations

import datetime
import json
import pathlib
import sys
from typing import Any, Dict, FrozenSet, Iterable, List

from poolsplit_adapters import Pool
from poolsplit_adapters.poolsplit import significant_words

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ENTRIES = HERE / "entries.jsonl"
QUERIES = HERE / "queries.jsonl"
POOLS_TOML = ROOT / "examples" / "pools.toml"
#: The evaluation's clock: entry ages are measured from here.
NOW = datetime.datetime(2026, 11, 20, 9, 0, 0)


def stem(word: str) -> str:
    """A crude stem: drop one final "s", keep the first five letters. Crude on
    purpose: it over-matches ("statu" for "status" and "statue"), which only
    makes the paraphrase rule stricter."""
    if len(word) > 3 and word.endswith("s"):
        word = word[:-1]
    return word[:5]


def content_stems(text: str) -> FrozenSet[str]:
    """Stems of the significant words of ``text``."""
    return frozenset(stem(w) for w in significant_words(text))


def shared_content(query: str, texts: Iterable[str]) -> List[str]:
    """Content words of ``query`` whose word or stem occurs in ``texts``
    (empty for a paraphrase)."""
    words = significant_words(query)
    seen_words: set = set()
    seen_stems: set = set()
    for text in texts:
        own = significant_words(text)
        seen_words |= own
        seen_stems |= {stem(w) for w in own}
    return sorted(w for w in words if w in seen_words or stem(w) in seen_stems)


def load_jsonl(path: pathlib.Path) -> List[Dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_entries() -> List[Dict[str, Any]]:
    return load_jsonl(ENTRIES)


def load_queries() -> List[Dict[str, Any]]:
    return load_jsonl(QUERIES)


def load_pools() -> List[Pool]:
    """The pool plan of ``examples/pools.toml``, the one the README uses."""
    with POOLS_TOML.open("rb") as handle:
        plan = tomllib.load(handle)
    return [
        Pool(p["name"], p["max_tokens"], p["max_entries"], tuple(p["types"]) if "types" in p else None)
        for p in plan["pool"]
    ]


def one_budget(pools: List[Pool]) -> List[Pool]:
    """One shared pool with the plan's total budget (tokens and entries) over
    all of its types: the usual single-budget retrieval, at the same size."""
    types = tuple(t for p in pools for t in (p.types or ()))
    return [
        Pool(
            "shared",
            sum(p.max_tokens for p in pools),
            sum(p.max_entries for p in pools),
            types,
        )
    ]
