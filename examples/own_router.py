"""Register a router of your own and sweep it beside the built-in ones.

The router is a hash layer (Roller et al. 2021, "Hash Layers For Large Sparse Models"): each
example goes to one expert chosen by a fixed random hash of x — here the largest of
n_experts fixed random projections — so its routing is not learned. The block marked "the
router" is all a new kind needs: a ``routing.layers.RouterLayer`` and one registration.

Run: python examples/own_router.py   (about half a minute on one CPU core)
"""

import pathlib
import sys
import tempfile
from types import SimpleNamespace

import torch

from experiments.kinds.routers import RouterKind
from experiments.kinds.registry import register_model_kind
from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec
from experiments.runner.sweep import run_sweep
from routing.layers import RouterLayer


# -- the router (20 lines) ------------------------------------------------------------------
class HashMoE(RouterLayer):
    name = "hash_moe"

    def __init__(self, d_in, n_experts, expert_size, seed):
        super().__init__(n_experts)
        g = torch.Generator().manual_seed(seed)
        self.config = SimpleNamespace(d_in=d_in, d_out=1, lr=1e-2, optimizer="adam")
        weight = lambda *shape: torch.nn.Parameter(  # noqa: E731  (fan-in scaled)
            torch.randn(*shape, generator=g) / shape[-2] ** 0.5)
        self.register_buffer("hash", torch.randn(d_in, n_experts, generator=g))  # frozen
        self.w1, self.w2 = weight(n_experts, d_in, expert_size), weight(n_experts, expert_size, 1)
        self.size, self.n_experts = expert_size, n_experts

    def forward(self, x):  # x (B, d_in) -> y (B, 1), no auxiliary loss
        e = (self.check_input(x) @ self.hash).argmax(1)  # (B,) the hash bucket = expert
        self.record_usage(indices=e[:, None])
        h = torch.relu(torch.einsum("bd,bdh->bh", x, self.w1[e]))  # (B, expert_size)
        return torch.einsum("bh,bho->bo", h, self.w2[e]), {}

    activated_units = property(lambda self: self.size)
    total_units = property(lambda self: self.size * self.n_experts)

    def flops_per_example(self):
        return 2 * self.config.d_in * self.n_experts + 2 * self.size * (self.config.d_in + 1)


register_model_kind(RouterKind(
    "hash_moe", lambda spec, dim, seed, epochs: HashMoE(dim, spec.n_experts, spec.k, seed),
    fields=("width", "k", "n_experts"), description="hash layer: a fixed hash picks the expert"))
# ---------------------------------------------------------------------------------------------


def main() -> None:
    width, k, n_experts = 64, 16, 4  # 4 experts of 16 units; one per example
    config = ExperimentConfig(
        name="own_router", preset="example", target=TargetSpec(n_inputs=8, degree=4),
        models=(ModelSpec("hash_moe", width=width, k=k, n_experts=n_experts),
                ModelSpec("sigma_moe", width=width, k=k, n_experts=n_experts),
                ModelSpec("dense_mlp", width=k)),
        seeds=(0, 1), n_train=4_000, n_eval=2_000, train_steps=300, train_batch=256)
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(tempfile.mkdtemp())
    table = run_sweep([config], out, device="cpu", progress=False)
    summary = table.groupby("model")[["activated_units", "params", "eval_nmse",
                                      "dead_fraction"]].mean()
    print(summary.to_string(float_format="{:.3g}".format))
    print(f"results: {out / 'results.csv'}")


if __name__ == "__main__":
    main()
