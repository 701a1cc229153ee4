"""Every numerical tolerance and search setting of the engine, declared once.

Each group is a frozen dataclass whose fields document what they control; the
engine reads these instances and has no tolerance literals of its own. Change a
value here, and every strategy that uses it follows.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReferenceOptions:
    """Finding a consistent reference point (solvers.analysis.reference).

    seed, spread : the typical values are nudged by ``exp(N(0, spread))`` drawn
        with ``seed``, so that the point is generic (no two terms balanced by chance).
    draw : ``"sequence"`` (one generator over the sorted quantity names) or
        ``"per_name"`` (one generator per name). What the planner decides does not
        depend on which (tests/solvers/test_reference_draws.py draws both).
    atol : largest ``|ln lhs - ln rhs|`` accepted as holding.
    rounding_factor : a relation also holds within this many times the rounding of its
        sides, the machine epsilon times the sum of its row's absolute log-derivatives
        (a difference of nearly equal terms is evaluated no closer than that).
    rounding_atol, stall_ratio : below ``rounding_atol`` a residual that one step fails
        to shrink by ``stall_ratio`` is rounding (sums of nearly equal terms, steep
        powers such as the expert-coverage curve): the point counts as holding there.
        ``rounding_atol`` is far below ``RANK.rtol``, so rows taken at such a point make
        the same rank decisions as at an exact one.
    stall_window : a search whose largest residual has not shrunk by ``stall_ratio`` in
        this many trial points stops (not consistent unless below ``rounding_atol``).
    max_iterations : trial points (each one evaluation of every relation) before giving up.
    damping_start, damping_floor : Levenberg-Marquardt damping, as fractions of the
        largest curvature of the linearised system: where a plain Gauss-Newton step fails
        the damping starts at ``damping_start`` (and doubles its growth at each further
        failure); after a successful step it is dropped to zero once below
        ``damping_floor``.
    dense_limit : above this many quantities the steps use a sparse least-squares solver.
    derived_weight : cost of moving a derived quantity relative to an input (squared
        log moves), so the point stays near the typical inputs.
    max_log : largest ``|ln x|`` (base units) a trial point may reach.
    sparse_iterations, sparse_max_iterations : above ``dense_limit``, the iterations of
        each sparse least-squares step and the number of Gauss-Newton steps: a large
        model gets an approximate point cheaply (``converged`` says which).
    """

    seed: int = 0
    spread: float = 0.1
    draw: str = "sequence"
    atol: float = 1e-12
    rounding_factor: float = 4.0
    rounding_atol: float = 1e-10
    stall_ratio: float = 0.5
    stall_window: int = 40
    max_iterations: int = 200
    damping_start: float = 1e-6
    damping_floor: float = 1e-12
    dense_limit: int = 400
    derived_weight: float = 1e-6
    max_log: float = 600.0
    sparse_iterations: int = 200
    sparse_max_iterations: int = 4


@dataclass(frozen=True)
class RankOptions:
    """Rank decisions in log space (solvers.analysis.rank).

    rtol : a floating-point entry (from a relation that is not a product of powers)
        counts as zero when it is below ``rtol`` times the largest entry that went
        into it. Exact rows (products of powers) are compared with zero exactly.
    pivot_threshold : a floating-point pivot must be at least this fraction of the
        largest magnitude that went into it (not mostly cancelled away). It is not
        compared with the rest of its row: how large one entry is beside another is a
        property of the reference point, and a pivot chosen by it would change with
        the point's random draw (issue 22: 0.00086 to 0.0020 of its row for n_layers in
        t_train_fsdp_comm over three draws, about the former threshold 1e-3). A reduced
        product-of-powers row with an entry above it is no residue of rounding, so it is
        not tested against the exact rows in exact arithmetic.
    null_component : at a solution, a target whose share of a null direction (one along
        which rounding reaches ``CONDITIONING.refuse``, solvers.analysis.at_solution) is
        above this is not fixed there.
    exact_block_limit : blocks of products of powers up to this size are tested for
        singularity in exact fractions; larger ones in floating point at ``rtol``.
    regime_screen : a combination of max()/min() regimes is analysed for a target only
        when its rows leave at most this much of the target's unit direction outside
        their span, measured in floating point (solvers.planning.regimes.may_fix). Far
        above rounding, so it only spares analyses that could not fix the target.
    completion_pool : sets of three or more extra pins are grown from the candidates
        that sort first (nearest inputs), at most this many.
    max_completion_size : the largest set of extra pins suggested.
    max_completions : how many of the smallest sets are listed.
    zero_probe : a quantity exactly zero at a solution (no copy beyond the first) has no
        log: its column of the Jacobian there is taken at this fraction of its typical
        value and read per typical value of it (solvers.analysis.at_solution).
    """

    rtol: float = 1e-9
    zero_probe: float = 1e-9
    pivot_threshold: float = 1e-3
    exact_block_limit: int = 12
    null_component: float = 1e-6
    regime_screen: float = 1e-6
    completion_pool: int = 30
    max_completion_size: int = 3
    max_completions: int = 6


@dataclass(frozen=True)
class ScanOptions:
    """The one-dimensional scan (complete over the quantity's plausible range).

    Used for the one torn quantity of a block, scalar (solvers.execution.strategies) or over
    Monte Carlo samples at once (solvers.bulk.vectorised), and for the one unknown of a
    relation without a closed form (solvers.execution.execute).

    points : grid points over the quantity's plausible range, evenly spaced in log.
    bisections : halvings of each bracketed sign change (60 reach double precision
        over any range a grid step spans).
    accept : largest relative residual of any relation of the block at an accepted
        solution (a solution of the vectorised scan, or a loose candidate of the
        scalar scan once refined on all the block's relations).
    margin : the scan reaches this far (in ln x) past each end of the plausible range,
        so that a root on a declared bound is bracketed rather than met at a grid end.
    xtol, rtol, maxiter : brentq's settings on ln x; its answer is then bisected
        further, down to neighbouring doubles of x.
    refine_halvings : most halvings of that further bisection (from a whole grid step
        down to neighbouring doubles takes about 55).
    root_accept : largest relative residual at a refined sign change that counts as a
        root. A sign change across a pole leaves about 1; a real root only rounding,
        which a steep residual (a root just inside a domain edge) amplifies well past
        1e-9, so the test is loose.
    loose_accept : a sign change of a torn residual that leaves up to this is a
        candidate, kept only if refining it on all the block's relations brings each
        within ``accept`` (closed forms through a cancellation can leave 1e-4 at a
        well-conditioned root).
    edge_accept : largest residual at a domain edge itself that counts as a root (a
        quantity diverging there, say).
    touch_grid : a local minimum of the residual on the grid below this touches zero.
    touch_floor : local minima above this are not polished (relative residuals are
        bounded by 1, which is where a pole puts them).
    touch_accept, touch_xatol : a polished local minimum below ``touch_accept`` touches
        zero; the polish stops at ``touch_xatol`` in ln x.
    distinct_rtol : roots closer than this (relative) are one.
    edge_bisections : bisections locating where the residual's domain ends.
    edge_halvings : points added towards each domain edge at halving distances, so
        features crowded against it (a saturating relation) are not stepped over.
    island_depth, island_samples : bisections looking for a domain island between two
        grid points undefined for different reasons, and points sampled across one.
    flat_points, flat_below : a scan that finds no root probes the residual at
        ``flat_points`` points; below ``flat_below`` wherever defined it is zero, and
        any value of the torn quantity solves the block.
    """

    points: int = 241
    bisections: int = 60
    accept: float = 1e-9
    margin: float = 1e-6
    xtol: float = 1e-14
    rtol: float = 8.881784197001252e-16  # four times the double precision epsilon
    maxiter: int = 200
    refine_halvings: int = 120
    root_accept: float = 1e-6
    loose_accept: float = 1e-2
    edge_accept: float = 1e-8
    touch_grid: float = 1e-12
    touch_floor: float = 0.999
    touch_accept: float = 1e-10
    touch_xatol: float = 1e-14
    distinct_rtol: float = 1e-6
    edge_bisections: int = 60
    edge_halvings: int = 44
    island_depth: int = 48
    island_samples: int = 33
    flat_points: int = 61
    flat_below: float = 1e-12


@dataclass(frozen=True)
class NewtonOptions:
    """Newton in log space from several starts (two or more torn quantities; not
    proven complete).

    starts : random starts besides the guesses (the typical values).
    seed : seed of the random starts.
    spread : standard deviation of the starts around the guesses, in ln x.
    max_log : largest ``|ln x|`` (base units) of an iterate; beyond it the start ran off
        towards 0 or infinity (and ``exp`` would overflow).
    xtol : scipy.optimize.root's relative tolerance on the iterate.
    accept : largest relative residual of any equation at an accepted solution.
    distinct_rtol : solutions closer than this (relative, in every quantity) are one.
    """

    starts: int = 32
    seed: int = 0
    spread: float = 3.0
    max_log: float = 700.0
    xtol: float = 1e-14
    accept: float = 1e-10
    distinct_rtol: float = 1e-7


@dataclass(frozen=True)
class ContinuationOptions:
    """Following a solution from the model's reference point to the pins (a homotopy),
    when no start of the multi-start search reached one (not proven complete).

    The block's inputs move from their reference values to the pinned ones along a
    straight line in ln x, a parameter t from 0 to 1, and the block's equations minus
    (1 - t) times their residual at the start are solved at each t from the solution at
    the last.

    first_step, max_step, min_step : steps in t: the first, the largest (a step that
        succeeds doubles the next) and the smallest before the path is given up.
    max_jump : largest change of any ln x in one step; a larger one has jumped to
        another branch of solutions, and the step is halved.
    least_squares_evaluations : evaluations (besides those of the Jacobian) that the
        least-squares search for placeholder values a block can use may spend per start.
    """

    first_step: float = 0.05
    max_step: float = 0.25
    min_step: float = 1e-4
    max_jump: float = 1.0
    least_squares_evaluations: int = 60


@dataclass(frozen=True)
class BlockOptions:
    """What a simultaneous block does with the solutions its strategies return
    (solvers.execution.blocks, solvers.execution.tearing).

    polish_above : a torn solution whose block residual exceeds this is refined on all
        the block's relations at once (Newton, started at the solution).
    distinct_rtol : solutions closer than this (relative, in every quantity) are one.
    flat_share : a quantity is named free when its share of the flat direction is above
        this fraction of the largest share.
    max_tear_search : when cycles broken one by one leave two or more tears, sets of up
        to this many relations are tried for a smaller one (the combinations of a block's
        relations, so kept small).
    compose_limit : a torn block's closed forms are put into those after them (to find
        the quantities a regime fixes outright) up to this many expression nodes each.
    """

    polish_above: float = 1e-13
    distinct_rtol: float = 1e-7
    flat_share: float = 0.05
    max_tear_search: int = 2
    compose_limit: int = 200


@dataclass(frozen=True)
class StepOptions:
    """Explicit steps (solvers.execution.execute, solvers.execution.steps, solvers.bulk.vectorised).

    guard_rtol : a regime inequality may fail by this much (relative) and still hold.
    distinct_rtol : roots of one relation closer than this (relative) are one.
    placeholder_rtol : how far the targets may move between two placeholder values before
        the answer is declared to depend on them (rounding only).
    placeholder_factors : multiples of the typical value tried in turn for quantities
        that cancel (any feasible value gives the same answers).
    placeholder_scan_points, placeholder_scan_span : when none of those works and each
        failure was proved by a complete search, this many common multiples over this
        span (evenly spaced in log) are tried as well, for a narrow feasible window.
    polish_steps : Newton steps on the relation as written that a closed-form root with
        sums may take (each kept only if it lowers the residual).
    polish_log_step : the step in ln x of the difference that estimates their slope.
    max_branches : a plan whose steps have several solutions follows each through the
        rest of the plan, up to this many paths in all (beyond, the ambiguity is
        reported as it stands).
    """

    guard_rtol: float = 1e-9
    distinct_rtol: float = 1e-9
    placeholder_factors: tuple[float, ...] = (1.0, 1e-3, 1e3, 1e-6, 1e6)
    placeholder_rtol: float = 1e-6
    placeholder_scan_points: int = 49
    placeholder_scan_span: tuple[float, float] = (1e-6, 1e6)
    polish_steps: int = 3
    polish_log_step: float = 1e-6
    max_branches: int = 16


@dataclass(frozen=True)
class ConditioningOptions:
    """How far a closed-form answer can be trusted (solvers.analysis.conditioning).

    refuse : an elasticity of the answer to an input above this leaves no digit of it:
        the step is refused.
    warn : above this the step is kept with a warning in the derivation.
    step : first relative step of the one-sided difference that measures the elasticity.
    secant : the largest change in ln(answer) a step may make and still be read as the
        slope. An elasticity E moves it by about E·step; near a saturation the answer's
        logarithm bends, and a larger change is a secant that understates the slope (at
        seed 588 of tests/test_one_answer.py a step of 1e-7 moved it by 0.097 and read
        9.7e5 for a slope of 2.3e6), or the step has crossed the saturation.
    shrink, smallest_step : where it moves more, the step is cut by ``shrink`` and taken
        again, down to ``smallest_step``. At 1e-13 the rounding of the step itself costs
        about 2.2e-16 / 1e-13 = 2e-3 of the measurement, and an answer that still moves
        more than ``secant`` has an elasticity above 1e-3 / 1e-13 = 1e10, past
        ``refuse``.
    remembered : scalar verdicts a closed form keeps by the values of its quantities in
        the vectorised run (then it forgets them and starts again): a sweep or a fit asks
        for each step its varied pins do not reach at every call.
    """

    refuse: float = 1e9
    warn: float = 1e5
    step: float = 1e-7
    secant: float = 1e-3
    shrink: float = 1e-3
    smallest_step: float = 1e-13
    remembered: int = 1024


@dataclass(frozen=True)
class PinOptions:
    """Agreement between pins (solvers.execution.checked, solvers.pinning.yielding).

    agreement_rtol : default relative tolerance of a cross-check between pins: public
        figures are rounded, so pins within 1% agree.
    yield_rtol : a conventions or preset number gives way to higher-layer pins that
        determine it only if they roughly agree with it (relative); otherwise the
        disagreement is reported.
    gain_step : the step in ln(pin) by which a failing cross-check's sensitivity to each
        pin is measured (solvers.execution.checked.check_gain).
    bound_reach : a conventions default at a bound of its quantity (an efficiency of 1)
        in a failing cross-check is moved off the bound by up to this factor, one decade
        at a time, to find whether some value of it closes the check
        (solvers.execution.conflicts).
    bound_steps, bound_accept : Newton steps in ln(pin), and the |ln(lhs/rhs)| they must
        reach, that find the value of the user's pin the check holds at with the defaults
        (its bound).
    implied_kept : values the pins imply for a quantity that solvers.pinning.yielding
        keeps by the pins its plan reads (then it forgets them and starts again).
    """

    agreement_rtol: float = 1e-2
    yield_rtol: float = 0.25
    gain_step: float = 1e-4
    bound_reach: float = 1e6
    bound_steps: int = 20
    bound_accept: float = 1e-10
    implied_kept: int = 4096


@dataclass(frozen=True)
class BatchNewtonOptions:
    """Newton in log space on every Monte Carlo sample at once, for a block torn at
    several quantities (solvers.bulk.batched_newton, solvers.bulk.vectorised).

    pilots : samples solved one at a time by the block's own multi-start search, each
        solution seeding Newton: the first sample, then up to this many less one of the
        samples Newton has not solved from the seeds so far.
    iterations : Newton steps before a sample still off the equations is handed to the
        one-at-a-time search (and counted).
    halvings : a step that does not lower the residual is halved this often before the
        sample is given up (handed on likewise).
    max_step : largest change of any ln x in one step (a damped start far away).
    difference_step : the step in ln x of the forward differences of the Jacobian.
    singular : a Jacobian whose determinant, relative to the product of its rows' largest
        entries, is below this is singular there (a flat block): handed on likewise.
    chords : steps with one Jacobian (the chord method, kept only where they lower the
        residual) after each Newton step and at the start, where every sample shares the
        Jacobian of the one nearest a solution. Near a solution they gain almost what a
        Newton step does for one residual evaluation instead of k + 1.
    fit_degrees : the total degree of the polynomial that predicts later samples' starts
        (solvers.bulk.prediction) for 1, 2, 3, ... varying inputs; none for more (higher
        orders need more terms than they are worth beyond a few inputs).
    fit_samples_per_term : solved samples such a fit needs for each of its terms.
    fit_reach : a fit predicts only for inputs within this many half-ranges (in log) of
        the centre of those it saw: a little past its first samples' extremes (later
        samples' tails), not a grid swept far beyond them.
    batch : samples iterated together. Arrays of this many stay in a core's cache;
        measured on 2 cores shared with other work (CPU time, the block of
        benchmarks/run.py numeric_block): batched Newton over 65,536 samples took 0.064 s
        in batches of 16,384, 0.084 of 8,192, 0.091 of 65,536 and 0.103 of 4,096 (below
        that numpy's cost per call dominates); with predicted starts, the whole run of
        1,000,000 samples took 0.48 s CPU in batches of 16,384, 0.51 of 8,192, 0.50 of
        32,768 and 1.13 of 65,536.
    """

    pilots: int = 3
    iterations: int = 40
    halvings: int = 12
    max_step: float = 2.0
    difference_step: float = 1e-7
    singular: float = 1e-12
    chords: int = 1
    fit_degrees: tuple[int, ...] = (6, 3, 2, 2)
    fit_samples_per_term: int = 8
    fit_reach: float = 1.5
    batch: int = 16_384


@dataclass(frozen=True)
class LongWorkOptions:
    """Bounds on work whose size the user chooses (solvers.bulk.uncertainty, chalk.budget).

    chunk : Monte Carlo samples evaluated together; memory then grows with the samples
        kept (the pins drawn and the targets), not with every quantity of the plan.
    pilot : samples timed before a large run to estimate its cost.
    pilot_above : runs of at most this many samples are not estimated first (the pilot
        would be a sizeable share of them).
    max_seconds, max_bytes : work estimated to take longer, or to hold more, is refused
        up front with the estimate and a size that fits.
    fit_seconds_per_cell : a fit's time per observation per unknown (chalk.applications.fit:
        least squares with a dense Jacobian, then an interval per unknown, grows as their
        product). Measured with benchmarks/run.py's fit spec on 2 cores shared with other
        work: 0.96e-5 s at 200 subjects (1,005 observations, 201 unknowns), 0.86e-5 at
        400, 1.08e-5 at 800 (35 s), and issue 26's 1,000 subjects in 42 s is 0.84e-5;
        rounded up for the slow growth with size.
    fit_copies : dense Jacobian-sized arrays (8 bytes per observation per unknown) a fit
        holds at once: the Jacobian, its weighted copy and the factors of the trust-region
        solve.
    """

    chunk: int = 65_536
    pilot: int = 2_000
    pilot_above: int = 200_000
    max_seconds: float = 120.0
    max_bytes: float = 4e9
    fit_seconds_per_cell: float = 1.2e-5
    fit_copies: int = 4


REFERENCE = ReferenceOptions()
SCAN = ScanOptions()
RANK = RankOptions()
NEWTON = NewtonOptions()
CONTINUATION = ContinuationOptions()
BLOCK = BlockOptions()
STEPS = StepOptions()
CONDITIONING = ConditioningOptions()
PINS = PinOptions()
BATCH_NEWTON = BatchNewtonOptions()
LONG_WORK = LongWorkOptions()
