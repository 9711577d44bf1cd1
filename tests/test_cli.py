"""The poolsplit command: selection output, the demo, and clear file errors."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from poolsplit_adapters.cli import main

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
STORE = str(EXAMPLES / "memory.jsonl")
POOLS = str(EXAMPLES / "pools.toml")


def test_select_prints_table_report_and_rendered_context(capsys):
    code = main(
        [
            "select",
            "--store",
            STORE,
            "--pools",
            POOLS,
            "--now",
            "2026-11-20T09:00:00Z",
            "--project",
            "checkout",
            "--tag",
            "money",
            "rounding bug in refunds",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0].split() == ["pool", "id", "type", "score", "tokens"]
    assert "not loaded:" in out and "inactive (2)" in out
    assert '<memory id="fix-001" source="user-feedback"' in out
    assert "more entries left out by budget" in out


def test_select_json_is_machine_readable(capsys):
    assert main(["select", "--store", STORE, "--pools", POOLS, "--now", "2026-11-20", "--json", "deploy"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["id"] for c in data["chosen"][:10]] == ["fix-%03d" % n for n in range(1, 11)]
    assert {d["reason"] for d in data["dropped"]} >= {"inactive", "entry_cap"}
    assert len(data["chosen"]) + len(data["dropped"]) == 178
    assert data["stats"]["growth"]["max_entries"] == 1


@pytest.mark.parametrize(
    ("store_text", "pools_text", "message"),
    [
        ('{"id": "a", "content": "x"}\n{"id": "b", "content": }\n', None, "store.jsonl:2: invalid JSON"),
        ('{"id": "a", "content": "x", "tags": "ops"}\n', None, "store.jsonl:1: entry 'a' (index 0): field 'tags'"),
        (None, '[[pool]]\nname = "a"\nmax_tokens = 1\nmax_entries = 1\nsize = 3\n', "pool 1: unknown key(s) 'size'"),
        (None, '[[pool]]\nname = "a"\nmax_tokens = -5\nmax_entries = 1\n', "pool 1: Pool 'a': max_tokens must be >= 0"),
        (None, '[[pool]]\nname = "a"\nmax_tokens = 1\n', "pool 1: missing key(s) 'max_entries'"),
        (None, '[[pool]]\nname = "a"\nmax_tokens = 1\nmax_entries = 1\ntypes = "skill"\n', "bare string 'skill'"),
        (None, "[[pool]\n", "invalid TOML"),
    ],
)
def test_bad_files_exit_2_with_one_clear_line(tmp_path, store_text, pools_text, message):
    store = tmp_path / "store.jsonl"
    pools = tmp_path / "pools.toml"
    store.write_text(store_text if store_text is not None else pathlib.Path(STORE).read_text())
    pools.write_text(pools_text if pools_text is not None else pathlib.Path(POOLS).read_text())
    out = subprocess.run(
        [sys.executable, "-m", "poolsplit_adapters", "select", "--store", str(store), "--pools", str(pools), "q"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2
    assert message in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_missing_file_exits_2(tmp_path, capsys):
    assert main(["select", "--store", str(tmp_path / "nope.jsonl"), "--pools", POOLS, "q"]) == 2
    assert "nope.jsonl: no such file" in capsys.readouterr().err


def test_demo_runs_through_core_and_both_frameworks():
    out = subprocess.run(
        [sys.executable, "-m", "poolsplit_adapters", "demo"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.count("corrections present: shared 0/10, pools 10/10") == 3
    assert "corrections first in the prompt: True" in text
    assert "the first 10 are the corrections (priority-0 block)" in text
