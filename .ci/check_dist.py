"""Check the release artefacts ``python -m build`` wrote: ``python .ci/check_dist.py dist``.

``make package`` runs it after ``twine check`` (which checks the metadata and
how PyPI renders the README, not what the archives hold). Here:

- one sdist and one wheel, of the version ``poolsplit_adapters/poolsplit.py``
  defines (the one place; the build reads it from there);
- the sdist holds what a build from it needs (``pyproject.toml``, the README
  and license files the metadata names, the package with its data) and the
  changelog, and nothing else: no site/, .venv, tests, benchmark outputs or
  notebooks, which live in the repository;
- the sdist and the wheel each hold exactly the package folder's files
  (``__pycache__`` aside): a module or data file the build would leave out is
  named, as is one it would add;
- the wheel installs the ``poolsplit`` command.

Each problem is one line on stderr, exit 1; nothing is changed.
"""

from __future__ import annotations

import pathlib
import re
import sys
import tarfile
import zipfile
from typing import List, Set

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = "poolsplit_adapters"
#: The sdist's own files beside the package: the build's inputs (MANIFEST.in among them), the changelog, setuptools' metadata.
SDIST_FILES = {"PKG-INFO", "setup.cfg", "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE", "CHANGELOG.md"}
LICENSES = {"LICENSE", PACKAGE + "/data/tiktoken/NOTICE.md"}


def package_files(root: pathlib.Path) -> Set[str]:
    """The package folder's files, relative to ``root`` (caches aside)."""
    return {
        path.relative_to(root).as_posix()
        for path in (root / PACKAGE).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


def defined_version(root: pathlib.Path) -> str:
    found = re.search(r'^__version__ = "([^"]+)"$', (root / PACKAGE / "poolsplit.py").read_text(), re.M)
    if found is None:
        raise SystemExit("check_dist: no __version__ in %s/poolsplit.py" % PACKAGE)
    return found.group(1)


def check(dist: pathlib.Path, root: pathlib.Path = ROOT) -> List[str]:
    """Every problem with the artefacts in ``dist``, one line each (none: all good)."""
    version = defined_version(root)
    sdists, wheels = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        return ["%s: expected one sdist and one wheel, found %d and %d" % (dist, len(sdists), len(wheels))]
    sdist, wheel = sdists[0], wheels[0]
    problems: List[str] = []
    stem = "%s-%s" % (PACKAGE, version)
    if sdist.name != stem + ".tar.gz" or not wheel.name.startswith(stem + "-"):
        problems.append("%s, %s: not version %s (poolsplit_adapters/poolsplit.py)" % (sdist.name, wheel.name, version))
    expected = package_files(root)

    with tarfile.open(sdist) as archive:
        members = {m.name.split("/", 1)[1] for m in archive.getmembers() if m.isfile() and "/" in m.name}
    held = {name for name in members if name.startswith(PACKAGE + "/")}
    metadata = {name for name in members if name.startswith(PACKAGE + ".egg-info/")}
    junk = sorted(members - held - metadata - SDIST_FILES)
    problems += ["%s: holds %s, which no build needs" % (sdist.name, name) for name in junk]
    problems += ["%s: lacks %s" % (sdist.name, name) for name in sorted(SDIST_FILES - members)]
    problems += ["%s: lacks %s" % (sdist.name, name) for name in sorted(expected - held)]
    problems += ["%s: holds %s, which the package folder does not" % (sdist.name, n) for n in sorted(held - expected)]

    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = "%s.dist-info/" % stem
        in_wheel = {name for name in names if not name.startswith(info)}
        problems += ["%s: lacks %s" % (wheel.name, name) for name in sorted(expected - in_wheel)]
        problems += [
            "%s: holds %s, which the package folder does not" % (wheel.name, n) for n in sorted(in_wheel - expected)
        ]
        problems += [
            "%s: lacks %s" % (wheel.name, info + "licenses/" + n)
            for n in sorted(LICENSES)
            if info + "licenses/" + n not in names
        ]
        entry_points = archive.read(info + "entry_points.txt").decode() if info + "entry_points.txt" in names else ""
        if "poolsplit = poolsplit_adapters.cli:main" not in entry_points:
            problems.append("%s: installs no poolsplit command" % wheel.name)
    return problems


def main(argv: List[str]) -> int:
    if len(argv) != 1:
        print("usage: python .ci/check_dist.py DIST_FOLDER", file=sys.stderr)
        return 2
    problems = check(pathlib.Path(argv[0]))
    for problem in problems:
        print("check_dist: %s" % problem, file=sys.stderr)
    if not problems:
        print(
            "check_dist: %s holds one sdist and one wheel of version %s, each the package and no more"
            % (argv[0], defined_version(ROOT))
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
