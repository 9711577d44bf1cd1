"""The poolsplit command: selection output, the store commands, the demo, and
one clear line (exit 2) for every bad input."""

from __future__ import annotations

import datetime
import json
import pathlib
import sqlite3
import subprocess
import sys

import pytest

from poolsplit_adapters import Pool
from poolsplit_adapters.cli import main
from poolsplit_adapters.demo import HOW_TO_READ
from poolsplit_adapters.stores import SQLiteMemoryStore, bundled_pools, bundled_store, load_store

STORE = str(bundled_store())
POOLS = str(bundled_pools())
ROOT = pathlib.Path(__file__).resolve().parents[2]


def run_cli(*args, cwd=None, stdin=None, prelude=""):
    """The command in a fresh process: exit code, stdout, stderr."""
    code = prelude + "import sys; from poolsplit_adapters.cli import main; sys.exit(main(sys.argv[1:]))"
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        input=stdin,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    return out.returncode, out.stdout, out.stderr


def assert_one_line_error(code, err, message):
    assert code == 2
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert message in err, err


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
    # The rows are a sample (the first 5 per pool and reason); the counts cover every entry.
    assert len(data["chosen"]) + data["dropped_total"] == 177
    assert sum(row["entries"] for row in data["dropped_counts"]) == data["dropped_total"]
    assert not data["dropped_complete"] and len(data["dropped"]) < data["dropped_total"]
    assert data["stats"]["growth"]["max_entries"] == 1


