"""A separate process writing to or reading from one SQLite store, for the
multi-process tests in test_store_processes.py (run as a script).

    writer PATH NAME BATCHES SIZE LOG     add BATCHES batches; log "start b" / "done b ids..."
    reader PATH DONE_FLAG LOG             query until DONE_FLAG exists; log violations and counts
    forever PATH NAME SIZE LOG            add batches until killed
    mutate PATH                           add, supersede and delete (for the in-step test)
"""

from __future__ import annotations

import json
import os
import sys
import time

from poolsplit_adapters import Pool
from poolsplit_adapters.stores import SQLiteMemoryStore

POOLS = [Pool("always", 0, 0, ("correction",)), Pool("all", 10**9, 10**9)]


def entry(name: str, batch: int, n: int, size: int) -> dict:
    return {
        "id": "%s-b%d-e%d" % (name, batch, n),
        "type": "fact",
        "content": "%s wrote entry %d of batch %d " % (name, n, batch) + "x" * 200,
        "tags": [name, "b%d" % batch],
        "batch": "%s-b%d" % (name, batch),
        "batch_size": size,
        "seal": "end",
    }


def log(handle, text: str) -> None:
    handle.write(text + "\n")
    handle.flush()
    os.fsync(handle.fileno())


def writer(path: str, name: str, batches: int, size: int, log_path: str) -> None:
    store = SQLiteMemoryStore(path)
    with open(log_path, "a", encoding="utf-8") as out:
        for b in range(batches):
            log(out, "start %d" % b)
            ids = store.add([entry(name, b, n, size) for n in range(size)])
            log(out, "done %d %s" % (b, " ".join(ids)))


def forever(path: str, name: str, size: int, log_path: str) -> None:
    writer(path, name, 10**9, size, log_path)


def complete(e: dict) -> bool:
    expected = entry(e["batch"].split("-b")[0], int(e["batch"].split("-b")[1]), 0, e["batch_size"])
    return e.get("seal") == "end" and e["content"].endswith("x" * 200) and e["tags"][0] == expected["tags"][0]


def reader(path: str, done_flag: str, log_path: str) -> None:
    store = SQLiteMemoryStore(path)
    violations, queries, last = [], 0, 0
    deadline = time.monotonic() + 120
    while True:
        finished = os.path.exists(done_flag)
        selected = store.select(POOLS, {"message": "entry"}).entries()
        queries += 1
        batches: dict = {}
        for e in selected:
            if not complete(e):
                violations.append("partial entry %r" % e.get("id"))
            batches.setdefault(e["batch"], []).append(e)
        for batch, members in batches.items():
            if len(members) != members[0]["batch_size"]:
                violations.append(
                    "batch %s seen with %d of %d entries" % (batch, len(members), members[0]["batch_size"])
                )
        if len(selected) < last:
            violations.append("count went down from %d to %d" % (last, len(selected)))
        last = len(selected)
        if finished or time.monotonic() > deadline:
            break
    in_file = sorted(e["id"] for e in store.entries())
    in_index = sorted(e["id"] for e in selected)
    with open(log_path, "w", encoding="utf-8") as out:
        json.dump(
            {
                "violations": violations[:20],
                "queries": queries,
                "index_matches_file": in_file == in_index,
                "full_loads": store.full_loads,
                "seen": last,
            },
            out,
        )


def mutate(path: str) -> None:
    store = SQLiteMemoryStore(path)
    store.add([{"id": "new-1", "type": "fact", "content": "written by another process"}])
    store.supersede("old-1", {"id": "old-1-v2", "type": "fact", "content": "the corrected fact"})
    store.delete("gone-1")


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "writer":
        writer(rest[0], rest[1], int(rest[2]), int(rest[3]), rest[4])
    elif command == "forever":
        forever(rest[0], rest[1], int(rest[2]), rest[3])
    elif command == "reader":
        reader(rest[0], rest[1], rest[2])
    elif command == "mutate":
        mutate(rest[0])
    else:
        raise SystemExit("unknown command %r" % command)
