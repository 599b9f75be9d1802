"""COMET's two synthetic studies: similar inputs share masks (COMET §5.1.1, Fig. 2)
and fixed routing leaves no neuron dead (§5.1.2), the latter on sparselab's own inputs.

**Similarity** (``run_similarity``). 500 random input pairs of length 100; every input has
its own mean μ, an integer uniform in {0, …, 100}, and components iid N(μ, 25). The paper
writes N(μ, 25) without saying whether 25 is the variance or the standard deviation; the
usual N(mean, variance) reading is taken, so the noise has standard deviation 5
(``noise_std``). The cosine similarities spread because μ differs between the two inputs of
a pair: two large means give cosines near 1, a mean near 0 gives a nearly centred vector and
a cosine near 0. Each pair goes through 10 random COMET networks (10 hidden layers of 512,
L = 11) at several p_k; the same 10 networks serve every pair ("10 COMET networks for every
pair" read as 10 draws whose average smooths each pair's estimate; drawing 5 000 networks
would change no expectation), and the same network (same V, W) is used at every p_k.
Networks follow Eqs. 4–8 to the letter, so the backbone has no bias (Eq. 7) and f = ReLU.

Per pair, network and p_k:
    * ``mask_overlap`` = cosine of the concatenated masks (m_1, …, m_{L−1}), the paper's
      measure, = Σ_ℓ |m_ℓ ∩ m'_ℓ| / Σ_ℓ k_ℓ; with equal widths (always here) it is the mean
      over layers of |m_ℓ ∩ m'_ℓ| / k, the fraction of one input's active neurons also active
      for the other (1 for identical inputs, about p_k by chance).
    * ``activation_cosine`` = cosine of the concatenated masked activations (x_1, …, x_{L−1})
      (NaN if one of them is all zero).
``summarise_similarity`` averages over networks per pair (as the paper does for Fig. 2) and
gives per p_k the Spearman rank correlation of input cosine with each measure.

**Utilisation** (``run_utilisation``). §5.1.2 draws 1 000 random 4-layer COMET MLPs (L = 4:
three masked hidden layers) with N_ℓ ~ U(100, 1000) (drawn per layer) and 1 − p_k ~
U(0.05, 1), passes CIFAR10 through each, and counts neurons never active. The networks are
*not trained*, and need not be: masks come from the fixed routing network alone, so training
the backbone cannot change them (COMET §4, point 2). Here the inputs are sparselab's:
``lipschitz.UniformCube(8)`` (Baykal et al. §5) and a random 2-dimensional subspace of it,
``lipschitz.UniformSubspace(8, 2)``. The dead fraction is reported for nested prefixes of
the input sample (``n_inputs``), so it can only fall as n_inputs grows. ``p_ks=None`` draws
p_k per network as the paper; a tuple evaluates every network at every p_k of the grid (same
V, so in layer 1 the winners at a smaller p_k are a subset of those at a larger one).
``_utilisation_claims`` decides §5.1.2's "fewer than 2% of the models had any such neurons"
on these rows (a model: one network at one p_k; its neurons never active over the largest
``n_inputs``), with an exact binomial test of the fraction of models against 2 %
(Clopper–Pearson bounds, ``inference.intervals``), Holm over the input distributions.

Source: COMET (Anonymous, "More Experts Than Galaxies", under review) §5.1.1, Fig. 2 and
§5.1.2, Fig. 3.
"""

from __future__ import annotations

import json
import pathlib
from dataclasses import asdict, dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402
from tqdm.auto import tqdm  # noqa: E402

from lipschitz import UniformCube, UniformSubspace  # noqa: E402
from experiments.runner.output_folder import make_folder  # noqa: E402
from routing.validation import check_bool, check_int, check_real, check_seed, check_tensor  # noqa: E402,E501
from routing.layers.comet import ACTIVATIONS, COMET, COMETConfig  # noqa: E402

__all__ = ["SimilarityConfig", "preset_similarity", "make_pairs", "pair_similarities",
           "run_similarity", "summarise_similarity", "plot_similarity", "write_similarity",
           "UtilisationConfig", "preset_utilisation", "run_utilisation",
           "summarise_utilisation", "plot_utilisation", "write_utilisation"]

PRESETS = ("tiny", "quick", "paper")


def _check_p_ks(p_ks, name="p_ks"):
    if not isinstance(p_ks, tuple) or not p_ks:
        raise ValueError(f"{name} must be a non-empty tuple of values in (0, 1], got {p_ks!r}")
    for i, p in enumerate(p_ks):
        check_real(p, f"{name}[{i}]", 0.0, 1.0, low_open=True)


