"""Read a sweep's ``results.csv`` with pandas.

Every ``sparselab scale`` run (and ``experiments.runner.sweep.run_sweep``) writes one tidy table:
one row per model, configuration and seed, with the sizes (``width``, ``k``,
``activated_units``, ``params``), the errors (``eval_mse``, ``eval_nmse`` = MSE / Var(y) on
held-out data, ``train_nmse``) and the run's ``seed``. This example makes such a table with a
tiny sweep — a dense model and DSM at three widths, two seeds, on a degree-3 random polynomial
in 4 variables — and then does what one does with it: average over seeds, compare models at
matched activated units, and pivot into a table.

Run: python examples/read_results.py [FOLDER]   (a few seconds on one CPU core; without
FOLDER the sweep goes into a temporary folder). To read a real run instead:
``pd.read_csv("runs/quick/fig2/results.csv")``.
"""

import pathlib
import sys
import tempfile

import pandas as pd

from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec
from experiments.runner.sweep import run_sweep


def make_results(out: pathlib.Path) -> pathlib.Path:
    """Run the tiny sweep into ``out`` and return the path of its results.csv."""
    config = ExperimentConfig(
        name="read_results", preset="example", target=TargetSpec(n_inputs=4, degree=3),
        models=tuple(ModelSpec("dense", width=k) for k in (8, 16, 32))
        + tuple(ModelSpec("dsm", width=256, k=k) for k in (8, 16, 32)),
        seeds=(0, 1), n_train=2_000, n_eval=1_000, fit="exact")
    run_sweep([config], out, device="cpu", progress=False)
    return out / "results.csv"


def main() -> None:
    if len(sys.argv) > 1:
        read(make_results(pathlib.Path(sys.argv[1])))
    else:
        with tempfile.TemporaryDirectory() as folder:
            read(make_results(pathlib.Path(folder)))


def read(path: pathlib.Path) -> None:
    """Print what a results.csv says: per-size statistics over seeds, and a model pivot."""
    rows = pd.read_csv(path)
    print(f"{path.name}: {len(rows)} rows of {rows.shape[1]} columns")

    # mean and spread over seeds, per model and size
    by_size = (rows.groupby(["model", "activated_units"])["eval_nmse"]
                   .agg(["mean", "min", "max", "count"]))
    print(by_size.to_string(float_format="{:.4f}".format))

    # one column per model: who wins at matched activated units?
    table = rows.pivot_table(index="activated_units", columns="model", values="eval_nmse",
                             aggfunc="mean")
    winner = table.idxmin(axis=1)
    print(table.assign(lower_error=winner).to_string(float_format="{:.4f}".format))
    counts = {model: int(n) for model, n in winner.value_counts().items()}
    print(f"sizes won (lower mean eval nMSE): {counts}")


if __name__ == "__main__":
    main()
