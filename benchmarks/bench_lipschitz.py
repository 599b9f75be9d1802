"""Benchmark of target evaluation (target: n_inputs = 16 on 10⁵ points well under a second).

Measures, in one run, RandomHypercubeFunction(16) on 10⁵ points by multilinear contraction
against the direct sum over the 2^16 corner indicators (timed on a subset and scaled
per point), and RandomPolynomial(8, 4) on 10⁵ points against the direct monomial product.
"""

from __future__ import annotations

import json
import pathlib
import time

import numpy as np

from lipschitz import RandomHypercubeFunction, RandomPolynomial, UniformCube


def _best_of(fn, repeats=3):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(out: pathlib.Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    n_points = 100_000
    cube = RandomHypercubeFunction(16, seed=0)
    X16 = UniformCube(16).sample(n_points, 0)
    fast = _best_of(lambda: cube(X16))
    corners = cube.corners()
    subset = X16[:20]
    naive = _best_of(lambda: [cube.corner_values @ np.prod((1 + corners * x) / 2, axis=1)
                              for x in subset], repeats=1) * n_points / len(subset)

    poly = RandomPolynomial(8, 4, seed=0)
    X8 = UniformCube(8).sample(n_points, 0)
    poly_fast = _best_of(lambda: poly(X8))
    sub8 = X8[:10_000]
    poly_naive = _best_of(
        lambda: np.prod(sub8[:, None, :] ** poly.exponents[None], axis=2) @ poly.coefficients,
        repeats=1) * n_points / len(sub8)

    result = {
        "hypercube_n16_points": n_points,
        "hypercube_n16_seconds": fast,
        "hypercube_naive_seconds_extrapolated": naive,
        "hypercube_speedup": naive / fast,
        "polynomial_n8_d4_seconds": poly_fast,
        "polynomial_naive_seconds_extrapolated": poly_naive,
        "polynomial_speedup": poly_naive / poly_fast,
    }
    print(f"  hypercube n=16, 1e5 points: {fast:.3f} s ({naive / fast:.0f}x the corner sum)")
    print(f"  polynomial n=8 d=4, 1e5 points: {poly_fast:.3f} s "
          f"({poly_naive / poly_fast:.1f}x the direct monomial product)")
    (out / "lipschitz.json").write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main(pathlib.Path("runs/bench"))
