"""The ``poolsplit`` command: select from a store, or run the demo.

``poolsplit select --store FILE.jsonl --pools FILE.toml "query"`` prints what
loads and why the rest did not, then the rendered context. ``poolsplit demo``
(and ``make demo``) runs the bundled example store. Bad files exit with code 2
and one line naming the file and place, no traceback.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import sys
from typing import Any, Dict, Optional, Sequence

from .poolsplit import Selection, select
from .render import explain, render_context
from .store import InputFileError, load_pools, load_store

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _parse_now(text: Optional[str]) -> Optional[datetime.datetime]:
    if text is None:
        return None
    try:
        return datetime.datetime.fromisoformat(text.rstrip("Z"))
    except ValueError:
        raise InputFileError("--now: not an ISO-8601 time: %r" % text) from None


def _selection_json(selection: Selection) -> Dict[str, Any]:
    return {
        "chosen": [
            {
                "pool": c.pool,
                "id": c.entry.get("id"),
                "type": c.entry.get("type", "note"),
                "always": c.always,
                "score": c.score,
                "tokens": c.cost,
            }
            for c in selection.chosen
        ],
        "dropped": [
            {
                "id": d.entry.get("id"),
                "index": d.index,
                "reason": d.reason,
                "pool": d.pool,
                "score": d.score,
                "tokens": d.cost,
            }
            for d in selection.dropped
        ],
        "stats": {name: vars(stat) for name, stat in selection.stats.items()},
        "context": render_context(selection).text,
    }


def cmd_select(args: argparse.Namespace) -> int:
    entries = load_store(args.store)
    pools = load_pools(args.pools)
    context = {"message": args.query, "tags": args.tag or [], "project": args.project}
    selection = select(entries, pools, context, now=_parse_now(args.now))
    if args.json:
        print(json.dumps(_selection_json(selection), indent=2))
    else:
        print(explain(selection, limit=args.limit))
        print("\n--- rendered context ---")
        print(render_context(selection).text)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    entries = load_store(args.store)
    pools = load_pools(args.pools)
    from .demo import run

    run(entries, pools, sys.stdout, frameworks=not args.core_only)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="poolsplit", description="Pool-split memory selection.")
    sub = parser.add_subparsers(dest="command", required=True)
    sel = sub.add_parser("select", help="select from a JSONL store with a TOML pool plan")
    sel.add_argument("query", help="the message to select memory for")
    sel.add_argument("--store", required=True, help="JSON Lines file, one entry per line")
    sel.add_argument("--pools", required=True, help="TOML file with [[pool]] tables")
    sel.add_argument("--now", help="reference time (ISO-8601), for reproducible recency")
    sel.add_argument("--project", help="current project")
    sel.add_argument("--tag", action="append", help="context tag (repeatable)")
    sel.add_argument("--json", action="store_true", help="machine-readable output")
    sel.add_argument("--limit", type=int, default=20, help="dropped rows shown per reason")
    sel.set_defaults(func=cmd_select)
    demo = sub.add_parser("demo", help="run the bundled example store")
    demo.add_argument("--store", default=str(EXAMPLES / "memory.jsonl"))
    demo.add_argument("--pools", default=str(EXAMPLES / "pools.toml"))
    demo.add_argument("--core-only", action="store_true", help="skip the LangChain and LlamaIndex parts")
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except InputFileError as exc:
        print("poolsplit: %s" % exc, file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
