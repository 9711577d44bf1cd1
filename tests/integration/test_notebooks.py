"""Every notebook runs headless, offline, from a clean kernel; the asserts in
its cells check what its plots show."""

from __future__ import annotations

import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[2] / "notebooks"


def test_notebook_sources_carry_no_outputs():
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, path.name


@pytest.mark.parametrize(
    "name", ["starvation.ipynb", "langchain.ipynb", "llama_index.ipynb", "agent.ipynb", "tasks.ipynb"]
)
def test_notebook_executes(name):
    nb = nbformat.read(str(NOTEBOOKS / name), as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert images, "the notebook drew no plot"
