"""The ``poolsplit`` command: select, search and edit a memory store; the demo.

A store is a SQLite file (``memory.db``, read and written) or a JSON Lines
file (``.jsonl``, read only): the kind is read from the file's first bytes,
or, for a file not yet created, from its suffix (``.jsonl``/``.ndjson``/
``.json`` mean JSON Lines, anything else SQLite). A file named as a database
(``.db``, ``.sqlite``, ``.sqlite3``, ``.db3``) is always opened as SQLite, so
a text or random file under such a name is "not a SQLite database", never
read as JSON Lines. A read-only file (or folder) is opened read-only:
``select``, ``export`` and ``search`` work, writes say the file is read-only.

    poolsplit select  QUERY --store S --pools P.toml [--since/--until ISO] [--namespace N] [--json [--all-dropped]]
                      --pools auto --total-tokens N  (the adapters' task plan, pools="auto")
                      [--spec-scorer]  (default: the adapters' relevance-first scorer)
    poolsplit add     --store memory.db (--content TEXT [--type ...] | --json OBJECT)
    poolsplit forget  (ID | --namespace NS) --store memory.db
    poolsplit sweep   --store memory.db [--now ISO]      (delete expired entries)
    poolsplit import  FILE.jsonl --into memory.db
    poolsplit export  --store S [--namespace N]          (JSON Lines on stdout)
    poolsplit search  QUERY --all-namespaces --store S   (operators only)
    poolsplit demo
    poolsplit postgres start | status | url | stop [--dir DIR]   (see cli_postgres)
    poolsplit --version

**Errors.** Every bad input (a file that is missing, a directory, not UTF-8,
not JSON; a malformed entry or pool; a bad flag) prints one line on stderr
naming the file and place, and exits 2, never a traceback. Warnings (such as
an always-scope correction no pool admits) print as one plain line too.
**An empty store is not an error**: ``select``, ``export`` and ``search`` say
so in one line on stderr and exit 0, since a new store is legitimately empty.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import sqlite3
import sys
import warnings
from typing import Any, Callable, Dict, Iterable, List, NoReturn, Optional, Sequence, Tuple, Type, Union

from .cli_postgres import add_postgres_commands
from .defaults import default_adapter_scorer
from .memory.tasks import AUTO, filled_spilling, noted_task, resolve_pools
from .poolsplit import (
    EntryError,
    Pool,
    Selection,
    Visibility,
    __version__,
    as_utc,
    default_scorer,
    near_miss_scope,
    select,
)
from .recall import present_types
from .render import DROPPED_SAMPLE, explain, render_context, selection_dict
from .stores.base import WriteReport
from .stores.files import InputFileError, bundled_pools, bundled_store, dump_store, load_pools, load_store, parse_line
from .stores.pg_install import ServerError
from .stores.search import search_all_namespaces
from .stores.sqlite import SQLITE_MAGIC, EntryNotFound, SQLiteMemoryStore, StoreError

JSONL_SUFFIXES = {".jsonl", ".ndjson", ".json"}
SQLITE_SUFFIXES = {".db", ".sqlite", ".sqlite3", ".db3"}
Store = Union[SQLiteMemoryStore, List[Dict[str, Any]]]


def _one_line(text: str) -> str:
    return " ".join(str(text).splitlines()).strip()


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit 2), like
    every other bad input."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, "%s: %s (see %s --help)\n" % (self.prog, _one_line(message), self.prog))


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more, got %d" % value)
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not an integer: %r" % text) from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more, got %d" % value)
    return value


def _moment(flag: str, text: Optional[str]) -> Optional[datetime.datetime]:
    if text is None:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text[:-1] if text.endswith("Z") else text)
    except ValueError:
        raise InputFileError("%s: not an ISO-8601 time: %r" % (flag, text)) from None
    try:  # the instant it names, as the core reads every time
        return as_utc(moment, flag, text)
    except ValueError as exc:
        raise InputFileError(str(exc)) from None


# -- stores -----------------------------------------------------------------------


def _is_sqlite(path: pathlib.Path) -> bool:
    if path.is_dir():
        raise InputFileError("%s: is a directory, not a store file" % path)
    try:
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        head = b""
    except OSError as exc:
        raise InputFileError("%s: cannot read (%s)" % (path, exc.strerror or exc)) from None
    if head and path.suffix.lower() not in SQLITE_SUFFIXES:
        return head == SQLITE_MAGIC
    return path.suffix.lower() not in JSONL_SUFFIXES


def _open_sqlite(path: pathlib.Path) -> SQLiteMemoryStore:
    try:
        return SQLiteMemoryStore(path)
    except StoreError as exc:
        raise InputFileError(str(exc)) from None


def _existing(path: pathlib.Path) -> None:
    """``path`` must name a file (a symlink to nothing does not: opening it
    would create its target)."""
    if not path.exists():
        raise InputFileError("%s: %s" % (path, "a link to no file" if path.is_symlink() else "no such file"))


def _read_store(name: str) -> Store:
    """The entries of a store to read (SQLite: the open store). A read never
    writes: a missing file (or a link to none) is refused, and an empty file
    is an empty store, left as it is (opened, SQLite would write the
    schema into it)."""
    path = pathlib.Path(name)
    _existing(path)
    if not _is_sqlite(path):
        return load_store(path)
    if not path.is_dir() and path.stat().st_size == 0:
        return []
    return _open_sqlite(path)


def _write_store(
    name: str, *, create: bool = True, entries: Optional[Sequence[Dict[str, Any]]] = None
) -> SQLiteMemoryStore:
    """A SQLite store to write (created when missing, with ``create``: a
    command that only changes what is stored, ``forget`` and ``sweep``,
    refuses a missing file instead of leaving a new one behind, and
    leaves an empty file empty: an empty store). Where no
    store is yet (a missing or empty file), the ``entries`` to write are
    first written to a store in memory, so that a write the store refuses
    (a blank content, an id given twice) leaves no new file and an empty
    file empty: opening the file writes the store's schema into it."""
    path = pathlib.Path(name)
    if not create:
        _existing(path)
    if not _is_sqlite(path):
        raise InputFileError(
            "%s: is JSON Lines; commands that write need a SQLite store "
            "(convert it: poolsplit import %s --into memory.db)" % (path, path)
        )
    if not create and path.is_file() and path.stat().st_size == 0:
        return SQLiteMemoryStore(":memory:")  # an empty file is an empty store: nothing to change, left empty
    if entries is not None and (not path.exists() or (path.is_file() and path.stat().st_size == 0)):
        with SQLiteMemoryStore(":memory:") as trial:
            trial.write(entries)
    return _open_sqlite(path)


