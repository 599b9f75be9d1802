"""The experiments of Baykal et al. 2022, §5 (Figures 2–4, Tables 1–2) and the subspace sweep,
each at three presets: ``tiny`` (seconds; for tests), ``quick`` (all experiments together within
about 10 minutes on 2 CPU cores; widths scaled down, exact fits) and ``paper`` (the paper's
sizes; meant for a GPU and SGD).

The paper's appendix with the training details is not available (see shared/papers/README.md):
the sample sizes, seeds and fitting choices below are our documented defaults.
"""

from __future__ import annotations

import numpy as np

from experiments.specs import ExperimentConfig, ModelSpec, TargetSpec

PRESETS = ("tiny", "quick", "paper")


def _check_preset(preset: str) -> None:
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS}, got {preset!r}")


def _sizes(preset):
    return {
        "tiny": dict(seeds=(0, 1), n_train=2_000, n_eval=1_000),
        "quick": dict(seeds=(0, 1, 2), n_train=20_000, n_eval=5_000),
        "paper": dict(seeds=(0, 1, 2), n_train=200_000, n_eval=20_000, fit="sgd",
                      sgd_steps=20_000, sgd_batch=1024),
    }[preset]


def _dense(widths):
    return [ModelSpec("dense", width=w, label="dense") for w in widths]


def _dsm(total_widths, ks):
    return [ModelSpec("dsm", width=W, k=k, label=f"DSM width {W}")
            for W in total_widths for k in ks if k <= W]


def _lsh(bits):
    return [ModelSpec("lsh", n_bits=b, label="LSH") for b in bits]


def _dsm_vs_dense_and_lsh(name, family, preset):
    """Figures 2 and 3: (a) DSM vs dense at equal activated units over several total widths;
    (b) LSH vs dense over the number of buckets (LSH buckets = 2^n_bits; dense: its width)."""
    _check_preset(preset)
    scale = {"tiny": dict(dense=[8, 32, 128], dsm_widths=[128], ks=[8, 32], bits=[3, 5, 7]),
             "quick": dict(dense=[16, 32, 64, 128, 256, 512, 1024, 2048],
                           dsm_widths=[512, 2048], ks=[16, 32, 64, 128, 256],
                           bits=[4, 6, 8, 10, 11, 12, 13, 14]),
             "paper": dict(dense=[64, 128, 256, 512, 1024, 2048, 4096, 8192],
                           dsm_widths=[2048, 8192, 16384], ks=[64, 128, 256, 512, 1024],
                           bits=[6, 8, 10, 11, 12, 13, 14, 15, 16])}[preset]
    models = _dense(scale["dense"]) + _dsm(scale["dsm_widths"], scale["ks"]) + _lsh(scale["bits"])
    dsm_labels = sorted({m.label for m in models if m.kind == "dsm"})
    return [ExperimentConfig(
        name=name, preset=preset, target=TargetSpec(family=family), models=tuple(models),
        panels={"a": {"x": "activated_units", "models": ["dense", *dsm_labels],
                      "title": "DSM vs dense at equal activated units"},
                "b": {"x": "size", "models": ["dense", "LSH"],
                      "title": "LSH (buckets) vs dense (width)"}},
        **_sizes(preset))]


def fig2(preset: str) -> list[ExperimentConfig]:
    """Figure 2: degree-4 random polynomial, n_inputs = 8."""
    return _dsm_vs_dense_and_lsh("fig2", "polynomial", preset)


def fig3(preset: str) -> list[ExperimentConfig]:
    """Figure 3: random hypercube function, n_inputs = 8."""
    return _dsm_vs_dense_and_lsh("fig3", "hypercube", preset)


def fig4(preset: str) -> list[ExperimentConfig]:
    """Figure 4: dense, random hash, DSM and LSH together (random polynomial, n = 8):
    (a) at equal activated units with the sparse models at one total width; (b) LSH."""
    _check_preset(preset)
    W, ks, bits, widest = {
        "tiny": (128, [8, 32], [3, 5, 7], 128),
        "quick": (1024, [16, 32, 64, 128, 256], [6, 8, 10, 11, 12, 14], 2048),
        "paper": (8192, [64, 128, 256, 512, 1024], [8, 10, 12, 14, 16], 8192)}[preset]
    # dense models as wide as the LSH tables, up to the widest an exact fit handles quickly
    wide = [2**b for b in bits if max(ks) < 2**b <= widest]
    models = (_dense(ks) + [ModelSpec("dsm", width=W, k=k, label="DSM") for k in ks]
              + [ModelSpec("random_hash", width=W, k=k, label="random hash") for k in ks]
              + _lsh(bits) + _dense(wide))
    return [ExperimentConfig(
        name="fig4", preset=preset, target=TargetSpec(family="polynomial"), models=tuple(models),
        panels={"a": {"x": "activated_units", "models": ["dense", "DSM", "random hash"],
                      "title": f"equal activated units (sparse models: width {W})"},
                "b": {"x": "size", "models": ["dense", "LSH"],
                      "title": "LSH (buckets) vs dense (width)"}},
        **_sizes(preset))]


