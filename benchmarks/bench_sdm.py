"""Benchmark of routing.sdm: the whole binary circle-intersection curve for n = 1000, d = 451.

Target: the curve d_v = 0 … n in <= 10 ms after compilation and >= 100x faster than a
straightforward double loop over scipy.special.comb, measured in the same run. The baseline
loops over d_v and over z (the bits where the neuron disagrees with both centres) and sums
comb(d_v, c) over the allowed c with one vectorised scipy.special.comb call, in float64:

    for d_v in 0..n:  for z in 0..min(n - d_v, d):  s += comb(n - d_v, z) * comb(d_v, c_range).sum()

Usage: ``python benchmarks/bench_sdm.py [--out DIR]`` (or through benchmarks/run_all.py).
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import statistics
import time

import numpy as np
from scipy.special import comb

from routing.sdm import cap_intersection_fraction, circle_intersection

N, D = 1000, 451


def baseline_curve(n: int, d: int) -> np.ndarray:
    """I(d_v) for d_v = 0 … n by the straightforward double loop over scipy.special.comb (float64)."""
    out = np.zeros(n + 1)
    for dv in range(n + 1):
        total = 0.0
        for z in range(min(n - dv, d) + 1):
            lo, hi = max(0, dv + z - d), min(dv, d - z)
            if lo <= hi:
                total += comb(n - dv, z) * comb(dv, np.arange(lo, hi + 1)).sum()
        out[dv] = total
    return out


def _time(fn, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main(out: pathlib.Path) -> dict:
    """Measure the fast curve, the baseline and the exact path; print, write out/sdm.json, return."""
    dv = np.arange(N + 1)
    circle_intersection(N, D, dv, log=True)  # compile (or load the Numba cache)
    fast = _time(lambda: circle_intersection(N, D, dv, log=True), repeat=50)
    fast_linear = _time(lambda: circle_intersection(N, D, dv, "linear", log=True), repeat=20)
    start = time.perf_counter()
    ref = baseline_curve(N, D)  # seconds: measured once
    baseline_time = time.perf_counter() - start
    exact_time = _time(lambda: circle_intersection(N, D, dv, exact=True), repeat=1)[0]
    big = np.arange(10_001)
    big_time = _time(lambda: circle_intersection(10_000, 4_000, big, log=True), repeat=3)
    cap_time = _time(lambda: cap_intersection_fraction(10_000, 0.5, 0.9, log=True), repeat=5)

    logs = circle_intersection(N, D, dv, log=True)
    exact = circle_intersection(N, D, dv, exact=True)
    nz = ref > 0
    result = {
        "n": N,
        "d": D,
        "fast_curve_ms_median": 1e3 * statistics.median(fast),
        "fast_curve_ms_min": 1e3 * min(fast),
        "fast_linear_curve_ms_median": 1e3 * statistics.median(fast_linear),
        "baseline_double_loop_scipy_comb_ms": 1e3 * baseline_time,
        "speedup_vs_baseline": baseline_time / statistics.median(fast),
        "exact_python_int_curve_ms": 1e3 * exact_time,
        "n10000_d4000_curve_ms_median": 1e3 * statistics.median(big_time),
        "cap_intersection_n10000_ms_median": 1e3 * statistics.median(cap_time),
        "max_abs_log_diff_vs_baseline": float(np.max(np.abs(logs[nz] - np.log(ref[nz])))),
        "max_abs_log_diff_vs_exact": max(abs(logs[k] - math.log(exact[k])) for k in range(N + 1) if exact[k] > 0),
    }
    result["meets_10ms_target"] = result["fast_curve_ms_median"] <= 10.0
    result["meets_100x_target"] = result["speedup_vs_baseline"] >= 100.0
    for key, value in result.items():
        print(f"   {key:40s} {value:.4g}" if isinstance(value, float) else f"   {key:40s} {value}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "sdm.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/bench"))
    main(parser.parse_args().out)
