"""Public names of a package that load their module on first use.

A room of the engine (:mod:`chalk.solvers.planning`, ...) names its public functions in
its ``__init__`` without importing them: the cached command line imports single modules
(pins, steps, derivations) and must not pay for sympy to do so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module


def exports(package: str, names: Mapping[str, str]) -> tuple[Callable, Callable]:
    """``__getattr__`` and ``__dir__`` for ``package``, where ``names`` maps each public
    name to the module (within the package) that defines it."""

    def __getattr__(name: str):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f"{package}.{names[name]}"), name)

    def __dir__() -> list[str]:
        return sorted(names)

    return __getattr__, __dir__