#: Baykal et al. 2022, Table 1: activated units of the dense model per FLOPs row (dim = 8).
TABLE1_ACTIVATED = {"tiny": (16, 32, 64), "quick": (64, 128, 256), "paper": (1024, 2048, 4096)}


def table1(preset: str) -> list[ExperimentConfig]:
    """Table 1: eval MSE at equal FLOPs (paper's convention 2·(dim+1)·activated units) for
    dense and DSM at 50 % and 25 % sparsity (widths 2× and 4× the activated units)."""
    _check_preset(preset)
    models = []
    for a in TABLE1_ACTIVATED[preset]:
        models += [ModelSpec("dense", width=a, label="dense"),
                   ModelSpec("dsm", width=2 * a, k=a, label="DSM 50% sparsity"),
                   ModelSpec("dsm", width=4 * a, k=a, label="DSM 25% sparsity")]
    return [ExperimentConfig(
        name="table1", preset=preset, target=TargetSpec(family="polynomial"),
        models=tuple(models),
        panels={"a": {"x": "flops_paper", "models": ["dense", "DSM 50% sparsity",
                                                     "DSM 25% sparsity"],
                      "title": "eval MSE at equal FLOPs"}},
        **_sizes(preset))]


TABLE2_WIDTHS = {"tiny": (32, 64), "quick": (256, 512, 1024), "paper": (1024, 2048, 4096)}
TABLE2_KS = {"tiny": (4, 8), "quick": (8, 16, 32, 64, 128, 256),
             "paper": (32, 64, 128, 256, 512, 1024)}


def table2(preset: str) -> list[ExperimentConfig]:
    """Table 2: random 3-layer NN target, dense and DSM with several k at each total width."""
    _check_preset(preset)
    models = []
    for w in TABLE2_WIDTHS[preset]:
        models.append(ModelSpec("dense", width=w, label="dense"))
        models += [ModelSpec("dsm", width=w, k=k, label=f"DSM k={k}")
                   for k in TABLE2_KS[preset] if k < w]
    return [ExperimentConfig(
        name="table2", preset=preset, target=TargetSpec(family="mlp"), models=tuple(models),
        panels={"a": {"x": "width", "models": ["dense"] + [f"DSM k={k}" for k in TABLE2_KS[preset]],
                      "title": "random 3-layer NN target"}},
        **_sizes(preset))]


SUBSPACE_KS = {"tiny": (2, 3), "quick": (2, 3, 4, 5, 6), "paper": (2, 3, 4, 5, 6)}


def in_sample_regime(buckets, k: int, n_train: int):
    """The sample condition of Theorem 4.1 with constant 1: n_train ≥ k · T · ln T for a table
    of T non-empty buckets. Outside it most buckets hold a handful of points and the error is
    estimation noise, not the approximation error the theorem's exponent describes."""
    buckets = np.asarray(buckets, dtype=float)
    return k * buckets * np.log(np.maximum(buckets, 2.0)) <= n_train


def subspace(preset: str) -> list[ExperimentConfig]:
    """LSH learner (Euclidean LSH bucket means, Theorem 4.1) on inputs uniform on a random
    k-dimensional subspace of R^64: eval MSE vs the number of non-empty buckets T, whose
    fitted exponent is compared with the theory's MSE ∝ T^(−2/k) (bucket diameter ∝ T^(−1/k),
    error ∝ diameter for a Lipschitz target). Target: a random MLP on R^64. Hashes per table:
    2k (the theorem's m = C·k with C = 2); the bucket width ε sweeps a geometric grid, and the
    exponent is fitted on the runs that satisfy the theorem's sample condition
    (``in_sample_regime``); the runs outside it are plotted too."""
    _check_preset(preset)
    n_widths = {"tiny": 3, "quick": 10, "paper": 14}[preset]
    sizes = _sizes(preset)
    if preset == "quick":
        sizes["n_train"] = 50_000
    configs = []
    for k in SUBSPACE_KS[preset]:
        widths = [round(float(w), 4) for w in 32.0 * 0.6 ** np.arange(n_widths)]
        models = tuple(ModelSpec("lsh_table", n_hashes=2 * k, bucket_width=w, label="LSH table")
                       for w in widths)
        configs.append(ExperimentConfig(
            name="subspace", preset=preset,
            target=TargetSpec(family="mlp", n_inputs=64, subspace_k=k), models=models,
            panels={"a": {"x": "buckets", "models": ["LSH table"], "theory_alpha": 2 / k,
                          "sample_regime_k": k, "title": f"k = {k}"}},
            **sizes))
    return configs


