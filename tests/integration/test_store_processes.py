"""The SQLite store under real processes: concurrent writers and readers on
one file, a writer killed with SIGKILL in the middle of a batch, and a
long-lived store kept in step with another process's writes."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import sqlite3
import subprocess
import sys
import time

from poolsplit_adapters import Pool
from poolsplit_adapters.stores import SQLiteMemoryStore

WORKER = str(pathlib.Path(__file__).resolve().parents[1] / "_store_worker.py")
ROOT = str(pathlib.Path(__file__).resolve().parents[2])
ALL = [Pool("all", 10**9, 10**9)]


def spawn(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.Popen([sys.executable, WORKER, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(proc: subprocess.Popen, timeout: float = 120) -> None:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err.decode()


def acknowledged(log: pathlib.Path) -> dict:
    """batch number -> ids, for every batch whose add() returned."""
    done = {}
    for line in log.read_text().splitlines():
        word, batch, *ids = line.split()
        if word == "done":
            done[int(batch)] = ids
    return done


def test_four_writers_two_readers_lose_nothing_and_see_no_partial_entry(tmp_path):
    db = tmp_path / "memory.db"
    SQLiteMemoryStore(db).close()  # create the schema once, before the race
    batches, size = 15, 20
    writers = [
        spawn("writer", str(db), "w%d" % n, str(batches), str(size), str(tmp_path / ("w%d.log" % n))) for n in range(4)
    ]
    flag = tmp_path / "writers-done"
    readers = [spawn("reader", str(db), str(flag), str(tmp_path / ("r%d.json" % n))) for n in range(2)]
    for proc in writers:
        finish(proc)
    flag.touch()
    for proc in readers:
        finish(proc)

    acked = [i for n in range(4) for ids in acknowledged(tmp_path / ("w%d.log" % n)).values() for i in ids]
    assert len(acked) == 4 * batches * size
    with SQLiteMemoryStore(db) as store:
        stored = [e["id"] for e in store.entries()]
    assert len(stored) == len(set(stored)) == 4 * batches * size
    assert set(stored) == set(acked)
    for n in range(2):
        report = json.loads((tmp_path / ("r%d.json" % n)).read_text())
        assert report["violations"] == []
        assert report["seen"] == 4 * batches * size
        assert report["index_matches_file"] is True
        assert report["queries"] >= 2
        # Kept in step incrementally: one warm start, then only changes.
        assert report["full_loads"] == 1


def test_sigkill_mid_batch_keeps_every_acknowledged_write_and_no_partial_batch(tmp_path):
    db = tmp_path / "memory.db"
    SQLiteMemoryStore(db).close()
    size = 400  # one add() of 400 entries takes ~20 ms here: the delays below land all over it
    for round_no, delay in enumerate([0.0, 0.004, 0.008, 0.012, 0.016, 0.025]):
        name = "k%d" % round_no
        log = tmp_path / ("%s.log" % name)
        log.touch()
        proc = spawn("forever", str(db), name, str(size), str(log))
        deadline = time.monotonic() + 60
        while "start 2" not in log.read_text():
            assert time.monotonic() < deadline, "writer made no progress"
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            time.sleep(0.002)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        acked = acknowledged(log)
        last = max(acked)
        assert sorted(acked) == list(range(last + 1)) and last >= 1
        with SQLiteMemoryStore(db) as store:
            mine = [e for e in store.entries() if e["id"].startswith(name + "-")]
        by_batch: dict = {}
        for e in mine:
            by_batch.setdefault(e["batch"], []).append(e["id"])
        for batch in range(last + 1):
            assert sorted(by_batch.pop("%s-b%d" % (name, batch))) == sorted(acked[batch])
        # The batch in flight is all there (committed just before the kill,
        # unacknowledged) or not at all; never a part of it.
        assert {k: len(v) for k, v in by_batch.items()} in ({}, {"%s-b%d" % (name, last + 1): size})
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_long_lived_store_sees_another_process_on_its_next_query_without_reload(tmp_path):
    db = tmp_path / "memory.db"
    store = SQLiteMemoryStore(db)
    store.add(
        [
            {"id": "old-1", "type": "fact", "content": "the first wording"},
            {"id": "gone-1", "type": "fact", "content": "to be forgotten"},
            {"id": "kept-1", "type": "fact", "content": "untouched"},
        ]
    )
    # Equal scores: ranked by created, then id.
    assert [e["id"] for e in store.select(ALL).entries()] == ["gone-1", "kept-1", "old-1"]
    assert store.full_loads == 1
    version = store.version
    finish(spawn("mutate", str(db)))
    assert store.version == version + 4  # one add, a supersede (two rows), one delete
    selection = store.select(ALL)
    assert sorted(e["id"] for e in selection.entries()) == ["kept-1", "new-1", "old-1-v2"]
    assert [(d.entry["id"], d.reason) for d in selection.dropped] == [("old-1", "inactive")]
    assert store.get("old-1")["superseded_by"] == "old-1-v2"
    assert store.get("gone-1") is None
    assert store.full_loads == 1
    store.close()