def test_select_json_all_dropped_lists_every_entry(capsys):
    args = ["select", "--store", STORE, "--pools", POOLS, "--now", "2026-11-20", "--json"]
    assert main([*args, "deploy"]) == 0
    sample = json.loads(capsys.readouterr().out)
    assert main([*args, "--all-dropped", "deploy"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["chosen"]) + len(data["dropped"]) == 177
    assert data["dropped_complete"] and len(data["dropped"]) == data["dropped_total"]
    # The sample is the first 5 of each pool and reason of the full list, in input order.
    seen: dict = {}
    expected = []
    for row in data["dropped"]:
        key = (row["pool"], row["reason"])
        seen[key] = seen.get(key, 0) + 1
        if seen[key] <= 5:
            expected.append(row)
    assert sample["dropped"] == expected
    assert {k: v for k, v in sample.items() if not k.startswith("dropped")} == {
        k: v for k, v in data.items() if not k.startswith("dropped")
    }


@pytest.mark.parametrize(
    ("store_text", "pools_text", "message"),
    [
        ('{"id": "a", "content": "x"}\n{"id": "b", "content": }\n', None, "store.jsonl:2: invalid JSON"),
        ('{"id": "a", "content": "x", "tags": "ops"}\n', None, "store.jsonl:1: entry 'a' (index 0): field 'tags'"),
        (None, '[[pool]]\nname = "a"\nmax_tokens = 1\nmax_entries = 1\nsize = 3\n', "pool 1: unknown key(s) 'size'"),
        (None, '[[pool]]\nname = "a"\nmax_tokens = -5\nmax_entries = 1\n', "pool 1: Pool 'a': max_tokens must be >= 0"),
        (None, '[[pool]]\nname = "a"\nmax_tokens = 1\n', "pool 1: missing key(s) 'max_entries'"),
        (
            None,
            '[[pool]]\nname = "a"\nmax_tokens = 1\nmax_entries = 1\ntypes = "skill"\n',
            "bare string 'skill' (did you mean types = [\"skill\"]?)",
        ),
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


def test_demo_runs_through_core_and_both_frameworks(tmp_path):
    # From a folder that is not the project: the store and plan are package data.
    out = subprocess.run(
        [sys.executable, "-m", "poolsplit_adapters", "demo"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    lines = text.splitlines()
    assert lines[0] == (
        "The example store: 177 memories of a coding agent; the pool plan reserves a budget for each of: "
        "corrections, content, episodes, skills, growth"
    )
    assert "\n" + HOW_TO_READ + "\n" in text  # once, before the first query
    # Each query's report ends with the comparison, in plain words.
    first = lines.index("entries loaded, per type   one shared budget   pools")
    assert lines[first : first + 9] == [
        "entries loaded, per type   one shared budget   pools",
        "  correction                      0             10",
        "  task                            2              2",
        "  fact                            1              1",
        "  note                           11              5",
        "  episode                         0              3",
        "  skill                           0              2",
        "  growth                          0              1",
        "corrections loaded: 0 of 10 with one shared budget, 10 of 10 with pools",
    ]
    assert text.count("corrections loaded: 0 of 10 with one shared budget, 10 of 10 with pools") == 3
    # The token line says what the numbers mean: no layers, no "saved 0.0%".
    assert [line for line in lines if line.startswith("tokens")] == [
        "tokens: 474, every entry in full text",
        "tokens: 445, every entry in full text",
        "tokens: 460, every entry in full text",
    ]
    assert "saved 0.0%" not in text and "timeline 0" not in text
    assert "the 10 corrections come first in the prompt: yes" in lines
    assert (
        "after 300 chat messages, Memory had moved 271 of them out of the chat history into long-term memory "
        "(as episodes)"
    ) in lines
    assert "the system message holds 15 memories; the first 10 are the corrections (a block Memory never cuts)" in lines
    assert "extra to see" not in text
    assert out.stderr == ""  # no warning on the first command a newcomer runs


def test_the_demo_group_brings_the_stemmer_without_which_the_demo_warns(tmp_path):
    """`make demo` installs the `demo` dependency group only: without
    snowballstemmer in it, the adapters' default scorer warns on the demo's
    LCEL and LlamaIndex parts."""
    import tomllib

    group = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]["demo"]
    assert [r for r in group if r.startswith("snowballstemmer")] == ["snowballstemmer>=3.1"]
    prelude = "import sys; sys.modules.update(dict.fromkeys(['snowballstemmer', 'Stemmer'])); "
    code, out, err = run_cli("demo", cwd=tmp_path, prelude=prelude)
    assert code == 0, err
    assert "snowballstemmer is not installed" in err


@pytest.mark.parametrize(
    ("hidden", "line"),
    [
        (
            ["langchain_core", "llama_index"],
            '(the LangChain LCEL chain and the LlamaIndex Memory skipped: install the "all" extra to see them, '
            'e.g. pip install ".[all]" from a clone)',
        ),
        (
            ["llama_index"],
            '(the LlamaIndex Memory skipped: install the "llama-index" extra to see it, '
            'e.g. pip install ".[llama-index]" from a clone)',
        ),
    ],
)
def test_demo_without_framework_extras_runs_the_core_and_names_the_extra(tmp_path, hidden, line):
    prelude = "import sys; sys.modules.update(dict.fromkeys(%r)); " % (hidden,)
    code, out, err = run_cli("demo", cwd=tmp_path, prelude=prelude)
    assert code == 0, err
    assert out.count("corrections loaded: 0 of 10 with one shared budget, 10 of 10 with pools") == 3
    assert out.rstrip().splitlines()[-1] == line
    assert ("the 10 corrections come first in the prompt: yes" in out) is ("langchain_core" not in hidden)


def _bad_files(tmp_path):
    """name -> (store bytes or None, pools bytes or None)"""
    deep = "[" * 100_000 + "]" * 100_000
    return {
        "store not UTF-8": ('{"id": "a", "content": "caf\xe9"}\n'.encode("latin-1"), None),
        "pools not UTF-8": (None, 'name = "caf\xe9"\n'.encode("latin-1")),
        "pool is not a table": (None, b"pool = [1, 2]\n"),
        "5000-digit integer": (('{"id": "a", "content": "x", "n": %s}\n' % ("9" * 5000)).encode(), None),
        "nested 100k deep": (('{"id": "a", "content": "x", "n": %s}\n' % deep).encode(), None),
        "400-digit base_priority": (
            ('{"id": "big", "content": "x", "base_priority": 1%s}\n' % ("0" * 400)).encode(),
            None,
        ),
        "NaN": (b'{"id": "a", "content": "x", "base_priority": NaN}\n', None),
        "line is not an object": (b'["a list"]\n', None),
    }


EXPECTED = {
    "store not UTF-8": "store.jsonl: not UTF-8 text (byte 0xe9 at offset 27)",
    "pools not UTF-8": "pools.toml: not UTF-8 text (byte 0xe9 at offset 11)",
    "pool is not a table": "pools.toml: pool 1: expected a [[pool]] table, got int 1",
    "5000-digit integer": "store.jsonl:1: invalid JSON (Exceeds the limit (4300 digits) for integer string conversion",
    "nested 100k deep": "store.jsonl:1: invalid JSON (nested too deeply)",
    "400-digit base_priority": "store.jsonl:1: entry 'big' (index 0): field 'base_priority' must be a finite number, got ",
    "NaN": "store.jsonl:1: invalid JSON (NaN is not a JSON number)",
    "line is not an object": "store.jsonl:1: entry at index 0: is not a mapping",
}


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_bad_input_files_are_one_line_exit_2(tmp_path, case):
    store_bytes, pools_bytes = _bad_files(tmp_path)[case]
    store = tmp_path / "store.jsonl"
    pools = tmp_path / "pools.toml"
    store.write_bytes(store_bytes if store_bytes is not None else pathlib.Path(STORE).read_bytes())
    pools.write_bytes(pools_bytes if pools_bytes is not None else pathlib.Path(POOLS).read_bytes())
    code, out, err = run_cli("select", "--store", str(store), "--pools", str(pools), "q")
    assert_one_line_error(code, err, EXPECTED[case])
    assert out == ""


def test_pools_a_directory_and_bad_flags_are_one_line_exit_2(tmp_path):
    code, _, err = run_cli("select", "--store", STORE, "--pools", str(tmp_path), "q")
    assert_one_line_error(code, err, "%s: is a directory, not a file" % tmp_path)
    code, _, err = run_cli("select", "--store", str(tmp_path), "--pools", POOLS, "q")
    assert_one_line_error(code, err, "%s: is a directory, not a store file" % tmp_path)
    code, _, err = run_cli("select", "--store", STORE, "--pools", POOLS, "--limit", "-1", "q")
    assert_one_line_error(code, err, "argument --limit: must be 0 or more, got -1")
    code, _, err = run_cli("select", "--store", STORE, "--pools", POOLS, "--now", "yesterday", "q")
    assert_one_line_error(code, err, "--now: not an ISO-8601 time: 'yesterday'")
    code, _, err = run_cli("select", "--store", STORE, "q")
    assert_one_line_error(code, err, "the following arguments are required: --pools")
    code, _, err = run_cli("frobnicate")
    assert_one_line_error(code, err, "invalid choice: 'frobnicate'")


def test_empty_store_says_so_in_one_line_and_exits_0(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    code, out, err = run_cli("select", "--store", str(empty), "--pools", POOLS, "q")
    assert (code, out, err) == (0, "", "poolsplit: %s: the store is empty; nothing to select\n" % empty)
    code, out, err = run_cli("select", "--store", str(empty), "--pools", POOLS, "--json", "q")
    assert code == 0 and json.loads(out)["chosen"] == [] and err.count("\n") == 1
    db = tmp_path / "new.db"
    code, out, err = run_cli("export", "--store", str(db))
    assert_one_line_error(code, err, "%s: no such file" % db)
    db.write_bytes(b"")
    code, out, err = run_cli("export", "--store", str(db))
    assert (code, out, err) == (0, "", "poolsplit: %s: the store is empty; nothing to export\n" % db)
    held = tmp_path / "held.db"
    assert run_cli("add", "--store", str(held), "--content", "Refunds round half-even.")[0] == 0
    code, out, err = run_cli("export", "--store", str(held), "--namespace", "acme")
    assert (code, out, err) == (0, "", "poolsplit: %s: no entry in namespace 'acme'\n" % held)


def test_unadmitted_correction_warning_is_one_plain_line(tmp_path):
    pools = tmp_path / "pools.toml"
    pools.write_text('[[pool]]\nname = "content"\ntypes = ["task"]\nmax_tokens = 100\nmax_entries = 2\n')
    store = tmp_path / "store.jsonl"
    store.write_text('{"id": "fix-1", "type": "correction", "scope": "always", "content": "Never force-push."}\n')
    code, out, err = run_cli("select", "--store", str(store), "--pools", str(pools), "q")
    assert code == 0
    assert err.splitlines() == [
        "poolsplit: warning: entry 'fix-1' (index 0) is an always-scope correction of type 'correction', "
        "but no pool admits that type: it will not load. Add the type to a pool."
    ]
    assert "always_no_pool (1)" in out


def test_add_forget_import_export_and_select_a_sqlite_store(tmp_path, capsys):
    db = str(tmp_path / "memory.db")
    assert main(["import", STORE, "--into", db]) == 0
    # The bundled file holds no repeat: a newcomer's first import warns of nothing.
    captured = capsys.readouterr()
    assert captured.out == "imported 177 entries from %s into %s\n" % (STORE, db)
    assert captured.err == ""
    assert main(["export", "--store", db]) == 0
    exported = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # lossless, in store order; the newer version of the file's one history (the core
    # spec's schema: fact-090 names fact-007 by superseded_by only) names it back
    given = load_store(STORE)
    [newer] = [e for e in given if e["id"] == "fact-007"]
    newer["supersedes"] = "fact-090"
    assert exported == given
    assert main(["import", STORE, "--into", db]) == 0  # importing again changes nothing
    assert capsys.readouterr().out.startswith("imported 0 entries from %s into %s (177 repeat(s)" % (STORE, db))
    assert main(["export", "--store", db]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 177

    # The same selection from the file and from the SQLite store.
    args = ["--pools", POOLS, "--now", "2026-11-20T09:00:00Z", "--json", "rounding bug in refunds"]
    assert main(["select", "--store", STORE, *args]) == 0
    from_jsonl = json.loads(capsys.readouterr().out)
    assert main(["select", "--store", db, *args]) == 0
    from_db = json.loads(capsys.readouterr().out)
    assert [c["id"] for c in from_db["chosen"]] == [c["id"] for c in from_jsonl["chosen"]]
    assert from_db["context"] == from_jsonl["context"]
    assert "[151 more entries left out by budget: content 126," in from_db["context"]

    assert main(["add", "--store", db, "--content", "Refunds are rounded half-even.", "--type", "fact",
                 "--tag", "money", "--priority", "9", "--id", "fact-new"]) == 0  # fmt: skip
    assert capsys.readouterr().out == "fact-new\n"
    assert (
        main(
            [
                "add",
                "--store",
                db,
                "--json",
                '{"id": "fix-new", "type": "correction", "scope": "always", "content": "Ask first."}',
            ]
        )
        == 0
    )
    assert capsys.readouterr().out == "fix-new\n"
    assert main(["select", "--store", db, *args]) == 0
    chosen = [c["id"] for c in json.loads(capsys.readouterr().out)["chosen"]]
    assert "fact-new" in chosen and chosen.index("fix-new") == 10  # the 11th correction, loaded with the others

    assert main(["forget", "fact-new", "--store", db]) == 0
    assert capsys.readouterr().out == "forgot fact-new\n"
    assert main(["forget", "fact-new", "--store", db]) == 2
    assert capsys.readouterr().err == "poolsplit: no entry with id 'fact-new' in the store\n"
    assert main(["export", "--store", db]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 178


def test_import_keeps_an_exact_repeat_once_and_says_so_in_one_line(tmp_path, capsys):
    lines = pathlib.Path(STORE).read_text(encoding="utf-8").splitlines()[:3]
    repeat = dict(json.loads(lines[2]), id="fix-003-again", created="2026-11-01T00:00:00Z", source="import")
    source = tmp_path / "with-repeat.jsonl"
    source.write_text("\n".join([*lines, json.dumps(repeat)]) + "\n", encoding="utf-8")
    db = str(tmp_path / "memory.db")
    assert main(["import", str(source), "--into", db]) == 0
    captured = capsys.readouterr()
    assert captured.out == "imported 3 entries from %s into %s (1 repeat(s) kept once)\n" % (source, db)
    assert captured.err == (
        "poolsplit: entry 4 repeats fix-003 (exact duplicate): kept once, the repeat recorded in its 'seen'\n"
    )
    with SQLiteMemoryStore(db) as memory:
        assert memory.get("fix-003")["seen"] == [{"source": "import", "at": "2026-11-01T00:00:00Z"}]


def test_write_commands_refuse_bad_input_in_one_line_and_write_nothing(tmp_path):
    db = tmp_path / "memory.db"
    code, out, _ = run_cli("import", STORE, "--into", str(db))
    assert code == 0
    code, _, err = run_cli("add", "--store", str(db), "--json", '{"id": "fix-001", "content": "other text"}')
    assert_one_line_error(code, err, "entry 'fix-001' (index 0): field 'id' is already in the store")
    code, _, err = run_cli("add", "--store", str(db), "--content", "x", "--priority", "1" + "0" * 400)
    assert_one_line_error(code, err, "field 'base_priority' must be a finite number, got ")
    code, _, err = run_cli("add", "--store", str(db), "--json", '{"content": "x", "tags": "ops"}')
    assert_one_line_error(code, err, "field 'tags' must be a list or tuple of strings")
    code, _, err = run_cli("add", "--store", str(db), "--json", "[1]")
    assert_one_line_error(code, err, "--json: expected a JSON object, got list")
    code, _, err = run_cli("add", "--store", STORE, "--content", "x")
    assert_one_line_error(code, err, "is JSON Lines; commands that write need a SQLite store")
    code, _, err = run_cli("add", "--store", str(db))
    assert_one_line_error(code, err, "add: --content (or --json) is required")
    not_db = tmp_path / "notes.db"
    not_db.write_text("plain text, not a database " * 20)
    code, _, err = run_cli("select", "--store", str(not_db), "--pools", POOLS, "q")
    # A file named as a database is opened as one: text there is not read as JSON Lines.
    assert_one_line_error(code, err, "notes.db: not a SQLite database")
    code, out, _ = run_cli("export", "--store", str(db))
    assert len(out.splitlines()) == 177  # every entry of the bundled file


def _folder(path):
    return {p.name: p.read_bytes() for p in path.iterdir() if p.is_file()}


@pytest.mark.parametrize("command", [["forget", "some-id"], ["forget", "--namespace", "u1"], ["sweep"]])
def test_forget_and_sweep_refuse_a_missing_store_and_create_none(tmp_path, command):
    code, _, err = run_cli(*command, "--store", str(tmp_path / "memroy.db"))  # a typo
    assert_one_line_error(code, err, "memroy.db: no such file")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "command, message",
    [
        (["add", "--content", "  "], "entry at index 0: field 'content' is empty or blank"),
        (["add", "--json", '{"content": "x", "scope": "Always"}'], "field 'scope' is 'Always', not exactly 'always'"),
        (["import", "twice.jsonl"], "entry 'x' (index 1): field 'id' repeats an earlier entry of the same batch"),
    ],
)
@pytest.mark.parametrize("existing", [None, b""])
def test_a_refused_write_creates_no_store_and_leaves_an_empty_file_empty(tmp_path, command, message, existing):
    (tmp_path / "twice.jsonl").write_text('{"id": "x", "content": "a"}\n{"id": "x", "content": "b"}\n')
    if existing is not None:
        (tmp_path / "memory.db").write_bytes(existing)
    flag = "--into" if command[0] == "import" else "--store"
    code, _, err = run_cli(*command, flag, "memory.db", cwd=tmp_path)
    assert_one_line_error(code, err, message)
    expected = {"twice.jsonl": b'{"id": "x", "content": "a"}\n{"id": "x", "content": "b"}\n'}
    assert _folder(tmp_path) == (expected if existing is None else {**expected, "memory.db": existing})


@pytest.mark.parametrize(
    "command", [["export"], ["select", "--pools", POOLS, "deploy"], ["search", "--all-namespaces", "deploy"]]
)
def test_a_read_never_creates_a_store_through_a_link_nor_writes_into_an_empty_file(tmp_path, command):
    link = tmp_path / "memory.db"
    link.symlink_to(tmp_path / "elsewhere.db")
    code, _, err = run_cli(*command, "--store", str(link))
    assert_one_line_error(code, err, "memory.db: a link to no file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.db"]
    link.unlink()
    link.write_bytes(b"")
    code, out, err = run_cli(*command, "--store", str(link))
    assert code == 0 and "the store is empty" in err and "Traceback" not in err
    assert _folder(tmp_path) == {"memory.db": b""}  # byte-identical, nothing beside it


def test_select_since_until_bound_created(tmp_path):
    args = ["select", "--store", STORE, "--pools", POOLS, "--now", "2026-11-20", "--json"]
    code, out, err = run_cli(*args, "--since", "2026-11-01", "--until", "2026-11-15T00:00:00Z", "deploy")
    assert code == 0, err
    data = json.loads(out)
    created = {e["id"]: e.get("created") for e in load_store(STORE)}
    contextual = [c["id"] for c in data["chosen"] if not c["always"]]
    assert contextual and all("2026-11-01" <= created[i] <= "2026-11-15T00:00:00Z" for i in contextual)
    # Always-scope corrections are standing rules: never time-filtered.
    assert [c["id"] for c in data["chosen"] if c["always"]] == ["fix-%03d" % n for n in range(1, 11)]
    assert "out_of_time" in {d["reason"] for d in data["dropped"]}


def test_since_after_until_is_one_line(tmp_path):
    code, _, err = run_cli(
        "select", "--store", STORE, "--pools", POOLS, "--since", "2026-12-01", "--until", "2026-01-01", "q"
    )
    # The rule lives in Visibility; the CLI passes its message on.
    assert_one_line_error(code, err, "since (2026-12-01 00:00:00) is after until (2026-01-01 00:00:00)")


def test_search_all_namespaces_groups_matches_and_must_be_asked_for(tmp_path):
    db = str(tmp_path / "memory.db")
    entries = [
        {"id": "a1", "namespace": "acme", "type": "fact", "content": "acme refunds round half-even"},
        {"id": "b1", "namespace": "bolt", "type": "fact", "content": "bolt refunds need approval"},
        {"id": "b2", "namespace": "bolt", "type": "note", "content": "bolt deploys on friday"},
        {"id": "g1", "type": "correction", "scope": "always", "content": "refunds: never guess the currency"},
    ]
    for e in entries:
        assert run_cli("add", "--store", db, "--json", json.dumps(e))[0] == 0
    code, _, err = run_cli("search", "refunds", "--store", db)
    assert_one_line_error(code, err, "search reads every tenant's memory; say so with --all-namespaces")
    code, out, err = run_cli("search", "refunds approval", "--all-namespaces", "--store", db)
    assert code == 0, err
    assert out.splitlines() == [
        "(no namespace): 1 match",
        "  g1             correction  0.50  refunds: never guess the currency",
        "namespace acme: 1 match",
        "  a1             fact        0.50  acme refunds round half-even",
        "namespace bolt: 1 match",
        "  b1             fact        1.00  bolt refunds need approval",
    ]
    code, out, _ = run_cli("search", "friday", "--all-namespaces", "--store", db, "--json")
    assert json.loads(out) == {
        "query": "friday",
        "namespaces": [
            {
                "namespace": "bolt",
                "hits": [
                    {
                        "id": "b2",
                        "type": "note",
                        "score": 1.0,
                        "matched": ["friday"],
                        "content": "bolt deploys on friday",
                    }
                ],
            }
        ],
    }
    code, _, err = run_cli("search", "the", "--all-namespaces", "--store", db)
    assert_one_line_error(code, err, "the query 'the' has no searchable word")


def test_search_finds_inflections_and_words_of_other_scripts(tmp_path):
    db = str(tmp_path / "memory.db")
    entries = [{"id": "r%02d" % i, "content": "Customer %d asked about refunds" % i} for i in range(15)]
    entries += [
        {"id": "zh", "content": "退款金额被四舍五入少了一分钱"},
        {"id": "he", "content": "החזר כספי נשלח ללקוח אתמול"},
        {"id": "menu", "content": "Lunch menu for Friday"},
    ]
    source = tmp_path / "entries.jsonl"
    source.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), encoding="utf-8")
    assert run_cli("import", str(source), "--into", db)[0] == 0
    code, out, err = run_cli("search", "refund", "--all-namespaces", "--limit", "20", "--store", db, "--json")
    assert code == 0, err
    hits = json.loads(out)["namespaces"][0]["hits"]
    assert sorted(h["id"] for h in hits) == ["r%02d" % i for i in range(15)]  # every one that says "refunds"
    assert {tuple(h["matched"]) for h in hits} == {("refund",)}
    for query, expected in (("为什么退款少了一分钱", "zh"), ("מתי נשלח החזר כספי", "he")):
        code, out, err = run_cli("search", query, "--all-namespaces", "--store", db, "--json")
        assert code == 0, err
        assert [h["id"] for group in json.loads(out)["namespaces"] for h in group["hits"]] == [expected]


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--content", "", "--id", "e1"], "entry 'e1' (index 0): field 'content' is empty or blank"),
        (["--content", "   ", "--id", "e1"], "entry 'e1' (index 0): field 'content' is empty or blank"),
        (["--content", "Use cents.", "--scope", " always", "--id", "e1"], "--scope: ' always' is not exactly"),
        (["--content", "Use cents.", "--created", "yesterday"], "--created: not an ISO-8601 time: 'yesterday'"),
        (["--content", "Use cents.", "--scope", "allways"], "--scope: 'allways' is not exactly 'always'"),
        (["--content", "Use cents.", "--scope", "Always"], "--scope: 'Always' is not exactly 'always'"),
        (["--json", '{"id": "e1", "content": "x", "created": "yesterday"}'], "field 'created' is 'yesterday'"),
        (
            ["--json", '{"id": "e1", "content": "x", "valid_until": "never"}'],
            "entry 'e1' (index 0): field 'valid_until' must be an ISO-8601 time (a string), got str 'never'",
        ),
        (
            ["--json", '{"id": "e1", "content": "x", "valid_from": 12}'],
            "entry 'e1' (index 0): field 'valid_from' must be an ISO-8601 time (a string), got int 12",
        ),
    ],
)
def test_add_refuses_blank_content_near_miss_scope_and_a_bad_created_in_one_line(tmp_path, capsys, flags, named):
    db = tmp_path / "memory.db"
    assert main(["add", "--store", str(db), *flags]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1
    assert captured.err.startswith("poolsplit: ") and named in captured.err
    assert not db.exists()


def test_export_then_import_restores_a_history_whose_new_version_repeats_another_entry(tmp_path, capsys):
    # supersede stores what it is given; B's new version says what A says.
    # Re-imported, it was folded into A and B's superseded_by named nothing.
    with SQLiteMemoryStore(tmp_path / "a.db") as store:
        store.add([{"id": "A", "type": "note", "content": "Deploy on Fridays is forbidden."}])
        store.add([{"id": "B", "type": "note", "content": "Something else entirely here."}])
        store.supersede("B", {"id": "B2", "type": "note", "content": "Deploy on Fridays is forbidden."})
        before = store.entries()
    assert main(["export", "--store", str(tmp_path / "a.db")]) == 0
    (tmp_path / "x.jsonl").write_text(capsys.readouterr().out)
    assert main(["import", str(tmp_path / "x.jsonl"), "--into", str(tmp_path / "b.db")]) == 0
    assert capsys.readouterr().out.startswith("imported 3 entries")
    with SQLiteMemoryStore(tmp_path / "b.db") as restored:
        assert restored.entries() == before
        assert [v.id for v in restored.history("B")] == ["B", "B2"]
    assert main(["import", str(tmp_path / "x.jsonl"), "--into", str(tmp_path / "b.db")]) == 0  # again: repeats
    with SQLiteMemoryStore(tmp_path / "b.db") as again:
        assert again.entries() == before


T1, T2, T3, T4 = (
    "2026-01-01T00:00:00Z",
    "2026-02-01T00:00:00Z",
    "2026-03-01T00:00:00Z",
    "2026-04-01T00:00:00Z",
)


def _round_trip(tmp_path, capsys) -> list:
    """The entries of ``a.db`` exported, then imported into a fresh ``b.db``."""
    assert main(["export", "--store", str(tmp_path / "a.db")]) == 0
    (tmp_path / "x.jsonl").write_text(capsys.readouterr().out)
    assert main(["import", str(tmp_path / "x.jsonl"), "--into", str(tmp_path / "b.db")]) == 0
    assert capsys.readouterr().out.startswith("imported ")
    with SQLiteMemoryStore(tmp_path / "b.db") as restored:
        return restored.entries()


@pytest.mark.parametrize("reuse", ["active", "superseded", "another namespace", "listed first"])
def test_export_then_import_restores_a_store_where_a_deleted_versions_id_was_reused(tmp_path, capsys, reuse):
    # "a" closed by "b", then "a" forgotten alone: "b" still says it superseded "a".
    # An unrelated entry got the id "a" later. Re-imported, "b" closed the new "a"
    # (it stopped loading), or, once that one had a version of its own, the import was refused.
    with SQLiteMemoryStore(tmp_path / "a.db") as store:
        store.add([{"id": "a", "type": "fact", "content": "Refunds round half-even.", "created": T1}])
        store.supersede("a", {"id": "b", "type": "fact", "content": "Refunds round half-up.", "created": T2})
        assert store.delete("a", history=False)
        reused = {"id": "a", "type": "fact", "content": "Deploys happen on Tuesdays.", "created": T3}
        store.add([dict(reused, namespace="t2") if reuse == "another namespace" else reused])
        if reuse == "listed first":  # a repeat of "b" rewrites its row: the store lists it after the new "a"
            store.write([{"type": "fact", "content": "Refunds round half-up.", "source": "chat-2"}])
            assert [e["id"] for e in store.entries()] == ["a", "b"]
        if reuse == "superseded":
            store.supersede("a", {"id": "c", "type": "fact", "content": "Deploys happen on Mondays.", "created": T4})
        before = store.entries()
    assert _round_trip(tmp_path, capsys) == before
    with SQLiteMemoryStore(tmp_path / "b.db") as restored:
        assert [v.id for v in restored.history("b")] == ["b"]
        assert [v.id for v in restored.history("a")] == (["a", "c"] if reuse == "superseded" else ["a"])


def test_import_links_a_version_listed_before_its_predecessor_in_a_hand_written_file(tmp_path, capsys):
    # Position alone does not tell a reused id: without times, the older version may come second.
    source = tmp_path / "in.jsonl"
    lines = [
        {"id": "b", "type": "fact", "content": "Two.", "supersedes": "a"},
        {"id": "a", "type": "fact", "content": "One."},
    ]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["import", str(source), "--into", str(tmp_path / "memory.db")]) == 0
    with SQLiteMemoryStore(tmp_path / "memory.db") as restored:
        assert [(e["id"], e.get("superseded_by")) for e in restored.entries()] == [("b", None), ("a", "b")]
        assert [v.id for v in restored.history("b")] == ["a", "b"]


def test_import_still_refuses_a_version_of_an_entry_another_version_closed(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    lines = [
        {"id": "a", "type": "fact", "content": "One.", "superseded_by": "c"},
        {"id": "c", "type": "fact", "content": "Two.", "supersedes": "a"},
        {"id": "b", "type": "fact", "content": "Three.", "supersedes": "a"},
    ]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["import", str(source), "--into", str(tmp_path / "memory.db")]) == 2
    err = capsys.readouterr().err
    assert "entry 'b'" in err and "field 'supersedes'" in err
    assert "names 'a', which is already superseded by 'c'" in err
    assert not (tmp_path / "memory.db").exists()


def test_import_refuses_a_near_miss_scope_naming_file_line_entry_and_field(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "ok", "content": "fine"}\n\n{"id": "fix", "content": "Use cents.", "scope": "Always"}\n')
    db = tmp_path / "memory.db"
    assert main(["import", str(source), "--into", str(db)]) == 2
    err = capsys.readouterr().err
    assert err == "poolsplit: %s:3: entry 'fix' (index 1): field 'scope' is 'Always', not exactly 'always': " \
        "scope is exact, so it would be stored as contextual and never load first\n" % source  # fmt: skip
    assert not db.exists()


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"id": "f", "content": "x", "id": "g"}', "invalid JSON (the key 'id' appears twice in one object)"),
        ('{"id": "s", "content": "x", "status": 5}', "entry 's' (index 0): field 'status' must be a string"),
        ('{"id": "n", "content": "x", "seen": "garbage"}', "entry 'n' (index 0): field 'seen' must be a list of"),
        ('{"id": "n", "content": "x", "seen": [{"at": 1}]}', "entry 'n' (index 0): field 'seen' must be a list of"),
        ('{"id": "v", "content": "x", "supersedes": 5}', "entry 'v' (index 0): field 'supersedes' must be an entry id"),
        ('{"id": "v", "content": "x", "superseded_by": []}', "entry 'v' (index 0): field 'superseded_by' must be"),
    ],
)
def test_import_refuses_what_it_would_misread_naming_the_line_and_field(tmp_path, capsys, line, message):
    # Each was accepted: a repeated key kept its last value, a number status
    # retired the entry without a word, a malformed seen broke the next repeat.
    source = tmp_path / "in.jsonl"
    source.write_text(line + "\n")
    before = source.read_bytes()
    db = tmp_path / "memory.db"
    assert main(["import", str(source), "--into", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("poolsplit: %s:1: %s" % (source, message)) and err.count("\n") == 1, err
    assert source.read_bytes() == before
    assert not db.exists()


def test_import_names_file_line_entry_and_field_of_a_lone_surrogate(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "ok", "content": "fine"}\n{"id": "bad", "content": "lone \\ud800"}\n')
    db = tmp_path / "memory.db"
    assert main(["import", str(source), "--into", str(db)]) == 2
    assert capsys.readouterr().err == (
        "poolsplit: %s:2: entry 'bad' (index 1): field 'content' contains a lone surrogate "
        "(\\ud800), which is not UTF-8 text\n" % source
    )
    assert not db.exists()


def test_import_refuses_a_token_count_above_the_largest_cost_and_leaves_the_store_as_it_was(tmp_path, capsys):
    """A count of 10**30 was stored and then broke every select on the
    store, corrections included: it is refused at the write, by name."""
    db = tmp_path / "memory.db"
    first = tmp_path / "first.jsonl"
    first.write_text('{"id": "fix", "type": "correction", "scope": "always", "content": "Use cents."}\n')
    assert main(["import", str(first), "--into", str(db)]) == 0
    before = db.read_bytes()
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "big", "type": "fact", "content": "Refunds.", "token_count": %d}\n' % 10**30)
    capsys.readouterr()
    assert main(["import", str(source), "--into", str(db)]) == 2
    assert capsys.readouterr().err == (
        "poolsplit: %s:1: entry 'big' (index 0): field 'token_count' is 100000000000... (31 digits), "
        "above the largest cost, 2**53 - 1\n" % source
    )
    assert db.read_bytes() == before
    with SQLiteMemoryStore(db) as store:
        assert [c.entry["id"] for c in store.select([Pool("fixes", 0, 0, ("correction",))], {}).chosen] == ["fix"]


def test_version_prints_the_one_version_the_build_reads():
    """``poolsplit --version`` says the core's ``__version__``, and the
    package metadata is built from that same attribute (no second copy)."""
    import tomllib

    import poolsplit_adapters
    from poolsplit_adapters import poolsplit

    code, out, err = run_cli("--version")
    assert (code, out, err) == (0, "poolsplit-adapters %s\n" % poolsplit.__version__, "")
    assert poolsplit_adapters.__version__ == poolsplit.__version__
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "poolsplit_adapters.poolsplit.__version__"}


