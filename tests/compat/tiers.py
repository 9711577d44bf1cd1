"""What ``make compat``'s two tiers install: the runtime extras at their
declared lower bounds or at their newest, and the tools the tests need.

``pyproject.toml`` promises that every version its extras allow works; CI's
``make test`` installs one resolution (the newest), so a lower bound nobody
installs can go false unnoticed. ``make compat`` installs the lowest and the
newest versions in fresh virtualenvs and runs the framework-facing tests in
each. This script is both tiers' bookkeeping:

- ``requirements``: the runtime extras' requirements (every extra but
  ``dev``, ``eval`` and the ``all`` alias), one a line: what uv resolves,
  with the tools, at ``--resolution lowest-direct`` (the lowest version of
  each, with a wheel for this Python, that installs beside all the others
  and beside some version of each tool).
- ``constraints LOCK``: from that resolution, ``name==version`` for each of
  those requirements: the tier installs the extras and the tools with these
  constraints (the tools resolve around them). It refuses (exit 1, naming
  the requirement, its extra and both versions) where the lowest version
  that resolves is above the declared bound: such a bound is false, and the
  fix is raising it in pyproject.toml. The ``demo`` dependency group's
  bounds are held to the same versions.
- ``tools``: the ``dev`` extra's requirements the framework-facing tests
  import (pytest and its plugins, hypothesis, LangChain's test suites, the
  embedded Postgres), not the linters, the docs site or the LangGraph server
  (``langgraph-sdk>=0.4.14``, which the lowest ``langgraph`` excludes;
  ``make test`` runs that test at the newest versions).
- ``versions``: the installed version of each runtime requirement, one
  ``name version`` line each (both tiers print it before their tests).

Run with the tier's own Python (it needs ``packaging``), from the repo root::

    python tests/compat/tiers.py requirements > runtime.in
    python tests/compat/tiers.py tools > tools.in
    uv pip compile --resolution lowest-direct --no-build runtime.in tools.in -o lowest.txt
    python tests/compat/tiers.py constraints lowest.txt > constraints.txt
    uv pip install -c constraints.txt -r tools.in -e ".[all]"
"""

from __future__ import annotations

import argparse
import importlib.metadata
import pathlib
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional

import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

PYPROJECT = pathlib.Path(__file__).resolve().parents[2] / "pyproject.toml"

#: Extras that are not the package's runtime: the test and docs tools, and the
#: offline evaluation model (never installed by a user of the adapters).
NOT_RUNTIME = ("dev", "eval")

#: The ``dev`` extra's packages that the framework-facing tests import.
TEST_TOOLS = (
    "pytest",
    "pytest-asyncio",
    "pytest-xdist",
    "hypothesis",
    "langchain-tests",
    "langchain-classic",
)
# (The embedded Postgres server the tests start comes with the `postgres`
# extra, a runtime extra: each tier resolves it with the rest.)


@dataclass(frozen=True)
class Declared:
    """One requirement of a runtime extra (or of the demo group) and where it is declared."""

    requirement: Requirement
    where: str  # "extra 'postgres'", "dependency group 'demo'"

    @property
    def name(self) -> str:
        return canonicalize_name(self.requirement.name)

    @property
    def lower(self) -> Version:
        """The ``>=`` bound: every runtime requirement must declare one (a
        requirement without one promises every release ever made)."""
        bounds = [Version(s.version) for s in self.requirement.specifier if s.operator == ">="]
        if len(bounds) != 1:
            raise SystemExit(
                "pyproject.toml: %s declares %r without exactly one '>=' lower bound; give it one"
                % (self.where, str(self.requirement))
            )
        return bounds[0]


def _applies(requirement: Requirement) -> bool:
    """Whether the requirement's marker holds on this Python (``psycopg``'s ``python_version >= '3.10'``)."""
    return requirement.marker is None or requirement.marker.evaluate({"extra": ""})


