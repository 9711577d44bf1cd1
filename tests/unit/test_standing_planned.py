"""An explicit pool plan that admits neither of the user's standing types,
while the write path stores them, is told at construction: those entries
would be written and never load (issue 39: every plan has room for them)."""

from __future__ import annotations

import warnings

import pytest

from poolsplit_adapters import Pool, StandingUnplannedWarning
from poolsplit_adapters.langchain import PoolSplitMemoryMiddleware, RecallConfig, WriteConfig
from poolsplit_adapters.llama_index import poolsplit_memory_blocks
from poolsplit_adapters.memory import WriteGate

CORRECTIONS = Pool("corrections", 0, 0, ("correction",))
WITHOUT = [CORRECTIONS, Pool("facts", 300, 5, ("fact", "episode", "preference"))]
WITH = [
    CORRECTIONS,
    Pool("standing", 256, 20, ("instruction", "preference")),
    Pool("rest", 300, 5, ("fact", "episode")),
]
NS = ("memories", "u1")


def test_a_middleware_whose_plan_has_no_room_for_instructions_says_so_naming_the_fix():
    with pytest.warns(StandingUnplannedWarning) as caught:
        PoolSplitMemoryMiddleware(WITHOUT, namespace=NS)
    assert [str(w.message) for w in caught] == [
        "PoolSplitMemoryMiddleware: the write path stores the user's instruction entries but no pool admits"
        " them: they would never load; add Pool('standing', 640, 20, ('instruction', 'preference')) after the"
        " corrections (docs/lifecycle.md), or pass write=WriteConfig(write_gate=WriteGate(standing=None)) to store"
        " none (from poolsplit_adapters.memory import WriteGate)"
    ]
    assert caught[0].filename == __file__  # the caller's line, not the package's


def test_llama_index_blocks_whose_plan_has_no_room_for_either_say_so():
    with pytest.warns(
        StandingUnplannedWarning,
        match=r"^PoolSplitMemoryStore: .* user's instruction, preference and fact entries .* after the corrections and name 'fact' in a pool .* or pass write_gate=WriteGate\(standing=None\) to store none",
    ):
        poolsplit_memory_blocks([], [CORRECTIONS, Pool("episodes", 300, 3, ("episode",))])


@pytest.mark.parametrize(
    "build",
    [
        lambda: PoolSplitMemoryMiddleware(WITH, namespace=NS),
        lambda: PoolSplitMemoryMiddleware(
            "auto", namespace=NS, recall=RecallConfig(total_tokens=1024, total_entries=24)
        ),
        lambda: PoolSplitMemoryMiddleware([CORRECTIONS, Pool("everything", 300, 5)], namespace=NS),
        lambda: PoolSplitMemoryMiddleware(
            WITHOUT, namespace=NS, write=WriteConfig(write_gate=WriteGate(standing=None))
        ),
        lambda: poolsplit_memory_blocks([], WITH),
        lambda: poolsplit_memory_blocks([], WITHOUT, write_gate=WriteGate(standing=None)),
    ],
    ids=["standing pool", "auto", "a pool of every type", "recognition off", "blocks with it", "blocks, off"],
)
def test_a_plan_with_room_for_them_or_no_recognition_is_quiet(build):
    with warnings.catch_warnings():
        warnings.simplefilter("error", StandingUnplannedWarning)
        build()


def test_a_misspelt_type_is_named_with_the_type_meant_and_the_turns_left_unplanned():
    plan = [
        Pool("fixes", 0, 0, ("corection",)),
        Pool("standing", 640, 20, ("instruction", "preference")),
        Pool("recent", 400, 4, ("fact", "episodes")),
    ]
    with pytest.warns(StandingUnplannedWarning) as caught:
        PoolSplitMemoryMiddleware(plan, namespace=NS)
    assert [str(w.message) for w in caught] == [
        "PoolSplitMemoryMiddleware: pool 'fixes' names 'corection': did you mean 'correction'?;"
        " pool 'recent' names 'episodes': did you mean 'episode'?; the write path stores the turns it demotes"
        " (episode entries) but no pool admits them: they would never load; name 'episode' in a pool"
        " (docs/lifecycle.md)"
    ]
    assert caught[0].filename == __file__


def test_a_hosts_own_type_far_from_every_known_one_is_no_slip():
    plan = [*WITH, Pool("tickets", 100, 3, ("jira_ticket",))]
    with warnings.catch_warnings():
        warnings.simplefilter("error", StandingUnplannedWarning)
        poolsplit_memory_blocks([], plan)