def test_forget_an_id_of_bytes_not_utf8_names_the_id_and_leaves_the_file(tmp_path, capsys):
    # An argument of bytes that are not UTF-8 reaches Python as a lone surrogate (\udcff); SQLite's
    # codec error named neither the argument nor the id.
    db = tmp_path / "memory.db"
    assert main(["add", "--store", str(db), "--content", "Refunds round half-even.", "--id", "f1"]) == 0
    before = db.read_bytes()
    capsys.readouterr()
    assert main(["forget", "\udcff", "--store", str(db)]) == 2
    assert capsys.readouterr().err == (
        "poolsplit: entry id '\\udcff' contains a lone surrogate at position 0 (not UTF-8), "
        "which Postgres text cannot hold\n"
    )
    assert db.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["memory.db"]


@pytest.mark.parametrize("value", ["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00"])
def test_a_time_past_the_utc_range_is_one_line_and_leaves_no_file(tmp_path, capsys, value):
    """ISO-8601 with an offset whose UTC instant no datetime holds: one line
    naming the flag or the entry's field, exit 2 (an OverflowError's
    traceback before), and a refused add leaves no store behind."""
    db = tmp_path / "memory.db"
    assert main(["add", "--store", str(db), "--content", "Deploys need the checklist."]) == 0
    before = db.read_bytes()
    capsys.readouterr()
    past = "is %r, outside the years 1 to 9999 once converted to UTC" % value
    for flag, command in (
        ("--now", ["sweep", "--store", str(db)]),
        ("--now", ["select", "q", "--store", str(db), "--pools", POOLS]),
        ("--since", ["select", "q", "--store", str(db), "--pools", POOLS]),
        ("--until", ["select", "q", "--store", str(db), "--pools", POOLS]),
    ):
        assert main([*command, flag, value]) == 2
        assert capsys.readouterr().err == "poolsplit: %s %s\n" % (flag, past)
    assert db.read_bytes() == before
    for field in ("expires", "valid_from", "valid_until"):
        fresh = tmp_path / ("%s.db" % field)
        assert main(["add", "--store", str(fresh), "--json", json.dumps({"content": "x", field: value})]) == 2
        err = capsys.readouterr().err
        assert err.startswith("poolsplit: entry ") and err.endswith("field %r %s\n" % (field, past)), err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.db"]


