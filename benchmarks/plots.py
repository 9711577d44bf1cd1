"""The benchmark plots, drawn in one place with one look (titles, axes
labelled with their units, legends outside the data).

    python benchmarks/plots.py                 # every plot, from the committed tables
    python benchmarks/plots.py starvation      # one of them

Each plot is drawn from the Markdown table its benchmark wrote to
``docs/benchmarks/_generated/`` (through ``docs_tables.py``) and saved as
SVG to ``docs/benchmarks/plots/``, which the site shows. A benchmark script
draws its plot right after writing its table, so a run refreshes both, and
``--plot-only`` redraws the plot from the table already written, without
measuring anything. A plot therefore shows exactly the figures of the table
beside it: never a number typed in here.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

# No matplotlib.use() here: the notebooks import the benchmark scripts, and
# forcing a backend would take their inline plots away (headless, matplotlib
# picks Agg itself).
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "docs" / "benchmarks" / "_generated"
PLOTS = ROOT / "docs" / "benchmarks" / "plots"

#: One colour per role, the same on every plot.
POOLS_COLOUR = "#1f77b4"
SHARED_COLOUR = "#d62728"
BASELINE_COLOUR = "#404040"

STYLE = {
    "figure.dpi": 100,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.fontsize": 9,
    "legend.frameon": False,
    # The same table gives byte-identical SVG: fixed element ids, no date.
    "svg.hashsalt": "poolsplit-adapters",
}

Row = Dict[str, str]


# -- reading the tables ------------------------------------------------------


def read_tables(path: Path) -> List[List[Row]]:
    """Every Markdown table of ``path``, in order: each a list of rows, a row a
    dict from the header's cells to its own (text as written)."""
    tables: List[List[Row]] = []
    block: List[List[str]] = []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if line.startswith("|"):
            block.append([cell.strip() for cell in line.strip().strip("|").split("|")])
            continue
        if len(block) >= 2:
            header, body = block[0], block[2:]  # block[1] is the |---| line
            tables.append([dict(zip(header, cells)) for cells in body])
        block = []
    return tables


_NUMBER = re.compile(r"([-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?)\s*([kM](?![a-z]))?")


def number(cell: str) -> float:
    """The first number of a table cell: ``"6.8 ms"`` 6.8, ``"20%"`` 20,
    ``"10,000"`` 10000, ``"0.096 (1.6x)"`` 0.096, ``"10k"`` 10000, ``"1M"`` 1e6."""
    found = _NUMBER.search(cell)
    if found is None:
        raise ValueError("no number in the table cell %r" % cell)
    value = float(found.group(1).replace(",", ""))
    return value * {"k": 1e3, "M": 1e6}.get(found.group(2) or "", 1.0)


def column(rows: Sequence[Row], prefix: str) -> str:
    """The header of ``rows`` that starts with ``prefix`` (a header may carry
    a unit or a note after its name)."""
    for name in rows[0]:
        if name.startswith(prefix):
            return name
    raise KeyError("no column starting %r in %s" % (prefix, list(rows[0])))


# -- drawing -----------------------------------------------------------------


def figure(width: float, height: float, columns: int = 1, **kwargs: object) -> tuple:
    """A figure in the house style, with ``columns`` axes side by side."""
    plt.rcParams.update(STYLE)
    return plt.subplots(1, columns, figsize=(width, height), **kwargs)


def legend_below(fig: Figure, axes: object, columns: int = 3) -> None:
    """One legend for the figure, under its axes: it covers no data."""
    handles, labels = [], []
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    fig.legend(handles, labels, loc="lower center", ncol=columns, bbox_to_anchor=(0.5, 0.0))


def save(fig: Figure, name: str, legend_rows: int = 1) -> Path:
    """``docs/benchmarks/plots/<name>.svg``, room kept at the bottom for a
    legend of ``legend_rows`` rows drawn by :func:`legend_below`."""
    fig.tight_layout(rect=(0, 0.02 + 0.06 * legend_rows, 1, 1))
    PLOTS.mkdir(parents=True, exist_ok=True)
    path = PLOTS / (name + ".svg")
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    print("plot written to %s" % (path.relative_to(ROOT) if path.is_relative_to(ROOT) else path))
    return path


