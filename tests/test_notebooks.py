"""The notebooks, one per lecture section, run top to bottom and are stored stripped.

Each notebook asserts its own numbers against hand derivations, so executing it is
the test. Outputs and execution counts are never committed.
"""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))


def test_there_is_a_notebook_per_lecture_section():
    assert len(NOTEBOOKS) >= 6


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path):
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS_DIR)}})
    client.execute()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, f"{path.name} has no code cells"
    for index, cell in enumerate(code):
        assert cell.get("outputs") == [], f"{path.name}: code cell {index} has outputs"
        assert cell.get("execution_count") is None, (
            f"{path.name}: code cell {index} has an execution count")
