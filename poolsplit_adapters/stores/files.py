"""Plain-file stores and pool plans: JSON Lines entries and TOML ``[[pool]]``
tables, read with errors a person can act on.

A bad file is reported as [`InputFileError`][] with its path and line (or
pool number) and the offending key, never as a traceback from deep inside a
parser: not UTF-8, a directory, a 5,000-digit number or an array nested
100,000 deep are all one readable sentence.

The bundled example store and pool plan ship as package data
([`bundled_store`][], [`bundled_pools`][]), so ``poolsplit demo`` works
from any folder after a plain ``pip install``.
"""

from __future__ import annotations

import json
import pathlib
import sys
from typing import IO, Any, Dict, Iterable, List, Mapping, NoReturn, Tuple, Union

from ..memory.write_gate import check_write
from ..poolsplit import Pool, check_entry, entry_time
from .checks import check_storable, entry_json

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on older Pythons only
    import tomli as tomllib

__all__ = [
    "InputFileError",
    "bundled_pools",
    "bundled_store",
    "dump_store",
    "load_pools",
    "load_store",
    "read_text",
]

PathLike = Union[str, "pathlib.Path"]
POOL_KEYS = {"name", "max_tokens", "max_entries", "types"}
#: The entry's times the core parses strictly (``entry_time``) when a selection reads them.
LIFECYCLE_TIMES = ("expires", "valid_from", "valid_until")
DATA = pathlib.Path(__file__).resolve().parent.parent / "data"


class InputFileError(ValueError):
    """A store or pool file cannot be used; the message names file and place."""


def bundled_store() -> pathlib.Path:
    """The example memory store shipped with the package (JSON Lines)."""
    return DATA / "memory.jsonl"


def bundled_pools() -> pathlib.Path:
    """The pool plan for [`bundled_store`][] (TOML)."""
    return DATA / "pools.toml"


def read_text(path: PathLike) -> str:
    """The UTF-8 text of ``path``, or [`InputFileError`][] saying why not.

    A leading byte-order mark is dropped (``utf-8-sig``): editors on Windows
    write one in front of UTF-8 files, and it would otherwise make the first
    line of a store invalid JSON and the first key of a plan an unknown one.
    """
    file = pathlib.Path(path)
    try:
        return file.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputFileError("%s: no such file" % file) from None
    except IsADirectoryError:
        raise InputFileError("%s: is a directory, not a file" % file) from None
    except UnicodeDecodeError as exc:
        raise InputFileError(
            "%s: not UTF-8 text (byte 0x%02x at offset %d)" % (file, exc.object[exc.start], exc.start)
        ) from None
    except OSError as exc:
        raise InputFileError("%s: cannot read (%s)" % (file, exc.strerror or exc)) from None


def _no_constant(name: str) -> NoReturn:
    raise ValueError("%s is not a JSON number" % name)


def _one_value_per_key(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    found: Dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError("the key %r appears twice in one object" % key)
        found[key] = value
    return found


def parse_line(text: str) -> Any:
    """One JSON value, refusing NaN/Infinity and an object that gives a key
    twice (a parser keeps the last one: ``{"id": "f", ..., "id": "g"}``
    would be read as ``g`` without a word); ValueError for anything a JSON
    parser rejects, including numbers too long to convert and nesting too
    deep to read (which Python reports as other exception types)."""
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_one_value_per_key)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError as exc:
        raise ValueError(getattr(exc, "msg", None) or str(exc).split(";")[0]) from None


def load_store(path: PathLike, *, for_writing: bool = False) -> List[Dict[str, Any]]:
    """Read a JSON Lines memory store: one entry object per non-blank line.

    Every entry is checked (the core's [`check_entry`][], its lifecycle
    times as the core reads them, plus what a store must be able to write:
    `check_storable`), so a
    malformed one is reported as ``file:line`` with the entry and the field
    at fault. ``for_writing`` (the CLI's ``import``) adds the write rules
    every write path meets
    (`check_write`: no blank
    content, no near-miss scope, ISO-8601 ``created``), reported the same way.
    """
    file = pathlib.Path(path)
    entries: List[Dict[str, Any]] = []
    for number, line in enumerate(read_text(file).splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = parse_line(line)
        except ValueError as exc:
            raise InputFileError("%s:%d: invalid JSON (%s)" % (file, number, exc)) from None
        try:
            check_entry(entry, len(entries))
            check_storable(entry, len(entries))
            for key in LIFECYCLE_TIMES:  # strict where the core reads them: named here with the line
                entry_time(entry, key, len(entries))
            if for_writing:
                check_write(entry, len(entries))
        except ValueError as exc:
            raise InputFileError("%s:%d: %s" % (file, number, exc)) from None
        entries.append(entry)
    return entries


def dump_store(entries: Iterable[Mapping[str, Any]], out: IO[str]) -> int:
    """Write entries as JSON Lines (the format [`load_store`][] reads);
    return how many were written."""
    count = 0
    for count, entry in enumerate(entries, 1):
        check_entry(entry, count - 1)
        out.write(entry_json(entry, count - 1) + "\n")
    return count


def load_pools(path: PathLike) -> List[Pool]:
    """Read a pool plan: a TOML file of ``[[pool]]`` tables with ``name``,
    ``max_tokens``, ``max_entries`` and optional ``types``."""
    file = pathlib.Path(path)
    text = read_text(file)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputFileError("%s: invalid TOML (%s)" % (file, str(exc).splitlines()[0])) from None
    except RecursionError:
        raise InputFileError("%s: invalid TOML (nested too deeply)" % file) from None
    tables = data.get("pool")
    if not isinstance(tables, list) or not tables:
        raise InputFileError("%s: expected one or more [[pool]] tables" % file)
    pools: List[Pool] = []
    for number, table in enumerate(tables, 1):
        if not isinstance(table, dict):
            got = "%s %r" % (type(table).__name__, table)
            raise InputFileError("%s: pool %d: expected a [[pool]] table, got %s" % (file, number, got[:60]))
        unknown = sorted(set(table) - POOL_KEYS)
        if unknown:
            raise InputFileError(
                "%s: pool %d: unknown key(s) %s (allowed: %s)"
                % (file, number, ", ".join(map(repr, unknown)), ", ".join(sorted(POOL_KEYS)))
            )
        missing = sorted({"name", "max_tokens", "max_entries"} - set(table))
        if missing:
            raise InputFileError("%s: pool %d: missing key(s) %s" % (file, number, ", ".join(map(repr, missing))))
        types = table.get("types")
        if isinstance(types, str):  # the core's hint is Python's ("fact",); a TOML file lists them
            raise InputFileError(
                "%s: pool %d: types must be a list of strings, not the bare string %r (did you mean types = [%s]?)"
                % (file, number, types, '"%s"' % types)
            )
        try:
            pools.append(Pool(table["name"], table["max_tokens"], table["max_entries"], types))
        except (TypeError, ValueError) as exc:
            raise InputFileError("%s: pool %d: %s" % (file, number, exc)) from None
    names = [p.name for p in pools]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputFileError("%s: duplicate pool name(s) %s" % (file, ", ".join(map(repr, duplicates))))
    return pools