# -- the plots ---------------------------------------------------------------


def starvation(path: Optional[Path] = None) -> Path:
    """Pools against one shared budget: how often each type loads, and the
    corrections as fresh content floods in (``benchmarks/starvation.py``)."""
    per_type, flood = read_tables(path or GENERATED / "starvation.md")
    fig, (left, right) = figure(10, 4.2, 2, gridspec_kw={"width_ratios": [1.6, 1]})
    kinds = [row["type"] for row in per_type]
    x = range(len(kinds))
    shared = [number(row["one shared budget"]) for row in per_type]
    pooled = [number(row["pools"]) for row in per_type]
    left.bar([i - 0.2 for i in x], shared, 0.4, color=SHARED_COLOUR, label="one shared budget")
    left.bar([i + 0.2 for i in x], pooled, 0.4, color=POOLS_COLOUR, label="pools + always tier")
    for i, (a, b) in enumerate(zip(shared, pooled)):  # a bar of 0 draws nothing: say so
        for shift, value in ((-0.2, a), (0.2, b)):
            if value == 0:
                left.text(i + shift, 1, "0", ha="center", va="bottom", fontsize=8)
    left.set_xticks(list(x), kinds)
    left.set_ylim(0, 105)
    left.set_title("How often each memory type reaches the model")
    left.set_xlabel("memory type")
    left.set_ylabel("queries loading at least one (%)")
    sizes = [row[column(flood, "fresh")] for row in flood]
    at = range(len(sizes))
    right.plot(at, [number(row[column(flood, "corrections present")]) for row in flood], "o-", color=SHARED_COLOUR)
    right.plot(at, [number(row["pools"]) for row in flood], "s-", color=POOLS_COLOUR)
    right.set_xticks(list(at), sizes)
    right.set_ylim(-5, 105)
    right.set_title("Corrections as fresh content floods in")
    right.set_xlabel("fresh matching entries added (log-spaced)")
    right.set_ylabel("corrections loaded, mean (%)")
    legend_below(fig, (left, right), columns=2)
    return save(fig, "starvation")


#: The conversations table's paths, as the legend names them; the baseline is drawn dashed.
BASELINE_PATH = "vector top-k (baseline)"


def conversations(path: Optional[Path] = None) -> Path:
    """Evidence recall and the user's instructions and preferences against
    the budget, each retrieval path against plain vector top-k
    (``benchmarks/conversations/evaluate.py``)."""
    (rows,) = read_tables(path or GENERATED / "conversations.md")
    fig, (left, right) = figure(10, 4.4, 2, sharex=True)
    names = list(dict.fromkeys(row["path"] for row in rows))
    markers = "os^vDP*X"
    for n, name in enumerate(names):
        mine = sorted((row for row in rows if row["path"] == name), key=lambda row: number(row["budget"]))
        budgets = [number(row["budget"]) for row in mine]
        style: Dict[str, object] = {"marker": markers[n % len(markers)], "label": name}
        if name == BASELINE_PATH:
            style.update(color=BASELINE_COLOUR, linestyle="--", linewidth=2.2, zorder=5)
        left.plot(budgets, [number(row["recall"]) for row in mine], **style)
        both = [(number(row["instr"]) + number(row["pref"])) / 2 for row in mine]
        right.plot(budgets, both, **style)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        budgets = sorted({number(row["budget"]) for row in rows})
        ax.set_xticks(budgets, ["%d" % b for b in budgets])
        ax.minorticks_off()
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("memory budget (tokens, o200k_base)")
    left.set_title("Evidence recall (fact, multi-session, temporal probes)")
    left.set_ylabel("key sentences in the context (share)")
    right.set_title("The user's instructions and preferences")
    right.set_ylabel("key sentence in the context (share of probes)")
    legend_below(fig, (left, right), columns=3)
    return save(fig, "conversations", legend_rows=3)


