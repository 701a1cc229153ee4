"""Printing expressions for people: plain text, values substituted, and LaTeX."""

from __future__ import annotations

from collections.abc import Mapping

import sympy
from chalk.symbolic.variables import known_constant
from sympy.printing.latex import LatexPrinter
from sympy.printing.str import StrPrinter


def _label(symbol: sympy.Symbol) -> str:
    constant = known_constant(symbol.name)
    return constant.label if constant is not None else symbol.name


class _PlainPrinter(StrPrinter):
    def __init__(self, names: Mapping[str, str] | None = None):
        super().__init__({"order": "none"})
        self._names = names or {}

    def _print_Symbol(self, expr):
        if expr.name in self._names:
            return self._names[expr.name]
        return _label(expr)

    def _print_Max(self, expr):
        return "max(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_Min(self, expr):
        return "min(" + ", ".join(self._print(a) for a in expr.args) + ")"


def _tidy(text: str) -> str:
    return text.replace("**", "^").replace("*", "·")


def plain(expr: sympy.Expr) -> str:
    """``expr`` as readable text: ``total_params·bytes_per_param/(n_chips·hbm_bandwidth)``."""
    return _tidy(_PlainPrinter().doprint(expr))


def substituted(expr: sympy.Expr, shown: Mapping[str, str]) -> str:
    """``expr`` with each symbol replaced by its shown value, e.g. ``(3.35e12 byte/s)``."""
    names = {name: f"({text})" for name, text in shown.items()}
    return _tidy(_PlainPrinter(names).doprint(expr))


class _Latex(LatexPrinter):
    def _print_Symbol(self, expr, style="plain"):
        label = _label(expr).replace("_", r"\_")
        return r"\mathrm{" + label + "}"


def latex(expr: sympy.Expr) -> str:
    """LaTeX for ``expr`` with names set upright."""
    return _Latex({"mul_symbol": "dot"}).doprint(expr)


def mathml(expr: sympy.Expr) -> str:
    """Presentation MathML for ``expr`` (rendered natively by browsers), names upright."""
    from sympy.printing.mathml import MathMLPresentationPrinter

    class _MathML(MathMLPresentationPrinter):
        def _print_Symbol(self, sym, style="plain"):
            element = self.dom.createElement("mi")
            element.setAttribute("mathvariant", "normal")
            element.appendChild(self.dom.createTextNode(_label(sym)))
            return element

    return _MathML({"mul_symbol": "dot"}).doprint(expr)


def monomial_text(exponents: Mapping[str, object]) -> str:
    """``{"chip_flops": 1, "n_chips": 1}`` as ``chip_flops·n_chips``; negative exponents
    go below a slash, fractional ones are shown as powers (``x^(1/2)``)."""
    from fractions import Fraction

    def power(name, e):
        if Fraction(e).limit_denominator(1000) == 0:  # a small exponent from a linearised row
            return f"{name}^{abs(float(e)):.2g}"
        e = Fraction(e).limit_denominator(1000)
        if e == 1:
            return name
        shown = str(e.numerator) if e.denominator == 1 else f"({e})"
        return f"{name}^{shown}"

    items = sorted(exponents.items(), key=lambda item: (float(item[1]) < 0, item[0]))
    top = [power(n, e) for n, e in items if float(e) > 0]
    bottom = [power(n, -e) for n, e in items if float(e) < 0]
    text = "·".join(top) or "1"
    if bottom:
        text += "/" + (bottom[0] if len(bottom) == 1 else "(" + "·".join(bottom) + ")")
    return text
