"""The target gallery: 2-D slices of each target family and the ratio of empirical to
certified Lipschitz constants over many seeds (``sparselab targets``, ``experiments.cli.targets``)."""

from __future__ import annotations

import json
import pathlib
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy, pandas, matplotlib and lipschitz (torch) load when drawing
    import pandas as pd

#: Seeds per family in the Lipschitz-ratio plot, per preset (``sparselab targets``,
#: ``sparselab reproduce``).
PRESET_SEEDS = {"tiny": 2, "quick": 10, "paper": 50}


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

    def __post_init__(self):
        """Raises ValueError naming the field out of range."""
        from routing.validation import check_int, check_seed

        check_int(self.n_inputs, "n_inputs", 2)
        check_int(self.degree, "degree", 0)
        if not isinstance(self.hidden, (tuple, list)) or not self.hidden:
            raise ValueError(f"hidden must be a non-empty tuple of widths, got {self.hidden!r}")
        object.__setattr__(self, "hidden", tuple(check_int(h, "hidden", 1) for h in self.hidden))
        check_int(self.n_seeds, "n_seeds", 1)
        check_int(self.n_points, "n_points", 2)
        if not isinstance(self.slice_seeds, (tuple, list)):
            raise ValueError(f"slice_seeds must be a tuple of seeds, got {self.slice_seeds!r}")
        object.__setattr__(self, "slice_seeds",
                           tuple(check_seed(s, "slice_seeds") for s in self.slice_seeds))
        check_int(self.resolution, "resolution", 2)

    @classmethod
    def preset(cls, name: str, **changes) -> "GalleryConfig":
        """The gallery of a preset (``PRESET_SEEDS``), with ``changes`` to its fields.

        Raises:
            ValueError: an unknown preset name.
        """
        if name not in PRESET_SEEDS:
            raise ValueError(f"preset must be one of {tuple(PRESET_SEEDS)}, got {name!r}")
        return cls(**{"n_seeds": PRESET_SEEDS[name], **changes})

    def families(self):
        """(name, seed -> target) for each family."""
        from lipschitz import RandomHypercubeFunction, RandomMLP, RandomPolynomial

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

    Raises:
        ValueError: ``progress`` not a bool.
    """
    import numpy as np
    import pandas as pd
    from tqdm.auto import tqdm

    from lipschitz import RandomHypercubeFunction, UniformCube, estimate_lipschitz

    from routing.validation import check_bool

    progress = check_bool(progress, "progress")  # "False" must not mean True
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
    import numpy as np

    plt = _pyplot()
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
    import numpy as np

    plt = _pyplot()
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


def _pyplot():
    """matplotlib.pyplot on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_target_gallery(out: pathlib.Path, config: GalleryConfig | None = None,
                         progress: bool = True) -> list[pathlib.Path]:
    """Write the gallery into ``out``: slices PNG, ratio PNG and CSV, and ``config.json``.

    Returns:
        The paths written.

    Raises:
        RuntimeError: if an empirical estimate exceeds its certified bound (a broken
            certificate must never go unnoticed in a plot).
        ValueError: ``out`` cannot be created (``OutputError``), ``progress`` not a bool.
    """
    from experiments.runner.output_folder import make_folder
    from routing.validation import check_bool

    config = config or GalleryConfig()
    progress = check_bool(progress, "progress")
    out = make_folder(out, "out")
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