def _read_entries(name: str, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
    """The entries of a store (one namespace, or all), the store closed again."""
    store = _read_store(name)
    if isinstance(store, SQLiteMemoryStore):
        try:
            return store.entries(namespace)
        finally:
            store.close()
    return [e for e in store if namespace is None or e.get("namespace") == namespace]


def _say_empty(name: str, what: str) -> None:
    print("poolsplit: %s: the store is empty; %s" % (name, what), file=sys.stderr)


# -- select -----------------------------------------------------------------------


def _selection_json(selection: Selection, all_dropped: bool = False) -> Dict[str, Any]:
    """The selection's one JSON form (every left-out row with
    ``all_dropped``, else the first few per pool and reason), plus the
    rendered context."""
    body = selection_dict(selection, dropped=None if all_dropped else DROPPED_SAMPLE)
    return dict(body, context=render_context(selection).text)


def _visibility(args: argparse.Namespace) -> Optional[Visibility]:
    """Visibility from --namespace (one, or a chain when repeated) and the
    --since/--until bounds on ``created``."""
    options: Dict[str, Any] = {}
    if args.namespace:
        options["namespace"] = args.namespace[0] if len(args.namespace) == 1 else tuple(args.namespace)
    since, until = _moment("--since", args.since), _moment("--until", args.until)
    if since is not None:
        options["since"] = since
    if until is not None:
        options["until"] = until
    if not options:
        return None
    try:
        return Visibility(**options)
    except TypeError as exc:
        raise InputFileError(_one_line(str(exc))) from None


def _plan(args: argparse.Namespace) -> Optional[List[Pool]]:
    """The explicit plan of ``--pools FILE``, or None for ``--pools auto``
    (a task plan, made once the store's types are known: `_task_plan`);
    ``--total-tokens`` goes with ``auto`` only."""
    if args.pools == AUTO:
        if args.total_tokens is None:
            raise InputFileError("--pools auto needs --total-tokens N (the token budget the task plan shares out)")
        return None
    if args.total_tokens is not None:
        raise InputFileError("--total-tokens is for --pools auto; a TOML plan's budgets are its pools' own")
    return load_pools(args.pools)


def _task_plan(
    args: argparse.Namespace, context: Dict[str, Any], types: Iterable[str], fill: Callable[[List[Pool]], Selection]
) -> Selection:
    """``--pools auto``: what ``pools="auto"`` does in every adapter
    (`AdapterCall`): the task detected from the query, ``--total-tokens``
    shared among the store's ``types``, the standing pool's unused room
    moved to the pools that cut entries, the task noted."""
    pools, detection = resolve_pools(AUTO, {"message": args.query}, total_tokens=args.total_tokens, entry_types=types)
    return noted_task(filled_spilling(pools, fill), detection)


def cmd_select(args: argparse.Namespace) -> int:
    plan = _plan(args)
    store = _read_store(args.store)
    context = {"message": args.query, "tags": args.tag or [], "project": args.project}
    # The adapters' default scorer (relevance first), as the stores' select.
    options: Dict[str, Any] = {
        "now": _moment("--now", args.now),
        "visibility": _visibility(args),
        "scorer": default_scorer if args.spec_scorer else default_adapter_scorer(),
    }
    if isinstance(store, SQLiteMemoryStore):
        with store:
            empty = len(store) == 0
            sqlite = store

            def fill(pools: List[Pool]) -> Selection:
                return sqlite.select(pools, context, **options)

            selection = (
                fill(plan) if plan is not None else _task_plan(args, context, present_types(store.entries()), fill)
            )
    else:
        empty, entries = not store, store
        if not args.spec_scorer:
            # Ranked against the whole file's statistics, as a SQLite
            # store's index ranks against its own: both give one answer.
            options["scorer"] = options["scorer"].over(store)

        def fill(pools: List[Pool]) -> Selection:
            return select(entries, pools, context, **options)

        selection = fill(plan) if plan is not None else _task_plan(args, context, present_types(entries), fill)
    if empty:
        _say_empty(args.store, "nothing to select")
    if args.json:
        print(json.dumps(_selection_json(selection, args.all_dropped), indent=2))
    elif not empty:
        print(explain(selection, limit=args.limit))
        print("\n--- rendered context ---")
        print(render_context(selection).text)
    return 0


# -- writes -----------------------------------------------------------------------


ENTRY_FLAGS = ("content", "type", "scope", "project", "namespace", "source", "id", "created")


def _entry_from_flags(args: argparse.Namespace) -> Dict[str, Any]:
    if args.json is not None:
        if any(getattr(args, key) is not None for key in ENTRY_FLAGS + ("priority", "tag")):
            raise InputFileError("add: give the entry either as --json or as flags, not both")
        # from stdin a leading byte-order mark is dropped, as `read_text` drops a file's
        text = sys.stdin.read().removeprefix("\ufeff") if args.json == "-" else args.json
        try:
            entry = parse_line(text)
        except ValueError as exc:
            raise InputFileError("--json: invalid JSON (%s)" % exc) from None
        if not isinstance(entry, dict):
            raise InputFileError("--json: expected a JSON object, got %s" % type(entry).__name__)
        return entry
    if args.content is None:
        raise InputFileError("add: --content (or --json) is required")
    entry = {key: getattr(args, key) for key in ENTRY_FLAGS if getattr(args, key) is not None}
    _moment("--created", args.created)  # a write path names the option, not only the field
    if near_miss_scope(args.scope):
        raise InputFileError(
            "--scope: %r is not exactly 'always': a correction's scope is exact, so it would be stored as"
            " contextual and never load first" % args.scope
        )
    if args.tag:
        entry["tags"] = list(args.tag)
    if args.priority is not None:
        try:
            entry["base_priority"] = parse_line(args.priority)
        except ValueError:
            raise InputFileError("--priority: not a number: %r" % args.priority) from None
    return entry


#: Repeats named one per line on stderr; past this many, one line counts the rest.
SHOWN_REPEATS = 5


def _say_duplicates(report: WriteReport) -> None:
    """A stderr line per repeat (stored once: where, and how it matched),
    the first `SHOWN_REPEATS` of them, then how many more."""
    for position, hit in report.duplicates[:SHOWN_REPEATS]:
        print(
            "poolsplit: entry %d repeats %s (%s duplicate): kept once, the repeat recorded in its 'seen'"
            % (position + 1, hit.kept["id"], hit.kind.value),
            file=sys.stderr,
        )
    more = len(report.duplicates) - SHOWN_REPEATS
    if more > 0:
        print("poolsplit: and %d more repeat(s), each kept once" % more, file=sys.stderr)


def cmd_add(args: argparse.Namespace) -> int:
    entry = _entry_from_flags(args)
    with _write_store(args.store, entries=[entry]) as store:
        report = store.write([entry])
    _say_duplicates(report)
    print(report.ids[0])  # a repeat prints the kept entry's id: where the memory is
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    if (args.id is None) == (args.namespace is None):
        raise InputFileError("forget: give either an ID or --namespace NS (not both)")
    if args.namespace is not None:
        if args.keep_history:
            raise InputFileError("forget: --keep-history applies to one ID; --namespace forgets every version")
        with _write_store(args.store, create=False) as store:
            gone = store.forget(namespace=args.namespace)
        print("forgot %d entries of namespace %s" % (gone, args.namespace))
        return 0
    with _write_store(args.store, create=False) as store:
        before = len(store)
        if not store.delete(args.id, history=not args.keep_history):
            raise EntryNotFound(args.id)
        gone = before - len(store)
    extra = "" if gone == 1 else " and %d older version(s) it superseded" % (gone - 1)
    print("forgot %s%s" % (args.id, extra))
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    entries = load_store(args.file, for_writing=True)
    with _write_store(args.into, entries=entries) as store:
        report = store.write(entries)
    _say_duplicates(report)
    repeats = len(report.duplicates)
    extra = "" if not repeats else " (%d repeat(s) kept once)" % repeats
    print("imported %d entries from %s into %s%s" % (len(report.written), args.file, args.into, extra))
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    now = _moment("--now", args.now)
    with _write_store(args.store, create=False) as store:
        gone = store.sweep_expired(now)
    print("swept %d expired entr%s" % (len(gone), "y" if len(gone) == 1 else "ies"))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    entries = _read_entries(args.store, args.namespace)
    if not entries and (args.namespace is None or not _read_entries(args.store, None)):
        _say_empty(args.store, "nothing to export")
    elif not entries:  # the store holds entries, none of them in this namespace
        print("poolsplit: %s: no entry in namespace %r" % (args.store, args.namespace), file=sys.stderr)
    dump_store(entries, sys.stdout)
    return 0


# -- search -----------------------------------------------------------------------


def cmd_search(args: argparse.Namespace) -> int:
    if not args.all_namespaces:
        raise InputFileError(
            "search reads every tenant's memory; say so with --all-namespaces "
            "(to search one namespace, use select --namespace)"
        )
    entries = _read_entries(args.store)
    if not entries:
        _say_empty(args.store, "nothing to search")
    found = search_all_namespaces(entries, args.query, limit=args.limit, include_inactive=args.include_inactive)
    if args.json:
        groups = [
            {
                "namespace": namespace,
                "hits": [
                    {
                        "id": h.entry.get("id"),
                        "type": h.entry.get("type", "note"),
                        "score": h.score,
                        "matched": list(h.matched),
                        "content": h.entry["content"],
                    }
                    for h in hits
                ],
            }
            for namespace, hits in found.items()
        ]
        print(json.dumps({"query": args.query, "namespaces": groups}, indent=2))
        return 0
    if entries and not found:
        print("no match in any namespace")
    for namespace, hits in found.items():
        label = "(no namespace)" if namespace is None else "namespace %s" % namespace
        print("%s: %d match%s" % (label, len(hits), "" if len(hits) == 1 else "es"))
        for h in hits:
            print(
                "  %-14s %-11s %4.2f  %s"
                % (h.entry.get("id"), h.entry.get("type", "note"), h.score, h.entry["content"][:70])
            )
    return 0


# -- demo -------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    entries = load_store(args.store)
    pools = load_pools(args.pools)
    from .demo import run

    run(entries, pools, sys.stdout, frameworks=not args.core_only)
    return 0


# -- wiring -----------------------------------------------------------------------


def _add_reader(sub: Any, name: str, help_text: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=help_text)
    parser.add_argument("--store", required=True, help="memory.db (SQLite) or a JSON Lines file")
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="poolsplit", description="Pool-split memory selection and long-term memory stores.")
    parser.add_argument("--version", action="version", version="poolsplit-adapters %s" % __version__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sel = _add_reader(sub, "select", "select memory for a query and show what loaded and why the rest did not")
    sel.add_argument("query", help="the message to select memory for")
    sel.add_argument(
        "--pools",
        required=True,
        help="TOML file with [[pool]] tables, or auto: the task plan the adapters' pools='auto' makes",
    )
    sel.add_argument(
        "--total-tokens", type=_positive, help="with --pools auto: the token budget the task plan shares out"
    )
    sel.add_argument("--now", help="reference time (ISO-8601), for reproducible recency")
    sel.add_argument("--project", help="current project")
    sel.add_argument(
        "--spec-scorer",
        action="store_true",
        help="rank with the core spec's default_scorer (recency x0.3 after 90 days) instead of the relevance-first default",
    )
    sel.add_argument("--tag", action="append", help="context tag (repeatable)")
    sel.add_argument("--namespace", action="append", help="namespace to see (repeat for an explicit chain)")
    sel.add_argument("--since", help="only entries created at or after this ISO-8601 time")
    sel.add_argument("--until", help="only entries created at or before this ISO-8601 time")
    sel.add_argument("--json", action="store_true", help="machine-readable output")
    sel.add_argument(
        "--all-dropped",
        action="store_true",
        help="with --json, list every entry that did not load (default: the first %d per pool and reason, "
        "and the counts of all)" % DROPPED_SAMPLE,
    )
    sel.add_argument("--limit", type=_non_negative, default=20, help="dropped rows shown per reason (default 20)")
    sel.set_defaults(func=cmd_select)

    add = sub.add_parser("add", help="add one entry to a SQLite store; prints its id")
    add.add_argument("--store", required=True, help="memory.db (created when missing)")
    add.add_argument("--json", help="the entry as a JSON object ('-': read it from stdin)")
    add.add_argument("--content", help="the text")
    add.add_argument("--type", help='kind of memory (default "note")')
    add.add_argument("--scope", help='"always" for a correction that loads on every query')
    add.add_argument("--tag", action="append", help="tag (repeatable)")
    add.add_argument("--project", help="project")
    add.add_argument("--namespace", help="tenant/project namespace")
    add.add_argument("--source", help="provenance")
    add.add_argument("--priority", help="base_priority (a number, default 5)")
    add.add_argument("--id", help="id (default: a new random one)")
    add.add_argument("--created", help="ISO-8601 creation time (default: now, UTC)")
    add.set_defaults(func=cmd_add)

    forget = sub.add_parser(
        "forget",
        help="delete an entry (and the older versions it superseded), or every entry of a namespace, for good",
    )
    forget.add_argument("id", nargs="?", help="the entry's id")
    forget.add_argument("--namespace", help="forget every entry of this namespace (its bytes leave the file)")
    forget.add_argument("--store", required=True, help="memory.db")
    forget.add_argument("--keep-history", action="store_true", help="keep the versions it superseded")
    forget.set_defaults(func=cmd_forget)

    sweep = sub.add_parser("sweep", help="delete the entries whose 'expires' time has passed")
    sweep.add_argument("--store", required=True, help="memory.db")
    sweep.add_argument("--now", help="judge expiry at this ISO-8601 time (default: now)")
    sweep.set_defaults(func=cmd_sweep)

    imp = sub.add_parser("import", help="copy a JSON Lines store into a SQLite store, in one transaction")
    imp.add_argument("file", help="JSON Lines file")
    imp.add_argument("--into", required=True, help="memory.db (created when missing)")
    imp.set_defaults(func=cmd_import)

    exp = _add_reader(sub, "export", "print every entry as JSON Lines (superseded ones included)")
    exp.add_argument("--namespace", help="only this namespace")
    exp.set_defaults(func=cmd_export)

    search = _add_reader(sub, "search", "operators: find entries in every namespace, grouped by namespace")
    search.add_argument("query", help="words to look for")
    search.add_argument("--all-namespaces", action="store_true", help="required: this reads every tenant's memory")
    search.add_argument("--limit", type=_non_negative, default=10, help="matches shown per namespace (default 10)")
    search.add_argument("--include-inactive", action="store_true", help="also superseded and inactive entries")
    search.add_argument("--json", action="store_true", help="machine-readable output")
    search.set_defaults(func=cmd_search)

    demo = sub.add_parser("demo", help="run the bundled example store")
    demo.add_argument("--store", default=str(bundled_store()))
    demo.add_argument("--pools", default=str(bundled_pools()))
    demo.add_argument("--core-only", action="store_true", help="skip the LangChain and LlamaIndex parts")
    demo.set_defaults(func=cmd_demo)

    add_postgres_commands(sub)
    return parser


_USER_ERRORS: Tuple[Type[BaseException], ...] = (
    InputFileError,
    ValueError,  # EntryError and the core's argument checks
    StoreError,
    EntryNotFound,
    ServerError,  # the local Postgres: not installed, refused folder, did not start
    sqlite3.Error,
    OSError,
)


def _store_file(args: argparse.Namespace) -> str:
    """The store file a command works on (``--store``, ``--into``)."""
    return str(getattr(args, "store", None) or getattr(args, "into", None) or "store")


def _warn_one_line(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
    print("poolsplit: warning: %s" % _one_line(str(message)), file=sys.stderr)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = _warn_one_line
        try:
            return int(args.func(args))
        except BrokenPipeError:  # e.g. `poolsplit export ... | head`: the reader has enough
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        except sqlite3.Error as exc:
            # Raised by SQLite itself (a page found corrupt mid-query, say):
            # the store names its file; say which file when it did not.
            name, text = _store_file(args), _one_line(str(exc))
            print(
                "poolsplit: %s" % (text if text.startswith(name + ": ") else "%s: %s" % (name, text)), file=sys.stderr
            )
            return 2
        except _USER_ERRORS as exc:
            text = _one_line(str(exc))
            if isinstance(exc, EntryError) and args.func in (cmd_select, cmd_export, cmd_search):
                # an entry a read found malformed is in the store file (a JSON Lines one names its line)
                text = text if text.startswith(args.store + ":") else "%s: %s" % (args.store, text)
            print("poolsplit: %s" % text, file=sys.stderr)
            return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
