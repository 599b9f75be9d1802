"""Register a router of your own and run it beside the built-in ones: in a sweep (regression,
d_out = 1) and in Bricken et al.'s continual-learning harness (classification, d_out = the
number of classes).

The router is a hash layer (Roller et al. 2021, "Hash Layers For Large Sparse Models"): each
example goes to one expert chosen by a fixed random hash of x — here the largest of
n_experts fixed random projections — so its routing is not learned. The block marked "the
router" is all a new kind needs: a ``routing.layers.RouterLayer`` and one registration, which
gives its label, its source, its layer for any (d_in, d_out), its size arguments and the size
knob the continual harness searches to match the ReLU MLP's parameters (its expert count).

Run: python examples/own_router.py   (about a minute on one CPU core)
Or load it into the command line:
    sparselab scale --module examples/own_router.py --config my.toml     (a sweep)
    sparselab scale --module examples/own_router.py --experiment continual --preset tiny
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


# -- the router (25 lines) ------------------------------------------------------------------
class HashMoE(RouterLayer):
    name = "hash_moe"

    def __init__(self, d_in, d_out, n_experts, expert_size, seed):
        super().__init__(n_experts)
        g = torch.Generator().manual_seed(seed)
        self.config = SimpleNamespace(d_in=d_in, d_out=d_out, lr=1e-2, optimizer="adam")
        weight = lambda *shape: torch.nn.Parameter(  # noqa: E731  (fan-in scaled)
            torch.randn(*shape, generator=g) / shape[-2] ** 0.5)
        self.register_buffer("hash", torch.randn(d_in, n_experts, generator=g))  # frozen
        self.w1 = weight(n_experts, d_in, expert_size)
        self.w2 = weight(n_experts, expert_size, d_out)
        self.size, self.n_experts = expert_size, n_experts

    def forward(self, x):  # x (B, d_in) -> y (B, d_out), no auxiliary loss
        e = (self.check_input(x) @ self.hash).argmax(1)  # (B,) the hash bucket = expert
        self.record_usage(indices=e[:, None])
        h = torch.relu(torch.einsum("bd,bdh->bh", x, self.w1[e]))  # (B, expert_size)
        return torch.einsum("bh,bho->bo", h, self.w2[e]), {}

    activated_units = property(lambda self: self.size)
    total_units = property(lambda self: self.size * self.n_experts)

    def flops_per_example(self):
        d_in, d_out = self.config.d_in, self.config.d_out
        return 2 * d_in * self.n_experts + 2 * self.size * (d_in + d_out)


register_model_kind(RouterKind(
    "hash_moe",
    lambda d_in, d_out, seed, epochs, n_experts, expert_size: HashMoE(
        d_in, d_out, n_experts, expert_size, seed),
    # a spec's (width, k, n_experts) as the layer's sizes: one expert of k units per example
    sizes=lambda width, k, n_experts: {"n_experts": n_experts, "expert_size": k},
    knob="n_experts", size_rule="expert count chosen for the parameter count closest to the "
    "ReLU MLP's", label="hash layer", source="Roller et al. 2021, §3",
    fields=("width", "k", "n_experts"), description="hash layer: a fixed hash picks the expert"))
# ---------------------------------------------------------------------------------------------


def sweep(out: pathlib.Path) -> None:
    """The router beside σ-MoE and a dense MLP on a random polynomial (regression)."""
    width, k, n_experts = 64, 16, 4  # 4 experts of 16 units; one per example
    config = ExperimentConfig(
        name="own_router", preset="example", target=TargetSpec(n_inputs=8, degree=4),
        models=(ModelSpec("hash_moe", width=width, k=k, n_experts=n_experts),
                ModelSpec("sigma_moe", width=width, k=k, n_experts=n_experts),
                ModelSpec("dense_mlp", width=k)),
        seeds=(0, 1), n_train=4_000, n_eval=2_000, train_steps=300, train_batch=256)
    table = run_sweep([config], out, device="cpu", progress=False)
    summary = table.groupby("model")[["activated_units", "params", "eval_nmse",
                                      "dead_fraction"]].mean()
    print(summary.to_string(float_format="{:.3g}".format))
    print(f"results: {out / 'results.csv'}")


def continual() -> None:
    """The router beside the ReLU MLP on Split digits (5 tasks of 2 classes, 64 pixels),
    its expert count matched to the ReLU MLP's parameters."""
    from experiments.kinds.continual_harness import ContinualSettings, run_continual_model
    from experiments.runner.datasets import as_float, train_test_digits

    X, y, X_test, y_test = train_test_digits()
    data = (as_float(X).reshape(len(X), -1), y, as_float(X_test).reshape(len(X_test), -1),
            y_test)
    settings = ContinualSettings(n_neurons=64, k=4, n_experts=16, epochs_per_task=4)
    for model in ("hash_moe", "ReLU MLP"):
        row = run_continual_model(model, data, settings, seed=0)
        print(f"{model}: final accuracy {row['final_accuracy']:.3f}, forgetting "
              f"{row['forgetting']:.3f}, {row['params']:,} parameters "
              f"({row['params_rel_diff']:+.1%} of the ReLU MLP's; {row['sizing']})")


def main() -> None:
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(tempfile.mkdtemp())
    sweep(out)
    continual()


if __name__ == "__main__":
    main()
