"""Straight-line closed forms as plain data, evaluated without sympy or numpy.

A cached plan stores each closed form as a small tree of lists (JSON-ready) and
replays it with :func:`evaluate_ir`. Only what gives bit-for-bit the numbers of
:func:`chalk.symbolic.evaluate.compile_expr` is accepted: symbols, numbers, sums,
products and quotients (folded left to right and split into numerator and denominator
the same way), max and min, and the powers 1, -1, 2 and 1/2, which compile_expr turns
into exactly rounded multiplications, divisions and square roots. Anything else (other
powers, functions, piecewise forms) has no IR, and a plan that needs it is not cached.

Nodes: ``["num", x]``, ``["sym", name]``, ``["add", [term...]]``,
``["mul", [numerator...], [denominator...]]``, ``["max", [arg...]]``, ``["min", [arg...]]``,
``["inv", node]`` (1/x), ``["sq", node]`` (x·x), ``["sqrt", node]``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

_POWERS = {1.0: None, -1.0: "inv", 2.0: "sq", 0.5: "sqrt"}


def to_ir(expr, constants: Mapping[str, float] | None = None) -> list | None:
    """The IR of a sympy expression, or None if it has a part outside the IR.

    Mirrors compile_expr's choices node for node (unit constants become numbers).
    """
    constants = constants or {}
    if expr.is_Symbol:
        if expr.name in constants:
            return ["num", float(constants[expr.name])]
        return ["sym", expr.name]
    if expr.is_Number:
        value = float(expr)
        return ["num", value] if math.isfinite(value) else None
    if expr.is_Add or type(expr).__name__ in ("Max", "Min"):
        parts = [to_ir(arg, constants) for arg in expr.args]
        if any(part is None for part in parts):
            return None
        kind = "add" if expr.is_Add else type(expr).__name__.lower()
        return [kind, parts]
    if expr.is_Mul:
        top, bottom = [], []
        for arg in expr.args:
            if arg.is_Pow and arg.exp.is_Number and arg.exp < 0:
                part = to_ir(arg.base ** (-arg.exp), constants)
                bottom.append(part)
            else:
                part = to_ir(arg, constants)
                top.append(part)
            if part is None:
                return None
        return ["mul", top, bottom]
    if expr.is_Pow and expr.exp.is_Number:
        kind = _POWERS.get(float(expr.exp), "")
        base = to_ir(expr.base, constants)
        if base is None or kind == "":
            return None
        return base if kind is None else [kind, base]
    return None


def evaluate_ir(node: list, env: Mapping[str, float]) -> float:
    """The value of an IR tree, with symbol values from ``env`` (base units).

    Raises
    ------
    KeyError
        A symbol without a value.
    ValueError, ZeroDivisionError
        No real value (a square root of a negative, a division by zero): the caller
        leaves such a question to the full solver, which says why.
    """
    kind = node[0]
    if kind == "num":
        return node[1]
    if kind == "sym":
        return env[node[1]]
    if kind == "add":
        total = evaluate_ir(node[1][0], env)
        for part in node[1][1:]:
            total = total + evaluate_ir(part, env)
        return total
    if kind in ("max", "min"):
        pick = max if kind == "max" else min
        result = evaluate_ir(node[1][0], env)
        for part in node[1][1:]:
            value = evaluate_ir(part, env)
            if math.isnan(value) or math.isnan(result):
                raise ValueError("max/min of nan")
            result = pick(result, value)
        return result
    if kind == "mul":
        top = _product(node[1], env) if node[1] else 1.0
        if not node[2]:
            return top
        return top / _product(node[2], env)
    if kind == "inv":
        return 1.0 / evaluate_ir(node[1], env)
    if kind == "sq":
        value = evaluate_ir(node[1], env)
        return value * value
    if kind == "sqrt":
        return math.sqrt(evaluate_ir(node[1], env))
    raise ValueError(f"unknown IR node {kind!r}")


def _product(parts: list, env: Mapping[str, float]) -> float:
    total = evaluate_ir(parts[0], env)
    for part in parts[1:]:
        total = total * evaluate_ir(part, env)
    return total
