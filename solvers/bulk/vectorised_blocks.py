"""Simultaneous blocks over every element at once (for solvers.bulk.vectorised).

Each regime combination of a block is solved for all elements together: by its closed
forms in sequence, by a scan of its one torn quantity, or by batched Newton
(solvers.bulk.batched_newton) when it is torn at several, seeded by the block's own search
on a few pilot elements. Every solution is verified on all the block's relations; an
element the batched search does not settle is solved alone and counted. Each element's
solution then gets solve's verdict on the block (solvers.analysis.conditioning
.block_verdicts, on the exact log-space Jacobian there): one solve would refuse as
ill-conditioned, or where the block is flat, becomes NaN and is counted, so that
chalk.compiled hands it to solve.
"""

from __future__ import annotations

import numpy as np
from chalk.solvers.analysis.conditioning import block_verdicts
from chalk.solvers.analysis.jacobian import log_jacobians, relation_sides
from chalk.solvers.bulk import batched_newton
from chalk.solvers.bulk.elementwise import admits, element, holds, one_by_one, sign_changes, subset
from chalk.solvers.bulk.prediction import Prediction, samples_needed
from chalk.solvers.execution.blocks import block_inputs, branch_regimes, run_block, set_aside
from chalk.solvers.execution.strategies import NEWTON_MULTI_START, search_range
from chalk.solvers.tolerances import BATCH_NEWTON, BLOCK, NEWTON, SCAN
from chalk.symbolic.errors import AmbiguousSolution, ChalkError
from chalk.symbolic.logspace import monomial_row


def solve_block(model, cstep, env, regime, size, result, seeds, index):
    """A simultaneous block over every element at once.

    Each regime combination is evaluated for all elements together: with no torn
    quantity by its closed forms in sequence, with one by a scan of the torn quantity
    over its plausible range (solvers.tolerances.SCAN) and bisection of each sign change,
    with several by batched Newton from the typical values and from pilot solutions:
    the first element solved by the block's own search, then, while some elements are
    unsolved, up to ``BATCH_NEWTON.pilots - 1`` more of them (each seeding Newton on the
    rest). An element keeps the solution of the regime whose inequalities hold there;
    several distinct ones are an ambiguity. An element with none is a failure when
    every search was complete; otherwise the block's own search (multi-start, then a path
    from the reference point) solves it alone, and it is counted.
    """
    names = list(cstep.step.variables)
    live = [b for b in cstep.block_branches if not set_aside(cstep, b, regime)]
    searched = any(b.strategy == NEWTON_MULTI_START for b in live)
    if searched and size == 1 and index not in seeds:  # the pilot would be all of it
        one_by_one(model, cstep, env, regime, size, result)
        return
    if searched and index not in seeds:
        first = _pilot(model, cstep, env, regime, 0)
        # a first pilot with several solutions: Newton would pick one of them silently
        seeds[index] = None if first is None else ([first] if first else [])
    if searched and seeds[index] is None:
        one_by_one(model, cstep, env, regime, size, result)
        return
    found = _Found(names, size)
    starts = [*seeds.get(index, ()), _typical(model, names)]
    inputs = _varying_inputs(cstep, env, size)
    fits = seeds.setdefault(("fits", index), {})  # kept for later chunks, as the pilots are
    for branch in live:
        for scope in _branch_solutions(model, branch, env, size, starts, inputs, fits):
            found.add(model, cstep, branch, scope)
    tried = np.zeros(size, dtype=bool)
    for _ in range(BATCH_NEWTON.pilots - 1 if searched else 0):
        waiting = np.flatnonzero((found.count == 0) & ~tried)
        if not waiting.size:
            break
        tried[waiting[0]] = True
        seed = _pilot(model, cstep, env, regime, int(waiting[0]))
        if not seed:
            continue
        seeds[index].append(seed)
        unsolved = found.count == 0
        for branch in live:
            if branch.strategy == NEWTON_MULTI_START:
                for scope in _newton_solutions(branch, env, size, [seed], unsolved):
                    found.add(model, cstep, branch, scope, unsolved)
    ambiguous = found.count > 1
    failed = found.count == 0
    refused, flat = _verdicts(model, cstep, env, found, ~(ambiguous | failed), size)
    ambiguous |= flat  # a family of solutions: solve keeps one and decides whether it matters
    for n in names:
        env[n] = np.where(ambiguous | failed | refused, np.nan, found.chosen[n])
        if ambiguous.any():
            result.ambiguous[n] = int(ambiguous.sum())
        if refused.any():
            result.ill_conditioned[n] = result.ill_conditioned.get(n, 0) + int(refused.sum())
    if searched and failed.any():  # Newton proves nothing: the block's own search decides
        result.one_at_a_time[", ".join(names)] = int(failed.sum())
        one_by_one(model, cstep, env, regime, size, result, np.flatnonzero(failed))
    elif failed.any():
        for n in names:
            result.failed[n] = int(failed.sum())
    if any(branch.labels for branch in cstep.block_branches):
        result.regimes[names[0]] = found.labels


