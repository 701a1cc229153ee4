"""Every numeric tolerance of the solvers is declared in solvers.tolerances, documented.

The rule the solver modules are held to, checked on their syntax trees:

* a float literal may only be 0.0, 0.5, 1.0 or 2.0: plain arithmetic (halving a bracket,
  a unit residual, a central difference), never a tolerance, which is always declared;
* an integer literal may only be at most 3 in size (an index, a power, how many options
  a message lists): grid sizes, start counts and iteration limits are declared too.

Literals in decorators (an ``lru_cache`` size) and in strings (docstrings) configure
nothing numeric and are not checked.
"""

import ast
import dataclasses
import re
from pathlib import Path

import pytest
from chalk.solvers import tolerances

SOLVERS = Path(__file__).resolve().parents[2] / "solvers"
MODULES = ["execution/numeric", "execution/tearing", "execution/blocks",
           "execution/strategies", "execution/execute", "execution/steps",
           "analysis/conditioning", "execution/solving", "bulk/vectorised"]
PLAIN_FLOATS = {0.0, 0.5, 1.0, 2.0}
LARGEST_PLAIN_INT = 3


def _literals(tree):
    """Numeric constants outside decorators, as (line, value)."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for decorator in node.decorator_list:
                skipped.update(id(n) for n in ast.walk(decorator))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and id(node) not in skipped
                and type(node.value) in (int, float)):
            yield node.lineno, node.value


@pytest.mark.parametrize("module", MODULES)
def test_solver_modules_declare_no_tolerances_of_their_own(module):
    tree = ast.parse((SOLVERS / f"{module}.py").read_text(encoding="utf-8"))
    found = [f"line {line}: {value!r}" for line, value in _literals(tree)
             if (value not in PLAIN_FLOATS if isinstance(value, float)
                 else abs(value) > LARGEST_PLAIN_INT)]
    assert not found, (f"solvers/{module}.py has numeric settings of its own ({found}); "
                       "declare them in solvers/tolerances.py")


def test_the_rule_catches_a_tolerance():
    # the check above is not vacuous: a tolerance and a grid size are both caught
    tree = ast.parse("def f(x, points=481):\n    return abs(x) < 1e-9\n")
    assert sorted(value for _, value in _literals(tree)) == [1e-9, 481]


OPTIONS = [cls for cls in vars(tolerances).values()
           if isinstance(cls, type) and dataclasses.is_dataclass(cls)
           and cls.__module__ == tolerances.__name__]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda cls: cls.__name__)
def test_every_option_is_frozen_documented_and_instantiated(options):
    assert options.__dataclass_params__.frozen
    doc = options.__doc__ or ""
    missing = [f.name for f in dataclasses.fields(options)
               if not re.search(rf"\b{f.name}\b", doc)]
    assert not missing, f"{options.__name__} does not document {missing}"
    instances = [v for v in vars(tolerances).values() if type(v) is options]
    assert len(instances) == 1, f"one module-level {options.__name__}, not {len(instances)}"
