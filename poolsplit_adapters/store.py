"""Loading stores (JSON Lines) and pool plans (TOML) with errors a person can act on.

A bad file is reported with its path and line (or pool number) and the
offending key, never as a traceback from deep inside a parser.
"""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any, Dict, List, Union

from .poolsplit import Pool, check_entry

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on older Pythons only
    import tomli as tomllib

PathLike = Union[str, "pathlib.Path"]
POOL_KEYS = {"name", "max_tokens", "max_entries", "types"}


class InputFileError(ValueError):
    """A store or pool file cannot be used; the message names file and place."""


def load_store(path: PathLike) -> List[Dict[str, Any]]:
    """Read a JSON Lines memory store: one entry object per non-blank line.

    Every entry is checked with :func:`check_entry`, so a malformed one is
    reported as ``file:line`` with the field at fault.
    """
    file = pathlib.Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputFileError("%s: no such file" % file) from None
    except OSError as exc:
        raise InputFileError("%s: cannot read (%s)" % (file, exc.strerror or exc)) from None
    entries: List[Dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputFileError("%s:%d: invalid JSON (%s)" % (file, number, exc.msg)) from None
        try:
            check_entry(entry, len(entries))
        except ValueError as exc:
            raise InputFileError("%s:%d: %s" % (file, number, exc)) from None
        entries.append(entry)
    return entries


def load_pools(path: PathLike) -> List[Pool]:
    """Read a pool plan: a TOML file of ``[[pool]]`` tables with ``name``,
    ``max_tokens``, ``max_entries`` and optional ``types``."""
    file = pathlib.Path(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputFileError("%s: no such file" % file) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputFileError("%s: invalid TOML (%s)" % (file, exc)) from None
    tables = data.get("pool")
    if not isinstance(tables, list) or not tables:
        raise InputFileError("%s: expected one or more [[pool]] tables" % file)
    pools: List[Pool] = []
    for number, table in enumerate(tables, 1):
        unknown = sorted(set(table) - POOL_KEYS)
        if unknown:
            raise InputFileError(
                "%s: pool %d: unknown key(s) %s (allowed: %s)"
                % (file, number, ", ".join(map(repr, unknown)), ", ".join(sorted(POOL_KEYS)))
            )
        missing = sorted({"name", "max_tokens", "max_entries"} - set(table))
        if missing:
            raise InputFileError("%s: pool %d: missing key(s) %s" % (file, number, ", ".join(map(repr, missing))))
        try:
            pools.append(Pool(table["name"], table["max_tokens"], table["max_entries"], table.get("types")))
        except (TypeError, ValueError) as exc:
            raise InputFileError("%s: pool %d: %s" % (file, number, exc)) from None
    names = [p.name for p in pools]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputFileError("%s: duplicate pool name(s) %s" % (file, ", ".join(map(repr, duplicates))))
    return pools