@pytest.mark.parametrize("field", ["expires", "valid_from", "valid_until"])
def test_a_malformed_lifecycle_time_in_a_json_lines_store_names_file_and_line(tmp_path, capsys, field):
    """The core reads these times strictly; read from a file, the error names
    the file and line, as every other malformed field does (select named only
    the entry before, the file's name and line lost)."""
    store = tmp_path / "store.jsonl"
    store.write_text('{"id": "a", "content": "deploy x"}\n{"id": "b", "content": "deploy y", "%s": "soon"}\n' % field)
    before = store.read_bytes()
    expected = "poolsplit: %s:2: entry 'b' (index 1): field %r must be an ISO-8601 time (a string), got str 'soon'\n"
    for command in (
        ["select", "deploy", "--pools", POOLS],
        ["export"],
        ["search", "deploy", "--all-namespaces"],
    ):
        assert main([*command, "--store", str(store)]) == 2
        assert capsys.readouterr().err == expected % (store, field)
    assert store.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["store.jsonl"]


def test_forget_and_sweep_leave_an_empty_file_empty(tmp_path, capsys):
    """An empty file is an empty store: ``forget`` refuses an unknown id and
    ``forget --namespace`` / ``sweep`` change nothing, the file left empty
    and nothing beside it (each wrote the store's schema into it before,
    the refused forget too)."""
    db = tmp_path / "memory.db"
    db.write_bytes(b"")
    assert main(["forget", "nope", "--store", str(db)]) == 2
    assert capsys.readouterr().err == "poolsplit: no entry with id 'nope' in the store\n"
    assert main(["forget", "--namespace", "acme", "--store", str(db)]) == 0
    assert main(["sweep", "--store", str(db), "--now", "2026-12-06"]) == 0
    assert capsys.readouterr().out == "forgot 0 entries of namespace acme\nswept 0 expired entries\n"
    assert db.read_bytes() == b"" and [p.name for p in tmp_path.iterdir()] == ["memory.db"]


