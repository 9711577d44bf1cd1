"""Hypothesis strategies for memory stores, pool plans and contexts.

Values are drawn from small vocabularies on purpose: collisions in priority,
created time, id and words produce the ties that the total sort key must
resolve, which is where an implementation is most likely to differ.
"""

from __future__ import annotations

import datetime

from hypothesis import strategies as st

from poolsplit_adapters import Pool, Visibility

TYPES = ["correction", "task", "fact", "episode", "skill", "growth", "note"]
WORDS = ["deploy", "staging", "cluster", "review", "tests", "auth", "retry", "policy", "the", "db", "cache", "skill"]
DATES = [None, "", "2026-07-07T00:00:00Z", "2026-07-01T00:00:00", "2026-05-01", "2025-01-01T00:00:00+02:00", "garbage"]
NOWS = [
    datetime.datetime(2026, 7, 7),
    datetime.datetime(2026, 9, 1, 12, 30),
    datetime.datetime(2026, 7, 7, tzinfo=datetime.timezone.utc),
]


@st.composite
def entries(draw, with_type_key=True):
    entry = {"content": " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=8)))}
    if draw(st.booleans()):
        entry["id"] = draw(st.sampled_from(["a", "b", "c", "d", "e", "f"]))
    if with_type_key and draw(st.integers(0, 5)):
        entry["type"] = draw(st.sampled_from(TYPES))
    if draw(st.integers(0, 3)) == 0:
        entry["scope"] = draw(st.sampled_from(["always", "session", None]))
    if draw(st.booleans()):
        entry["tags"] = draw(st.lists(st.sampled_from(["ops", "db", "ui", "auth"]), max_size=3))
    if draw(st.booleans()):
        entry["project"] = draw(st.sampled_from([None, "alpha", "beta"]))
    created = draw(st.sampled_from(DATES))
    if created is not None or draw(st.booleans()):
        entry["created"] = created
    if draw(st.booleans()):
        entry["token_count"] = draw(st.sampled_from([1, 2, 5, 9, 0, -3, True, 2.0, None]))
    if draw(st.booleans()):
        entry["base_priority"] = draw(st.sampled_from([1, 2, 5, 5.0, 7, 9.5, 0]))
    if draw(st.integers(0, 6)) == 0:
        entry["status"] = draw(st.sampled_from(["active", "archived"]))
    if draw(st.booleans()):
        entry["namespace"] = draw(st.sampled_from(["A", "B", "global", None]))
    if draw(st.booleans()):
        entry["source"] = draw(st.sampled_from(["user", "ci", ""]))
    if draw(st.integers(0, 8)) == 0:
        entry["superseded_by"] = "x"
    return entry


@st.composite
def stores(draw, max_size=25):
    base = draw(st.lists(entries(), max_size=max_size))
    # Sometimes repeat the very same dict object: identity dedupe must hold.
    if base and draw(st.booleans()):
        base.append(base[draw(st.integers(0, len(base) - 1))])
    return base


@st.composite
def pools(draw):
    count = draw(st.integers(1, 4))
    plan = []
    for n in range(count):
        types = draw(st.one_of(st.none(), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3).map(tuple)))
        threshold = draw(st.sampled_from([None, None, 0.0, 0.2, 0.5, 1.0]))
        plan.append(Pool("pool%d" % n, draw(st.integers(0, 40)), draw(st.integers(0, 5)), types, threshold))
    return plan


@st.composite
def disjoint_pools(draw):
    """Pools that each name their types, no two sharing one (some types in
    no pool): the plan whose report MemoryIndex counts per pool group."""
    kinds = draw(st.permutations(TYPES))
    cuts = sorted(draw(st.lists(st.integers(1, len(kinds)), min_size=1, max_size=4, unique=True)))
    plan, start = [], 0
    for n, end in enumerate(cuts):
        if end > start:
            threshold = draw(st.sampled_from([None, None, 0.0, 0.2, 0.5, 1.0]))
            size = (draw(st.integers(0, 40)), draw(st.integers(0, 5)))
            plan.append(Pool("pool%d" % n, *size, tuple(kinds[start:end]), threshold))
        start = end
    return plan


contexts = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "tags": st.lists(st.sampled_from(["ops", "db", "ui", "auth"]), max_size=3),
            "project": st.sampled_from([None, "alpha", "beta"]),
            "message": st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join),
        },
    ),
)
nows = st.sampled_from(NOWS)


scopes = st.one_of(
    st.none(),
    st.builds(
        lambda ns, tags, src, bounds: Visibility(
            namespace=ns, require_tags=tuple(tags), require_source=src, since=bounds[0], until=bounds[1]
        ),
        st.sampled_from([None, "A", "B", ("A", "global"), ("global", "A", "B"), ("A", None), (None,)]),
        st.lists(st.sampled_from(["ops", "db", "ui", "auth"]), max_size=2),
        st.booleans(),
        st.sampled_from(
            [
                (None, None),
                (None, None),
                ("2026-06-01", None),
                (None, "2026-07-01T12:00:00"),
                ("2025-06-01", "2026-07-06"),
            ]
        ),
    ),
)
