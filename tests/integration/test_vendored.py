"""The core file works when copied alone into another project."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import poolsplit_adapters.poolsplit as core

SCRIPT = """
import sys
sys.path.insert(0, %r)
import datetime, poolsplit
assert poolsplit.__file__.startswith(%r)
entries = [
    {"id": "c1", "type": "correction", "scope": "always", "content": "Never claim a write that did not happen."},
    {"id": "t1", "type": "task", "base_priority": 7, "content": "Ship the refactor."},
    {"id": "s1", "type": "skill", "base_priority": 2, "content": "grep to the symbol before reading the file."},
]
pools = [
    poolsplit.Pool("corrections", 1, 8, ("correction",)),
    poolsplit.Pool("content", 200, 15, ("task",)),
    poolsplit.Pool("skill", 80, 2, ("skill",)),
]
got = poolsplit.retrieve_pools(entries, pools, now=datetime.datetime(2026, 7, 7))
print(sorted((k, [e["id"] for e in v]) for k, v in got.items()))
"""


def test_copied_core_imports_without_site_packages(tmp_path: pathlib.Path):
    shutil.copy(core.__file__, tmp_path / "poolsplit.py")
    # -S: no site-packages, -I: isolated (no user site, no PYTHONPATH).
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", SCRIPT % (str(tmp_path), str(tmp_path))],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[('content', ['t1']), ('corrections', ['c1']), ('skill', ['s1'])]"


def test_core_imports_only_the_standard_library():
    source = pathlib.Path(core.__file__).read_text()
    imported = {
        line.split()[1].split(".")[0]
        for line in source.splitlines()
        if line.startswith(("import ", "from ")) and not line.startswith("from __future__")
    }
    assert imported <= set(sys.stdlib_module_names)


PLAIN = """
import sys
# As after a plain `pip install .`: no numpy, tiktoken or framework.
sys.modules.update(dict.fromkeys(["numpy", "tiktoken", "tiktoken_ext", "langchain_core", "llama_index"]))
from poolsplit_adapters import Pool
from poolsplit_adapters.stores import SQLiteMemoryStore
with SQLiteMemoryStore(sys.argv[1]) as store:
    store.add([{"id": "c", "type": "correction", "scope": "always", "content": "Never force-push."},
               {"id": "n", "type": "note", "content": "deploy notes"}])
    got = store.select([Pool("c", 0, 0, ("correction",)), Pool("n", 100, 2, ("note",))], {"message": "deploy"})
print([e["id"] for e in got.entries()])
"""


def test_sqlite_store_needs_only_the_standard_library(tmp_path: pathlib.Path):
    out = subprocess.run(
        [sys.executable, "-c", PLAIN, str(tmp_path / "memory.db")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['c', 'n']"


def test_the_spec_suite_passes_against_the_core_copied_alone(tmp_path: pathlib.Path):
    """tests/unit/test_core_semantics.py (the exact-value tests of every rule of
    the spec, seed 001) run against poolsplit.py copied alone into an empty
    folder: the vendorable file is the whole selector."""
    here = pathlib.Path(__file__).resolve().parents[1]
    shutil.copy(core.__file__, tmp_path / "poolsplit.py")
    suite = (here / "unit" / "test_core_semantics.py").read_text()
    assert "from poolsplit_adapters import " in suite
    assert "import poolsplit_adapters.poolsplit as core" in suite
    alone = suite.replace("from poolsplit_adapters import ", "from poolsplit import ")
    (tmp_path / "test_spec.py").write_text(
        alone.replace("import poolsplit_adapters.poolsplit as core", "import poolsplit as core")
    )
    (tmp_path / "conftest.py").write_text("import datetime\n\nNOW = datetime.datetime(2026, 7, 7, 12, 0, 0)\n")
    probe = "import poolsplit, sys; assert poolsplit.__file__.startswith(sys.argv[1]); import pytest; sys.exit(pytest.main(sys.argv[2:]))"
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            probe,
            str(tmp_path),
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "test_spec.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert " passed" in out.stdout and "failed" not in out.stdout