def _seed(*parts: int) -> int:
    """A 31-bit seed from the config seed and the stream's indices (independent streams)."""
    return int(np.random.SeedSequence(list(parts)).generate_state(1)[0] >> 1)


# -- §5.1.1: mask overlap and activation similarity against input similarity ----------------
@dataclass(frozen=True)
class SimilarityConfig:
    """The Fig. 2 experiment (defaults: the paper's scale, COMET §5.1.1).

    Attributes:
        n_pairs: input pairs (500).
        dim: input length (100).
        mu_max: each input's mean μ is an integer uniform in {0, …, mu_max} (100).
        noise_std: standard deviation of the components around μ (5: N(μ, 25), 25 the
            variance).
        n_networks: random COMET networks every pair goes through (10).
        n_hidden: hidden layers (10, so L = 11).
        width: neurons per hidden layer (512).
        p_ks: fractions of winners compared. Fig. 2's values are not in the text; the
            default spans the paper's MLP levels 0.1, 0.5, 0.9 (App. A.1) plus 0.25 and
            p_k = 1, the plain-MLP baseline of Fig. 2b.
        activation: backbone activation (ReLU).
        bias: backbone biases; False is Eq. 7 as written.
        seed: seed of the inputs and of the networks.

    Raises:
        ValueError: naming the field when a value is out of range.
    """

    n_pairs: int = 500
    dim: int = 100
    mu_max: int = 100
    noise_std: float = 5.0
    n_networks: int = 10
    n_hidden: int = 10
    width: int = 512
    p_ks: tuple[float, ...] = (0.1, 0.25, 0.5, 0.9, 1.0)
    activation: str = "relu"
    bias: bool = False
    seed: int = 0

    def __post_init__(self):
        for name in ("n_pairs", "dim", "n_networks", "n_hidden", "width"):
            check_int(getattr(self, name), name, 1)
        check_int(self.mu_max, "mu_max", 0)
        check_real(self.noise_std, "noise_std", 0.0, low_open=True)
        _check_p_ks(self.p_ks)
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {tuple(ACTIVATIONS)}, "
                             f"got {self.activation!r}")
        check_bool(self.bias, "bias")
        check_seed(self.seed)


def preset_similarity(preset: str) -> SimilarityConfig:
    """"tiny" (about a second, for tests), "quick" (under a minute on 2 CPU cores) or "paper"
    (COMET §5.1.1's scale).

    Raises:
        ValueError: for another preset name.
    """
    if preset == "tiny":
        return SimilarityConfig(n_pairs=60, n_networks=2, n_hidden=3, width=64,
                                p_ks=(0.25, 0.5, 1.0))
    if preset == "quick":
        return SimilarityConfig(n_pairs=500, n_networks=3, n_hidden=10, width=256)
    if preset == "paper":
        return SimilarityConfig()
    raise ValueError(f"preset must be one of {PRESETS}, got {preset!r}")