def _verdicts(model, cstep, env, found, where, size) -> tuple[np.ndarray, np.ndarray]:
    """Among the elements ``where`` (one solution each), those whose solution ``solve``
    would refuse as ill-conditioned, and those where the block is flat (see
    solvers.analysis.conditioning.block_verdicts): both measured on the block's exact
    log-space Jacobian at each element, in the regimes of the branch that solved it. A
    branch of products of powers has the same Jacobian at every solution (its rows are
    the exponents, halved), so one element answers for all of its elements."""
    refused, flat = np.zeros(size, dtype=bool), np.zeros(size, dtype=bool)
    relations = list(cstep.step.relations)
    names = list(found.names)
    columns = [*names, *block_inputs(model, cstep)]
    scope = {**env, **found.chosen}
    for number, branch in enumerate(found.branches):
        mine = where & (found.source == number)
        if not mine.any():
            continue
        regimes = branch_regimes(model, cstep, branch)
        constant = all(monomial_row(*relation_sides(model.relations[r], regimes.get(r)))
                       is not None for r in relations)
        index = np.flatnonzero(mine)[:1] if constant else np.flatnonzero(mine)
        rows = log_jacobians(model, relations, subset(scope, index, size), columns, regimes,
                             index.size)
        bad, open_ = block_verdicts(rows[:, :len(names)], rows[:, len(names):])
        if constant:
            refused |= mine & bad[0]
            flat |= mine & open_[0]
        else:
            refused[index], flat[index] = bad, open_
    return refused, flat


class _Found:
    """The distinct verified solutions of a block found so far, per element: the first
    one's values, regime labels and branch (its position in ``branches``), and how
    many there are."""

    def __init__(self, names, size):
        self.names, self.size = names, size
        self.chosen = {n: np.full(size, np.nan) for n in names}
        self.count = np.zeros(size, dtype=int)
        self.labels = np.full(size, "", dtype=object)
        self.branches = []
        self.source = np.full(size, -1)

    def add(self, model, cstep, branch, scope, within=None):
        """Count ``scope`` where it is a solution (every quantity physical, the regime's
        inequalities held, every relation within ``SCAN.accept``) and new, among the
        elements ``within`` (default all)."""
        size = self.size
        ok = np.ones(size, dtype=bool) if within is None else within.copy()
        for n in self.names:
            ok &= admits(model, n, np.broadcast_to(scope[n], (size,)), n in cstep.provisional)
        ok &= holds(branch.guards, scope, size)
        for lhs, rhs in branch.all_equations:
            left = np.broadcast_to(np.asarray(lhs(scope), dtype=float), (size,))
            right = np.broadcast_to(np.asarray(rhs(scope), dtype=float), (size,))
            scale = np.maximum(np.abs(left), np.abs(right))
            ok &= np.abs(left - right) <= SCAN.accept * np.where(scale == 0, 1, scale)
        values = {n: np.broadcast_to(np.asarray(scope[n], dtype=float), (size,))
                  for n in self.names}
        same = ok & (self.count > 0)
        if same.any():  # else no element has a solution yet to be the same as
            for n in self.names:
                same &= np.isclose(values[n], self.chosen[n], rtol=BLOCK.distinct_rtol, atol=0)
        new = ok & ~same
        first = new & (self.count == 0)
        self.count += new
        for n in self.names:
            self.chosen[n] = np.where(first, values[n], self.chosen[n])
        if first.any():
            if not any(b is branch for b in self.branches):
                self.branches.append(branch)
            number = next(i for i, b in enumerate(self.branches) if b is branch)
            self.source = np.where(first, number, self.source)
        if branch.labels:
            self.labels = np.where(first, ", ".join(branch.labels), self.labels)


def _typical(model, names) -> dict[str, float]:
    """The block's typical values in base units (the first start of its own search)."""
    return {n: (model.variables[n].typical or 1.0) * model.variables[n].to_base for n in names}