def speed(path: Optional[Path] = None) -> Path:
    """Per-query time against store size: the spec's straightforward
    implementation, the stateless path, the core file alone and a warm ``MemoryIndex``
    (``benchmarks/run.py``)."""
    rows = read_tables(path or GENERATED / "speed.md")[0]
    fig, ax = figure(7, 4.6)
    sizes = [number(row["entries"]) for row in rows]
    lines = [
        ("baseline", "baseline: the spec as written (tests/reference.py)", BASELINE_COLOUR, "--"),
        ("stateless", "stateless retrieve_pools", SHARED_COLOUR, "-"),
        ("core file alone", "the core file alone (its plain list source)", BASELINE_COLOUR, "-."),
        ("MemoryIndex warm", "MemoryIndex, warm", POOLS_COLOUR, "-"),
        ("`MemoryIndex.select`", "MemoryIndex.select (full report)", "#2ca02c", ":"),
    ]
    for prefix, label, colour, dash in lines:
        seconds = [number(row[column(rows, prefix)]) for row in rows]
        ax.plot(sizes, [1000 * s for s in seconds], marker="o", color=colour, linestyle=dash, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sizes, [row["entries"] for row in rows])
    ax.minorticks_off()
    ax.set_title("Per-query time against store size (4 pools)")
    ax.set_xlabel("entries in the store (log scale)")
    ax.set_ylabel("time per query (ms, log scale)")
    legend_below(fig, (ax,), columns=2)
    return save(fig, "speed", legend_rows=2)


def middleware_turn(path: Optional[Path] = None) -> Path:
    """What the agent middleware adds to one turn, by store, size and kind of
    turn (``benchmarks/middleware_turn.py``): one point per size, joined per
    store, on a log scale (a bar on a log scale has no true start)."""
    rows = read_tables(path or GENERATED / "middleware_turn.md")[0]
    stores = list(dict.fromkeys(row["store"] for row in rows))
    sizes = list(dict.fromkeys(row["memories"] for row in rows))
    fig, axes = figure(11, 1.6 + 0.5 * len(stores), 2, sharey=True, sharex=True)
    overhead = column(rows, "overhead")
    looks = [("o", "white"), ("o", POOLS_COLOUR), ("s", "#08306b")]
    for ax, turn in zip(axes, ("quiet", "demoting")):
        got = {(row["store"], row["memories"]): number(row[overhead]) for row in rows if row["turn"] == turn}
        for i, store in enumerate(stores):
            line = [got[(store, size)] for size in sizes if (store, size) in got]
            ax.plot(line, [i] * len(line), color="#9a9a9a", linewidth=1.5, zorder=1)
        for k, size in enumerate(sizes):
            marker, face = looks[k % len(looks)]
            at = [(got[(store, size)], i) for i, store in enumerate(stores) if (store, size) in got]
            ax.scatter(
                [a for a, _ in at], [i for _, i in at], marker=marker, s=45, facecolor=face,
                edgecolor=POOLS_COLOUR, linewidth=1.5, zorder=2, label="%s memories" % size,
            )  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlabel("overhead per turn, p50 (ms, log scale)")
        ax.set_title("%s turns" % turn.capitalize())
    axes[0].set_yticks(range(len(stores)), ["\n".join(textwrap.wrap(s, 44)) for s in stores], fontsize=8)
    axes[0].set_ylim(len(stores) - 0.5, -0.5)
    axes[0].set_ylabel("LangGraph store")
    fig.suptitle("What PoolSplitMemoryMiddleware adds to one agent turn", fontsize=12)
    legend_below(fig, axes, columns=len(sizes))
    return save(fig, "middleware_turn")


PLOTTERS: Dict[str, Callable[..., Path]] = {
    "starvation": starvation,
    "conversations": conversations,
    "speed": speed,
    "middleware_turn": middleware_turn,
}


def main(argv: Optional[Sequence[str]] = None) -> None:
    names = list(argv if argv is not None else sys.argv[1:]) or list(PLOTTERS)
    for name in names:
        if name not in PLOTTERS:
            raise SystemExit("no plot %r; the plots: %s" % (name, ", ".join(PLOTTERS)))
        PLOTTERS[name]()


if __name__ == "__main__":
    main()
