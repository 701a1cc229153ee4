"""Closed forms as plain data: the one step from sympy to something that runs.

:func:`to_ir` lowers a sympy expression once into a small tree of lists (JSON-ready),
and :func:`compile_ir` turns such a tree into a closure ``f(values)`` over floats or
numpy arrays (elementwise). :func:`chalk.symbolic.evaluate.compile_expr` is
``compile_ir(to_ir(expr))``, and the CLI cache stores the tree and replays it through
the same :func:`compile_ir`, so a cached answer runs exactly what the engine ran.

Sums and products fold left to right; a product is split into numerator and
denominator (``x/y`` is one division, not ``y**-1``). The powers 1, -1, 2 and 1/2
become the exactly rounded operations x, 1/x, x·x and sqrt(x). On plain floats, the
exactly rounded operations (sums, products, quotients, square roots, max, min,
comparisons) run in Python with numpy's meaning (a zero divisor gives inf or nan, the
square root of a negative nan, max/min propagate nan); everything else, and every
array, goes to numpy, which is imported only when a tree needs it, so replaying a
sum of products costs no numpy import.

Nodes: ``["num", x]``, ``["sym", name]``, ``["add", [term...]]``,
``["mul", [numerator...], [denominator...]]``, ``["inv", x]``, ``["sq", x]``,
``["sqrt", x]``, ``["pow", x, exponent]`` (a number), ``["powx", x, y]`` (x**y),
``["max", [arg...]]``, ``["min", [arg...]]``, ``["exp", x]``, ``["log", x]``,
``["abs", x]``, ``["ceil", x]`` (the least whole number at or above x), ``["floor", x]``
(the greatest at or below it),
``["piecewise", [[value, condition]...]]`` (the first true condition's value, nan if
none holds). Conditions: ``["true"]``, ``["false"]``,
``["lt"|"le"|"gt"|"ge", lhs, rhs]``, ``["and"|"or", [condition...]]``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping

Evaluator = Callable[[Mapping[str, object]], object]

_POWERS = {1.0: None, -1.0: "inv", 2.0: "sq", 0.5: "sqrt"}
_FUNCTIONS = {"exp": "exp", "log": "log", "Abs": "abs", "ceiling": "ceil",
              "floor": "floor"}
_EXTREMES = {"Max": "max", "Min": "min"}
_COMPARISONS = {"StrictLessThan": "lt", "LessThan": "le", "StrictGreaterThan": "gt",
                "GreaterThan": "ge"}
_CONNECTIVES = {"And": "and", "Or": "or"}


def to_ir(expr, constants: Mapping[str, float] | None = None) -> list:
    """The IR of a sympy expression (unit constants in ``constants`` become numbers).

    Raises
    ------
    TypeError
        A part no evaluator exists for (an unevaluated integral, say).
    """
    return _lower(expr, constants or {})


def _lower(expr, constants) -> list:
    if expr.is_Symbol:
        if expr.name in constants:
            return ["num", float(constants[expr.name])]
        return ["sym", expr.name]
    if expr.is_Number or expr.is_NumberSymbol:  # pi and e too
        return ["num", float(expr)]
    if expr.is_Add:
        return ["add", [_lower(arg, constants) for arg in expr.args]]
    if expr.is_Mul:
        top, bottom = [], []
        for arg in expr.args:
            if arg.is_Pow and arg.exp.is_Number and arg.exp < 0:
                bottom.append(_lower(arg.base ** (-arg.exp), constants))
            else:
                top.append(_lower(arg, constants))
        return ["mul", top, bottom]
    if expr.is_Pow:
        base = _lower(expr.base, constants)
        if not expr.exp.is_Number:
            return ["powx", base, _lower(expr.exp, constants)]
        exponent = float(expr.exp)
        kind = _POWERS.get(exponent, "pow")
        if kind is None:
            return base
        return [kind, base, exponent] if kind == "pow" else [kind, base]
    name = type(expr).__name__
    if name in _EXTREMES:
        return [_EXTREMES[name], [_lower(arg, constants) for arg in expr.args]]
    if name == "Piecewise":
        return ["piecewise", [[_lower(value, constants), _condition(condition, constants)]
                              for value, condition in expr.args]]
    if name in _FUNCTIONS and len(expr.args) == 1:
        return [_FUNCTIONS[name], _lower(expr.args[0], constants)]
    raise TypeError(f"cannot evaluate {name} numerically: {expr}")


def _condition(condition, constants) -> list:
    name = type(condition).__name__
    if name == "BooleanTrue":
        return ["true"]
    if name == "BooleanFalse":
        return ["false"]
    if name in _COMPARISONS:
        return [_COMPARISONS[name], _lower(condition.lhs, constants),
                _lower(condition.rhs, constants)]
    if name in _CONNECTIVES:
        return [_CONNECTIVES[name], [_condition(c, constants) for c in condition.args]]
    raise TypeError(f"cannot evaluate condition {condition}")


def evaluate_ir(node: list, env: Mapping[str, object]) -> object:
    """The value of an IR tree with symbol values from ``env`` (base units): one call of
    :func:`compile_ir`'s closure."""
    return compile_ir(node)(env)


