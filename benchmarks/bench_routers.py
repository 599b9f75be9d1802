"""Benchmark of the routers' training: training samples/s of each router at matched
activated units on CPU, and on a GPU when one can be had; the gather-based sparse paths must
not be slower than the dense model of the same total width.

One training step (forward, MSE plus aux losses, backward, optimiser step, ``after_step``) of
every router of ``routing.layers`` at a activated units out of 4a total units (the
``routers`` experiment's set-up, dim 8), timed interleaved with its baseline in the same run:
a dense two-layer ReLU network dim → 4a → 1 trained end to end with Adam (same total width).
Each model runs bursts of consecutive steps (its steady state, as in a training loop); the
first step of each burst, right after another model's, is reported apart.
Reported: samples/s of each, and the ratio router / dense (> 1: the router trains faster).

Timings use one thread by default (``--threads``): on small shared machines thread pools
mostly measure the neighbours' load. glibc's malloc thresholds are fixed while the routers
are timed (``_timing.steady_malloc``): left to adjust themselves, they decide by the process's
history whether the dense network's intermediates page-fault at every step, which swung its
step time by up to 1.6x between runs. Usage:
``python benchmarks/bench_routers.py [--out DIR] [--threads N] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import torch
from torch import nn

from experiments.kinds.fitting import adam_optimizer
from experiments.papers.router_study import ROUTER_LABELS
from experiments.kinds.routers import build_router
from experiments.runner.specs import ModelSpec

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _timing import machine, steady_malloc, thread_limit, time_interleaved  # noqa: E402

DIM, BATCH = 8, 1024
# the routers whose sparse path touches only each example's selected experts, slots or units
# (the target: not slower than the dense network of the same total width). SMEAR merges
# every expert's parameters for every example (Muqeeth et al. §3): dense by design.
GATHER_BASED = ("comet", "sigma_moe", "topk_moe", "pkm", "sdmlp")
ACTIVATED = (64, 256)
N_EXPERTS = 16
EPOCHS = 10
BURST = 4  # consecutive steps per model and round: the first right after another model's
# rounds of bursts: 90 steady-state steps per model, three times as many as before, for the
# a = 64 medians, whose ratios sit within about 10 % of 1 (run-to-run spread stays: the VM's)
ROUNDS = 30


def _router_step(layer, X, y):
    name = layer.config.optimizer
    params = [p for p in layer.parameters() if p.requires_grad]
    optimizer = (adam_optimizer(params, lr=1e-3) if name == "adam"  # as router_training
                 else torch.optim.SGD(params, lr=1e-3))
    layer.train()
    layer.track_usage = False

    def step():
        out, aux = layer(X)
        loss = ((out[:, 0] - y) ** 2).mean()
        if aux:  # as router_training: no extra node for the layers without auxiliary losses
            loss = loss + sum(aux.values())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        layer.after_step()

    return step


def _dense_step(width, X, y, device):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(DIM, width), nn.ReLU(), nn.Linear(width, 1)).to(device)
    optimizer = adam_optimizer(net.parameters(), lr=1e-3)

    def step():
        loss = ((net(X)[:, 0] - y) ** 2).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def step_rates(device: str, repeats: int) -> dict:
    gen = torch.Generator().manual_seed(0)
    X = (torch.rand(BATCH, DIM, generator=gen) * 2 - 1).to(device)
    y = torch.randn(BATCH, generator=gen).to(device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    result = {}
    for a in ACTIVATED:
        w = 4 * a
        fns = {"dense_same_width": _dense_step(w, X, y, device)}
        for kind in ROUTER_LABELS:
            n_experts = {"sigma_moe": N_EXPERTS, "topk_moe": N_EXPERTS, "smear": 4}.get(kind)
            spec = ModelSpec(kind, width=w, k=a, n_experts=n_experts)
            layer = build_router(spec, DIM, seed=0, epochs=EPOCHS).to(device)
            # the last epoch: SDMLP's k has annealed down to k_target = a (at epoch 0 it is
            # the full width, not matched activated units); a no-op for the other routers
            layer.set_training_progress(EPOCHS - 1)
            fns[kind] = _router_step(layer, X, y)
        timed = time_interleaved(fns, repeats, sync, burst=BURST)
        seconds = {name: t["median_s"] for name, t in timed.items()}
        after = {name: t["after_other_median_s"] for name, t in timed.items()}
        result[f"activated_{a}"] = {
            name: {"samples_per_s": BATCH / s, "step_ms": 1e3 * s,
                   "speed_vs_dense": seconds["dense_same_width"] / s,
                   "speed_vs_dense_after_other": after["dense_same_width"] / after[name],
                   "gather_based": name in GATHER_BASED}
            for name, s in seconds.items()}
    return result


def main(out: pathlib.Path, threads: int = 1, quick: bool = False) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    with thread_limit(threads), steady_malloc() as steady:
        cuda = torch.cuda.is_available()
        result = {"setup": {"dim": DIM, "batch": BATCH, "activated": ACTIVATED,
                            "total_width": [4 * a for a in ACTIVATED], "threads": threads,
                            "torch": torch.__version__, "malloc_thresholds_fixed": steady,
                            **machine(), "cuda_available": cuda,
                            "cuda_device": torch.cuda.get_device_name() if cuda else None},
                  "cpu": step_rates("cpu", 2 if quick else ROUNDS)}
        if cuda:
            result["cuda"] = step_rates("cuda", 17)
            result["cuda_device"] = result["setup"]["cuda_device"]
    _print(result)
    (out / "routers.json").write_text(json.dumps(result, indent=2))
    return result


def _print(result):
    s = result["setup"]
    print(f"  {s['cpu_model']} ({s['n_cpus_usable']} of {s['n_cpus']} CPUs usable); CUDA: "
          f"{s['cuda_device'] or 'not available'}")
    print(f"  one training step, dim {s['dim']}, batch {s['batch']}, total width 4a, "
          f"{s['threads']} thread(s); speed = dense step time / router step time:")
    for where in ("cpu", "cuda"):
        for size, rows in result.get(where, {}).items():
            print(f"    {where} {size}:")
            for name, r in rows.items():
                print(f"      {name:18s} {r['samples_per_s']:12.0f} samples/s  "
                      f"{r['step_ms']:8.3f} ms  speed vs dense {r['speed_vs_dense']:.2f} "
                      f"(right after another model {r['speed_vs_dense_after_other']:.2f})"
                      + ("" if r["gather_based"] or name == "dense_same_width"
                         else "  [not gather-based: dense by design]"))
            slower = [name for name, r in rows.items()
                      if r["gather_based"] and r["speed_vs_dense"] < 1]
            print(f"      gather-based routers slower than dense: {', '.join(slower) or 'none'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/bench"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    main(args.out, args.threads, args.quick)