#: Activated units of the routers experiment; every sparse model has total width 4× that
#: (25 % of its units active per example, Table 1's sparsest setting), a square for PKM.
ROUTERS_ACTIVATED = {"tiny": (4, 16), "quick": (16, 64, 256), "paper": (64, 256, 1024)}
ROUTERS_EXPERTS = {"tiny": 4, "quick": 16, "paper": 64}
ROUTER_LABELS = {"comet": "COMET", "sigma_moe": "σ-MoE", "topk_moe": "top-k MoE",
                 "pkm": "PKM", "smear": "SMEAR", "sdmlp": "SDMLP"}
#: Label of the dense baseline trained end to end beside the routers (``DenseMLP``).
TRAINED_DENSE_LABEL = "dense MLP, trained"


def routers(preset: str) -> list[ExperimentConfig]:
    """Issue 7: the other papers' routers beside DSM, dense and LSH on the random polynomial
    and hypercube targets of Baykal et al. §5 (n = 8), at matched activated units a.

    Sparse models have total width 4a: DSM (k = a), COMET (one hidden layer, p_k = 1/4),
    σ-MoE and top-k MoE (n_experts experts of 4a/n_experts units, a/expert size of them per
    example), SMEAR (4 experts of a units merged into one), PKM (n_keys = 2√a, top a values),
    SDMLP (4a neurons, k = a). Two dense baselines of width a: Baykal et al.'s (§5: a frozen
    random bottom layer, "dense") and ``DenseMLP`` trained end to end like the routers
    ("dense MLP, trained"; COMET §5.2.1's smaller model). The LSH model has 4a buckets (panel
    b, by size). The frozen-feature models (dense, DSM, LSH) get their exact least-squares
    top layer (``fit="exact"``); the routers and the trained dense MLP learn their routing or
    features and are trained end to end with their own optimiser for ``sgd_steps`` steps
    (``experiments.router_training``), so a router is compared with dense both ways: against
    the paper's frozen features, and against a network that learns its features too.
    """
    _check_preset(preset)
    experts = ROUTERS_EXPERTS[preset]
    models = []
    for a in ROUTERS_ACTIVATED[preset]:
        w = 4 * a
        models += [ModelSpec("dense", width=a, label="dense"),
                   ModelSpec("dense_mlp", width=a, label=TRAINED_DENSE_LABEL),
                   ModelSpec("dsm", width=w, k=a, label="DSM"),
                   ModelSpec("lsh", n_bits=int(np.log2(w)), label="LSH")]
        for kind, label in ROUTER_LABELS.items():
            n_experts = {"sigma_moe": min(experts, w), "topk_moe": min(experts, w),
                         "smear": 4}.get(kind)
            models.append(ModelSpec(kind, width=w, k=a, n_experts=n_experts, label=label))
    labels = ["dense", TRAINED_DENSE_LABEL, "DSM", *ROUTER_LABELS.values()]
    sizes = _sizes(preset)
    if preset == "quick":
        sizes.update(n_train=16_384, n_eval=4_096, seeds=(0, 1), sgd_steps=1_500)
    elif preset == "tiny":
        sizes.update(sgd_steps=100, seeds=(0,))
    sizes["fit"] = "exact"
    return [ExperimentConfig(
        name="routers", preset=preset, target=TargetSpec(family=family), models=tuple(models),
        panels={"a": {"x": "activated_units", "models": labels,
                      "title": "routers at equal activated units"},
                "b": {"x": "size", "models": ["dense", TRAINED_DENSE_LABEL, "DSM", "LSH",
                                             *ROUTER_LABELS.values()],
                      "title": "by total width / buckets"}},
        **sizes) for family in ("polynomial", "hypercube")]


EXPERIMENTS = {"fig2": fig2, "fig3": fig3, "fig4": fig4, "table1": table1, "table2": table2,
               "subspace": subspace, "routers": routers}


def experiment_configs(name: str, preset: str) -> list[ExperimentConfig]:
    """The configs of experiment ``name`` at ``preset``.

    Raises:
        ValueError: unknown experiment or preset name.
    """
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {name!r}")
    _check_preset(preset)
    return EXPERIMENTS[name](preset)