def compile_ir(node: list) -> Evaluator:
    """A closure ``f(values)`` computing an IR tree over floats or numpy arrays.

    Raises
    ------
    ValueError
        A node this module does not write (a damaged tree).
    KeyError, IndexError, TypeError
        A tree not laid out as :func:`to_ir` writes it.
    """
    kind = node[0]
    if kind == "num":
        value = float(node[1])
        return lambda env: value
    if kind == "sym":
        name = node[1]
        return lambda env: env[name]
    if kind == "add":
        parts = [compile_ir(part) for part in node[1]]
        if len(parts) == 2:
            a, b = parts
            return lambda env: a(env) + b(env)
        return _folded(operator.add, parts)
    if kind == "mul":
        top = _product([compile_ir(part) for part in node[1]]) if node[1] \
            else (lambda env: 1.0)
        if not node[2]:
            return top
        bottom = _product([compile_ir(part) for part in node[2]])
        return lambda env: _divide(top(env), bottom(env))
    if kind in _UNARY:
        operation, argument = _UNARY[kind](), compile_ir(node[1])
        return lambda env: operation(argument(env))
    if kind == "pow":
        power, base, exponent = _numpy().power, compile_ir(node[1]), float(node[2])
        return lambda env: power(base(env), exponent)
    if kind == "powx":
        np = _numpy()
        base, exponent = compile_ir(node[1]), compile_ir(node[2])
        # numpy's power overflows to inf (a float ** would raise OverflowError)
        return lambda env: np.power(np.float64(base(env)), exponent(env))
    if kind in ("max", "min"):
        pick = _maximum if kind == "max" else _minimum
        return _folded(pick, [compile_ir(part) for part in node[1]])
    if kind == "piecewise":
        return _piecewise([(compile_ir(value), _compile_condition(condition))
                           for value, condition in node[1]])
    raise ValueError(f"unknown IR node {kind!r}")


def _compile_condition(node: list) -> Evaluator:
    kind = node[0]
    if kind == "true":
        return lambda env: True
    if kind == "false":
        return lambda env: False
    if kind in _COMPARE:
        compare, lhs, rhs = _COMPARE[kind], compile_ir(node[1]), compile_ir(node[2])
        return lambda env: compare(lhs(env), rhs(env))
    if kind in ("and", "or"):
        parts = [_compile_condition(part) for part in node[1]]
        return _folded(_logical_and if kind == "and" else _logical_or, parts)
    raise ValueError(f"unknown IR condition {kind!r}")


# ``<`` and friends are numpy's comparisons on arrays and Python's on floats
_COMPARE = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge}


def _numpy():
    """numpy, imported on first need (a tree of sums and products never needs it)."""
    import numpy

    return numpy


