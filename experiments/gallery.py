"""The target gallery: 2-D slices of each target family and the ratio of empirical to
certified Lipschitz constants over many seeds (``sparselab targets``)."""

from __future__ import annotations

import json
import pathlib
from dataclasses import asdict, dataclass

import click
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from tqdm.auto import tqdm  # noqa: E402

from lipschitz import (  # noqa: E402
    RandomHypercubeFunction,
    RandomMLP,
    RandomPolynomial,
    UniformCube,
    estimate_lipschitz,
)


@dataclass(frozen=True)
class GalleryConfig:
    """What the gallery draws: the paper's setting n = 8, degree 4 (Baykal et al. 2022, §5.1).

    Attributes:
        n_inputs: input dimension of every target.
        degree: degree of the random polynomials.
        hidden: hidden widths of the random MLPs.
        n_seeds: seeds per family in the Lipschitz-ratio plot.
        n_points: uniform points per seed used by ``estimate_lipschitz``.
        slice_seeds: seeds shown as 2-D slices.
        resolution: grid points per axis of a slice.
    """

    n_inputs: int = 8
    degree: int = 4
    hidden: tuple[int, ...] = (64, 64)
    n_seeds: int = 20
    n_points: int = 2000
    slice_seeds: tuple[int, ...] = (0, 1, 2)
    resolution: int = 161

    def families(self):
        """(name, seed -> target) for each family."""
        return [
            (f"RandomPolynomial(n={self.n_inputs}, degree={self.degree})",
             lambda s: RandomPolynomial(self.n_inputs, self.degree, seed=s)),
            (f"RandomHypercubeFunction(n={self.n_inputs})",
             lambda s: RandomHypercubeFunction(self.n_inputs, seed=s)),
            (f"RandomMLP(n={self.n_inputs}, hidden={self.hidden})",
             lambda s: RandomMLP(self.n_inputs, self.hidden, seed=s)),
        ]


def lipschitz_ratios(config: GalleryConfig, progress: bool = True) -> pd.DataFrame:
    """Tidy table, one row per (family, seed): empirical estimate, certified bound, ratio.

    The ratio is ``estimate_lipschitz(f, X).value / f.lipschitz_bound`` on ``n_points``
    uniform points of the cube plus, for n ≤ 10, the 2^n corners (where the hypercube
    function's gradient is largest, so its ratio reaches 1); it must never exceed 1.
    """
    cube = UniformCube(config.n_inputs)
    rows = []
    jobs = [(name, make, seed) for name, make in config.families() for seed in range(config.n_seeds)]
    for name, make, seed in tqdm(jobs, desc="Lipschitz ratios", disable=not progress):
        f = make(seed)
        X = cube.sample(config.n_points, seed=seed)
        if config.n_inputs <= 10:  # the corners, where the hypercube function is steepest
            X = np.vstack([X, RandomHypercubeFunction(config.n_inputs).corners()])
        estimate = estimate_lipschitz(f, X)
        rows.append({"family": name, "seed": seed, "empirical": estimate.value,
                     "gradient": estimate.gradient,
                     "difference_quotient": estimate.difference_quotient,
                     "certified": f.lipschitz_bound,
                     "ratio": estimate.value / f.lipschitz_bound})
    return pd.DataFrame(rows)


def plot_slices(config: GalleryConfig, path: pathlib.Path) -> None:
    """Heat maps of f(x_0, x_1, 0, …, 0) on [-1, 1]² for each family and slice seed."""
    families = config.families()
    grid = np.linspace(-1.0, 1.0, config.resolution)
    g0, g1 = np.meshgrid(grid, grid, indexing="xy")
    X = np.zeros((g0.size, config.n_inputs))
    X[:, 0], X[:, 1] = g0.ravel(), g1.ravel()
    fig, axes = plt.subplots(len(families), len(config.slice_seeds),
                             figsize=(3.4 * len(config.slice_seeds), 3.0 * len(families)),
                             squeeze=False, constrained_layout=True)
    for row, (name, make) in enumerate(families):
        for col, seed in enumerate(config.slice_seeds):
            f = make(seed)
            ax = axes[row, col]
            image = ax.imshow(f(X).reshape(g0.shape), origin="lower", extent=(-1, 1, -1, 1),
                              cmap="RdBu_r")
            fig.colorbar(image, ax=ax, shrink=0.8)
            ax.set_title(f"{name.split('(')[0]} seed {seed}\ncertified L = {f.lipschitz_bound:.3g}",
                         fontsize=8)
            ax.set_xlabel("$x_0$")
            ax.set_ylabel("$x_1$")
    fig.suptitle("2-D slices f(x0, x1, 0, …, 0)", fontsize=10)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_ratios(table: pd.DataFrame, path: pathlib.Path) -> None:
    """Strip plot of empirical / certified Lipschitz ratios per family (all must be ≤ 1)."""
    families = list(dict.fromkeys(table["family"]))
    fig, ax = plt.subplots(figsize=(7.5, 3.6), constrained_layout=True)
    rng = np.random.default_rng(0)
    for i, family in enumerate(families):
        ratios = table.loc[table["family"] == family, "ratio"].to_numpy()
        ax.scatter(i + rng.uniform(-0.15, 0.15, len(ratios)), ratios, s=14, alpha=0.8)
    ax.axhline(1.0, color="k", linestyle="--", linewidth=1, label="certified bound")
    ax.set_xticks(range(len(families)), [f.replace("(", "\n(") for f in families], fontsize=7)
    ax.set_ylabel("empirical / certified Lipschitz constant")
    ax.set_ylim(0, 1.1)
    ax.legend(loc="upper right", fontsize=8)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_target_gallery(out: pathlib.Path, config: GalleryConfig | None = None,
                         progress: bool = True) -> list[pathlib.Path]:
    """Write the gallery into ``out``: slices PNG, ratio PNG and CSV, and ``config.json``.

    Returns:
        The paths written.

    Raises:
        RuntimeError: if an empirical estimate exceeds its certified bound (a broken
            certificate must never go unnoticed in a plot).
    """
    config = config or GalleryConfig()
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "config.json", out / "target_slices.png", out / "lipschitz_ratios.csv",
             out / "lipschitz_ratios.png"]
    paths[0].write_text(json.dumps(asdict(config), indent=2))
    plot_slices(config, paths[1])
    table = lipschitz_ratios(config, progress=progress)
    table.to_csv(paths[2], index=False)
    plot_ratios(table, paths[3])
    worst = table["ratio"].max()
    if worst > 1.0 + 1e-9:
        raise RuntimeError(f"an empirical Lipschitz estimate exceeds its certificate: ratio {worst}")
    return paths


@click.command()
@click.option("--out", type=click.Path(file_okay=False, path_type=pathlib.Path),
              default=pathlib.Path("runs/targets"), show_default=True,
              help="Folder for the PNGs, CSV and config.json.")
@click.option("--n-seeds", type=click.IntRange(1), default=20, show_default=True,
              help="Seeds per family in the Lipschitz-ratio plot.")
@click.option("--n-inputs", type=click.IntRange(2, 16), default=8, show_default=True,
              help="Input dimension of every target.")
def targets_command(out: pathlib.Path, n_seeds: int, n_inputs: int) -> None:
    """Draw the target gallery: 2-D slices and empirical/certified Lipschitz ratios."""
    config = GalleryConfig(n_inputs=n_inputs, n_seeds=n_seeds)
    for path in write_target_gallery(out, config):
        click.echo(f"wrote {path}")
