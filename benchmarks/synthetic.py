"""A synthetic model for planning benchmarks: many relations over many quantities.

Each relation ties three to five dimensionless quantities as a product or a sum, the
shape the knowledge base's relations take, wired so that pinning every fifth quantity
leaves a large square system with chains and cycles to plan.
"""

from __future__ import annotations

import random

import sympy
from chalk.symbolic.model import build_model
from chalk.symbolic.relations import Relation, definition
from chalk.symbolic.variables import Variable


def synthetic_model(relations: int = 2000, seed: int = 0):
    rng = random.Random(seed)
    variables = [Variable(f"syn_{i}", "1", "synthetic", typical=1.0)
                 for i in range(relations)]
    symbols = [v.symbol for v in variables]
    rels = []
    for i in range(relations):
        # quantity i is defined from two to four others, mostly nearby, sometimes far
        others = {rng.randrange(max(0, i - 50), relations) for _ in range(rng.randint(2, 4))}
        others.discard(i)
        if not others:
            others = {(i + 1) % relations}
        terms = [symbols[j] for j in sorted(others)]
        rhs = sympy.Mul(*terms) if rng.random() < 0.7 else sympy.Add(*terms)
        rels.append(Relation(f"syn_rel_{i}", symbols[i], rhs, "synthetic", definition()))
    return build_model(variables, rels)


def pins_for(model, every: int = 5) -> frozenset[str]:
    names = sorted(model.variables, key=lambda n: int(n.split("_")[1]))
    return frozenset(names[::every])


def sympy_solve_all(model, pins: dict[str, float], unknowns: list[str]):
    """sympy.solve on every relation at once, pins substituted (for comparison only)."""
    symbols = {s.name: s for r in model.relations.values() for s in r.symbols}
    subs = {symbols[n]: sympy.nsimplify(v, rational=True) for n, v in pins.items()
            if n in symbols}
    subs.update({symbols[c]: 1 for c in model.constants if c in symbols})
    equations = [sympy.Eq(r.lhs.xreplace(subs), r.rhs.xreplace(subs))
                 for r in model.relations.values()]
    equations = [e for e in equations if e is not sympy.true]
    return sympy.solve(equations, [symbols[u] for u in unknowns], dict=True)


def squares_model():
    """x^2 + y^2 = p, y^2 + z^2 = q, z^2 + x^2 = r: x, y and z from p, q and r form a
    block with no closed form (every relation has two roots for each quantity, so all
    three are torn: batched Newton in Monte Carlo), while p from x and y is one closed
    form. By hand, x^2 = (p - q + r) / 2."""
    variables = [Variable(n, "1", "synthetic", typical=1.0) for n in "xyzpqr"]
    x, y, z, p, q, r = (v.symbol for v in variables)
    return build_model(variables, [
        Relation("sum_xy", p, x ** 2 + y ** 2, "synthetic", definition()),
        Relation("sum_yz", q, y ** 2 + z ** 2, "synthetic", definition()),
        Relation("sum_zx", r, z ** 2 + x ** 2, "synthetic", definition())])


def sums_model():
    """a = x + y and b = x + 2·y, with t = x·y²: x and y from a and b form a block the
    vectorised run solves by a scan of one torn quantity (each sum has a closed form for
    either quantity, but not both at once). By hand, y = b - a, x = a - y."""
    variables = [Variable(n, "1", "synthetic", typical=1.0) for n in ("a", "b", "x", "y", "t")]
    a, b, x, y, t = (v.symbol for v in variables)
    return build_model(variables, [
        Relation("sum_a", a, x + y, "synthetic", definition()),
        Relation("sum_b", b, x + 2 * y, "synthetic", definition()),
        Relation("product_t", t, x * y ** 2, "synthetic", definition())])