def _folded(operation, parts) -> Evaluator:
    """``operation`` folded left to right over the parts' values."""
    def fold(env):
        result = parts[0](env)
        for part in parts[1:]:
            result = operation(result, part(env))
        return result

    return fold


def _product(parts) -> Evaluator:
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        a, b = parts
        return lambda env: a(env) * b(env)
    return _folded(operator.mul, parts)


def _divide(top, bottom):
    """``top / bottom`` with numpy's meaning for a zero divisor (inf, or nan for 0/0),
    for plain Python floats too: a closed form evaluated where a term vanishes gives a
    non-physical value that the caller rejects, not a ZeroDivisionError."""
    try:
        return top / bottom
    except ZeroDivisionError:
        np = _numpy()
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.float64(top) / np.float64(bottom)


def _inverse(value):
    return _divide(1.0, value)


def _square(value):
    return value * value


def _sqrt(value):
    # IEEE square roots are exactly rounded, so math's equals numpy's where both answer
    if type(value) is float and value >= 0.0:
        return math.sqrt(value)
    return _numpy().sqrt(value)


def _maximum(a, b):
    """``numpy.maximum`` (nan wins; on a tie the second argument), without numpy for
    two floats."""
    if type(a) is float and type(b) is float:
        return a if a != a or a > b else b
    return _numpy().maximum(a, b)


def _minimum(a, b):
    """``numpy.minimum`` (nan wins; on a tie the second argument), without numpy for
    two floats."""
    if type(a) is float and type(b) is float:
        return a if a != a or a < b else b
    return _numpy().minimum(a, b)


def _logical_and(a, b):
    if type(a) is bool and type(b) is bool:
        return a and b
    return _numpy().logical_and(a, b)


def _logical_or(a, b):
    if type(a) is bool and type(b) is bool:
        return a or b
    return _numpy().logical_or(a, b)


# each entry gives the operation when a tree is compiled (numpy only for those needing it)
_UNARY: dict[str, Callable[[], Callable]] = {
    "inv": lambda: _inverse,
    "sq": lambda: _square,
    "sqrt": lambda: _sqrt,
    "exp": lambda: _numpy().exp,
    "log": lambda: _numpy().log,
    "abs": lambda: _numpy().abs,
    "ceil": lambda: whole_up,
    "floor": lambda: whole_down,
}


# Float noise on an exact whole count (16.999999999999996 replicas for 17) must not add
# one: a value within this relative distance above a whole number rounds up to it.
WHOLE_SLACK = 1e-9


def whole_up(value):
    """The least whole number at or above ``value``, forgiving float noise of
    :data:`WHOLE_SLACK` (relative) above a whole number; elementwise on arrays."""
    if isinstance(value, float) and math.isfinite(value):
        return float(math.ceil(value - abs(value) * WHOLE_SLACK))
    np = _numpy()
    return np.ceil(value - np.abs(value) * WHOLE_SLACK)


def whole_down(value):
    """The greatest whole number at or below ``value``, forgiving float noise of
    :data:`WHOLE_SLACK` (relative) below a whole number (149.99999999999997 sequences
    fit as 150); elementwise on arrays."""
    if isinstance(value, float) and math.isfinite(value):
        return float(math.floor(value + abs(value) * WHOLE_SLACK))
    np = _numpy()
    return np.floor(value + np.abs(value) * WHOLE_SLACK)


def _piecewise(branches) -> Evaluator:
    """The first branch whose condition holds (nan if none does); elementwise on arrays,
    where every branch is evaluated and picked per element."""
    def piecewise(env):
        values = [value(env) for value, _ in branches]
        conditions = [condition(env) for _, condition in branches]
        if all(getattr(c, "ndim", 0) == 0 for c in conditions):
            for value, condition in zip(values, conditions, strict=True):
                if condition:
                    return value
            return float("nan")
        np = _numpy()
        return np.select([np.asarray(c, bool) for c in conditions], values, np.nan)

    return piecewise
