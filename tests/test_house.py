"""The layout holds: one import name, no import cycles, no private names across modules,
and the engine core below the knowledge and the applications.

Read from the syntax trees of the source (nothing is imported), so a violation names the
file and line.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import zipfile
from functools import cache
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
# Where each part of the chalk package lives in the repository.
PACKAGES = {"chalk": ROOT / "chalk", "chalk.symbolic": ROOT / "symbolic",
            "chalk.knowledge": ROOT / "knowledge", "chalk.solvers": ROOT / "solvers"}
# What each layer may import from chalk (besides itself).
ALLOWED = {
    "chalk.symbolic": set(),
    "chalk.solvers": {"chalk.symbolic"},
    "chalk.knowledge": {"chalk.symbolic"},
}
OLD_NAMES = ("symbolic", "solvers", "knowledge")


def _modules() -> dict[str, Path]:
    """Module name -> file, for every module of the package."""
    found = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if package == "chalk" and parts[0] in ("symbolic", "knowledge", "solvers"):
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


MODULES = _modules()


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def _imports(path: Path):
    """(line, module, name or None) for every import in a file, at any depth."""
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                yield node.lineno, node.module, alias.name


def _target(module: str, name: str | None) -> str | None:
    """The chalk module an import refers to (``from chalk.x import y`` may import a
    submodule y)."""
    if name is not None and f"{module}.{name}" in MODULES:
        return f"{module}.{name}"
    return module if module in MODULES else None


def _graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(MODULES)
    for module, path in MODULES.items():
        for _, imported, name in _imports(path):
            target = _target(imported, name)
            if target is not None and target != module:
                graph.add_edge(module, target)
    return graph


def test_every_part_of_the_package_is_found():
    assert {"chalk", "chalk.api", "chalk.cli", "chalk.symbolic.units",
            "chalk.solvers.planning.plan", "chalk.knowledge.batch",
            "chalk.applications.imply"} <= set(MODULES)


def test_no_import_cycles():
    graph = _graph()
    # a package's __init__ importing its own submodules is how packages work; the lazy
    # chalk/__init__ imports nothing at module level
    cycles = list(nx.simple_cycles(graph))
    assert cycles == []


def test_no_module_imports_a_private_name_of_another():
    offences = []
    for path in MODULES.values():
        tree = _tree(path)
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and node.module.split(".")[0] == "chalk":
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.endswith("__"):
                        offences.append(f"{path.name}:{node.lineno} imports {alias.name}")
                    if _target(node.module, alias.name) == f"{node.module}.{alias.name}":
                        aliases[alias.asname or alias.name] = alias.name
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "chalk" and alias.asname:
                        aliases[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                offences.append(f"{path.name}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert offences == []


def _layer(module: str) -> str:
    return next((p for p in ALLOWED if module == p or module.startswith(p + ".")), "chalk")


def test_the_core_knows_nothing_of_the_knowledge_or_the_applications():
    offences = []
    for module, path in MODULES.items():
        layer = _layer(module)
        if layer == "chalk":
            continue
        for line, imported, name in _imports(path):
            target = _target(imported, name)
            if target is None:
                continue
            other = _layer(target)
            if other != layer and other not in ALLOWED[layer]:
                offences.append(f"{module}:{line} imports {target}")
    assert offences == []


def _python_sources():
    for folder in ("chalk", "symbolic", "knowledge", "solvers", "tests", "benchmarks"):
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_nothing_imports_the_folders_by_their_old_top_level_names():
    offences = []
    for path in _python_sources():
        for line, module, _ in _imports(path):
            if module.split(".")[0] in OLD_NAMES:
                offences.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        for cell in cells:
            # IPython magics (%matplotlib) are not Python: leave them out
            source = "".join(line for line in cell["source"]
                             if not line.lstrip().startswith(("%", "!")))
            if cell["cell_type"] == "code":
                for node in ast.walk(ast.parse(source)):
                    names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                             else [node.module] if isinstance(node, ast.ImportFrom)
                             and node.module else [])
                    offences += [f"{notebook.name} imports {n}" for n in names
                                 if n.split(".")[0] in OLD_NAMES]
    assert offences == []


def test_every_package_is_listed_for_the_wheel():
    # pyproject lists the packages by hand (three of them live outside chalk/): a folder
    # left off is missing from a regular install while an editable one still finds it
    # (the wheel had no chalk.applications.fit, .calibrate or .optimize)
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())
                 ["tool"]["setuptools"]["packages"])
    found = {".".join((package, *init.parent.relative_to(folder).parts))
             for package, folder in PACKAGES.items() for init in folder.rglob("__init__.py")
             if not (package == "chalk" and init.parent.relative_to(folder).parts[:1]
                     in (("symbolic",), ("knowledge",), ("solvers",)))}
    assert listed == found


@pytest.mark.slow
def test_the_wheel_installs_one_import_name_chalk(tmp_path):
    """Build the wheel as pip would, check its top level, install it apart and solve."""
    source = tmp_path / "source"  # a copy, so the build leaves nothing in the checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("chalk", "symbolic", "knowledge", "solvers"):
        shutil.copytree(ROOT / folder, source / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps",
                            "-q", "-w", str(tmp_path / "dist")],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("chalk-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
        top_level = archive.read(info).decode().split()
    tops = {n.split("/")[0] for n in names if ".dist-info/" not in n}
    assert tops == {"chalk"}
    assert top_level == ["chalk"]
    for shipped in ("chalk/symbolic/units.txt", "chalk/knowledge/data/accelerators.yaml",
                    "chalk/knowledge/deductions/lecture.toml"):
        assert shipped in names
    target = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q",
                                "--target", str(target), str(wheel)],
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr
    # From a folder with no checkout in it, the installed copy alone has every application
    # and answers: the drain time of 288 GB at 20 TB/s is 14.4 ms.
    code = ("import chalk; "
            "import chalk.applications.fit, chalk.applications.calibrate, "
            "chalk.applications.imply, chalk.applications.optimize; "
            "s = chalk.solve('hbm_drain_time', given={'hbm_capacity': '288 GB', "
            "'hbm_bandwidth': '20 TB/s'}); "
            "print(chalk.__file__); print(s.value('hbm_drain_time', 'ms'))")
    ran = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, env={"PYTHONPATH": str(target),
                                                      "PATH": "/usr/bin:/bin"})
    assert ran.returncode == 0, ran.stderr
    where, drain = ran.stdout.split()
    assert Path(where).is_relative_to(target)
    assert float(drain) == pytest.approx(288e9 / 20e12 * 1e3, rel=1e-12)


# The engine's one entry (issue 22): planning, compiling and evaluating a question happen
# inside the engine only, so every path answers as chalk.solve does.
ENGINE = {"chalk.api", "chalk.answering", "chalk.compiled", "chalk.preparation",
          "chalk.solution", "chalk.options"}
ENGINE_INTERNALS = {
    "chalk.solvers.planning.plan": {"make_plan"},
    "chalk.solvers.execution.execute": {"compile_plan", "run_numeric"},
    "chalk.solvers.bulk.vectorised": {"evaluate"},
    "chalk.solvers.execution.placeholders": {"run"},
    "chalk.solvers.execution.solving": {"compute", "solve_by_regimes"},
    "chalk.solvers.execution.checked": {"run_checked"},
}


def test_only_the_engine_plans_compiles_and_evaluates():
    offences = []
    for module, path in MODULES.items():
        if module in ENGINE or module.startswith("chalk.solvers"):
            continue
        for line, imported, name in _imports(path):
            if imported in ENGINE_INTERNALS and (name is None
                                                 or name in ENGINE_INTERNALS[imported]):
                offences.append(f"{path.relative_to(ROOT)}:{line} imports "
                                f"{imported}.{name or '*'}")
    assert not offences, "outside the engine: " + "; ".join(offences)


def test_the_self_check_harness_is_not_installed():
    assert "chalk.selfcheck" not in MODULES
    assert (ROOT / "benchmarks" / "selfcheck.py").is_file()