def _pilot(model, cstep, env, regime, i: int):
    """The block's values at element ``i``, solved by the block's own search: a dict,
    empty if it has none, ``None`` if it has several."""
    scalar = element(env, i)
    try:
        run_block(model, cstep, scalar, regime)
    except AmbiguousSolution:
        return None
    except ChalkError:
        return {}
    return {n: scalar[n] for n in cstep.step.variables}


def _torn_residuals(branch, scope, size) -> np.ndarray:
    """Relative residuals of ``branch``'s torn relations, shape (torn, size), with the
    tears already in ``scope`` and the rest solved from them by the closed forms."""
    _complete(branch, scope)
    rows = np.zeros((len(branch.residuals), size))
    for row, (lhs, rhs) in zip(rows, branch.residuals, strict=True):
        left = np.asarray(lhs(scope), dtype=float)
        right = np.asarray(rhs(scope), dtype=float)
        total = np.abs(left) + np.abs(right)
        # both sides zero is a residual of zero (left where the division is skipped)
        np.divide(left - right, total, out=row, where=total != 0)
    return rows


def _complete(branch, scope) -> None:
    """Every quantity of ``branch`` in ``scope`` from its tears, by the closed forms in
    sequence; NaN where one leaves its domain (positive, or zero where it may be, as
    TornBranch.complete has it)."""
    for name, fn in branch.sequence:
        value = np.asarray(fn(scope), dtype=float)
        admitted = (value > 0) | ((value == 0) & (name in branch.zero_ok))
        scope[name] = np.where(admitted, value, np.nan)


def _varying_inputs(cstep, env, size) -> tuple[str, ...]:
    """The quantities the block's relations read, not its own, that vary by element."""
    own = set(cstep.step.variables)
    read = {s.name for relation in cstep.relations for s in relation.symbols} - own
    return tuple(sorted(n for n in read
                        if isinstance(env.get(n), np.ndarray) and env[n].shape == (size,)))


def _branch_solutions(model, branch, env, size, starts=(), inputs=(), fits=None):
    """Every solution of one regime combination, as scopes of arrays (NaN where an
    element has no such solution); several tears are solved by Newton from ``starts``
    (each a dict of base-unit values of the block's quantities), later elements from
    predictions on ``inputs`` kept in ``fits`` (see :func:`_newton_solutions`)."""
    if not branch.tears:
        scope = dict(env)
        for name, fn in branch.sequence:
            scope[name] = np.asarray(fn(scope), dtype=float)
        return [scope]
    if len(branch.tears) > 1:
        return _newton_solutions(branch, env, size, starts, inputs=inputs, fits=fits)
    tear = branch.tears[0]

    def residual(log_x):
        scope = dict(env)
        scope[tear] = np.exp(log_x)
        return _torn_residuals(branch, scope, size)[0]

    scopes = []
    for root in sign_changes(residual, search_range(model.variables[tear]), size):
        scope = dict(env)
        scope[tear] = np.exp(root)
        for name, fn in branch.sequence:
            scope[name] = np.asarray(fn(scope), dtype=float)
        scopes.append(scope)
    return scopes


def _newton_solutions(branch, env, size, starts, within=None, inputs=(), fits=None):
    """The solutions batched Newton reaches from each start, as scopes of arrays (NaN
    where it did not converge), for the elements ``within`` (default all). An element
    solved from one start is not started again from the next: like the block's own
    multi-start search, this proves nothing unique. Newton runs on
    ``BATCH_NEWTON.batch`` elements at a time; once a batch is solved from a start, a fit
    of those solutions on the varying ``inputs`` (solvers.bulk.prediction) gives each
    element of the later ones its own start and inverse Jacobian there, for one step
    (see :func:`_newton_part`). ``fits`` (a dict) keeps each fit for later calls on the
    same plan (chunks of one Monte Carlo run)."""
    if len(branch.residuals) != len(branch.tears):
        return []  # a degenerate combination: the block's own search handles it
    tears = branch.tears
    scopes = []
    unsolved = np.ones(size, dtype=bool) if within is None else within.copy()
    for start in starts:
        waiting = np.flatnonzero(unsolved)
        if not waiting.size:
            break
        begin = np.log(np.array([start[t] for t in tears], dtype=float))
        log_x = np.full((len(tears), size), np.nan)
        # the branch belongs to the compiled plan, which outlives every call that shares fits
        key = (id(branch), tuple(sorted(start.items())), inputs)
        prediction = None if fits is None else fits.get(key)
        for first in range(0, waiting.size, BATCH_NEWTON.batch):
            part = waiting[first:first + BATCH_NEWTON.batch]
            if part.size == part[-1] - part[0] + 1:  # consecutive: views, not copies
                part = slice(part[0], part[-1] + 1)
            count = part.stop - part.start if isinstance(part, slice) else part.size
            part_env = subset(env, part, size)
            guess = None if prediction is None else prediction(part_env, count)
            log_x[:, part] = _newton_part(branch, part_env, count, begin, guess)
            if prediction is None and inputs:
                prediction = _fitted(branch, part_env, count, log_x[:, part],
                                     {n: part_env[n] for n in inputs})
                if prediction is not None and fits is not None:
                    fits[key] = prediction
        solved = np.isfinite(log_x).all(axis=0)
        unsolved &= ~solved
        scope = dict(env)
        scope.update(zip(tears, np.exp(log_x), strict=True))
        _complete(branch, scope)
        scopes.append(scope)
    return scopes


