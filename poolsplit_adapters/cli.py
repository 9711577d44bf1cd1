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
from collections import Counter
from typing import Any, Dict, List, Optional, Sequence

from .poolsplit import Pool, Selection, select
from .render import explain, render_context
from .store import InputFileError, load_pools, load_store

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
DEMO_NOW = datetime.datetime(2026, 11, 20, 9, 0, 0)
DEMO_QUERIES = [
    ("checkout", ["money"], "rounding bug in refunds"),
    ("pipeline", ["etl"], "why is the Monday dedupe job slow"),
    (None, ["review"], "prepare the pull request for review"),
]


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


def _type_counts(entries: Sequence[Any]) -> Counter[str]:
    return Counter(e.get("type", "note") for e in entries)


def core_demo(entries: List[Dict[str, Any]], pools: List[Pool], out: Any) -> None:
    """Pools vs one shared budget of the same total size, on each demo query."""
    total_tokens = sum(p.max_tokens for p in pools)
    total_entries = sum(p.max_entries for p in pools)
    single = [Pool("single", total_tokens, total_entries)]
    corrections = [e for e in entries if e.get("scope") == "always"]
    for project, tags, message in DEMO_QUERIES:
        context = {"project": project, "tags": tags, "message": message}
        pooled = select(entries, pools, context, now=DEMO_NOW)
        # The usual retrieval: one budget, corrections ranked like everything else.
        flat = [{k: v for k, v in e.items() if k != "scope"} for e in entries]
        shared = select(flat, single, context, now=DEMO_NOW)
        print("=" * 78, file=out)
        print("query: %r  (project=%s, tags=%s)" % (message, project, tags), file=out)
        print(explain(pooled, limit=3), file=out)
        a, b = _type_counts(shared.entries()), _type_counts(pooled.entries())
        print("\nloaded per type       one shared budget   pools", file=out)
        for kind in ["correction", "task", "fact", "note", "episode", "skill", "growth"]:
            print("  %-20s %8d %14d" % (kind, a.get(kind, 0), b.get(kind, 0)), file=out)
        print(
            "  corrections present: shared %d/%d, pools %d/%d"
            % (a.get("correction", 0), len(corrections), b.get("correction", 0), len(corrections)),
            file=out,
        )
    print("=" * 78, file=out)
    context = {"project": "checkout", "tags": ["money"], "message": DEMO_QUERIES[0][2]}
    rendered = render_context(select(entries, pools, context, now=DEMO_NOW))
    print("what the model receives for the first query:\n", file=out)
    print(rendered.text, file=out)


def cmd_demo(args: argparse.Namespace) -> int:
    entries = load_store(args.store)
    pools = load_pools(args.pools)
    print("store: %s (%d entries), pools: %s" % (args.store, len(entries), ", ".join(p.name for p in pools)))
    core_demo(entries, pools, sys.stdout)
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
