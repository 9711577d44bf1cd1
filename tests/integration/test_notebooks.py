"""Every notebook runs headless, offline, from a clean kernel, printing no
warning; the asserts in its cells check what its plots show, and every plot
is readable: each axes has a title, labelled axes and a legend whose box
covers none of the data."""

from __future__ import annotations

import importlib.util
import json
import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[2] / "notebooks"
#: The notebooks' sources (an executed copy, ``<name>.run.ipynb``, is a reader's, never committed).
SOURCES = sorted(p for p in NOTEBOOKS.glob("*.ipynb") if not p.name.endswith(".run.ipynb"))
NAMES = ["starvation.ipynb", "langchain.ipynb", "llama_index.ipynb", "agent.ipynb", "tasks.ipynb"]

# Run in the notebook's kernel before its first cell: every ``plt.show()``
# first records, for each axes of each open figure, what a reader needs and
# whether the legend box covers any plotted data, measured in display
# coordinates on the drawn figure (so log scales and bbox_to_anchor count).
RECORD_FIGURES = '''
import matplotlib.pyplot as _plt
import numpy as _np

_poolsplit_axes = []
_poolsplit_figures = [0]  # figures recorded so far
_poolsplit_show = _plt.show


def _poolsplit_points(line):
    """The line's vertices in display coordinates, with 50 points along every
    segment (a segment may cross the legend between two vertices)."""
    xy = _np.asarray(line.get_xydata(), dtype=float)
    xy = xy[_np.isfinite(xy).all(axis=1)]
    if len(xy) == 0:
        return xy
    shown = line.get_transform().transform(xy)
    if len(shown) == 1:
        return shown
    steps = _np.linspace(0.0, 1.0, 50)[:, None, None]
    return (shown[:-1] + steps * (shown[1:] - shown[:-1])).reshape(-1, 2)


def _poolsplit_covered(ax, box):
    covered = []
    for line in ax.get_lines():
        points = _poolsplit_points(line)
        inside = (points[:, 0] > box.x0) & (points[:, 0] < box.x1) & (points[:, 1] > box.y0) & (points[:, 1] < box.y1)
        if inside.any():
            covered.append("line " + line.get_label())
    for patch in ax.patches:
        extent = patch.get_window_extent()
        if extent.width > 0 and extent.height > 0 and extent.overlaps(box):
            covered.append("patch " + str(patch.get_label()))
    for collection in ax.collections:
        offsets = collection.get_offset_transform().transform(collection.get_offsets())
        if any(box.contains(x, y) for x, y in offsets):
            covered.append("collection " + str(collection.get_label()))
    return covered


def _poolsplit_record(*args, **kwargs):
    for number in _plt.get_fignums():
        figure = _plt.figure(number)
        _poolsplit_figures[0] += 1
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        for ax in figure.axes:
            legend = ax.get_legend()
            box = legend.get_window_extent(renderer) if legend is not None else None
            _poolsplit_axes.append({
                "figure": _poolsplit_figures[0],
                "title": ax.get_title(),
                "xlabel": ax.get_xlabel(),
                "ylabel": ax.get_ylabel(),
                "legend": legend is not None,
                "covers": _poolsplit_covered(ax, box) if box is not None else [],
            })
    return _poolsplit_show(*args, **kwargs)


_plt.show = _poolsplit_record
'''
REPORT_FIGURES = "import json as _json\nprint(_json.dumps(_poolsplit_axes))"


def run(name: str) -> tuple:
    """Execute the notebook with the recorder around it: (notebook, axes records)."""
    nb = nbformat.read(str(NOTEBOOKS / name), as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(RECORD_FIGURES))
    nb.cells.append(nbformat.v4.new_code_cell(REPORT_FIGURES))
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    report = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("name") == "stdout")
    return nb, json.loads(report)


def test_notebook_sources_carry_no_outputs():
    for path in SOURCES:
        nb = nbformat.read(str(path), as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, path.name


def test_notebooks_are_what_build_writes():
    """notebooks/build.py is their source: each committed notebook holds the
    cells it writes (cell ids aside), so an edit to one is not lost to the next build."""
    spec = importlib.util.spec_from_file_location("notebooks_build", NOTEBOOKS / "build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    written = {
        "starvation.ipynb": build.STARVATION,
        "langchain.ipynb": build.LANGCHAIN,
        "llama_index.ipynb": build.LLAMA,
        "agent.ipynb": build.AGENT,
        "tasks.ipynb": build.TASKS,
    }
    assert sorted(written) == [p.name for p in SOURCES]
    for name, cells in written.items():
        nb = nbformat.read(str(NOTEBOOKS / name), as_version=4)
        assert [(c.cell_type, c.source) for c in nb.cells] == [(c.cell_type, c.source) for c in cells], name


@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes_and_every_plot_is_readable(name):
    nb, axes = run(name)
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert images, "the notebook drew no plot"
    # A warning a reader sees is a fault of the notebook's use (or of the package): none is printed.
    printed = [o["text"] for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("name") == "stderr"]
    assert not printed, "%s printed to stderr: %s" % (name, printed[0][:500])
    # Every figure shown went through plt.show(), so every one was inspected.
    assert len({a["figure"] for a in axes}) == len(images), "%s: a figure was shown without plt.show()" % name
    for number, record in enumerate(axes):
        where = "%s, plot %d (%r)" % (name, number + 1, record["title"])
        assert record["title"], "%s has no title" % where
        assert record["xlabel"] and record["ylabel"], "%s lacks an axis label: %r" % (where, record)
        assert record["legend"], "%s has no legend" % where
        assert record["covers"] == [], "%s: the legend covers data: %s" % (where, record["covers"])
