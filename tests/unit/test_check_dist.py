""".ci/check_dist.py, the sdist and wheel check of ``make package``: silent
on a release that holds the package and no more, one line for each file too
many or too few, a wrong version, a missing command."""

from __future__ import annotations

import importlib.util
import io
import pathlib
import tarfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_dist", ROOT / ".ci" / "check_dist.py")
assert _spec is not None and _spec.loader is not None
check_dist = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_dist)

PACKAGE_FILES = {
    "poolsplit_adapters/__init__.py": "",
    "poolsplit_adapters/poolsplit.py": '__version__ = "9.1"\n',
    "poolsplit_adapters/data/pools.toml": "[[pool]]\n",
    "poolsplit_adapters/data/tiktoken/NOTICE.md": "MIT\n",
}
SDIST_OWN = ["PKG-INFO", "setup.cfg", "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE", "CHANGELOG.md"]
ENTRY_POINTS = "[console_scripts]\npoolsplit = poolsplit_adapters.cli:main\n"


def source_tree(root: pathlib.Path) -> pathlib.Path:
    for name, text in PACKAGE_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "poolsplit_adapters" / "__pycache__").mkdir()
    (root / "poolsplit_adapters" / "__pycache__" / "poolsplit.cpython-311.pyc").write_bytes(b"\0")  # never shipped
    return root


def write_sdist(dist: pathlib.Path, names, version="9.1") -> None:
    top = "poolsplit_adapters-%s" % version
    with tarfile.open(dist / ("%s.tar.gz" % top), "w:gz") as archive:
        for name in names:
            member = tarfile.TarInfo("%s/%s" % (top, name))
            member.size = 1
            archive.addfile(member, io.BytesIO(b"x"))


def write_wheel(dist: pathlib.Path, names, entry_points=ENTRY_POINTS, version="9.1") -> None:
    info = "poolsplit_adapters-%s.dist-info/" % version
    with zipfile.ZipFile(dist / ("poolsplit_adapters-%s-py3-none-any.whl" % version), "w") as archive:
        for name in names:
            archive.writestr(name, "x")
        archive.writestr(info + "licenses/LICENSE", "x")
        archive.writestr(info + "licenses/poolsplit_adapters/data/tiktoken/NOTICE.md", "x")
        archive.writestr(info + "entry_points.txt", entry_points)


def test_a_release_of_the_package_and_no_more_passes(tmp_path):
    root, dist = source_tree(tmp_path / "src"), tmp_path / "dist"
    dist.mkdir()
    write_sdist(dist, [*SDIST_OWN, *PACKAGE_FILES, "poolsplit_adapters.egg-info/SOURCES.txt"])
    write_wheel(dist, PACKAGE_FILES)
    assert check_dist.check(dist, root) == []


def test_junk_a_missing_module_and_a_missing_command_are_each_named(tmp_path):
    root, dist = source_tree(tmp_path / "src"), tmp_path / "dist"
    dist.mkdir()
    shipped = [name for name in PACKAGE_FILES if not name.endswith("pools.toml")]
    write_sdist(dist, [*SDIST_OWN[:-1], *shipped, "site/index.html", "poolsplit_adapters/notes.txt"])
    write_wheel(dist, shipped, entry_points="[console_scripts]\n")
    assert check_dist.check(dist, root) == [
        "poolsplit_adapters-9.1.tar.gz: holds site/index.html, which no build needs",
        "poolsplit_adapters-9.1.tar.gz: lacks CHANGELOG.md",
        "poolsplit_adapters-9.1.tar.gz: lacks poolsplit_adapters/data/pools.toml",
        "poolsplit_adapters-9.1.tar.gz: holds poolsplit_adapters/notes.txt, which the package folder does not",
        "poolsplit_adapters-9.1-py3-none-any.whl: lacks poolsplit_adapters/data/pools.toml",
        "poolsplit_adapters-9.1-py3-none-any.whl: installs no poolsplit command",
    ]


def test_another_version_than_the_one_the_core_defines_is_named(tmp_path):
    root, dist = source_tree(tmp_path / "src"), tmp_path / "dist"
    dist.mkdir()
    write_sdist(dist, [*SDIST_OWN, *PACKAGE_FILES], version="9.0")
    write_wheel(dist, PACKAGE_FILES, version="9.0")
    assert check_dist.check(dist, root)[0] == (
        "poolsplit_adapters-9.0.tar.gz, poolsplit_adapters-9.0-py3-none-any.whl: "
        "not version 9.1 (poolsplit_adapters/poolsplit.py)"
    )


def test_the_dist_folder_must_hold_one_of_each(tmp_path):
    (tmp_path / "dist").mkdir()
    assert check_dist.check(tmp_path / "dist", source_tree(tmp_path / "src")) == [
        "%s: expected one sdist and one wheel, found 0 and 0" % (tmp_path / "dist")
    ]