def test_add_json_from_stdin_drops_a_byte_order_mark_as_a_file_read_does(tmp_path):
    """``... | poolsplit add --json -`` with a leading BOM (an editor's, a
    Windows pipe's): files drop it (``read_text``), stdin was refused as
    "invalid JSON (Unexpected UTF-8 BOM ...)"."""
    db = tmp_path / "memory.db"
    code, out, err = run_cli("add", "--store", str(db), "--json", "-", stdin='\ufeff{"id": "n1", "content": "Hi."}')
    assert (code, out, err) == (0, "n1\n", "")
    assert SQLiteMemoryStore(db).get("n1")["content"] == "Hi."


@pytest.mark.parametrize(
    ("stored", "field"),
    [
        ('{"id": "x", "content": 5}', "content"),
        ('{"id": "x", "content": "deploy", "expires": "soon"}', "expires"),
        ('{"id": "x", "content": "deploy", "tags": "ops"}', "tags"),
    ],
)
def test_a_malformed_entry_read_from_a_sqlite_store_names_the_file(tmp_path, capsys, stored, field):
    """A row another program wrote, read by ``select``, ``export`` and
    ``search``: the error named the entry only, not the file it is in."""
    db = tmp_path / "memory.db"
    assert main(["add", "--store", str(db), "--id", "x", "--content", "deploy"]) == 0
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE memory SET entry = ? WHERE id = 'x'", (stored,))
    raw.close()
    capsys.readouterr()
    for command in (["select", "deploy", "--pools", POOLS], ["export"], ["search", "deploy", "--all-namespaces"]):
        if field == "expires" and command[0] != "select":
            continue  # read by a selection only (an export keeps it as stored)
        assert main([*command, "--store", str(db)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("poolsplit: %s: entry 'x'" % db) and "field %r" % field in err, (command, err)


def test_select_pools_auto_is_the_adapters_task_plan(tmp_path):
    """``--pools auto --total-tokens N``: the plan ``pools="auto"`` makes in
    every adapter (the task detected from the query, the budget shared among
    the store's types, the standing pool's unused room moved), with the same
    selection and notes, from a JSON Lines file and from a SQLite store."""
    from poolsplit_adapters.call import AdapterCall
    from poolsplit_adapters.defaults import default_adapter_scorer
    from poolsplit_adapters.poolsplit import default_token_counter
    from poolsplit_adapters.settings import AdapterSettings

    entries = load_store(STORE)
    now = "2026-11-20T09:00:00Z"
    query = "why does the refund rounding crash"
    settings = AdapterSettings(
        pools="auto",
        total_tokens=400,
        scorer=default_adapter_scorer().over(entries),
        now=datetime.datetime(2026, 11, 20, 9),
        token_counter=default_token_counter,  # the command's, as in every store's select
    )
    expected = AdapterCall(settings, query, entry_types=lambda: {e.get("type", "note") for e in entries})
    want = expected.select(entries)
    assert want.notes["task_type"] == "debugging"
    args = ["select", "--store", STORE, "--pools", "auto", "--total-tokens", "400", "--now", now, "--json", query]
    code, out, err = run_cli(*args)
    assert code == 0, err
    data = json.loads(out)
    assert [c["id"] for c in data["chosen"]] == [c.entry["id"] for c in want.chosen]
    assert {name: s["max_tokens"] for name, s in data["stats"].items()} == {
        name: s.max_tokens for name, s in want.stats.items()
    }
    assert data["notes"]["task_type"] == "debugging"
    assert data["notes"]["task"] == want.notes["task"]
    # The same from a SQLite store holding the same entries.
    db = str(tmp_path / "memory.db")
    assert run_cli("import", STORE, "--into", db)[0] == 0
    code, out, err = run_cli(*[db if a == STORE else a for a in args])
    assert code == 0, err
    assert [c["id"] for c in json.loads(out)["chosen"]] == [c.entry["id"] for c in want.chosen]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--pools", "auto"], "--pools auto needs --total-tokens N (the token budget the task plan shares out)"),
        (["--pools", POOLS, "--total-tokens", "400"], "--total-tokens is for --pools auto; a TOML plan's budgets"),
        (["--pools", "auto", "--total-tokens", "0"], "--total-tokens: must be 1 or more, got 0"),
    ],
)
def test_select_total_tokens_goes_with_pools_auto(args, message):
    code, _, err = run_cli("select", "--store", STORE, *args, "deploy")
    assert_one_line_error(code, err, message)


