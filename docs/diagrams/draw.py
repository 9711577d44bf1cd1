"""Draw the lifecycle diagrams of the docs as SVG (matplotlib, offline).

    python docs/diagrams/draw.py

Writes ``docs/diagrams/write_path.svg`` (a turn, a note, a flush or a host's
write, through the gate and the store's checks to the store; the working
set lets go of a turn only after its write returned) and
``docs/diagrams/read_path.svg`` (a query, each pool's candidates and the
corrections, the fill, the rendered block with its omission line). The
rendered block on the read path is not typed in: it is what
``render_context`` gives for a small selection made here by the core.
Each box names the module that does what it says, so the picture can be
checked against the code.
"""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Optional, Sequence, Tuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

HERE = Path(__file__).resolve().parent

plt.rcParams.update({"font.size": 9, "svg.hashsalt": "poolsplit-adapters-diagrams"})

#: Fill colours by role: where data comes from, what the package does, where it ends, what is optional.
SOURCE = "#e8f1fa"
STEP = "#fff4dc"
STORE = "#e6f4e6"
SIDE = "#f3f3f3"
EDGE = "#4a4a4a"


def canvas(width: float, height: float) -> Tuple[plt.Figure, plt.Axes]:
    """A figure whose data coordinates are inches from the bottom left."""
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    return fig, ax


def box(
    ax: plt.Axes,
    x: float,
    y: float,
    w: float,
    h: float,
    title: str,
    body: Sequence[str] = (),
    colour: str = STEP,
    dashed: bool = False,
    mono: bool = False,
    size: float = 8.5,
) -> Tuple[float, float, float, float]:
    """A rounded box with (x, y) its bottom left, a bold title and body lines."""
    ax.add_patch(
        FancyBboxPatch(
            (x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.08", facecolor=colour, edgecolor=EDGE,
            linewidth=1.0, linestyle="--" if dashed else "-",
        )
    )  # fmt: skip
    top = y + h - 0.1
    ax.text(x + w / 2, top, title, ha="center", va="top", fontsize=size + 0.5, fontweight="bold")
    if body:
        ax.text(
            x + (0.1 if mono else w / 2), top - 0.24, "\n".join(body), ha="left" if mono else "center", va="top",
            fontsize=size - (1.0 if mono else 0), family="monospace" if mono else None, linespacing=1.3,
        )  # fmt: skip
    return x, y, w, h


def arrow(
    ax: plt.Axes,
    start: Tuple[float, float],
    end: Tuple[float, float],
    label: Optional[str] = None,
    dashed: bool = False,
    bend: float = 0.0,
    where: Tuple[float, float] = (0.0, 0.0),
) -> None:
    """An arrow from ``start`` to ``end``; ``label`` beside its middle (moved by ``where``)."""
    ax.add_patch(
        FancyArrowPatch(
            start, end, arrowstyle="-|>", mutation_scale=12, color=EDGE, linewidth=1.1,
            linestyle="--" if dashed else "-", connectionstyle="arc3,rad=%s" % bend, shrinkA=2, shrinkB=2,
        )
    )  # fmt: skip
    if label:
        mx, my = (start[0] + end[0]) / 2 + where[0], (start[1] + end[1]) / 2 + where[1]
        ax.text(mx, my, label, ha="center", va="center", fontsize=7.5, style="italic",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})  # fmt: skip


def elbow(ax: plt.Axes, points: Sequence[Tuple[float, float]]) -> None:
    """An arrow along straight segments through ``points`` (right angles)."""
    xs, ys = zip(*points[:-1])
    ax.plot(xs, ys, color=EDGE, linewidth=1.1, solid_capstyle="butt")
    arrow(ax, points[-2], points[-1])


def bottom(b: Tuple[float, float, float, float], at: float = 0.5) -> Tuple[float, float]:
    return b[0] + b[2] * at, b[1]


def top(b: Tuple[float, float, float, float], at: float = 0.5) -> Tuple[float, float]:
    return b[0] + b[2] * at, b[1] + b[3]


def side(b: Tuple[float, float, float, float], right: bool = True, at: float = 0.5) -> Tuple[float, float]:
    return (b[0] + b[2] if right else b[0]), b[1] + b[3] * at


def save(fig: plt.Figure, name: str) -> Path:
    path = HERE / (name + ".svg")
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    print("diagram written to %s" % path)
    return path


# -- the write path ----------------------------------------------------------


