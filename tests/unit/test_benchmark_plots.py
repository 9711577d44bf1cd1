"""benchmarks/plots.py draws every plot from the committed tables: each
axes titled and labelled, the legend clear of every axes, numbers read from
the cells as written."""

from __future__ import annotations

import importlib.util
import os

import pytest

pytest.importorskip("matplotlib")

HERE = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")
_spec = importlib.util.spec_from_file_location("benchmark_plots", os.path.join(HERE, "plots.py"))
assert _spec is not None and _spec.loader is not None
plots = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(plots)

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402


def test_numbers_are_read_as_the_tables_write_them():
    assert plots.number("6.8 ms") == 6.8
    assert plots.number("20%") == 20
    assert plots.number("10,000") == 10_000
    assert plots.number("0.096 (1.6x)") == 0.096
    assert plots.number("10k") == 10_000 and plots.number("1M") == 1e6
    assert plots.number("0.00077 s (194x)") == 0.00077
    with pytest.raises(ValueError):
        plots.number("yes")


@pytest.mark.parametrize("name", sorted(plots.PLOTTERS))
def test_every_plot_is_drawn_readable_from_its_table(name, tmp_path, monkeypatch):
    drawn = []
    real_save = plots.save

    def save(fig, plot, legend_rows=1):
        path = real_save(fig, plot, legend_rows)  # laid out as saved
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        renderer = canvas.get_renderer()
        drawn.append(fig)
        (legend,) = fig.legends
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            assert ax.get_title() and ax.get_xlabel(), (plot, ax)
            assert not box.overlaps(ax.get_tightbbox(renderer)), (plot, "the legend covers an axes")
        assert fig.axes[0].get_ylabel()
        return path

    monkeypatch.setattr(plots, "PLOTS", tmp_path)
    monkeypatch.setattr(plots, "save", save)
    path = plots.PLOTTERS[name]()
    assert drawn and path.read_text(encoding="utf-8").lstrip().startswith("<?xml")
    assert "<svg" in path.read_text(encoding="utf-8")