def runtime(project: Optional[dict] = None) -> List[Declared]:
    """Every runtime extra's requirements that apply on this Python (the
    self-referencing ``all`` alias skipped), in the file's order."""
    data = project if project is not None else tomllib.loads(PYPROJECT.read_text())
    name = canonicalize_name(data["project"]["name"])
    found = []
    for extra, requirements in data["project"]["optional-dependencies"].items():
        if extra in NOT_RUNTIME:
            continue
        for line in requirements:
            requirement = Requirement(line)
            if canonicalize_name(requirement.name) != name and _applies(requirement):
                found.append(Declared(requirement, "extra %r" % extra))
    return found


def tools(project: Optional[dict] = None) -> List[Requirement]:
    """The ``dev`` extra's requirements named in :data:`TEST_TOOLS`; a name
    missing there is an error (the tier would test without it)."""
    data = project if project is not None else tomllib.loads(PYPROJECT.read_text())
    dev = [Requirement(line) for line in data["project"]["optional-dependencies"]["dev"]]
    found = [r for r in dev if canonicalize_name(r.name) in TEST_TOOLS and _applies(r)]
    missing = set(TEST_TOOLS) - {canonicalize_name(r.name) for r in found}
    if missing:
        raise SystemExit("pyproject.toml: the dev extra no longer lists %s" % ", ".join(sorted(missing)))
    return found


def demo_group(project: Optional[dict] = None) -> List[Declared]:
    """The ``demo`` dependency group's requirements (the same frameworks as the extras)."""
    data = project if project is not None else tomllib.loads(PYPROJECT.read_text())
    lines = data.get("dependency-groups", {}).get("demo", [])
    return [Declared(Requirement(line), "dependency group 'demo'") for line in lines]


def read_lock(path: pathlib.Path) -> Dict[str, Version]:
    """``name -> version`` of a ``uv pip compile`` output (``name==version`` lines, comments ignored)."""
    pins = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        requirement = Requirement(line)
        exact = [s.version for s in requirement.specifier if s.operator == "=="]
        if len(exact) != 1:
            raise SystemExit("%s:%d: expected 'name==version', found %r" % (path, number, raw))
        pins[canonicalize_name(requirement.name)] = Version(exact[0])
    return pins


def false_bounds(declared: List[Declared], pins: Dict[str, Version]) -> List[str]:
    """One message per declared bound below the lowest version that resolved (none: the bounds are true)."""
    problems = []
    for item in declared:
        pin = pins.get(item.name)
        if pin is None:
            problems.append("%s: %s is missing from the lowest resolution" % (item.where, item.requirement))
        elif pin != item.lower:
            problems.append(
                "pyproject.toml: %s declares %s, but the lowest %s with a Python %d.%d wheel that installs "
                "beside the other extras and the tests' tools is %s: raise the bound to >=%s"
                % (item.where, item.requirement, item.requirement.name, *sys.version_info[:2], pin, pin)
            )
    return problems


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("requirements", help="the runtime extras' requirements, one a line")
    constraints = commands.add_parser("constraints", help="the lowest resolution's pins of those requirements")
    constraints.add_argument("lock", type=pathlib.Path, help="uv pip compile --resolution lowest-direct output")
    commands.add_parser("tools", help="the dev extra's requirements the framework-facing tests import")
    commands.add_parser("versions", help="the installed version of each runtime requirement")
    args = parser.parse_args(argv)
    declared = runtime()
    names = list(dict.fromkeys(item.name for item in declared))
    if args.command == "requirements":
        print("\n".join(str(item.requirement) for item in declared))
    elif args.command == "constraints":
        pins = read_lock(args.lock)
        problems = false_bounds(declared + demo_group(), pins)
        if problems:
            print("\n".join(problems), file=sys.stderr)
            return 1
        print("\n".join("%s==%s" % (name, pins[name]) for name in names))
    elif args.command == "tools":
        print("\n".join(str(requirement) for requirement in tools()))
    else:
        for name in names:
            print("%s %s" % (name, importlib.metadata.version(name)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