def write_path() -> Path:
    fig, ax = canvas(10, 10.6)
    ax.text(5, 10.35, "The write path: from a turn to the store", ha="center", va="center", fontsize=13,
            fontweight="bold")  # fmt: skip

    # Where writes come from.
    y = 8.95
    note = box(ax, 0.15, y, 1.85, 1.05, "remember(note)", ["the agent's tool"], SOURCE)
    said = box(ax, 2.15, y, 1.85, 1.05, "User's message", ["when its run ends", "(middleware)"], SOURCE)
    flush = box(ax, 4.15, y, 1.85, 1.05, "LlamaIndex flush", ["Memory's oldest", "chat lines"], SOURCE)
    turn = box(ax, 6.15, y, 1.85, 1.05, "Demoted turn", ["the oldest beyond", "max_turns (middleware)"], SOURCE)
    working = box(
        ax, 8.15, 6.3, 1.7, 3.7, "Working set",
        ["the checkpointed", "state: the goal,", "the last max_turns", "turns, open tool", "calls (a call and", "its result stay",
         "together)", "", "a demoted turn", "leaves it only", "when every part", "of it is stored"], SIDE,
    )  # fmt: skip
    arrow(ax, side(working, right=False, at=0.85), side(turn, at=0.6))

    # A turn and a flushed line become entries.
    y = 7.0
    standing = box(
        ax, 2.15, y, 1.85, 1.4, "Standing",
        ["memory/standing.py", "the user's sentences,", "verbatim: instruction,", "preference, fact"],
    )  # fmt: skip
    sides = box(
        ax, 4.15, y, 3.85, 1.4, "Entries of an exchange",
        ["memory/turns.py, memory/parts.py", "each side its own episode, one exchange id;",
         "a side over 1,000 characters in parts", "(never refused for its length)"],
    )  # fmt: skip
    arrow(ax, bottom(said), top(standing))
    arrow(ax, bottom(turn), top(sides, 0.8))
    arrow(ax, bottom(flush, 0.6), top(sides, 0.29))
    arrow(ax, bottom(flush, 0.15), top(standing, 0.85), "user's lines", where=(-0.05, 0.08))

    # The gate.
    y = 5.0
    gate = box(
        ax, 0.15, y, 5.85, 1.45, "Write gate: WriteGate.propose, settle",
        ["memory/write_gate.py · provenance stamped by the harness:", "source, created, namespace; id = a content key",
         "refuses: empty · always_scope (a model never writes a", "correction) · oversized (a note) · the same text twice",
         "in one batch (duplicate)"],
    )  # fmt: skip
    arrow(ax, bottom(note), top(gate, 0.16))
    arrow(ax, bottom(standing), top(gate, 0.52))
    arrow(ax, bottom(sides, 0.3), top(gate, 0.87))
    host = box(ax, 6.15, y, 1.85, 1.45, "Host, CLI", ["store.add, write,", "import: curated,", "not through the gate"],
               SOURCE)  # fmt: skip

    # The store's write: every writer, the host included, ends here.
    y = 2.55
    width = 1.83
    steps = [
        ("checks", ["stores/base.py", "entry fields, scope", "near-misses, ISO", "times, plain JSON"]),
        ("duplicates", ["memory/duplicates.py", "exact or in other", "words: kept once, the", "sighting in seen"]),
        ("changes", ["memory/changes.py", "a new value of a fact,", "instruction, preference", "supersedes the older"]),
        ("commit", ["one transaction where", "the backend has one;", "a closed version stays", "in history()"]),
    ]
    ax.add_patch(
        FancyBboxPatch((0.1, y - 0.1), 7.95, 1.95, boxstyle="round,pad=0.02,rounding_size=0.1",
                       facecolor="none", edgecolor=EDGE, linewidth=0.8, linestyle=":")
    )  # fmt: skip
    ax.text(7.95, y + 1.68, "StoreVerbs.write (every store), in this order", fontsize=8.5, fontweight="bold",
            va="center", ha="right")  # fmt: skip
    boxes = []
    for n, (title, body) in enumerate(steps):
        boxes.append(box(ax, 0.2 + n * (width + 0.12), y, width, 1.5, title, body))
        if n:
            arrow(ax, side(boxes[n - 1]), side(boxes[n], right=False))
    arrow(ax, (0.6, gate[1]), (0.6, y + 1.5))
    elbow(ax, [bottom(host), (bottom(host)[0], y + 2.1), (1.5, y + 2.1), (1.5, y + 1.5)])

    # The store, and only then does the working set let go of the turn.
    store = box(
        ax, 0.15, 0.9, 7.85, 1.05, "The store",
        ["SQLite file · LangGraph BaseStore · LangChain / LlamaIndex vector store · in-process index"], STORE,
    )  # fmt: skip
    arrow(ax, bottom(boxes[3]), top(store, 0.88))
    arrow(ax, side(boxes[3], at=0.7), bottom(working, 0.5), "write\nreturned", bend=0.3, where=(0.3, 0.0))
    box(
        ax, 8.15, 0.9, 1.7, 2.2, "Refused, failed",
        ["every refusal (gate", "or store) counted", "with its reason;", "the turn stays in", "the working set;",
         "a failed write raises"], SIDE, size=7.5,
    )  # fmt: skip
    ax.text(
        5.0, 0.45,
        "Optional, after the turn: a consolidator (the host's model, in the background) may update, retire or fold\n"
        "stored entries; it never touches a correction and deletes nothing (memory/consolidate.py).",
        ha="center", va="center", fontsize=8, style="italic",
    )  # fmt: skip
    return save(fig, "write_path")


# -- the read path -----------------------------------------------------------