def make_pairs(config: SimilarityConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The input pairs: (X_a, X_b) float64 (n_pairs, dim) and their means μ, int (n_pairs, 2)."""
    rng = np.random.default_rng(_seed(config.seed, 0))
    mu = rng.integers(0, config.mu_max + 1, size=(config.n_pairs, 2))
    noise = rng.normal(0.0, config.noise_std, size=(2, config.n_pairs, config.dim))
    return mu[:, :1] + noise[0], mu[:, 1:] + noise[1], mu


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of (P, D) arrays; 1 where both rows are zero (the same, silent
    activation), 0 where exactly one is (nothing shared): never NaN."""
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    norms = na * nb
    with np.errstate(invalid="ignore", divide="ignore"):
        cosine = np.where(norms > 0, (a * b).sum(1) / np.where(norms > 0, norms, 1.0), 0.0)
    return np.where((na == 0) & (nb == 0), 1.0, np.clip(cosine, -1.0, 1.0))


@torch.no_grad()
def pair_similarities(layer: COMET, x_a: torch.Tensor,
                      x_b: torch.Tensor) -> dict[str, np.ndarray]:
    """Mask overlap and activation cosine of each pair (x_a[i], x_b[i]) in one network.

    Arguments:
        layer: a COMET layer.
        x_a, x_b: (P, d_in) tensors of the layer's dtype.

    Returns:
        {"mask_overlap": (P,), "activation_cosine": (P,)} float64: Σ_ℓ|m_ℓ ∩ m'_ℓ| / Σ_ℓ k_ℓ
        and the cosine of the concatenated masked activations: 1 where both pairs' activations
        are all zero (the same), 0 where exactly one is (nothing shared).

    Raises:
        ValueError: ``x_a`` or ``x_b`` not a finite real (P, d_in) tensor, or the two of
            different lengths.
    """
    d_in = layer.config.d_in
    dtype = next(layer.parameters()).dtype
    x_a = check_tensor(x_a, "x_a", (None, d_in), dtype=dtype)
    x_b = check_tensor(x_b, "x_b", (len(x_a), d_in), dtype=dtype)
    both = torch.cat([x_a, x_b])
    n = len(x_a)
    shared = sum((m[:n] & m[n:]).sum(1) for m in layer.masks(both)).double().cpu().numpy()
    hidden = torch.cat(layer.hidden_activations(both), dim=1).double().cpu().numpy()  # (2P, ΣN_ℓ)
    return {"mask_overlap": shared / sum(layer.ks),
            "activation_cosine": _cosine(hidden[:n], hidden[n:])}


def run_similarity(config: SimilarityConfig, progress: bool = True) -> pd.DataFrame:
    """Tidy table, one row per (pair, network, p_k).

    Columns: pair, mu_a, mu_b, network, network_seed, p_k, k, input_cosine, mask_overlap,
    activation_cosine (definitions in the module docstring).

    Raises:
        ValueError: ``progress`` is not a bool.
    """
    check_bool(progress, "progress")
    x_a, x_b, mu = make_pairs(config)
    input_cosine = _cosine(x_a, x_b)
    ta, tb = torch.from_numpy(x_a).float(), torch.from_numpy(x_b).float()
    jobs = [(net, p_k) for net in range(config.n_networks) for p_k in config.p_ks]
    frames = []
    for net, p_k in tqdm(jobs, desc="COMET similarity", disable=not progress):
        seed = _seed(config.seed, 1, net)
        layer = COMET(COMETConfig(d_in=config.dim, widths=(config.width,) * config.n_hidden,
                                  d_out=1, p_k=p_k, activation=config.activation,
                                  bias=config.bias, seed=seed))
        sims = pair_similarities(layer, ta, tb)
        frames.append(pd.DataFrame({
            "pair": np.arange(config.n_pairs), "mu_a": mu[:, 0], "mu_b": mu[:, 1],
            "network": net, "network_seed": seed, "p_k": p_k, "k": layer.ks[0],
            "input_cosine": input_cosine, **sims}))
    return pd.concat(frames, ignore_index=True)


def _spearman(x: pd.Series, y: pd.Series) -> tuple[float, float]:
    keep = x.notna() & y.notna()
    if keep.sum() < 3 or x[keep].nunique() < 2 or y[keep].nunique() < 2:
        return float("nan"), float("nan")  # a constant (e.g. masks at p_k = 1): undefined
    result = spearmanr(x[keep], y[keep])
    return float(result.statistic), float(result.pvalue)


def _slope(x: pd.Series, y: pd.Series) -> float:
    keep = x.notna() & y.notna()
    if keep.sum() < 2 or x[keep].nunique() < 2:
        return float("nan")
    return float(np.polyfit(x[keep], y[keep], 1)[0])


def summarise_similarity(df: pd.DataFrame) -> pd.DataFrame:
    """One row per p_k, on the network-averaged pairs (the points of Fig. 2).

    Columns: p_k, n_pairs, spearman_mask (rank correlation of input cosine with mask overlap,
    NaN when the overlap is constant, as at p_k = 1), spearman_mask_p, spearman_activation,
    spearman_activation_p, slope_mask and slope_activation (least-squares slopes against input
    cosine: how sharply similarity is passed on), mean_mask_overlap, mean_activation_cosine.
    """
    pairs = df.groupby(["p_k", "pair"], as_index=False)[
        ["input_cosine", "mask_overlap", "activation_cosine"]].mean()
    rows = []
    for p_k, g in pairs.groupby("p_k"):
        rho_m, p_m = _spearman(g.input_cosine, g.mask_overlap)
        rho_a, p_a = _spearman(g.input_cosine, g.activation_cosine)
        rows.append({"p_k": p_k, "n_pairs": len(g), "spearman_mask": rho_m,
                     "spearman_mask_p": p_m, "spearman_activation": rho_a,
                     "spearman_activation_p": p_a,
                     "slope_mask": _slope(g.input_cosine, g.mask_overlap),
                     "slope_activation": _slope(g.input_cosine, g.activation_cosine),
                     "mean_mask_overlap": g.mask_overlap.mean(),
                     "mean_activation_cosine": g.activation_cosine.mean()})
    return pd.DataFrame(rows)


def plot_similarity(df: pd.DataFrame, out_dir) -> list[pathlib.Path]:
    """Fig. 2: (a) mask overlap and (b) activation cosine against input cosine, one colour
    per p_k, each point a pair averaged over networks. Writes ``comet_similarity.png`` and
    ``.svg`` into ``out_dir`` (created) and returns their paths."""
    out_dir = make_folder(out_dir, "out_dir")
    pairs = df.groupby(["p_k", "pair"], as_index=False)[
        ["input_cosine", "mask_overlap", "activation_cosine"]].mean()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for p_k, g in pairs.groupby("p_k"):
        for ax, column in zip(axes, ("mask_overlap", "activation_cosine")):
            ax.scatter(g.input_cosine, g[column], s=6, alpha=0.6, label=f"$p_k$ = {p_k:g}")
    for ax, title in zip(axes, ("(a) mask overlap (cosine of concatenated masks)",
                                "(b) cosine of masked activations $x_1…x_{L-1}$")):
        ax.set_xlabel("input cosine similarity")
        ax.set_title(title, fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("similarity")
    axes[1].legend(fontsize=7, markerscale=2)
    fig.suptitle("COMET §5.1.1: similar inputs get similar masks (mean over networks)",
                 fontsize=10)
    paths = [out_dir / "comet_similarity.png", out_dir / "comet_similarity.svg"]
    for path in paths:
        fig.savefig(path, dpi=120)
    plt.close(fig)
    return paths


def _write_study(out_dir, name: str, config, run, summarise, plot,
                 progress: bool, claims=None) -> list[pathlib.Path]:
    """Run a study; write <name>_config.json, <name>.csv, <name>_summary.csv, its plots and,
    with ``claims`` (rows, config → Claims), claims.csv."""
    check_bool(progress, "progress")
    out_dir = make_folder(out_dir, "out_dir")
    df = run(config, progress=progress)
    paths = [out_dir / f"{name}_config.json", out_dir / f"{name}.csv",
             out_dir / f"{name}_summary.csv"]
    paths[0].write_text(json.dumps(asdict(config), indent=2) + "\n")
    df.to_csv(paths[1], index=False)
    summarise(df).to_csv(paths[2], index=False)
    paths += plot(df, out_dir)
    if claims is not None:
        from experiments.analysis.claims import CLAIM_COLUMNS

        paths.append(out_dir / "claims.csv")
        pd.DataFrame([{c: getattr(claim, c) for c in CLAIM_COLUMNS}
                      for claim in claims(df, config)],
                     columns=CLAIM_COLUMNS).to_csv(paths[-1], index=False)
    return paths


def write_similarity(out_dir, config: SimilarityConfig,
                     progress: bool = True) -> list[pathlib.Path]:
    """Run the study and write config.json, the tidy CSV, the summary CSV and the plots."""
    return _write_study(out_dir, "similarity", config, run_similarity, summarise_similarity,
                        plot_similarity, progress)


# -- §5.1.2: never-active neurons on sparselab's input distributions ------------------------
INPUTS = ("cube", "subspace")


@dataclass(frozen=True)
class UtilisationConfig:
    """The §5.1.2 experiment on sparselab's inputs (defaults: the paper's scale).

    Attributes:
        inputs: input distributions, from "cube" (``UniformCube(dim)``) and "subspace"
            (``UniformSubspace(dim, subspace_k)``).
        dim: input dimension (8, Baykal et al. §5).
        subspace_k: dimension of the random subspace (1..min(dim, 8)).
        n_networks: random networks per distribution (1 000).
        n_hidden: masked hidden layers (3: the paper's 4-layer MLP, L = 4).
        width_range: each hidden width is an integer uniform in [low, high] ((100, 1000)).
        p_ks: a grid of p_k evaluated on every network, or None for the paper's draw of
            1 − p_k ~ U(0.05, 1) per network.
        n_inputs: increasing sample sizes at which the dead fraction is read (nested prefixes
            of one sample; the largest, 50 000, is CIFAR10's training set).
        batch_size: rows per forward pass (memory only; results do not depend on it).
        seed: seed of the networks, the subspace and the inputs.

    Raises:
        ValueError: naming the field when a value is out of range.
    """

    inputs: tuple[str, ...] = INPUTS
    dim: int = 8
    subspace_k: int = 2
    n_networks: int = 1000
    n_hidden: int = 3
    width_range: tuple[int, int] = (100, 1000)
    p_ks: tuple[float, ...] | None = None
    n_inputs: tuple[int, ...] = (1_000, 10_000, 50_000)
    batch_size: int = 10_000
    seed: int = 0

    def __post_init__(self):
        if not isinstance(self.inputs, tuple) or not self.inputs or any(
                name not in INPUTS for name in self.inputs):
            raise ValueError(f"inputs must be a non-empty tuple of names from {INPUTS}, "
                             f"got {self.inputs!r}")
        check_int(self.dim, "dim", 1)
        check_int(self.subspace_k, "subspace_k", 1, min(self.dim, UniformSubspace.MAX_K))
        check_int(self.n_networks, "n_networks", 1)
        check_int(self.n_hidden, "n_hidden", 1)
        if not (isinstance(self.width_range, tuple) and len(self.width_range) == 2):
            raise ValueError(f"width_range must be a tuple (low, high), got {self.width_range!r}")
        low = check_int(self.width_range[0], "width_range[0]", 1)
        check_int(self.width_range[1], "width_range[1]", low)
        if self.p_ks is not None:
            _check_p_ks(self.p_ks)
        if (not isinstance(self.n_inputs, tuple) or not self.n_inputs
                or any(not isinstance(n, int) or isinstance(n, bool) or n < 1
                       for n in self.n_inputs)
                or list(self.n_inputs) != sorted(set(self.n_inputs))):
            raise ValueError(f"n_inputs must be a non-empty, strictly increasing tuple of "
                             f"integers >= 1, got {self.n_inputs!r}")
        check_int(self.batch_size, "batch_size", 1)
        check_seed(self.seed)


def preset_utilisation(preset: str) -> UtilisationConfig:
    """"tiny" (about a second, for tests), "quick" (under a minute on 2 CPU cores) or "paper"
    (§5.1.2's 1 000 networks and random p_k, 50 000 inputs: about an hour on 2 cores).

    Raises:
        ValueError: for another preset name.
    """
    if preset == "tiny":
        return UtilisationConfig(n_networks=3, n_hidden=2, width_range=(20, 60),
                                 p_ks=(0.05, 0.2, 0.5), n_inputs=(100, 1_000))
    if preset == "quick":
        return UtilisationConfig(n_networks=5, p_ks=(0.01, 0.05, 0.1, 0.25, 0.5),
                                 n_inputs=(100, 1_000, 5_000))
    if preset == "paper":
        return UtilisationConfig()
    raise ValueError(f"preset must be one of {PRESETS}, got {preset!r}")


def _sample_inputs(config: UtilisationConfig, name: str) -> np.ndarray:
    n = config.n_inputs[-1]
    if name == "cube":
        return UniformCube(config.dim).sample(n, seed=_seed(config.seed, 2))
    subspace = UniformSubspace(config.dim, config.subspace_k, seed=_seed(config.seed, 3))
    return subspace.sample(n, seed=_seed(config.seed, 4))


@torch.no_grad()
def _dead_counts(layer: COMET, X: torch.Tensor, checkpoints: tuple[int, ...],
                 batch_size: int) -> list[list[int]]:
    """[checkpoint][layer] number of neurons active for none of X[:checkpoint]."""
    ever = [torch.zeros(n, dtype=torch.bool) for n in layer.config.widths]
    counts, start = [], 0
    for stop in checkpoints:
        for lo in range(start, stop, batch_size):
            for e, m in zip(ever, layer.masks(X[lo:min(lo + batch_size, stop)])):
                e |= m.any(0)
        start = stop
        counts.append([int((~e).sum()) for e in ever])
    return counts


def run_utilisation(config: UtilisationConfig, progress: bool = True) -> pd.DataFrame:
    """Tidy table, one row per (input, network, p_k, layer, n_inputs).

    Columns: input, network, network_seed, p_k, layer (1-based), width, k, n_inputs, n_dead,
    dead_fraction (n_dead / width: neurons whose mask bit was 0 for every one of the first
    n_inputs inputs).

    Raises:
        ValueError: ``progress`` is not a bool.
    """
    check_bool(progress, "progress")
    rng = np.random.default_rng(_seed(config.seed, 5))
    low, high = config.width_range
    networks = []  # (seed, widths, p_ks) drawn once, shared by every input distribution
    for net in range(config.n_networks):
        widths = tuple(int(w) for w in rng.integers(low, high + 1, size=config.n_hidden))
        p_ks = config.p_ks or (float(1.0 - rng.uniform(0.05, 1.0)),)
        networks.append((_seed(config.seed, 6, net), widths, p_ks))
    rows = []
    jobs = [(name, net) for name in config.inputs for net in range(config.n_networks)]
    X, current = None, None
    for name, net in tqdm(jobs, desc="COMET utilisation", disable=not progress):
        if name != current:
            X, current = torch.from_numpy(_sample_inputs(config, name)).float(), name
        seed, widths, p_ks = networks[net]
        for p_k in p_ks:
            layer = COMET(COMETConfig(d_in=config.dim, widths=widths, p_k=p_k, seed=seed))
            counts = _dead_counts(layer, X, config.n_inputs, config.batch_size)
            for n_inputs, dead in zip(config.n_inputs, counts):
                for ell, (n_dead, width, k) in enumerate(zip(dead, widths, layer.ks), start=1):
                    rows.append({"input": name, "network": net, "network_seed": seed,
                                 "p_k": p_k, "layer": ell, "width": width, "k": k,
                                 "n_inputs": n_inputs, "n_dead": n_dead,
                                 "dead_fraction": n_dead / width})
    return pd.DataFrame(rows)


P_K_BINS = (0.0, 0.02, 0.05, 0.1, 0.25, 0.5, 0.75, 0.95)


def _p_k_group(df: pd.DataFrame) -> pd.Series:
    """p_k itself for a grid (≤ 12 values), else its bin of ``P_K_BINS`` (paper's random p_k)."""
    if df.p_k.nunique() <= 12:
        return df.p_k
    return pd.cut(df.p_k, P_K_BINS).astype(str)


def summarise_utilisation(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (input, p_k or p_k bin, n_inputs).

    Columns: input, p_k, n_inputs, n_networks, dead_fraction (pooled: all dead neurons over
    all neurons of all networks, the paper's "% of neurons across the ensemble"),
    dead_fraction_layer1.. (pooled per layer), networks_with_dead (fraction of networks with
    at least one dead neuron, the paper's "fewer than 2% of the models"), max_network_dead
    (largest dead fraction of one network).
    """
    df = df.assign(p_k_group=_p_k_group(df))
    keys = ["input", "p_k_group", "n_inputs"]
    per_net = df.groupby(keys + ["network"], as_index=False)[["n_dead", "width"]].sum()
    per_net["dead"] = per_net.n_dead / per_net.width
    summary = per_net.groupby(keys).agg(
        n_networks=("network", "size"), n_dead=("n_dead", "sum"), width=("width", "sum"),
        networks_with_dead=("n_dead", lambda v: float((v > 0).mean())),
        max_network_dead=("dead", "max"))
    summary.insert(1, "dead_fraction", summary.pop("n_dead") / summary.pop("width"))
    per_layer = df.groupby(keys + ["layer"])[["n_dead", "width"]].sum()
    per_layer = (per_layer.n_dead / per_layer.width).unstack("layer")
    per_layer.columns = [f"dead_fraction_layer{ell}" for ell in per_layer.columns]
    summary = summary.join(per_layer).reset_index().rename(columns={"p_k_group": "p_k"})
    order = ["input", "p_k", "n_inputs", "n_networks", "dead_fraction"]
    return summary[order + [c for c in summary.columns if c not in order]]


def plot_utilisation(df: pd.DataFrame, out_dir) -> list[pathlib.Path]:
    """Dead fraction against p_k: top row one point per network (all layers pooled), one
    colour per n_inputs; bottom row per layer at the largest n_inputs (mean over networks).
    One column per input distribution. Writes ``comet_utilisation.png`` and ``.svg``."""
    out_dir = make_folder(out_dir, "out_dir")
    inputs = list(dict.fromkeys(df["input"]))
    fig, axes = plt.subplots(2, len(inputs), figsize=(5 * len(inputs), 7), squeeze=False,
                             constrained_layout=True)
    per_net = df.groupby(["input", "network", "p_k", "n_inputs"], as_index=False)[
        ["n_dead", "width"]].sum()
    largest = df.n_inputs.max()
    for col, name in enumerate(inputs):
        top, bottom = axes[0, col], axes[1, col]
        for n_inputs, g in per_net[per_net.input == name].groupby("n_inputs"):
            top.scatter(g.p_k, g.n_dead / g.width, s=10, alpha=0.6, label=f"{n_inputs} inputs")
        rows = df[(df.input == name) & (df.n_inputs == largest)]
        for ell, g in rows.groupby("layer"):
            means = g.groupby("p_k").dead_fraction.mean()
            bottom.plot(means.index, means.values, "o-", ms=3, label=f"layer {ell}")
        top.set_title(f"{name}: network dead fraction (all layers)", fontsize=9)
        bottom.set_title(f"{name}: per layer, {largest} inputs (mean over networks)", fontsize=9)
        for ax in (top, bottom):
            ax.set_xlabel("$p_k$ (fraction of winners)")
            ax.set_ylabel("fraction of never-active neurons")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
    fig.suptitle("COMET §5.1.2 on sparselab inputs: neurons never selected by the fixed routing",
                 fontsize=10)
    paths = [out_dir / "comet_utilisation.png", out_dir / "comet_utilisation.svg"]
    for path in paths:
        fig.savefig(path, dpi=120)
    plt.close(fig)
    return paths


#: COMET §5.1.2's bound: "fewer than 2% of the models had any such neurons" (never active).
DEAD_MODELS_BOUND = 0.02
#: Family-wise level of the utilisation claims (Holm over the input distributions).
DEAD_MODELS_ALPHA = 0.05
#: Power at which the claim's detectable fraction is printed.
DEAD_MODELS_POWER = 0.8


def _paper_setting(config: UtilisationConfig) -> str:
    """How this run's setting differs from §5.1.2's, in one line."""
    draw = ("1 − p_k ~ U(0.05, 1) per network, as the paper" if config.p_ks is None else
            f"every network at each p_k of the grid {', '.join(f'{p:g}' for p in config.p_ks)} "
            f"(not the paper's draw 1 − p_k ~ U(0.05, 1): a grid weights low p_k, where dead "
            f"neurons are, differently)")
    return (f"ours: {config.n_networks} networks × {config.n_hidden} masked layers, N_ℓ ~ "
            f"U{config.width_range}, {draw}, inputs {config.dim}-dimensional "
            f"({', '.join(config.inputs)}), {config.n_inputs[-1]} of them; the paper: 1 000 "
            f"networks, 3 masked layers, N_ℓ ~ U(100, 1000), CIFAR-10 (3 072-dimensional "
            f"images, its training set)")


def _detectable_fraction(n: int, family: int) -> tuple[int, float]:
    """(k_c, f): the most models with a dead neuron out of ``n`` that still support "below
    ``DEAD_MODELS_BOUND``" at the Holm level α/``family`` (−1 when even none would), and the
    largest true fraction at which that happens with probability ≥ ``DEAD_MODELS_POWER``
    (NaN when k_c = −1)."""
    from scipy.optimize import brentq
    from scipy.stats import binom

    level = DEAD_MODELS_ALPHA / family
    k_c = int(binom.ppf(level, n, DEAD_MODELS_BOUND))
    while k_c >= 0 and binom.cdf(k_c, n, DEAD_MODELS_BOUND) > level:
        k_c -= 1
    if k_c < 0:
        return -1, float("nan")
    def power(f):
        return binom.cdf(k_c, n, f) - DEAD_MODELS_POWER

    if power(DEAD_MODELS_BOUND) >= 0:
        return k_c, DEAD_MODELS_BOUND
    return k_c, float(brentq(power, 0.0, DEAD_MODELS_BOUND, xtol=1e-12))


def _dead_diagnosis(rows: pd.DataFrame, by_p_k: pd.DataFrame) -> str:
    """Where the never-active neurons of one input distribution's ``rows`` (one n_inputs)
    are, from the rows: the p_k at which models have them (against the paper's "mostly models
    with a high sparsity level"), the pooled dead fraction of neurons (against the paper's
    7.6e-4 %) and its share per layer."""
    dead_at = [p for p, r in by_p_k.iterrows() if r["sum"] > 0]
    grid = list(by_p_k.index)
    if not dead_at:
        where = "no model has a dead neuron"
    elif max(dead_at) < max(grid):
        where = f"models with a dead neuron only at p_k ≤ {max(dead_at):g} (high sparsity)"
    else:
        where = (f"models with a dead neuron at p_k up to {max(dead_at):g}, the largest run: "
                 f"not only at high sparsity, unlike the paper")
    per_layer = rows.groupby("layer")[["n_dead", "width"]].sum()
    pooled = per_layer["n_dead"].sum() / per_layer["width"].sum()
    layers = ", ".join(f"layer {ell} {r.n_dead / r.width:.2%}" for ell, r in
                       per_layer.iterrows())
    return (f"{where}; dead neurons {pooled:.3%} of all (the paper: 7.6e-4 %), by layer: "
            f"{layers}")


def _utilisation_claims(df: pd.DataFrame, config: UtilisationConfig) -> list:
    """COMET §5.1.2's "fewer than 2% of the models had any such neurons" on sparselab's
    inputs: one ``experiments.analysis.claims.Claim`` per input distribution (experiment
    "comet_utilisation").

    A model is one network at one p_k; it "has a dead neuron" when some neuron of it was
    active for none of the largest ``n_inputs`` inputs. With k such models of n: the one-sided
    exact binomial test of H0 "fraction ≥ 2 %" (``scipy.stats.binomtest``, alternative
    "less"; its rejection at level α is the one-sided Clopper–Pearson upper bound falling
    below 2 %), Holm over the input distributions (``inference.holm``). Verdict: *supported*
    when the Holm-adjusted p ≤ 0.05; *not supported* when the fraction is shown above 2 %
    (the "greater" test, Holm alike); *underpowered* when even k = 0 could not support it
    (too few models; the models needed are printed); else *inconclusive*. The effect is
    k / n with its two-sided 95 % Clopper–Pearson interval (``inference.clopper_pearson``).

    Arguments:
        df: ``run_utilisation``'s rows; config: the configuration that made them.

    Raises:
        ValueError: ``df`` lacks a column of ``run_utilisation``'s or has no rows.
    """
    from scipy.stats import binomtest

    from experiments.analysis.claims import Claim
    from inference import clopper_pearson, holm

    needed = {"input", "network", "p_k", "n_inputs", "n_dead"}
    if not isinstance(df, pd.DataFrame) or not needed <= set(df.columns) or df.empty:
        raise ValueError(f"df must hold run_utilisation's rows (columns {sorted(needed)}), "
                         f"got {type(df).__name__}")
    largest = df["n_inputs"].max()
    rows = df[df["n_inputs"] == largest]
    inputs = list(dict.fromkeys(rows["input"]))
    bound, alpha, family = DEAD_MODELS_BOUND, DEAD_MODELS_ALPHA, len(inputs)
    setting = _paper_setting(config)
    stats = []
    for name in inputs:
        per_model = rows[rows["input"] == name].groupby(["network", "p_k"])["n_dead"].sum()
        k, n = int((per_model > 0).sum()), len(per_model)
        by_p_k = per_model.gt(0).groupby(level="p_k").agg(["sum", "size"])
        stats.append((name, k, n, by_p_k, binomtest(k, n, bound, alternative="less").pvalue,
                      binomtest(k, n, bound, alternative="greater").pvalue))
    p_less = holm([s[4] for s in stats], alpha).p_adjusted
    p_greater = holm([s[5] for s in stats], alpha).p_adjusted
    claims = []
    for (name, k, n, by_p_k, p_raw, _), p_adj, p_up in zip(stats, p_less, p_greater):
        low, high = clopper_pearson(k, n, 0.95)
        _, upper = clopper_pearson(k, n, 1 - alpha, alternative="less")
        k_c, f_power = _detectable_fraction(n, family)
        zero_p = binomtest(0, n, bound, alternative="less").pvalue
        if p_adj <= alpha:
            verdict = "supported"
        elif p_up <= alpha:
            verdict = "not supported"
        elif zero_p * family > alpha:
            verdict = "underpowered"
        else:
            verdict = "inconclusive"
        need = int(np.ceil(np.log(alpha / family) / np.log(1 - bound)))
        power_text = (f"supported when at most {k_c} of {n} models have a dead neuron; power "
                      f"{DEAD_MODELS_POWER:g} up to a true fraction of {f_power:.3g}"
                      if k_c >= 0 else f"even 0 of {n} models cannot support it at the Holm "
                      f"level: needs ≥ {need} models")
        significance = (f"{k}/{n} models with a dead neuron = {k / n:.3g} (95 % CP "
                        f"[{low:.3g}, {high:.3g}]); one-sided 95 % CP upper bound "
                        f"{upper:.3g} against {bound:g}; exact binomial p = {p_raw:.3g}, "
                        f"Holm-adjusted {p_adj:.3g} ({family} input distributions); "
                        + power_text)
        evidence = ("models with a dead neuron by p_k: "
                    + ", ".join(f"p_k {p:g}: {int(r['sum'])}/{int(r['size'])}"
                                for p, r in by_p_k.iterrows())
                    + f" (neurons never active over {largest} inputs)")
        diagnosis = "" if verdict == "supported" else _dead_diagnosis(
            rows[rows["input"] == name], by_p_k) + "; " + setting
        claims.append(Claim(
            "comet_utilisation", f"fewer than 2 % of the models had any never-active neuron, "
            f"{name} inputs ({largest} of them)", verdict, evidence, effect=k / n,
            effect_low=low, effect_high=high, significance=significance, diagnosis=diagnosis,
            sizes=setting, sesoi=bound, p_value=float(p_raw), p_adjusted=float(p_adj),
            test="one-sided exact binomial (Clopper–Pearson) against 2 %, Holm"))
    return claims


def write_utilisation(out_dir, config: UtilisationConfig,
                      progress: bool = True) -> list[pathlib.Path]:
    """Run the study and write config.json, the tidy CSV, the summary CSV, the plots and
    ``claims.csv`` (``_utilisation_claims``: §5.1.2's "fewer than 2% of the models")."""
    return _write_study(out_dir, "utilisation", config, run_utilisation,
                        summarise_utilisation, plot_utilisation, progress,
                        claims=_utilisation_claims)