def _fitted(branch, env, count, log_x, inputs):
    """A :class:`Prediction` of ln of each tear and of the inverse Jacobian there from
    the solutions ``log_x`` of the ``count`` elements of ``env`` (None if too few)."""
    if np.count_nonzero(np.isfinite(log_x).all(axis=0)) < samples_needed(len(inputs)):
        return None  # before the Jacobians: no fit could be made
    inverse = batched_newton.inverse_jacobians(_residual(branch, env, count),
                                               np.where(np.isfinite(log_x), log_x, 0.0))
    inverse[:, :, ~np.isfinite(log_x).all(axis=0)] = np.nan
    return Prediction.fit(inputs, np.vstack([log_x, inverse.reshape(-1, count)]))


def _newton_part(branch, env, count, begin, predicted=None):
    """Batched Newton on the ``count`` elements of ``env``. Where ``predicted`` (ln of
    each tear, then the inverse Jacobian there, per element) is given and finite, one
    step with the predicted inverse Jacobian from the predicted start, and Newton from
    there for the elements it leaves above ``BLOCK.polish_above``; then Newton from
    ``begin`` (ln of each tear) for every element not solved yet. Returns ln of each
    tear per element, NaN where unsolved."""
    k = len(begin)
    # a sum is NaN (or infinite) where any term is: one pass, not one per quantity
    guessed = (np.zeros(count, dtype=bool) if predicted is None
               else np.isfinite(predicted.sum(axis=0)))
    log_x = np.full((k, count), np.nan)
    if guessed.any():
        columns = np.flatnonzero(guessed)
        if columns.size == count:  # the usual case: views, no gathering
            part, guess = env, predicted
        else:
            part, guess = subset(env, columns, count), predicted[:, columns]
        stepped, size = batched_newton.step_with(
            _residual(branch, part, columns.size), guess[:k],
            guess[k:].reshape(k, k, columns.size), BLOCK.polish_above)
        done = size <= BLOCK.polish_above  # solved and polished, as Newton would leave it
        if done.all() and columns.size == count:
            return stepped
        log_x[:, columns[done]] = stepped[:, done]
        start = np.full((k, count), np.nan)
        start[:, columns] = stepped
        if not done.all():
            _solve_from(branch, env, count, columns[~done], start, log_x)
    rest = np.flatnonzero(np.isnan(log_x[0]))
    if rest.size:
        _solve_from(branch, env, count, rest, np.broadcast_to(begin[:, None], log_x.shape),
                    log_x)
    return log_x


def _solve_from(branch, env, count, columns, start, log_x) -> None:
    """Batched Newton on the elements ``columns`` of the ``count`` in ``env`` from their
    columns of ``start``; what it solves is written into ``log_x``."""
    if columns.size < count:  # gathered: the others do not ride along
        env, start = subset(env, columns, count), start[:, columns]
    found, solved = batched_newton.solve(_residual(branch, env, columns.size), start,
                                         NEWTON.accept, BLOCK.polish_above)
    if columns.size == count and solved.all():  # the usual case: no gathering back
        log_x[...] = found
    else:
        log_x[:, columns[solved]] = found[:, solved]


def _residual(branch, env, count):
    """The torn residuals of ``branch`` as batched Newton asks for them (ln of the tears
    of the elements ``index`` of the ``count`` in ``env``)."""
    tears = branch.tears

    def residual(log_x, index):
        scope = subset(env, index, count)
        scope.update(zip(tears, np.exp(log_x), strict=True))
        return _torn_residuals(branch, scope, index.size)

    return residual
