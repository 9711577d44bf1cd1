"""tests/compat/tiers.py, the bookkeeping of ``make compat``'s tiers: which
requirements are the runtime's, and the refusal of a declared lower bound
below the lowest version that resolves."""

from __future__ import annotations

import pathlib

import pytest
from compat import tiers
from packaging.version import Version

PROJECT = {
    "project": {
        "name": "poolsplit-adapters",
        "optional-dependencies": {
            "tokens": ["tiktoken>=0.7"],
            "postgres": ["psycopg[binary]>=3.2.1; python_version >= '3.10'", "old-only>=1.0; python_version < '3.0'"],
            "all": ["poolsplit-adapters[tokens,postgres]"],
            "dev": ["pytest>=8", "ruff>=0.5", "pytest-xdist>=3.5"],
            "eval": ["torch==2.13.0"],
        },
    },
    "dependency-groups": {"demo": ["tiktoken>=0.7"]},
}


def test_the_runtime_requirements_are_every_extra_but_dev_eval_and_the_alias_where_their_marker_holds():
    found = [(item.where, item.name, str(item.lower)) for item in tiers.runtime(PROJECT)]
    assert found == [("extra 'tokens'", "tiktoken", "0.7"), ("extra 'postgres'", "psycopg", "3.2.1")]


def test_a_bound_below_the_lowest_resolution_is_refused_with_its_extra_and_both_versions():
    declared = tiers.runtime(PROJECT) + tiers.demo_group(PROJECT)
    pins = {"tiktoken": Version("0.7.0"), "psycopg": Version("3.2.4")}
    problems = tiers.false_bounds(declared, pins)
    assert len(problems) == 1
    assert problems[0].startswith("pyproject.toml: extra 'postgres' declares psycopg[binary]>=3.2.1")
    assert problems[0].endswith("is 3.2.4: raise the bound to >=3.2.4")
    assert tiers.false_bounds(declared, {"tiktoken": Version("0.7"), "psycopg": Version("3.2.1")}) == []


def test_a_runtime_requirement_without_one_lower_bound_is_refused():
    project = {"project": {"name": "p", "optional-dependencies": {"x": ["numpy"]}}}
    (item,) = tiers.runtime(project)
    with pytest.raises(SystemExit, match="extra 'x' declares 'numpy' without exactly one '>=' lower bound"):
        _ = item.lower


def test_a_lock_is_read_as_exact_pins_and_anything_else_is_refused(tmp_path: pathlib.Path):
    lock = tmp_path / "lowest.txt"
    lock.write_text("# via uv\nNumPy==1.26.2\n    # via poolsplit-adapters\npsycopg==3.2.1\n")
    assert tiers.read_lock(lock) == {"numpy": Version("1.26.2"), "psycopg": Version("3.2.1")}
    lock.write_text("numpy>=1.26\n")
    with pytest.raises(SystemExit, match="lowest.txt:1: expected 'name==version', found 'numpy>=1.26'"):
        tiers.read_lock(lock)


def test_the_tools_are_the_dev_extras_test_tools_and_a_missing_one_is_refused():
    names = [r.name for r in tiers.tools()]  # the real pyproject.toml
    assert sorted(names) == sorted(tiers.TEST_TOOLS)
    with pytest.raises(
        SystemExit,
        match="^pyproject.toml: the dev extra no longer lists hypothesis, langchain-classic, langchain-tests, pytest-asyncio$",
    ):
        tiers.tools(PROJECT)