def example_block() -> str:
    """What ``render_context`` gives for a small selection made by the core:
    the text shown in the diagram's last box (each marker's ``source`` and
    ``at`` left out to fit)."""
    from poolsplit_adapters import Pool, select
    from poolsplit_adapters.render import render_context

    day = "2026-11-%02dT09:00:00Z"
    entries = [
        {"id": "fix-1", "type": "correction", "scope": "always", "source": "user", "created": day % 2,
         "content": "Never deploy on Fridays."},
        {"id": "pref-1", "type": "preference", "source": "thread:t1", "created": day % 3,
         "content": "I prefer answers in short lists."},
    ] + [
        {"id": "ep-%d" % n, "type": "episode", "source": "thread:t1", "created": day % (4 + n),
         "content": "The checkout deploy %d went green." % n}
        for n in range(9)
    ]  # fmt: skip
    pools = [
        Pool("corrections", 0, 0, ("correction",)),
        Pool("standing", 40, 3, ("instruction", "preference")),
        Pool("episodes", 30, 2, ("episode",)),
    ]
    now = datetime.datetime(2026, 11, 20, 9)
    text = render_context(select(entries, pools, {"message": "is the checkout deploy green?"}, now=now)).text
    return re.sub(r' (source|at)="[^"]*"', "", text)


def read_path() -> Path:
    fig, ax = canvas(10, 8.1)
    ax.text(5, 7.85, "The read path: from a query to the model's context", ha="center", va="center",
            fontsize=13, fontweight="bold")  # fmt: skip
    query = box(
        ax, 0.15, 5.95, 2.6, 1.5, "Query",
        ["the user's last message,", "tags, project, the namespace,", "now (one call's context)"], SOURCE,
    )  # fmt: skip
    recall = box(
        ax, 3.0, 5.95, 3.3, 1.5, "Candidates (recall.py)",
        ["a vector store: each pool's types recalled", "on their own (type filter in the search);",
         "corrections fetched by scope, with no", "similarity in it; a kept index: every entry"],
    )  # fmt: skip
    admit = box(
        ax, 6.55, 5.95, 3.3, 1.5, "Admit (core, step 1)",
        ["active: status, superseded_by, expires;", "visible: exact namespace, tags,",
         "source, time; a pool admits the type;", "else dropped with its reason"],
    )  # fmt: skip
    arrow(ax, side(query), side(recall, right=False))
    arrow(ax, side(recall), side(admit, right=False))

    # The fill, under the admission: the always tier across every pool, then each pool's own budget.
    left = 3.7
    ax.add_patch(
        FancyBboxPatch((left, 2.65), 6.15, 2.8, boxstyle="round,pad=0.02,rounding_size=0.1", facecolor="none",
                       edgecolor=EDGE, linewidth=0.8, linestyle=":")
    )  # fmt: skip
    ax.text(left + 0.1, 5.25, "Fill each pool in order (core, steps 2-3)", fontsize=9, fontweight="bold",
            va="center")  # fmt: skip
    box(
        ax, left + 0.15, 4.25, 5.85, 0.8, "Always tier: scope = \"always\"",
        ["every correction of the pool's types, first, in input order, outside every budget"], "#fde2e1",
    )  # fmt: skip
    pools = [("standing", "instruction, preference"), ("content", "task, fact, note"), ("episodes", "episode")]
    for n, (name, kinds) in enumerate(pools):
        box(
            ax, left + 0.15 + n * 1.98, 2.8, 1.89, 1.3, "pool: " + name,
            [kinds, "its own max_tokens,", "max_entries; ranked,", "greedy fill"], size=7.8,
        )  # fmt: skip
    arrow(ax, bottom(admit), (bottom(admit)[0], 5.45))
    report = box(
        ax, 0.15, 2.65, 3.3, 2.8, "Report: Selection",
        ["chosen: entry, pool, score, cost;", "dropped, each once with one reason:", "inactive · namespace · no_pool ·",
         "below_relevance · token_budget ·", "entry_cap · ...; an entry loads in", "one pool at most; a correction",
         "no pool admits warns"],
    )  # fmt: skip
    arrow(ax, (left, 4.05), side(report))

    rendered = box(ax, 0.15, 0.1, 9.7, 2.15, "Rendered block (render.py), in this call's system message", [], STORE)
    ax.text(0.35, rendered[1] + rendered[3] - 0.36, example_block(), ha="left", va="top", family="monospace",
            fontsize=7, linespacing=1.2)  # fmt: skip
    ax.text(
        9.65, 1.1,
        "the corrections first, then each pool in order;\nthe omission line says how many entries\n"
        "the budgets left out, per pool: the model\nnever reads the block as all there is\n\n"
        "(made by the core for this picture;\nsource= and at= left out to fit)",
        ha="right", va="center", fontsize=8, style="italic",
    )  # fmt: skip
    arrow(ax, bottom(report), (bottom(report)[0], rendered[1] + rendered[3]))
    return save(fig, "read_path")


if __name__ == "__main__":
    write_path()
    read_path()
