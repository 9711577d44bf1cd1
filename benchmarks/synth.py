"""Synthetic mixed-type memory stores for benchmarks and notebooks.

Deterministic for a given seed. The type mix mirrors an agent's store: many
fresh notes and tasks, fewer facts and episodes, a thin tail of skills and
growth notes, and a handful of always-scope corrections.
"""

from __future__ import annotations

import datetime
import math
import random
from typing import Any, Dict, List, Tuple

from poolsplit_adapters import Pool

NOW = datetime.datetime(2026, 11, 20, 9, 0, 0)
TYPES: List[Tuple[str, float, float]] = [
    # type, share of the store, base priority
    ("note", 0.40, 7),
    ("task", 0.15, 8),
    ("fact", 0.20, 6),
    ("episode", 0.15, 5),
    ("skill", 0.06, 3),
    ("growth", 0.04, 2),
]
TAGS = ["api", "db", "etl", "auth", "ui", "ops", "tests", "money", "cache", "infra", "docs", "review"]
PROJECTS = [None, "checkout", "pipeline", "mobile"]
POOLS = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("content", 600, 10, ("note", "task", "fact")),
    Pool("episodes", 200, 4, ("episode",)),
    Pool("skills", 200, 4, ("skill", "growth")),
]


def vocabulary(size: int = 3000, seed: int = 7) -> List[str]:
    rnd = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = set()
    while len(words) < size:
        words.add("".join(rnd.choice(letters) for _ in range(rnd.randint(3, 9))))
    return sorted(words)


def make_store(n: int, seed: int = 1, corrections: int = 12) -> List[Dict[str, Any]]:
    rnd = random.Random(seed)
    vocab = vocabulary()
    # Zipf-like word frequencies, like real text.
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    kinds = [t for t, _, _ in TYPES]
    shares = [s for _, s, _ in TYPES]
    priority = {t: p for t, _, p in TYPES}
    store: List[Dict[str, Any]] = []
    for i in range(corrections):
        store.append(
            {
                "id": "fix-%d" % i,
                "type": "correction",
                "scope": "always",
                "content": "Correction %d: " % i + " ".join(rnd.choices(vocab, weights, k=12)),
                "created": (NOW - datetime.timedelta(days=rnd.uniform(30, 300))).isoformat() + "Z",
                "source": "user-feedback",
            }
        )
    for i in range(n - corrections):
        kind = rnd.choices(kinds, shares)[0]
        age = rnd.uniform(0, 5) if kind in ("note", "task") else rnd.uniform(0, 200)
        entry: Dict[str, Any] = {
            "id": "%s-%07d" % (kind, i),
            "type": kind,
            "content": " ".join(rnd.choices(vocab, weights, k=rnd.randint(15, 45))),
            "tags": rnd.sample(TAGS, rnd.randint(0, 3)),
            "project": rnd.choice(PROJECTS),
            "created": (NOW - datetime.timedelta(days=age)).isoformat(timespec="seconds") + "Z",
            "base_priority": priority[kind],
            "source": "session-%d" % (i % 500),
        }
        if rnd.random() < 0.03:
            entry["status"] = "archived"
        store.append(entry)
    return store


def make_queries(count: int, seed: int = 2) -> List[Dict[str, Any]]:
    rnd = random.Random(seed)
    vocab = vocabulary()
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    return [
        {
            "message": " ".join(rnd.choices(vocab, weights, k=rnd.randint(4, 10))),
            "tags": rnd.sample(TAGS, rnd.randint(0, 2)),
            "project": rnd.choice(PROJECTS),
        }
        for _ in range(count)
    ]


#: A user's store, as an agent's long-term memory of several users looks
#: after months: facts and episodes dominate, skills and growth notes are a
#: thin tail, and a few preferences. (type, share of the store)
USER_TYPES: List[Tuple[str, float]] = [
    ("fact", 0.40),
    ("episode", 0.30),
    ("note", 0.15),
    ("task", 0.08),
    ("skill", 0.04),
    ("growth", 0.02),
    ("preference", 0.01),
]
#: Four pools over those types (the corrections pool holds the always tier).
USER_POOLS = [
    Pool("corrections", 0, 0, ("correction",)),
    Pool("knowledge", 800, 10, ("fact", "note", "task", "preference")),
    Pool("episodes", 400, 4, ("episode",)),
    Pool("skills", 300, 4, ("skill", "growth")),
]


def tenant_shares(tenants: int) -> List[float]:
    """Each tenant's share of the store: skewed (the first ~3.5x the last of
    10), as users of one deployment are."""
    weights = [1.0 / (i + 1) ** 0.6 for i in range(tenants)]
    total = sum(weights)
    return [w / total for w in weights]


def make_user_store(n: int, tenants: int = 10, corrections: int = 12, seed: int = 11) -> List[Dict[str, Any]]:
    """``n`` entries shaped like a user's: ``tenants`` namespaces of skewed
    sizes (:func:`tenant_shares`), :data:`USER_TYPES`' skewed type counts,
    texts of a sentence to a few paragraphs (log-normal, median 80 words,
    ~500 characters, up to 400 words), and the metadata an agent stamps
    (tags, project, created, source, user, thread, entities, importance).
    Each tenant has ``corrections`` always-scope corrections of its own,
    first in the list."""
    rnd = random.Random(seed)
    vocab = vocabulary()
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    shares = tenant_shares(tenants)
    store: List[Dict[str, Any]] = []
    for t in range(tenants):
        for i in range(corrections):
            store.append(
                {
                    "id": "fix-%d-%d" % (t, i),
                    "type": "correction",
                    "scope": "always",
                    "namespace": "tenant-%d" % t,
                    "content": "Correction %d: " % i + " ".join(rnd.choices(vocab, weights, k=rnd.randint(12, 40))),
                    "created": (NOW - datetime.timedelta(days=rnd.uniform(30, 300))).isoformat() + "Z",
                    "source": "user-feedback",
                }
            )
    kinds = [k for k, _ in USER_TYPES]
    kind_shares = [s for _, s in USER_TYPES]
    for i in range(n - len(store)):
        t = rnd.choices(range(tenants), shares)[0]
        kind = rnd.choices(kinds, kind_shares)[0]
        words = max(8, min(400, int(rnd.lognormvariate(math.log(80), 0.7))))
        store.append(
            {
                "id": "%s-%07d" % (kind, i),
                "type": kind,
                "namespace": "tenant-%d" % t,
                "content": " ".join(rnd.choices(vocab, weights, k=words)),
                "tags": rnd.sample(TAGS, rnd.randint(0, 4)),
                "project": rnd.choice(PROJECTS),
                "created": (NOW - datetime.timedelta(days=rnd.uniform(0, 200))).isoformat(timespec="seconds") + "Z",
                "base_priority": rnd.randint(1, 9),
                "source": "session-%d" % (i % 700),
                "user_id": "user-%d-%d" % (t, rnd.randint(0, 20)),
                "thread_id": "thread-%06d" % rnd.randint(0, 99999),
                "entities": rnd.sample(vocab[:400], rnd.randint(2, 6)),
                "importance": round(rnd.random(), 3),
            }
        )
    return store
