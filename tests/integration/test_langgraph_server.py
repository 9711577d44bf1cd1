"""PoolSplitMemoryMiddleware under the real LangGraph server (``langgraph
dev``, in-memory runtime, loopback only), driven through ``langgraph-sdk``.

The suite starts the server on a free port over a copy of
``tests/server_graph`` (the graph and its ``langgraph.json``), seeds each
user's corrections through the SDK's store API, and runs 4 users x 5
threads concurrently, 20 runs a thread. The graph's fake model records the
system message of every call in the server's store (``("probe",
thread_id)``), which the test reads back. Then the server is stopped and
started again over the same directory (the in-memory runtime pickles its
store and checkpoints to ``.langgraph_api/`` there), and the memories must
be recalled.

Checked: every model call carries its user's corrections first; no call
carries another user's memory; every demoted turn is in the user's
namespace (nothing evicted is lost); after the restart the store is
unchanged and recalled, and an old thread goes on where it stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Optional

import pytest
from doc_blocks import ROOT, claimed_output, code_blocks

from poolsplit_adapters.render import parse_markers

if sys.version_info < (3, 11) and not os.environ.get("CI"):
    pytest.skip("the LangGraph server (langgraph-api) needs Python >= 3.11", allow_module_level=True)

from langgraph_sdk import get_client  # noqa: E402

APP = ROOT / "tests" / "server_graph"
DOCS_PAGE = "docs/adapters/agents.md"
#: The address the docs' client example uses; replaced by the test server's.
DOCS_URL = "http://127.0.0.1:2024"

#: The docs example (run last, against the same server) is Ana's: not one of these.
USERS = ["ben", "chen", "dara", "eve"]
THREADS_PER_USER = 5
RUNS_PER_THREAD = 20
#: Runs (by index) that ask the agent to save a note with the remember tool.
REMEMBER_RUNS = (5, 12)
MAX_TURNS = 2  # tests/server_graph/agent.py keeps this many turns verbatim
STARTUP_SECONDS = 90

#: What switches off every call the server and its CLI make beyond
#: loopback (each found in the installed packages' source): the CLI's usage
#: analytics (langgraph_cli/analytics.py), the PyPI version check
#: (langgraph_api/cli.py), LangSmith tracing and the Studio origin lookup
#: (langsmith.utils.tracing_is_enabled). No license key is set, so the
#: metadata beacon (langgraph_api/metadata.py) does not start.
OFFLINE_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGSMITH_TRACING_V2": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGCHAIN_TRACING": "false",
}
REMOVED_ENV = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGGRAPH_CLOUD_LICENSE_KEY", "LANGSMITH_ENDPOINT")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class DevServer:
    """One ``langgraph dev`` process over ``app`` (its working directory,
    where the runtime persists), on a free loopback port; stopped by pid."""

    def __init__(self, app: pathlib.Path, log: pathlib.Path, net_log: pathlib.Path) -> None:
        self.app, self.log, self.net_log = app, log, net_log
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.url = ""
        #: More environment for the server (e.g. a store's connection string).
        self.env: dict[str, str] = {}

    def start(self) -> DevServer:
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if k not in REMOVED_ENV}
        env.update(OFFLINE_ENV)
        # The offline guard first, then this clone (not whatever is installed).
        env["PYTHONPATH"] = os.pathsep.join([str(self.app / "offline"), str(ROOT)])
        env["POOLSPLIT_NET_LOG"] = str(self.net_log)
        env.update(self.env)
        command = [
            sys.executable,
            "-m",
            "langgraph_cli",
            "dev",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-browser",
            "--no-reload",
            # One worker runs this many runs at once (the dev default is 1:
            # the 20 threads would queue behind each other).
            "--n-jobs-per-worker",
            str(len(USERS) * THREADS_PER_USER),
        ]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                command, cwd=self.app, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.url = "http://127.0.0.1:%d" % port
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("the server exited with %s:\n%s" % (self.proc.returncode, self.tail()))
            try:
                with urllib.request.urlopen(self.url + "/ok", timeout=2) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        self.stop()
        raise AssertionError("the server did not answer /ok in %ds:\n%s" % (STARTUP_SECONDS, self.tail()))

    def stop(self) -> Optional[int]:
        """Ask the server to shut down (SIGINT: uvicorn's graceful stop,
        which writes the runtime's files); kill it if it does not. Returns
        the exit code (None when it had to be killed)."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return None if proc is None else proc.returncode
        os.kill(proc.pid, signal.SIGINT)
        try:
            return proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: the group is its pid
            proc.wait(timeout=10)
            return None

    def tail(self, lines: int = 60) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


@pytest.fixture
def dev_server(tmp_path: pathlib.Path) -> Iterator[DevServer]:
    app = tmp_path / "app"
    shutil.copytree(APP, app, ignore=shutil.ignore_patterns("__pycache__", ".langgraph_api"))
    server = DevServer(app, tmp_path / "server.log", tmp_path / "network.log")
    try:
        yield server
    finally:
        server.stop()


def _fixes(user: str) -> dict[str, dict[str, Any]]:
    return {
        "%s-fix-%d" % (user, n): {
            "content": "[%s] standing correction %d: %s" % (user, n, text),
            "type": "correction",
            "scope": "always",
            "created": "2026-01-0%dT00:00:00Z" % n,
            "source": "user-feedback",
        }
        for n, text in ((1, "quote money in integer cents"), (2, "never force-push to main"))
    }


def _note(user: str, t: int, run: int) -> str:
    return "[%s] note from thread %d run %d: the %s project uses tabs" % (user, t, run, user)


@dataclass(frozen=True)
class Workload:
    """Users x threads, all at once; each thread a conversation of ``runs``
    runs, of which the ``REMEMBER_RUNS`` save a note."""

    users: tuple[str, ...]
    threads: int
    runs: int

    @property
    def remember_runs(self) -> list[int]:
        return [run for run in REMEMBER_RUNS if run < self.runs]

    def text(self, user: str, t: int, run: int) -> str:
        if run in self.remember_runs:
            return "remember=" + _note(user, t, run)
        return "[%s] thread %d run %d: status of the %s deploy?" % (user, t, run, user)

    def last_note(self, user: str) -> str:
        """The note the question after the restart asks about."""
        return _note(user, self.threads - 1, self.remember_runs[-1])


async def _run(client: Any, thread_id: str, user: str, text: str) -> dict[str, Any]:
    result = await client.runs.wait(
        thread_id,
        "agent",
        input={"messages": [{"role": "user", "content": text}]},
        context={"user_id": user},
        raise_error=True,
    )
    assert isinstance(result, dict) and result["messages"][-1]["content"] == "ok: " + text, result
    return result


async def _items(client: Any, namespace: list[str]) -> dict[str, dict[str, Any]]:
    """Every item under ``namespace`` exactly (not its children), by key."""
    found: dict[str, dict[str, Any]] = {}
    page = await client.store.search_items(namespace, limit=1000)
    assert len(page["items"]) < 1000  # one page holds them all
    for item in page["items"]:
        if item["namespace"] == namespace:
            found[item["key"]] = item["value"]
    return found


def _calls(probes: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One thread's recorded model calls, with their markers."""
    return [{**p, "markers": parse_markers(p["system"])} for p in probes.values()]


async def _first_session(url: str, work: Workload) -> dict[str, Any]:
    """Seed the corrections, run every thread's conversation at once, and
    read back the users' memories, the model calls and the threads' state."""
    client = get_client(url=url)
    for user in work.users:
        for key, value in _fixes(user).items():
            await client.store.put_item(["memories", user], key, value)
    threads = {
        (user, t): (await client.threads.create(metadata={"user": user}))["thread_id"]
        for user in work.users
        for t in range(work.threads)
    }

    async def conversation(user: str, t: int) -> None:
        for run in range(work.runs):
            await _run(client, threads[user, t], user, work.text(user, t, run))

    started = time.monotonic()
    await asyncio.gather(*(conversation(user, t) for (user, t) in threads))
    elapsed = time.monotonic() - started
    users = list(work.users)
    memories = dict(zip(users, await asyncio.gather(*(_items(client, ["memories", u]) for u in users))))
    probes = dict(zip(threads, await asyncio.gather(*(_items(client, ["probe", t]) for t in threads.values()))))
    states = dict(zip(threads, await asyncio.gather(*(client.threads.get_state(t) for t in threads.values()))))
    states = {key: state["values"] for key, state in states.items()}
    return {"threads": threads, "memories": memories, "probes": probes, "states": states, "elapsed": elapsed}


def _check_first_session(found: dict[str, Any], work: Workload) -> None:
    memories, threads = found["memories"], found["threads"]
    owner = {key: user for user, items in memories.items() for key in items}
    assert len(owner) == sum(len(items) for items in memories.values())  # no key in two users' memory
    for (user, t), tid in threads.items():
        calls = _calls(found["probes"][user, t])
        # One model call a run, two for a run that calls the remember tool.
        assert len(calls) == work.runs + len(work.remember_runs)
        others = ["[%s]" % u for u in work.users if u != user]
        for call in calls:
            ids = [m["id"] for m in call["markers"]]
            # Every call carries this user's corrections, first.
            assert ids[:2] == ["%s-fix-1" % user, "%s-fix-2" % user], (user, t, call["human"], ids)
            # ... and only this user's memory.
            assert all(owner.get(i) == user for i in ids), (user, t, ids)
            assert not [o for o in others if o in call["system"]], (user, t, call["system"])

        # Nothing evicted is lost: each demoted turn is an episode of this
        # thread in the user's namespace; the state keeps the pinned goal
        # (the first message) and the last MAX_TURNS turns.
        mine = [v for v in memories[user].values() if v.get("source") == "thread:%s" % tid and v["type"] == "episode"]
        assert len(mine) == 2 * (work.runs - MAX_TURNS)  # the user's side and the answer of each
        assert all(v["type"] == "episode" for v in mine)
        kept = [m["content"] for m in found["states"][user, t]["messages"] if m["type"] == "human"]
        sent = [work.text(user, t, run) for run in range(work.runs)]
        assert kept == [sent[0], *sent[-MAX_TURNS:]]
        for text in sent[: work.runs - MAX_TURNS]:
            assert sum(v["content"] == "user: %s" % text for v in mine) == 1, text  # the user's side, whole
        notes = sorted(v["content"] for v in memories[user].values() if v.get("source") == "agent:thread:%s" % tid)
        assert notes == sorted(_note(user, t, run) for run in work.remember_runs)
    for user in work.users:
        assert {k: memories[user][k] for k in _fixes(user)} == _fixes(user)
        said = [v for v in memories[user].values() if v["type"] not in ("fact", "instruction", "preference")]
        assert len(said) == 2 + work.threads * (2 * (work.runs - MAX_TURNS) + len(work.remember_runs))


async def _second_session(url: str, work: Workload, first: dict[str, Any], *, resume: bool) -> dict[str, Any]:
    """After the restart: the users' memories, and one new thread per user
    asking about its last note; with ``resume``, one more turn on an old thread."""
    client = get_client(url=url)
    users = list(work.users)
    memories = dict(zip(users, await asyncio.gather(*(_items(client, ["memories", u]) for u in users))))
    recalled = {}
    for user in users:
        thread = (await client.threads.create())["thread_id"]
        await _run(client, thread, user, "which note said: %s?" % work.last_note(user))
        [call] = _calls(await _items(client, ["probe", thread]))
        recalled[user] = call
    resumed = None
    if resume:
        # An old thread resumes from its persisted checkpoint: one more turn
        # demotes one more of its turns.
        user, t = users[0], 0
        old = first["threads"][user, t]
        await _run(client, old, user, work.text(user, t, work.runs))
        after = await _items(client, ["memories", user])
        resumed = len([v for v in after.values() if v.get("source") == "thread:%s" % old and v["type"] == "episode"])
    return {"memories": memories, "recalled": recalled, "resumed_episodes": resumed}


def _check_recalled(second: dict[str, Any], work: Workload, first: dict[str, Any]) -> None:
    """The store came back as it was left, and is recalled: corrections
    first, only the user's own entries, the note asked about among them."""
    assert second["memories"] == first["memories"]
    for user, call in second["recalled"].items():
        ids = [m["id"] for m in call["markers"]]
        assert ids[:2] == ["%s-fix-1" % user, "%s-fix-2" % user]
        assert set(ids) <= set(first["memories"][user])
        [wanted] = [k for k, v in first["memories"][user].items() if v["content"] == work.last_note(user)]
        assert wanted in ids, (user, ids)


def _docs_example() -> str:
    [(_, _, code)] = [block for block in code_blocks("python {.server}") if block[0] == DOCS_PAGE]
    assert DOCS_URL in code
    return code


def _docs_configs() -> list[dict[str, Any]]:
    """The page's langgraph.json examples: the plain one, then one with a store."""
    return [json.loads(code) for page, _, code in code_blocks("json") if page == DOCS_PAGE]


def _no_network(server: DevServer) -> None:
    assert not server.net_log.exists() or server.net_log.read_text(encoding="utf-8") == ""


def _quiet_log(server: DevServer) -> None:
    """The server logged no warning, error or traceback (a blocking call in
    the event loop, a failed background task) in either session. Its startup
    timers (``langgraph_api.timing``: graph import over 3 s) are left out:
    they measure this machine's load, and no test here is timed."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", server.log.read_text(encoding="utf-8", errors="replace"))
    records = re.split(r"(?m)^(?=\d{4}-\d\d-\d\dT)", text)  # a record may span lines
    loud = [
        record
        for record in records
        if re.search(r"\[(warning|error|critical)\b|Traceback", record) and "[langgraph_api.timing." not in record
    ]
    assert loud == [], "\n".join(loud[:20])


WORKLOAD = Workload(tuple(USERS), THREADS_PER_USER, RUNS_PER_THREAD)


def test_agents_under_the_langgraph_server_keep_corrections_tenants_and_memories_across_a_restart(dev_server):
    first = asyncio.run(_first_session(dev_server.start().url, WORKLOAD))
    exit_code = dev_server.stop()
    assert exit_code == 0, dev_server.tail()
    _check_first_session(first, WORKLOAD)

    url = dev_server.start().url
    second = asyncio.run(_second_session(url, WORKLOAD, first, resume=True))
    # The docs' client example, against this server: what it prints is what the page says.
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(_docs_example().replace(DOCS_URL, url), DOCS_PAGE, "exec"), {"__name__": "docs_example"})
    assert printed.getvalue().splitlines() == claimed_output(_docs_example())
    assert dev_server.stop() == 0, dev_server.tail()
    _check_recalled(second, WORKLOAD, first)
    assert second["resumed_episodes"] == 2 * (WORKLOAD.runs - MAX_TURNS + 1)  # two sides a demoted turn
    _no_network(dev_server)
    _quiet_log(dev_server)


def test_memories_in_a_postgres_store_named_in_langgraph_json_outlive_the_server_and_its_files(dev_server, pg_database):
    """The docs' langgraph.json with a ``store`` section: LangGraph's
    AsyncPostgresStore (tests/server_graph/store.py, the page's example)
    under the server. The server's own files are deleted between the two
    runs: what is recalled came from Postgres."""
    from langgraph.store.postgres import PostgresStore

    work = Workload(("fay", "gus"), 2, 8)
    [_, with_store] = _docs_configs()
    (dev_server.app / "langgraph.json").write_text(json.dumps(with_store), encoding="utf-8")
    dev_server.env["MEMORY_STORE_URI"] = pg_database.conninfo
    first = asyncio.run(_first_session(dev_server.start().url, work))
    assert dev_server.stop() == 0, dev_server.tail()
    _check_first_session(first, work)
    with PostgresStore.from_conn_string(pg_database.conninfo) as store:
        for user in work.users:
            items = store.search(("memories", user), limit=1000)
            in_postgres = {i.key: i.value for i in items if tuple(i.namespace) == ("memories", user)}
            assert in_postgres == first["memories"][user]

    shutil.rmtree(dev_server.app / ".langgraph_api")
    second = asyncio.run(_second_session(dev_server.start().url, work, first, resume=False))
    assert dev_server.stop() == 0, dev_server.tail()
    _check_recalled(second, work, first)
    _no_network(dev_server)
    _quiet_log(dev_server)


def test_the_docs_show_the_langgraph_json_and_store_the_server_tests_serve():
    plain, with_store = _docs_configs()
    assert plain == json.loads((APP / "langgraph.json").read_text(encoding="utf-8"))
    assert with_store == {**plain, "store": {"path": "./store.py:make_store"}}
    [store_py] = [code for page, _, code in code_blocks("python") if page == DOCS_PAGE and "make_store" in code]
    assert store_py == (APP / "store.py").read_text(encoding="utf-8")
