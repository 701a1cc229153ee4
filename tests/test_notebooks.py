"""The notebooks, one per lecture section, run top to bottom and are stored stripped.

Each notebook asserts its own numbers against hand derivations in its check cells, so
executing it is the test. They teach with the public API only (``import chalk``), and
their checks sit in cells tagged ``check``, one closing a section, so a renderer can hide
them. Outputs and execution counts are never committed.
"""

import re
from pathlib import Path

import nbformat
import pytest
from jupyter_core.utils import run_sync
from nbclient import NotebookClient

NOTEBOOKS_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))


def test_there_is_a_notebook_per_lecture_section():
    assert len(NOTEBOOKS) >= 6


@pytest.fixture(scope="module")
def kernel():
    """One kernel for every notebook (started by the first, shut down at the end): each
    notebook still starts from an empty namespace (``%reset -f`` runs first), but chalk is
    imported and its model loaded once rather than once per notebook."""
    owner = []
    yield owner
    if owner and owner[0].km is not None:
        owner[0]._cleanup_kernel()


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path, kernel):
    nb = nbformat.read(path, as_version=4)
    # names a previous notebook defined (imports included) are gone: a notebook that
    # forgets an import still fails with NameError
    nb.cells.insert(0, nbformat.v4.new_code_cell("%reset -f"))
    alive = bool(kernel) and kernel[0].km is not None and run_sync(kernel[0].km.is_alive)()
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            km=kernel[0].km if alive else None,
                            resources={"metadata": {"path": str(NOTEBOOKS_DIR)}})
    if not alive:
        kernel[:] = [client]
    try:
        client.execute(cleanup_kc=False)
    finally:
        if client.kc is not None and client is not kernel[0]:
            client.kc.stop_channels()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, f"{path.name} has no code cells"
    for index, cell in enumerate(code):
        assert cell.get("outputs") == [], f"{path.name}: code cell {index} has outputs"
        assert cell.get("execution_count") is None, (
            f"{path.name}: code cell {index} has an execution count")


# `from chalk import x`, `import chalk.x` or `from chalk.x import y`: anything but `import chalk`
INTERNAL_IMPORT = re.compile(r"^\s*(from\s+chalk\b|import\s+chalk\s*\.|import\s+chalk\s*,)",
                             re.M)


def _is_check(cell) -> bool:
    return "check" in cell.get("metadata", {}).get("tags", [])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_uses_only_the_public_api(path):
    nb = nbformat.read(path, as_version=4)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            found = INTERNAL_IMPORT.search(cell.source)
            assert found is None, f"{path.name}: cell {index} imports {found.group(0).strip()!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_checks_are_gathered_in_tagged_cells_closing_a_section(path):
    nb = nbformat.read(path, as_version=4)
    cells = nb.cells
    checks = 0
    for index, cell in enumerate(cells):
        if cell.cell_type != "code":
            continue
        asserts = re.search(r"^\s*assert\b", cell.source, re.M) is not None
        if not _is_check(cell):
            assert not asserts, f"{path.name}: cell {index} asserts but is not tagged check"
            continue
        checks += 1
        assert asserts, f"{path.name}: check cell {index} asserts nothing"
        # a check closes its section: the next cell opens a heading, or there is none
        following = cells[index + 1] if index + 1 < len(cells) else None
        assert following is None or (following.cell_type == "markdown"
                                     and following.source.lstrip().startswith("#")), (
            f"{path.name}: check cell {index} does not close a section")
    assert checks, f"{path.name} has no check cell"


def test_the_import_pattern_catches_internal_imports():
    caught = ["from chalk.applications.sweep import sweep", "import chalk.api",
              "from chalk import solve", "  import chalk . api", "import chalk, chalk.api"]
    allowed = ["import chalk", "import chalk  # the public API", "import chalky",
               "x = chalk.solve('a')"]
    assert all(INTERNAL_IMPORT.search(s) for s in caught)
    assert not any(INTERNAL_IMPORT.search(s) for s in allowed)
