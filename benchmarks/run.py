"""chalk's speed, measured: medians of repeated runs and ratios from the same run.

Usage::

    python benchmarks/run.py            # every benchmark
    python benchmarks/run.py cold warm  # a selection

Nothing here asserts a time; it prints what it measured.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CRITICAL_ARGS = [
    "solve", "critical_batch_size",
    "--given", "chip_flops=989e12 FLOP/s", "--given", "hbm_bandwidth=3.35 TB/s",
    "--given", "bytes_per_param=2 byte/param", "--given", "flops_per_param=2 FLOP/param/token",
    "--given", "total_params=671e9 param", "--given", "active_params=37e9 param",
]
CRITICAL_PINS = dict(arg.split("=", 1) for arg in CRITICAL_ARGS[3::2])


def _median_wall(command: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_cold(repeats: int = 9) -> dict:
    """Cold ``chalk solve`` for the critical batch vs importing sympy, pint, networkx.

    ``solvers.entry`` is what the ``chalk`` console script runs (garbage collection
    paused while modules load); ``solvers.cli`` is the same command without the pause.
    """
    baseline_cmd = [sys.executable, "-c", "import sympy, pint, networkx"]
    chalk_cmd = [sys.executable, "-m", "solvers.entry", *CRITICAL_ARGS]
    plain_cmd = [sys.executable, "-m", "solvers.cli", *CRITICAL_ARGS]
    _median_wall(chalk_cmd, 1)  # warm the file cache and bytecode
    _median_wall(plain_cmd, 1)
    baseline, cold, plain = [], [], []
    for _ in range(repeats):  # interleave so all see the same machine state
        baseline.append(_median_wall(baseline_cmd, 1))
        cold.append(_median_wall(chalk_cmd, 1))
        plain.append(_median_wall(plain_cmd, 1))
    b, c, p = (statistics.median(x) for x in (baseline, cold, plain))
    print(f"cold chalk solve (critical batch): median {c * 1e3:.0f} ms over {repeats} runs")
    print(f"  same without pausing gc during imports: median {p * 1e3:.0f} ms")
    print(f"python -c 'import sympy, pint, networkx': median {b * 1e3:.0f} ms")
    print(f"  ratio cold/baseline = {c / b:.2f} (target <= 1.3); without the gc pause "
          f"{p / b:.2f}")
    return {"cold_s": c, "baseline_s": b, "ratio": c / b, "no_gc_pause_ratio": p / b}


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
    print(f"warm chalk.solve with new text pins: median {warm * 1e6:.0f} µs over {repeats}")
    print(f"first chalk.solve in a fresh process (model load, plan, closed forms): "
          f"{first * 1e3:.0f} ms")
    print(f"  ratio first/warm = {first / warm:.0f}x (the plan and closed forms are cached)")
    return {"warm_s": warm, "first_s": first}


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


def bench_sweep(points: int = 10_000, repeats: int = 7) -> dict:
    """A sweep of step time over 10,000 batch sizes (with regime marks)."""
    import numpy as np

    from solvers.sweep import sweep

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


BENCHMARKS = {"cold": bench_cold, "warm": bench_warm, "monte_carlo": bench_monte_carlo,
              "sweep": bench_sweep}


def main(argv: list[str]) -> None:
    chosen = argv or list(BENCHMARKS)
    for name in chosen:
        if name not in BENCHMARKS:
            raise SystemExit(f"unknown benchmark {name!r}; choose from {', '.join(BENCHMARKS)}")
        print(f"== {name}")
        BENCHMARKS[name]()
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
