"""Benchmark of the models' training: DSM training step time at k = width/16 vs dense
at the same width: target <= 0.5x on CPU; samples/s of each model's training.

Measured in one run, interleaved so that machine load hits every model alike:

* one Adam training step (forward + backward + update) on a batch, Dense vs DSM at the same
  width with k = width/16, each timed in bursts of consecutive steps (its steady state, as in
  a training loop; the first step of each burst, right after another model's, is reported
  apart as "after another model"), in two forms:
  - "full": from the inputs (DSM: the fused Numba routing kernel, then the k-column top
    layer; Dense: addmm, ReLU, the width-column top layer);
  - "cached": from the frozen features cached for the training set, which is what
    ``fit_model(fit="adam")`` does when they fit in memory (N·k values for DSM, N·width for
    Dense);
* samples/s of ``fit_model(fit="adam")`` for every model (feature caching included) and of the
  uncached training loop, and the wall time of ``fit_model(fit="exact")``;
* the same step timings on CUDA when a GPU is present;
* the machine's state: a reference float32 matmul's GFLOP/s just before and after the CPU
  step timings. On shared machines it moves (e.g. 60 to 140 GFLOP/s on the development VM
  from one minute to the next) and the DSM/dense ratio with it: DSM's kernel is bound by
  arithmetic, the dense step mostly by memory traffic over its (batch, width) activations.

Timings use one thread for torch and Numba by default (``--threads`` to change): on small
shared machines thread pools mostly measure the neighbours' load.
Usage: ``python benchmarks/bench_models.py [--out DIR] [--threads N] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np
import torch

from experiments.kinds.fitting import AdamConfig, adam_optimizer, fit_model
from routing.models import DSM, Dense, LSHModel, RandomHashModel

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _timing import thread_limit, time_interleaved  # noqa: E402 (the benchmarks' folder)

DIM, WIDTH, BATCH = 8, 4096, 1024
K = WIDTH // 16
BURST = 4  # consecutive steps per model and round: the first right after another model's


def _step_fn(model, X, y, cached):
    """A closure running one Adam step of ``model`` on (X, y)."""
    # as fit_model(fit="adam") does it: fused Adam where torch has one
    optimizer = adam_optimizer([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    # the cache as fit_model keeps it: sparse columns in the narrowest integer type
    features = model.features(model.prepare(X)).narrowed(model.n_coef) if cached else None

    def step():
        out = model.top_layer(features) if cached else model(X)
        loss = ((out - y) ** 2).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def reference_gflops(size: int = 1024, repeats: int = 5) -> float:
    """Best GFLOP/s of a (size × size) float32 CPU matmul: how fast the machine computes now."""
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(size, size, generator=gen), torch.randn(size, size, generator=gen)
    a @ b  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


def step_times(device: str, repeats: int) -> dict:
    gen = torch.Generator().manual_seed(0)
    X = (torch.rand(BATCH, DIM, generator=gen) * 2 - 1).to(device)
    y = torch.randn(BATCH, generator=gen).to(device)
    dense, dsm = Dense(DIM, WIDTH).to(device), DSM(DIM, WIDTH, K).to(device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    fns = {"dense_full": _step_fn(dense, X, y, False), "dsm_full": _step_fn(dsm, X, y, False),
           "dense_cached": _step_fn(dense, X, y, True), "dsm_cached": _step_fn(dsm, X, y, True)}
    result = time_interleaved(fns, repeats, sync, burst=BURST)
    # what the counts predict: Top-K needs the whole bottom layer, so DSM saves only the top
    result["flops_true_dsm_over_dense"] = dsm.flops_true() / dense.flops_true()
    for form in ("full", "cached"):
        for stat in ("median_s", "min_s", "cpu_median_s", "cpu_min_s", "after_other_median_s"):
            result[f"dsm_over_dense_{form}_{stat.removesuffix('_s')}"] = (
                result[f"dsm_{form}"][stat] / result[f"dense_{form}"][stat])
    return result


def training_throughput(n_train: int, steps: int) -> dict:
    gen = np.random.default_rng(0)
    X = gen.uniform(-1, 1, (n_train, DIM))
    y = np.sin(X.sum(axis=1))
    makers = {"dense": lambda: Dense(DIM, WIDTH), "dsm": lambda: DSM(DIM, WIDTH, K),
              "random_hash": lambda: RandomHashModel(DIM, WIDTH, K),
              "lsh": lambda: LSHModel(DIM, n_bits=12)}
    result = {}
    for name, make in makers.items():
        row = {}
        for cache in (True, False):
            cfg = AdamConfig(batch_size=BATCH, steps=steps, cache_features=cache)
            report = fit_model(make(), X, y, "adam", adam=cfg)
            row["samples_per_s_cached" if cache else "samples_per_s_uncached"] = (
                steps * BATCH / report.wall_s)
        row["exact_fit_s"] = fit_model(make(), X, y, "exact").wall_s
        result[name] = row
    return result


def main(out: pathlib.Path, threads: int = 1, quick: bool = False) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    with thread_limit(threads):
        before = reference_gflops()
        result = {"setup": {"dim": DIM, "width": WIDTH, "k": K, "batch": BATCH,
                            "threads": threads, "torch": torch.__version__},
                  "cpu_step": step_times("cpu", 4 if quick else 20)}
        result["reference_matmul_gflops"] = {"before": before, "after": reference_gflops()}
        n_train, steps = (8192, 10) if quick else (16384, 40)
        result["cpu_training"] = training_throughput(n_train, steps)
        result["cpu_training_setup"] = {"n_train": n_train, "train_steps": steps}
        if torch.cuda.is_available():
            result["cuda_step"] = step_times("cuda", 17)
            result["cuda_device"] = torch.cuda.get_device_name()
    _print(result)
    (out / "models.json").write_text(json.dumps(result, indent=2))
    return result


def _print(result):
    s = result["setup"]
    print(f"  training step, dim {s['dim']}, width {s['width']}, k {s['k']}, batch {s['batch']}, "
          f"{s['threads']} thread(s):")
    for where in ("cpu_step", "cuda_step"):
        if where not in result:
            continue
        r = result[where]
        for form in ("full", "cached"):
            print(f"    {where[:-5]:4s} {form:6s}: dense {1e3 * r[f'dense_{form}']['median_s']:8.3f} ms"
                  f"  DSM {1e3 * r[f'dsm_{form}']['median_s']:8.3f} ms  ratio DSM/dense "
                  f"{r[f'dsm_over_dense_{form}_median']:.2f} (median wall), "
                  f"{r[f'dsm_over_dense_{form}_min']:.2f} (best wall), "
                  f"{r[f'dsm_over_dense_{form}_cpu_median']:.2f} (median CPU); right after "
                  f"the other model {r[f'dsm_over_dense_{form}_after_other_median']:.2f}")
    print(f"    (flops_true DSM/dense = {result['cpu_step']['flops_true_dsm_over_dense']:.2f}: "
          "the bottom layer is computed in full for the Top-K)")
    if "reference_matmul_gflops" in result:
        g = result["reference_matmul_gflops"]
        print(f"    machine state: reference matmul {g['before']:.0f} GFLOP/s before the step "
              f"timings, {g['after']:.0f} after")
    print("  fit_model(adam) samples/s (sparse features cached | recomputed; dense features are "
          "never cached), exact fit seconds:")
    for name, row in result["cpu_training"].items():
        print(f"    {name:12s} {row['samples_per_s_cached']:12.0f} | "
              f"{row['samples_per_s_uncached']:10.0f}   exact {row['exact_fit_s']:.2f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/bench"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    main(args.out, args.threads, args.quick)
