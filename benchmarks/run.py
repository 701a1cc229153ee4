"""chalk's speed, measured: medians of repeated runs and ratios from the same run.

Usage::

    python benchmarks/run.py            # every benchmark
    python benchmarks/run.py cold warm  # a selection

Nothing here asserts a time; it prints what it measured.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

# As the chalk command does (chalk.cli): a single-threaded BLAS, set before numpy loads,
# so in-process figures match what a command costs.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

CRITICAL_ARGS = [
    "solve", "critical_batch_size",
    "--given", "chip_flops=989e12 FLOP/s", "--given", "hbm_bandwidth=3.35 TB/s",
    "--given", "bytes_per_param=2 byte/param", "--given", "flops_per_param=2 FLOP/param/token",
    "--given", "total_params=671e9 param", "--given", "active_params=37e9 param",
]
CRITICAL_PINS = dict(arg.split("=", 1) for arg in CRITICAL_ARGS[3::2])
# The same question from presets alone: DeepSeek-V3's published sizes give way to those
# its architecture gives (issue 22's cold question)
PRESET_ARGS = ["solve", "critical_batch_size", "--preset", "h100", "--preset", "bf16",
               "--preset", "deepseek_v3"]


def _median_wall(command: list[str], repeats: int, env: dict | None = None) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, cwd=ROOT,
                       env={**os.environ, **(env or {})})
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_cold(repeats: int = 9) -> dict:
    """Cold ``chalk solve`` for the critical batch vs importing sympy, pint, networkx.

    Three ways a process meets the question: answered from the cache of compiled
    questions (asked before); the first run after a change to chalk or its knowledge
    base (no entry fits: solved in full, then stored); and solved in full with the cache
    off and without the console script's pause of garbage collection during imports.
    Then the question from presets alone (:data:`PRESET_ARGS`), asked before.
    """
    import tempfile

    baseline_cmd = [sys.executable, "-c", "import sympy, pint, networkx"]
    chalk_cmd = [sys.executable, "-m", "chalk", *CRITICAL_ARGS]
    plain_cmd = [sys.executable, "-c", "import sys; from chalk.cli.main import main; "
                 "sys.exit(main())", *CRITICAL_ARGS]
    preset_cmd = [sys.executable, "-m", "chalk", *PRESET_ARGS]
    with tempfile.TemporaryDirectory() as folder:
        cached_env = {"CHALK_CACHE_DIR": str(Path(folder) / "kept")}
        _median_wall(chalk_cmd, 1, cached_env)  # stores the entry; warms file cache, bytecode
        _median_wall(preset_cmd, 1, cached_env)
        _median_wall(plain_cmd, 1, {"CHALK_NO_CACHE": "1"})
        baseline, cached, first, plain, preset = [], [], [], [], []
        for run in range(repeats):  # interleave so all see the same machine state
            baseline.append(_median_wall(baseline_cmd, 1))
            cached.append(_median_wall(chalk_cmd, 1, cached_env))
            fresh = {"CHALK_CACHE_DIR": str(Path(folder) / f"fresh{run}")}
            first.append(_median_wall(chalk_cmd, 1, fresh))
            plain.append(_median_wall(plain_cmd, 1, {"CHALK_NO_CACHE": "1"}))
            preset.append(_median_wall(preset_cmd, 1, cached_env))
    b, c, f, p, q = (statistics.median(x) for x in (baseline, cached, first, plain, preset))
    print(f"cold chalk solve (critical batch), {repeats} runs each, medians:")
    print(f"  asked before (from the cache): {c * 1e3:.0f} ms")
    print(f"  first run after a change (solved, then stored): {f * 1e3:.0f} ms")
    print(f"  solved with the cache off, gc not paused: {p * 1e3:.0f} ms")
    print(f"python -c 'import sympy, pint, networkx': median {b * 1e3:.0f} ms")
    print(f"  ratio cached/baseline = {c / b:.2f} (target <= 0.6); first run after a change "
          f"{f / b:.2f} (target <= 1.3); cache off, gc not paused {p / b:.2f}")
    print(f"cold chalk {' '.join(PRESET_ARGS)}, asked before: {q * 1e3:.0f} ms")
    print(f"  ratio cached/baseline = {q / b:.2f} (target <= 0.6)")
    return {"cached_s": c, "first_s": f, "baseline_s": b, "cached_ratio": c / b,
            "first_ratio": f / b, "no_cache_no_gc_pause_ratio": p / b,
            "preset_cached_s": q, "preset_cached_ratio": q / b}


def _child_run(command: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run of ``command`` in a child."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_explain_underdetermined(repeats: int = 9) -> dict:
    """``chalk explain critical_batch_size`` with the quick start's pins but
    ``active_params`` (under-determined: the pinned zeros are put in and the completions
    named) against the same command with it pinned (issue 22's target: at most 1.2).

    The two commands run in turn, each in a fresh process, so both see the same machine
    state; CPU seconds are printed beside wall seconds (on a shared machine the CPU figure
    moves less).
    """
    under = [sys.executable, "-m", "chalk", "explain", *CRITICAL_ARGS[1:-2]]
    pinned = [sys.executable, "-m", "chalk", "explain", *CRITICAL_ARGS[1:]]
    _child_run(under), _child_run(pinned)  # bytecode and file cache warm for both
    runs = {"under": [], "pinned": []}
    for _ in range(repeats):
        runs["under"].append(_child_run(under))
        runs["pinned"].append(_child_run(pinned))
    (uw, uc), (pw, pc) = ([statistics.median(t[i] for t in runs[k]) for i in (0, 1)]
                          for k in ("under", "pinned"))
    print(f"chalk explain critical_batch_size, {repeats} runs each, medians:")
    print(f"  without active_params (under-determined): wall {uw * 1e3:.0f} ms, "
          f"CPU {uc * 1e3:.0f} ms")
    print(f"  with active_params pinned: wall {pw * 1e3:.0f} ms, CPU {pc * 1e3:.0f} ms")
    print(f"  ratio under-determined/pinned = {uw / pw:.2f} wall, {uc / pc:.2f} CPU "
          f"(target <= 1.2)")
    return {"under_s": uw, "pinned_s": pw, "ratio": uw / pw, "cpu_ratio": uc / pc}


def bench_warm(repeats: int = 2000) -> dict:
    """The same question asked again in-process with new pin values each time."""
    import chalk

    chalk.solve("critical_batch_size", given=CRITICAL_PINS)
    times = []
    for i in range(repeats):
        pins = dict(CRITICAL_PINS)
        pins["active_params"] = f"{30 + (i % 100) * 0.1:.1f}e9 param"
        start = time.perf_counter()
        chalk.solve("critical_batch_size", given=pins)
        times.append(time.perf_counter() - start)
    first = _first_solve_in_fresh_process()
    warm = statistics.median(times)
    question = chalk.Question("critical_batch_size", CRITICAL_PINS)
    values = [30e9 + (i % 100) * 1e8 for i in range(repeats)]
    asked = _median_call(lambda i: question.magnitudes(active_params=values[i]), repeats)
    import numpy as np

    def closed_form(i):  # the same deduction written by hand with numpy scalars
        flops, bandwidth = np.float64(989e12), np.float64(3.35e12)
        return flops / bandwidth * np.float64(2) * (np.float64(671e9) / values[i]) / 2

    by_hand = _median_call(closed_form, repeats)
    print(f"warm chalk.solve with new text pins: median {warm * 1e6:.0f} µs over {repeats}")
    print(f"first chalk.solve in a fresh process (model load, plan, closed forms): "
          f"{first * 1e3:.0f} ms")
    print(f"  ratio first/warm = {first / warm:.0f}x (the plan and closed forms are cached)")
    print(f"chalk.Question.magnitudes asked again with a new active_params: median "
          f"{asked * 1e6:.1f} µs")
    print(f"hand-written numpy closed form: median {by_hand * 1e6:.2f} µs")
    print(f"  ratio Question/numpy = {asked / by_hand:.1f} (target <= 20); full "
          f"chalk.solve/numpy = {warm / by_hand:.0f}")
    return {"warm_s": warm, "first_s": first, "question_s": asked, "numpy_s": by_hand}


def _first_solve_in_fresh_process() -> float:
    code = (
        "import time, chalk; pins = " + repr(CRITICAL_PINS) + "\n"
        "t = time.perf_counter(); chalk.solve('critical_batch_size', given=pins)\n"
        "print(time.perf_counter() - t)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=ROOT)
    return float(out.stdout.strip())


def _median_call(fn, repeats: int) -> float:
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_monte_carlo(samples: int = 1_000_000, repeats: int = 7) -> dict:
    """10^6 samples of the 200K-crossover -> KV bytes per token deduction."""
    import numpy as np

    import chalk

    given = {"context_crossover": "200k token", "active_params": "100e9..300e9 param"}
    chalk.solve("kv_bytes_per_token", presets="lecture", given=given, samples=1000)

    def with_chalk(seed):
        chalk.solve("kv_bytes_per_token", presets="lecture", given=given, samples=samples,
                    seed=seed)

    def by_hand(seed):
        rng = np.random.default_rng(seed)
        active = np.exp(rng.uniform(np.log(100e9), np.log(300e9), samples))
        kv = active * 1.0 / (300.0 * 200e3)  # 1 FLOP/param/token, 300 FLOP/byte
        np.percentile(kv, [5, 50, 95])

    c, h = _median_call(with_chalk, repeats), _median_call(by_hand, repeats)
    print(f"chalk.solve with a range, {samples:,} samples (median, 90% interval, linear "
          f"estimate, sensitivity): median {c * 1e3:.0f} ms over {repeats} runs (target <= 500)")
    print(f"hand-written numpy (sample, formula, percentiles): median {h * 1e3:.0f} ms")
    print(f"  ratio chalk/numpy = {c / h:.2f} (target <= 3)")
    return {"chalk_s": c, "numpy_s": h, "ratio": c / h}


def bench_numeric_block(samples: int = 1_000_000, repeats: int = 3) -> dict:
    """``samples`` Monte Carlo samples through a block with no closed form (three torn
    quantities: batched Newton) and through a closed form of the same relations, with
    the same spread, in one run; issue 26's target is a ratio of at most 10."""
    from synthetic import squares_model

    import chalk

    model = squares_model()
    # p spread by +-10% around 5: x^2 = (p - 13 + 10)/2 stays positive
    block = ("x", {"p": "4.5..5.5", "q": 13, "r": 10})
    closed = ("p", {"x": "0.9..1.1", "y": 2, "z": 3})
    for target, given in (block, closed):  # plan, compile and solve the pilots once
        chalk.solve(target, given, ["none"], model=model, samples=1000)

    def run(question):
        target, given = question
        return lambda seed: chalk.solve(target, given, ["none"], model=model,
                                        samples=samples, seed=seed)

    b, c = _median_call(run(block), repeats), _median_call(run(closed), repeats)
    print(f"{samples:,} samples through a numeric block (x, y, z from p, q, r): median "
          f"{b:.2f} s over {repeats} runs")
    print(f"{samples:,} samples through a closed form (p from x, y): median {c:.2f} s")
    print(f"  ratio block/closed form = {b / c:.1f} (target <= 10)")
    return {"block_s": b, "closed_s": c, "ratio": b / c}


def bench_sweep(points: int = 10_000, repeats: int = 7) -> dict:
    """A sweep of step time over 10,000 batch sizes (with regime marks)."""
    import numpy as np

    from chalk.applications.sweep import sweep

    given = {"n_chips": "8 chip", "chip_flops": "989e12 FLOP/s", "hbm_bandwidth": "3.35 TB/s",
             "total_params": "671e9 param", "active_params": "37e9 param",
             "bytes_per_param": "1 byte/param", "kv_bytes_per_token": "70272 byte/token",
             "context_length": "1000 token"}
    sweep("step_time", "batch_size", "1 sequence", "16384 sequence", 100, True, given)

    def with_chalk(_):
        sweep("step_time", "batch_size", "1 sequence", "16384 sequence", points, True, given)

    def by_hand(_):
        batch = np.geomspace(1, 16384, points)
        t_compute = batch * 37e9 * 2 / (989e12 * 8)
        t_memory = 671e9 / (3.35e12 * 8) + batch * 1000 * 70272 / (3.35e12 * 8)
        step = np.maximum(t_compute, t_memory)
        regime = np.where(t_compute >= t_memory, "compute-bound", "memory-bound")
        np.nonzero(regime[1:] != regime[:-1])
        return step

    c, h = _median_call(with_chalk, repeats), _median_call(by_hand, repeats)
    print(f"chalk sweep of step_time over {points:,} batch sizes: median {c * 1e3:.1f} ms "
          f"(target <= 500)")
    print(f"hand-written numpy (same formula and regime marks): median {h * 1e3:.1f} ms")
    print(f"  ratio chalk/numpy = {c / h:.2f} (target <= 3)")
    return {"chalk_s": c, "numpy_s": h, "ratio": c / h}


def bench_block_sweep(points: int = 10_000, repeats: int = 7) -> dict:
    """A sweep of t over 10,000 values of b through a block of two sums (a scan per
    point, each solution's conditioning verdict measured per point, as solve measures
    it), against the same answers by hand; issue 22 asks that the verdict stay cheap."""
    import numpy as np
    from synthetic import sums_model

    from chalk.applications.sweep import sweep

    model = sums_model()
    given = {"a": 3}

    def with_chalk(_):
        return sweep("t", "b", 3.5, 5.9, points, given=given, presets=["none"], model=model)

    def by_hand(_):
        b = np.linspace(3.5, 5.9, points)
        y = b - 3
        return (3 - y) * y ** 2

    with_chalk(0)
    c, h = _median_call(with_chalk, repeats), _median_call(by_hand, repeats)
    print(f"chalk sweep of t over {points:,} values of b through a two-sum block: median "
          f"{c * 1e3:.1f} ms")
    print(f"hand-written numpy (the block solved by hand): median {h * 1e3:.3f} ms")
    print(f"  ratio chalk/numpy = {c / h:.0f}")
    return {"chalk_s": c, "numpy_s": h, "ratio": c / h}


def bench_planning(repeats: int = 5) -> dict:
    """Planning a synthetic model of 2,000 relations and 2,000 quantities: matching,
    Dulmage-Mendelsohn, the log-space rank analysis and the block order, from scratch
    each time (the model's log-space rows and reference point, computed once per
    model, are timed on their own)."""
    from chalk.solvers.analysis.jacobian import log_rows
    from chalk.solvers.planning import plan as planning
    from synthetic import pins_for, synthetic_model

    start = time.perf_counter()
    model = synthetic_model(2000)
    built = time.perf_counter() - start
    start = time.perf_counter()
    log_rows(model)
    planning.identities(model)
    prepared = time.perf_counter() - start
    pins = pins_for(model)
    targets = tuple(sorted(set(model.variables) - pins))
    times = []
    for i in range(repeats):
        planning.clear_caches()
        planning.identities(model)  # once per model, timed above
        start = time.perf_counter()
        plan = planning.make_plan(model, pins, targets[i:i + 20])
        times.append(time.perf_counter() - start)
    largest = max(len(s.relations) for s in plan.steps)
    print(f"synthetic model, 2,000 relations x 2,000 quantities: built and unit-checked in "
          f"{built * 1e3:.0f} ms; log-space rows, reference point and identities (once per "
          f"model) {prepared * 1e3:.0f} ms")
    print(f"planning (matching, Dulmage-Mendelsohn, rank in log space, block order) with "
          f"400 pins: median {statistics.median(times) * 1e3:.0f} ms over {repeats} (target "
          f"<= 1000); {len(plan.steps)} steps, largest block {largest} relations")
    return {"plan_s": statistics.median(times), "build_s": built, "prepare_s": prepared}


def bench_completions(repeats: int = 9) -> dict:
    """Naming the smallest extra pins for under-determined questions, planned from scratch
    each time (rank analysis and completions from its null space)."""
    from chalk.knowledge import load_model
    from chalk.solvers.planning import plan as planning
    from chalk.symbolic.errors import UnderdeterminedError

    import chalk

    questions = [
        ("critical_batch_size", {"flops_per_param": "2 FLOP/param/token",
                                 "hbm_bandwidth": "3.35 TB/s"}),
        ("step_time", {"batch_size": "2000 sequence"}),
        ("tokens_per_second", {}),
        ("cost_per_token step_time", {}),
        ("t_weight_fetch", {"total_params": "70e9 param", "bytes_per_param": "2 byte/param",
                            "n_chips": "8 chip"}),
    ]
    from chalk.api import prepare

    # warm the model-level caches (rows, identities), of the models the questions are
    # planned on too (with the kind of attention or the absent terms the pins mark)
    models = {load_model()}
    for targets, given in questions:
        models.add(prepare(targets.split(), given).model)
    out = {}
    for targets, given in questions:
        times = []
        for _ in range(repeats):
            planning.clear_caches()
            for model in models:
                planning.identities(model)  # once per model, not per question
            start = time.perf_counter()
            try:
                chalk.solve(targets.split(), given)
            except UnderdeterminedError as exc:
                found = exc.completions
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        out[targets] = median
        print(f"{targets}: {len(found)} smallest completions (size "
              f"{len(found[0]) if found else '-'}) in {median * 1e3:.1f} ms median over "
              f"{repeats} (target <= 50 ms)")
    return out


def bench_range_through_max(repeats: int = 3) -> dict:
    """Batch size from a ranged step time and context (through max(compute, memory)), at
    the default sample count, in-process and as a command."""
    import chalk

    presets = ["h100", "llama_3_1_70b", "bf16"]
    given = {"n_chips": "8 chip", "step_time": "20..50 ms", "context_length": "1k..32k token"}
    chalk.solve("batch_size", given, presets, samples=1000)
    solved = _median_call(lambda _: chalk.solve("batch_size", given, presets), repeats)
    command = [sys.executable, "-m", "chalk", "solve", "batch_size",
               *[f"--preset={p}" for p in presets],
               *[x for k, v in given.items() for x in ("--given", f"{k}={v}")]]
    wall = _median_wall(command, repeats)
    s = chalk.solve("batch_size", given, presets)
    low, high = s.interval("batch_size", "sequence")
    print(f"batch_size from step_time 20..50 ms and context 1k..32k token, 100,000 samples: "
          f"median {solved:.2f} s in-process, {wall:.2f} s as a command (target < 2 s); "
          f"90% interval {low.magnitude:,.0f} to {high.magnitude:,.0f} sequence")
    return {"solve_s": solved, "command_s": wall}


def bench_versus_sympy(timeout: float = 120.0) -> dict:
    """The lecture's system solved by the planner vs sympy.solve on all relations at once:
    the batch section alone, then the whole knowledge base."""
    out = {}
    for label in ("batch", "all"):
        out[label] = _versus_sympy(label, timeout)
    return out


def _versus_sympy(label: str, timeout: float) -> dict:
    import multiprocessing
    import random

    from chalk.knowledge import load_model
    from chalk.solvers.execution import execute
    from chalk.solvers.planning import plan
    from selfcheck import Skip, consistent_state, sufficient_pins, topic_model
    from synthetic import sympy_solve_all

    import chalk

    model = topic_model("batch") if label == "batch" else load_model()
    state, seed = None, 0
    while state is None:  # the first drawn state that is not saturated or ill-conditioned
        seed += 1
        try:
            state = consistent_state(seed, model)
        except Skip:
            pass
    inputs = sufficient_pins(model, random.Random(0), natural=True)
    unknowns = sorted(n for n in state if n not in inputs)
    given = {n: chalk.Q_(state[n], model.variables[n].pint_unit) for n in inputs}
    plan.clear_caches()  # cold: plan, closed forms and evaluators built afresh
    execute.clear_caches()
    start = time.perf_counter()
    chalk.solve(unknowns, given, ["none"], model=model)
    planner_cold = time.perf_counter() - start
    warm = _median_call(lambda _: chalk.solve(unknowns, given, ["none"], model=model), 20)
    pins = {n: state[n] * model.variables[n].to_base for n in inputs}
    context = multiprocessing.get_context("fork")
    worker = context.Process(target=sympy_solve_all, args=(model, pins, unknowns))
    start = time.perf_counter()
    worker.start()
    worker.join(timeout)
    finished = not worker.is_alive()
    if not finished:
        worker.kill()
        worker.join()
    elapsed = time.perf_counter() - start
    name = "batch section" if label == "batch" else "whole knowledge base"
    print(f"{name} ({len(model.relations)} relations, {len(unknowns)} unknowns from "
          f"{len(inputs)} pins, drawn state {seed}): chalk planner "
          f"{planner_cold * 1e3:.0f} ms cold, {warm * 1e3:.1f} ms warm")
    if finished:
        print(f"sympy.solve on all relations at once: {elapsed:.1f} s; ratio sympy/chalk cold "
              f"= {elapsed / planner_cold:.0f}x")
    else:
        print(f"sympy.solve on all relations at once: did not finish in {timeout:.0f} s "
              f"(stopped); ratio sympy/chalk cold > {timeout / planner_cold:.0f}x")
    return {"planner_s": planner_cold, "warm_s": warm, "sympy_s": elapsed,
            "sympy_finished": finished}


def bench_llm_analysis() -> dict:
    """Llama-2-70B decode step on 8 A100s, chalk vs llm-analysis (benchmarks only)."""
    from llm_analysis_compare import bench_llm_analysis as compare

    return compare()


def bench_serving_bounds() -> dict:
    """Published serving measurements beside chalk's decode bound (issue 23)."""
    from serving_bounds import main as table

    return table()


def bench_round_trips(examples: int = 10_000) -> dict:
    """10,000 round trips and consistency checks (each lecture topic and the whole
    knowledge base in turn, seeds 0..N-1), counted by outcome: answered correctly,
    another solution from a block that says others may exist, declined with a reason
    (by cause), or wrong."""
    import collections
    import warnings

    from chalk.knowledge import TOPIC_MODULES, load_model
    from chalk.symbolic.errors import ChalkError
    from selfcheck import Skip, consistency, consistent_state, round_trip, topic_model

    warnings.simplefilter("ignore", RuntimeWarning)
    models = {t: topic_model(t) for t in TOPIC_MODULES}
    models["whole knowledge base"] = load_model()
    names = list(models)
    counts, declined = collections.Counter(), collections.Counter()
    counts["round trip WRONG"] = counts["consistency FAILED"] = 0  # printed even when zero
    failures = []
    start = time.perf_counter()
    for i in range(examples):
        topic = names[i % len(names)]
        model = models[topic]
        try:
            state = consistent_state(i, model)
        except Skip:
            counts["state not usable"] += 1
            continue
        try:
            outcome = round_trip(state, i, model)
            if outcome.worst <= 1:
                counts["round trip exact"] += 1
            elif outcome.multistart and outcome.residual < 1e-8:
                counts["round trip found another solution (multi-start block)"] += 1
            else:
                counts["round trip WRONG"] += 1
                failures.append((topic, i, outcome.worst_name))
        except Skip as exc:
            counts["round trip declined"] += 1
            declined[f"{exc.reason}: {str(exc)[:110]}" if exc.reason == "DegenerateError"
                     else exc.reason] += 1
        except ChalkError as exc:
            counts["round trip declined"] += 1
            declined[type(exc).__name__] += 1
            if type(exc).__name__ == "NoSolution":  # false at a consistent state: list it
                failures.append((topic, i, f"NoSolution: {exc.message[:160]}"))
        try:
            consistency(state, i, model)
            counts["perturbation caught"] += 1
        except (Skip, ChalkError):
            counts["consistency not applicable"] += 1
        except AssertionError as exc:
            counts["consistency FAILED"] += 1
            failures.append((topic, i, str(exc)))
    elapsed = time.perf_counter() - start
    for key, value in sorted(counts.items()):
        print(f"  {key}: {value:,}")
    for reason, value in declined.most_common():
        print(f"    declined, {reason}: {value:,}")
    for failure in failures[:20]:
        print(f"  failure: {failure}")
    print(f"{examples:,} examples in {elapsed:.0f} s ({elapsed / examples * 1e3:.0f} ms each)")
    return {"counts": dict(counts), "failures": failures, "seconds": elapsed}


def bench_probe(probes: int = 1000, budget: int | None = None) -> dict:
    """Issue 10's acceptance probe at scale: minimal pin sets that determine a random
    target in every max() regime (decided by rank at the drawn state), asked of chalk.
    ``budget``: the most seeds drawn (the harness draws a consistent state of the whole
    model from few seeds since the serving relations of 2026-12-01)."""
    import collections
    import warnings

    from chalk.knowledge import load_model
    from selfcheck import PROBE_CONDITIONING, Skip, consistent_state, probe

    warnings.simplefilter("ignore", RuntimeWarning)
    model = load_model()
    counts, examples = collections.Counter(), collections.defaultdict(list)
    start = time.perf_counter()
    seed = 0
    while sum(counts.values()) < probes and (budget is None or seed < budget):
        seed += 1
        try:
            state = consistent_state(seed, model, PROBE_CONDITIONING)
            result = probe(state, seed, model)
        except Skip:
            continue
        counts[result.verdict] += 1
        if result.verdict != "answered":
            examples[result.verdict].append((seed, result.target, result.detail[:140]))
    elapsed = time.perf_counter() - start
    total = sum(counts.values())
    for verdict, value in counts.most_common():
        print(f"  {verdict}: {value:,} ({100 * value / total:.1f}%)")
        for example in examples[verdict][:5]:
            print(f"    {example}")
    print(f"{total:,} probes over {seed:,} drawn states in {elapsed:.0f} s")
    # verified two-solution draws do not determine their target: the acceptance share is
    # of the others
    determined = total - counts["two solutions"]
    if determined:
        print(f"answered {counts['answered']:,} of the {determined:,} that determine their "
              f"target: {100 * counts['answered'] / determined:.1f}% (target >= 95%); "
              f"of all draws {100 * counts['answered'] / total:.1f}%")
    return {"counts": dict(counts), "seconds": elapsed, "seeds": seed}


def _fit_spec(subjects: int = 19, seed: int = 0, each: int = 1, extra: int = 5) -> dict:
    """A synthetic fit: ``subjects`` deployments, each with its own memory bandwidth and
    one FLOP rate for all (``subjects + 1`` unknowns), ``each`` times three
    hardware-intensity and two drain-time observations each, plus ``extra`` more of the
    first (100 observations for 19 subjects)."""
    import math
    import random

    rng = random.Random(seed)
    flops = 989e12
    spec = {"unknowns": {"chip_flops": "1e13..1e17 FLOP/s",
                         "hbm_bandwidth": {"prior": "1e11..1e14 byte/s", "per": "subject"}},
            "subjects": {}, "observations": []}
    for i in range(subjects):
        name = f"s{i}"
        bandwidth = math.exp(rng.uniform(math.log(1e12), math.log(1e13)))
        spec["subjects"][name] = {"pins": {"hbm_capacity": "80 GB"}}
        kinds = ([("hardware_intensity", flops / bandwidth, "FLOP/byte")] * 3
                 + [("hbm_drain_time", 80e9 / bandwidth, "s")] * 2) * each
        if i == 0:
            kinds += [("hardware_intensity", flops / bandwidth, "FLOP/byte")] * extra
        for quantity, value, unit in kinds:
            noisy = value * math.exp(rng.gauss(0, 0.1))
            spec["observations"].append({"quantity": quantity, "subject": name,
                                         "value": f"lognormal({noisy!r} {unit}, 0.1)"})
    return spec


def bench_fit(repeats: int = 7, subjects: int = 19) -> dict:
    """``chalk.fit`` of 100 synthetic observations with 20 unknowns (target: under 1 s),
    reading, planning, solving and intervals included; the first fit in the process also
    plans and compiles the question's shape, later ones of the same shape reuse it."""
    from chalk.knowledge import load_model

    from chalk.applications.fit import fit

    load_model()
    spec = _fit_spec(subjects)
    start = time.perf_counter()
    result = fit(spec)
    first = time.perf_counter() - start
    median = _median_call(lambda i: fit(_fit_spec(subjects, seed=i + 1)), repeats)
    count, unknowns = len(result.residuals), len(result.estimates)
    print(f"fit of {count} observations, {unknowns} unknowns: median {median * 1e3:.0f} ms "
          f"over {repeats} runs (first in the process, planning included: "
          f"{first * 1e3:.0f} ms)")
    print(f"  ratio to the 1 s target = {median:.2f} (first run {first:.2f})")
    return {"median_s": median, "first_s": first, "ratio": median / 1.0,
            "observations": count, "unknowns": unknowns}


def _direct_least_squares(spec: dict):
    """A call that minimises the fit's own residuals and Jacobian by a bare
    ``scipy.optimize.least_squares`` with the fit's settings (the spec read and the
    system built beforehand, outside what is timed): no intervals, no identifiability,
    no confirmation; what the fit adds is the rest."""
    import math

    import numpy as np
    from chalk.knowledge import load_model
    from scipy.optimize import least_squares

    from chalk.applications.fit.estimate import _bound, _Objective
    from chalk.applications.fit.spec import read_spec
    from chalk.applications.fit.system import System

    model = load_model()
    system = System(read_spec(spec, model), model)
    objective = _Objective(system, "linear")
    low = np.array([_bound(q.prior, 0) for q in system.parameters])
    high = np.array([_bound(q.prior, 1) for q in system.parameters])
    x0 = np.array([math.log(q.prior.nominal) for q in system.parameters])
    return lambda: least_squares(objective.robust, x0, jac=objective.robust_jacobian,
                                 bounds=(low, high), method="trf", x_scale=1.0, ftol=1e-12,
                                 xtol=1e-12, gtol=1e-12, max_nfev=200 * (len(x0) + 1))


def bench_fit_scale(repeats: int = 3) -> dict:
    """How a fit's time grows with subjects (100, 300 and 1,000 of :func:`_fit_spec`, one
    run each: five observations and one unknown per subject), and the speed target: 1,000
    observations by 100 unknowns within 3 times a direct ``least_squares`` on the same
    residuals (:func:`_direct_least_squares`), medians of ``repeats`` runs each."""
    from chalk.knowledge import load_model

    from chalk.applications.fit import fit
    from chalk.applications.fit.spec import read_spec

    load_model()
    fit(_fit_spec(5))  # plan the shape once: later fits of it reuse the compiled question
    growth = {}
    for subjects in (100, 300, 1000):
        spec = _fit_spec(subjects)
        start = time.perf_counter()
        result = fit(spec)
        growth[subjects] = time.perf_counter() - start
        print(f"fit of {subjects:,} subjects ({len(result.residuals):,} observations, "
              f"{len(result.estimates):,} unknowns): {growth[subjects]:.2f} s")
    print(f"  growth: 300/100 subjects x{growth[300] / growth[100]:.1f}, 1,000/300 "
          f"x{growth[1000] / growth[300]:.1f} (time linear in the cells, observations "
          "by unknowns, would be x9 and x11)")
    # 99 subjects x 10 observations + 10 more of the first: 1,000 by 100 unknowns
    model = load_model()
    specs = [_fit_spec(99, seed=i, each=2, extra=10) for i in range(repeats)]
    read = [read_spec(spec, model) for spec in specs]
    fitted = _median_call(lambda i: fit(specs[i]), repeats)
    from_read = _median_call(lambda i: fit(read[i]), repeats)
    calls = [_direct_least_squares(spec) for spec in specs]
    direct = _median_call(lambda i: calls[i](), repeats)
    print(f"fit of 1,000 observations x 100 unknowns: median {fitted:.2f} s (reading the "
          f"observations included), {from_read:.2f} s from a read FitSpec; direct "
          f"least_squares on the same residuals: median {direct:.2f} s")
    print(f"  ratios {fitted / direct:.2f} and {from_read / direct:.2f} (target <= 3)")
    return {"growth_s": growth, "fit_s": fitted, "fit_read_s": from_read,
            "direct_s": direct, "ratio": fitted / direct, "ratio_read": from_read / direct}


def bench_atlas(repeats: int = 3) -> dict:
    """``chalk atlas`` as a command (target: under 5 s): every shipped price sheet fitted
    at once, from a fresh process, knowledge base and fits included."""
    command = [sys.executable, "-m", "chalk", "atlas"]
    env = {**os.environ, "CHALK_NO_CACHE": "1"}
    median = _median_wall(command, repeats, env)
    print(f"chalk atlas: median {median:.2f} s over {repeats} runs; ratio to the 5 s target "
          f"= {median / 5.0:.2f}")
    return {"median_s": median, "ratio": median / 5.0}


BENCHMARKS = {"cold": bench_cold, "explain": bench_explain_underdetermined,
              "warm": bench_warm, "monte_carlo": bench_monte_carlo,
              "numeric_block": bench_numeric_block,
              "sweep": bench_sweep, "block_sweep": bench_block_sweep,
              "planning": bench_planning,
              "completions": bench_completions, "range_through_max": bench_range_through_max,
              "versus_sympy": bench_versus_sympy,
              "llm_analysis": bench_llm_analysis, "serving_bounds": bench_serving_bounds,
              "round_trips": bench_round_trips,
              "probe": bench_probe, "fit": bench_fit, "fit_scale": bench_fit_scale,
              "atlas": bench_atlas}


SLOW = {"round_trips", "probe", "fit_scale"}  # run only when named


def main(argv: list[str]) -> None:
    chosen = argv or [name for name in BENCHMARKS if name not in SLOW]
    for name in chosen:
        if name not in BENCHMARKS:
            raise SystemExit(f"unknown benchmark {name!r}; choose from {', '.join(BENCHMARKS)}")
        print(f"== {name}")
        BENCHMARKS[name]()
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