def test_select_pools_auto_moves_the_standing_pools_unused_room(tmp_path):
    """A store with a few short instructions and many long episodes: the
    task plan's standing pool uses little of its room, which goes to the
    pools that cut entries (``notes["standing_spilled"]``), as in the adapters."""
    from poolsplit_adapters.call import AdapterCall
    from poolsplit_adapters.defaults import default_adapter_scorer
    from poolsplit_adapters.poolsplit import default_token_counter
    from poolsplit_adapters.settings import AdapterSettings

    entries = [{"id": "i1", "type": "instruction", "content": "Always answer briefly."}]
    entries += [
        {"id": "e%02d" % n, "type": "episode", "content": "We talked about the deploy pipeline, step %d. " % n * 6}
        for n in range(40)
    ]
    path = tmp_path / "memory.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    settings = AdapterSettings(
        pools="auto",
        total_tokens=1024,
        scorer=default_adapter_scorer().over(entries),
        now=datetime.datetime(2026, 11, 20, 9),
        token_counter=default_token_counter,
    )
    want = AdapterCall(settings, "the deploy pipeline", entry_types=lambda: {"instruction", "episode"}).select(entries)
    assert want.notes["standing_spilled"]["standing"] < 0
    args = ["select", "--store", str(path), "--pools", "auto", "--total-tokens", "1024", "--now", "2026-11-20T09:00"]
    code, out, err = run_cli(*args, "--json", "the deploy pipeline")
    assert code == 0, err
    data = json.loads(out)
    assert data["notes"]["standing_spilled"] == want.notes["standing_spilled"]
    assert [c["id"] for c in data["chosen"]] == [c.entry["id"] for c in want.chosen]
