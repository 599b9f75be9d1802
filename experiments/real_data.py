"""The three real-data experiments of issue 28, each a resumable function with presets.

* ``run_cifar``: Baykal et al. 2022, §5 "CIFAR-10", Fig. 5, Table 3: a CNN (3 convolutions,
  each followed by max-pooling) with a dense penultimate layer ("CNN + dense") against the
  same CNN with a data-dependent sparse Top-K layer there ("CNN + DSM", 50 % and 25 % of its
  units active), at equal activated units; Adam; test accuracy.
* ``run_continual``: Bricken et al. 2023, §5, Table 1, Fig. 3, App. E.1 / F.3: class-
  incremental Split data, every model of ``experiments.continual.MODELS``.
* ``run_comet_images``: COMET §5.2.1, Fig. 4: 4-layer MLPs at N neurons a layer and sparsity
  p_k; COMET against the standard model (N neurons, dense) and the smaller model (p_k N).

Each has the signature ``(preset, out, data_dir=None, seeds=None, device="auto",
progress=True, force=False) -> results DataFrame`` with presets "tiny" (tests: seconds),
"quick" (the UCI digits bundled with scikit-learn, on one CPU core in about a minute or two)
and "paper" (the papers' sizes on MNIST / CIFAR-10 files from ``data_dir``, for a GPU). Into
``out`` it writes ``results.csv`` (one row per model, size and seed; written atomically after
every row, and rows already there are skipped, so an interrupted run resumes),
``config.json``, a plot (PNG), ``claims.csv`` (``experiments.claims.CLAIM_COLUMNS``) and
``table.md`` (our numbers, the paper's beside them where the paper gives numbers, and each
claim's verdict with its reason when it is not *supported*).

Verdicts are ``experiments.claims.comparison_verdict``'s, paired across seeds: *supported*
when the claimed-better model is better at every compared size and the paired 95 % t
interval of the mean difference excludes 0 on its side; *not supported* when worse
everywhere with the interval on the other side; *mixed*; *inconclusive*. Differences are in
the measured unit (test error = 1 − accuracy, forgetting, dead fraction), not logarithms:
accuracies near 1 and dead fractions of 0 have no useful ratio.
"""

from __future__ import annotations

import functools
import json
import pathlib
import time
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from experiments.claims import CLAIM_COLUMNS, Claim, comparison_verdict, paired_difference
from experiments.datasets import DATASETS, as_float, find_dataset, load_dataset
from experiments.specs import check_seeds
from routing.validation import check_choice, check_int, check_real, check_seed

__all__ = ["PRESETS", "run_cifar", "run_continual", "run_comet_images", "EXPERIMENTS",
           "CifarConfig", "ContinualConfig", "CometImagesConfig", "paired_claim",
           "experiment_config", "output_files", "PAPER_TABLE3", "PAPER_BRICKEN"]

PRESETS = ("tiny", "quick", "paper")
KEY = ["experiment", "model_key", "seed", "settings"]

#: Baykal et al. 2022, Table 3: CIFAR-10 test accuracy (%) by activated units.
PAPER_TABLE3 = pd.DataFrame({"activated units": [256, 512], "CNN + dense": [69.79, 70.79],
                             "CNN + DSM 50% sparse": [70.74, 71.33],
                             "CNN + DSM 25% sparse": [69.8, 71.68]})

#: Bricken et al. 2023: final validation accuracy of the 1K-neuron models where the paper
#: gives it (Table 7 Split MNIST, pixels, no pretraining; Table 5 Split CIFAR-10 embeddings;
#: Table 2 ablations, CIFAR-10 embeddings, k = 10).
PAPER_BRICKEN = pd.DataFrame([
    ("SDMLP", 0.53, 0.63, 0.63), ("SDMLP (mask)", None, None, 0.38),
    ("Top-K", 0.22, 0.29, None), ("ReLU MLP", 0.21, None, None),
    ("EWC (ReLU MLP)", 0.61, 0.67, None), (("oracle (ReLU MLP, joint)"), 0.98, 0.93, None)],
    columns=["model", "Split MNIST (Table 7, k=10)", "Split CIFAR-10 (Table 5, k=10)",
             "ablations (Table 2)"])


# -- configs ---------------------------------------------------------------------------------

def _check_common(config) -> None:
    """The checks every real-data config shares (preset, dataset, seeds, budget); seeds
    become a tuple of ints."""
    check_choice(config.preset, "preset", PRESETS)
    check_choice(config.dataset, "dataset", DATASETS)
    object.__setattr__(config, "seeds", check_seeds(config.seeds))
    if not isinstance(config.budget, str):
        raise ValueError(f"budget must be a string, got {config.budget!r}")


def _check_sizes(values, name: str, low: int = 1) -> tuple:
    """``values`` as a non-empty tuple of integers >= ``low``, else ValueError naming it."""
    if not isinstance(values, (tuple, list)) or not values:
        raise ValueError(f"{name} must be a non-empty tuple of integers >= {low}, got "
                         f"{values!r}")
    return tuple(check_int(v, name, low) for v in values)


def _check_fractions(values, name: str) -> tuple:
    """``values`` as a non-empty tuple of reals in (0, 1], else ValueError naming it."""
    if not isinstance(values, (tuple, list)) or not values:
        raise ValueError(f"{name} must be a non-empty tuple of reals in (0, 1], got "
                         f"{values!r}")
    return tuple(check_real(v, name, 0.0, 1.0, low_open=True) for v in values)

@dataclass(frozen=True)
class CifarConfig:
    """Baykal et al. 2022 §5 CIFAR-10 sweep.

    Attributes:
        preset, dataset: names ("digits", "mnist" or "cifar10").
        channels: the three convolutions' channels (the paper does not give them).
        activated: activated units a of the penultimate layer; dense has width a, DSM width
            a / fraction with k = a.
        fractions: DSM's active fractions k / width (0.5 and 0.25: Table 3).
        epochs, batch_size, lr: Adam training (the paper: Adam, 50 epochs; the defaults are
            the quick preset's, whose 10 epochs were 20 until issue 27's time budget halved
            them, by cost alone).
        budget: what the preset's verdicts are for.
    """

    preset: str
    dataset: str
    channels: tuple = (16, 32, 32)
    activated: tuple = (8, 16, 32)
    fractions: tuple = (0.5, 0.25)
    epochs: int = 10
    batch_size: int = 64
    lr: float = 1e-3
    seeds: tuple = (0, 1, 2, 3)
    budget: str = ""

    def __post_init__(self):
        """Raises ValueError naming the field out of range (any field, as documented)."""
        _check_common(self)
        if len(_check_sizes(self.channels, "channels")) != 3:
            raise ValueError(f"channels must hold 3 integers >= 1, got {self.channels!r}")
        object.__setattr__(self, "channels", tuple(self.channels))
        object.__setattr__(self, "activated", _check_sizes(self.activated, "activated"))
        object.__setattr__(self, "fractions", _check_fractions(self.fractions, "fractions"))
        check_int(self.epochs, "epochs", 1)
        check_int(self.batch_size, "batch_size", 1)
        check_real(self.lr, "lr", 0.0, low_open=True)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ContinualConfig:
    """Bricken et al. 2023 §5 continual-learning run: the data set, the models of
    ``experiments.continual.MODELS`` and their ``ContinualSettings`` (as a dict).

    ``d_in`` (inputs a pixel vector has) and ``matched`` (label -> ``ContinualModel.match``'s
    record: the size chosen to match the ReLU MLP's trainable parameters, the counts and how)
    fix every model's size before training; ``parameter_matching`` says so in words."""

    preset: str
    dataset: str
    models: tuple
    continual: dict
    seeds: tuple = (0, 1, 2, 3)
    budget: str = ""
    d_in: int = 0
    matched: dict | None = None
    parameter_matching: str = ""

    def __post_init__(self):
        """Raises ValueError naming the field out of range."""
        _check_common(self)
        if not isinstance(self.models, (tuple, list)) or not all(
                isinstance(m, str) for m in self.models):
            raise ValueError(f"models must be a tuple of model labels, got {self.models!r}")
        if not isinstance(self.continual, dict):
            raise ValueError(f"continual must be a dict of ContinualSettings fields, got "
                             f"{self.continual!r}")
        check_int(self.d_in, "d_in", 0)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class CometImagesConfig:
    """COMET §5.2.1 Fig. 4 sweep: 4-layer MLPs of ``widths`` neurons a layer, COMET at each
    p_k of ``p_ks`` against the standard model and the smaller model. The defaults are the
    quick preset's; its 10 epochs were 20 until issue 27's time budget halved them, by cost
    alone."""

    preset: str
    dataset: str
    widths: tuple = (32, 128, 512)
    p_ks: tuple = (0.1, 0.5, 0.9)
    epochs: int = 10
    batch_size: int = 64
    optimizer: str = "adam"
    lr: float = 1e-3
    seeds: tuple = (0, 1, 2)
    budget: str = ""

    def __post_init__(self):
        """Raises ValueError naming the field out of range."""
        from experiments.image_models import OPTIMIZERS

        _check_common(self)
        object.__setattr__(self, "widths", _check_sizes(self.widths, "widths"))
        object.__setattr__(self, "p_ks", _check_fractions(self.p_ks, "p_ks"))
        check_int(self.epochs, "epochs", 1)
        check_int(self.batch_size, "batch_size", 1)
        check_choice(self.optimizer, "optimizer", OPTIMIZERS)
        check_real(self.lr, "lr", 0.0, low_open=True)

    def to_dict(self) -> dict:
        return asdict(self)


def experiment_config(name: str, preset: str, dataset: str):
    """The config of experiment ``name`` ("cifar", "continual", "comet_images") at
    ``preset`` on ``dataset``.

    Raises:
        ValueError: unknown name, preset or dataset; "paper" on the digits (the papers' sizes need
            their data sets).
    """
    check_choice(name, "experiment name", EXPERIMENTS)
    check_choice(preset, "preset", PRESETS)
    check_choice(dataset, "dataset", DATASETS)
    if preset == "paper" and dataset == "digits":
        raise ValueError(f"preset 'paper' of {name!r} follows the papers on "
                         f"{'MNIST or CIFAR-10' if name == 'continual' else 'CIFAR-10'}: give "
                         f"--data-dir with their files (the digits are for tiny and quick)")
    if name == "cifar":
        return _cifar_config(preset, dataset)
    if name == "continual":
        return _continual_config(preset, dataset)
    return _comet_config(preset, dataset)


def _cifar_config(preset, dataset):
    if preset == "tiny":
        return CifarConfig(preset, dataset, channels=(4, 8, 8), activated=(4, 8), epochs=2,
                           seeds=(0, 1), budget="tiny: a smoke test, no verdict is meant")
    if preset == "quick":
        return CifarConfig(preset, dataset, budget=(
            "quick: 8×8 digits, 1,347 training images, CNN channels 16/32/32, activated "
            "units 8–32, 10 Adam epochs, 4 seeds — a verdict for this budget, not for "
            "CIFAR-10 at 50 epochs"))
    return CifarConfig(preset, dataset, channels=(32, 64, 64), activated=(128, 256, 512),
                       epochs=50, batch_size=128, seeds=(0, 1, 2), budget=(
                           "paper: Adam, 50 epochs, no augmentation (§5); channels, batch "
                           "size and lr are ours (the paper gives none)"))


def _continual_config(preset, dataset, d_in=None):
    """The continual config at ``preset`` on ``dataset``, every model's size matched to the
    ReLU MLP's trainable parameters for ``d_in`` inputs (None: the data set's own, 64 / 784 /
    3,072 pixels) and 10 classes (``_with_matched``)."""
    from experiments.continual import MODELS, ContinualSettings

    models = tuple(MODELS)
    order = "random" if dataset == "cifar10" else "naive"
    check_choice(dataset, "dataset", tuple(_CONTINUAL_D_IN))
    d_in = _CONTINUAL_D_IN[dataset] if d_in is None else d_in
    if preset == "tiny":
        # N / k = 16: SMEAR's and the MoEs' steps of one expert are fine enough for ±5 %
        s = ContinualSettings(n_neurons=64, k=4, n_experts=16, epochs_per_task=2,
                              fisher_samples=20, evals_per_task=1, class_order=order)
        return _with_matched(ContinualConfig(
            preset, dataset, models, s.to_dict(), seeds=(0, 1),
            budget="tiny: a smoke test, no verdict is meant"), d_in)
    if preset == "quick":
        s = ContinualSettings(class_order=order, **QUICK_CONTINUAL)
        return _with_matched(ContinualConfig(preset, dataset, models, s.to_dict(), budget=(
            f"quick: 8×8 digits, 5 tasks of 2 classes, ~270 training images a task, "
            f"the ReLU MLP's N = {s.n_neurons} hidden units (every model matched to its "
            f"parameters), k = {s.k}, {s.epochs_per_task} epochs a task (Bricken et al.: 500 "
            f"a task on Split MNIST, 2,000 on Split CIFAR-10), 4 seeds — a verdict for this "
            f"budget")), d_in)
    epochs = 2000 if dataset == "cifar10" else 500
    s = ContinualSettings(n_neurons=1000, k=10, n_experts=500, epochs_per_task=epochs,
                          batch_size=128, class_order=order, **PAPER_CONTINUAL_RATES)
    return _with_matched(ContinualConfig(
        preset, dataset, models, s.to_dict(), seeds=(0, 1, 2), budget=(
            f"paper: {epochs} epochs a task (App. F.3 / E.1), the ReLU MLP's N = 1,000 (§5; "
            f"every model matched to its parameters), k = 10; no pretraining; learning rates "
            f"and λ as calibrated on the digits at 40 epochs a task")), d_in)


#: Pixels of one image of each data set (the continual harness flattens them).
_CONTINUAL_D_IN = {"digits": 8 * 8, "mnist": 28 * 28, "cifar10": 32 * 32 * 3}


def _with_matched(config: ContinualConfig, d_in: int) -> ContinualConfig:
    """``config`` with every model's size matched to the ReLU MLP's trainable parameters on
    ``d_in`` inputs (``ContinualModel.match``, from the settings alone: before any training)."""
    from experiments.continual import MODELS, REFERENCE, ContinualSettings

    s = ContinualSettings(**config.continual)
    n_classes = s.n_tasks * s.classes_per_task
    matched = {label: MODELS[label].match(d_in, n_classes, s) for label in config.models}
    ref = MODELS[REFERENCE].count_params(d_in, n_classes, s)
    missed = [f"{label} ({m['relative_difference']:+.1%}: {m['rule'].split('not matched: ')[-1]})"
              for label, m in matched.items() if not m["matched"]]
    note = (f"every model's trainable parameters matched to within "
            f"±{s.param_tolerance:.0%} of the ReLU MLP's ({s.n_neurons} hidden units, "
            f"{ref:,} parameters on {d_in} inputs and {n_classes} classes), its size chosen "
            f"from the preset before training (SDMLP's neurons, the MoEs' and SMEAR's expert "
            f"count, PKM's n_keys; k active units kept); Bricken et al. compare at equal "
            f"neuron counts, 'approximately the same number of parameters' (App. F.3)")
    if missed:
        note += ("; not matched (the closest achievable, and why): " + "; ".join(missed))
    return replace(config, d_in=int(d_in), matched=matched, parameter_matching=note)


#: The quick continual preset's settings. sdm_lr, sgd_lr and ewc_lambda are the rule of
#: ``experiments.continual_calibration`` at its 20 epochs a task, on the calibration seed 100,
#: which no verdict uses (VERDICTS.md: calibration apart from validation). Until issue 27's
#: time budget halved the epochs (by cost alone) the preset trained 40 epochs a task with the
#: rule's values at 40 (``PAPER_CONTINUAL_RATES``).
QUICK_CONTINUAL = dict(n_neurons=256, k=8, n_experts=32, epochs_per_task=20, batch_size=32,
                       sgd_lr=0.3, sdm_lr=1.0, ewc_lambda=3e4, fisher_samples=200,
                       evals_per_task=4)
#: The paper preset's rates: the calibration rule's at 40 epochs a task on the digits (the
#: longest training it was run at; the paper trains 500 or 2,000 epochs a task).
PAPER_CONTINUAL_RATES = dict(sgd_lr=0.1, sdm_lr=0.3, ewc_lambda=3e4)


def _comet_config(preset, dataset):
    if preset == "tiny":
        return CometImagesConfig(preset, dataset, widths=(8, 32), p_ks=(0.5,), epochs=2,
                                 seeds=(0, 1), budget="tiny: a smoke test, no verdict is meant")
    if preset == "quick":
        return CometImagesConfig(preset, dataset, budget=(
            "quick: 8×8 digits, N = 32–512 neurons a layer, 10 Adam epochs (lr 1e-3), 3 seeds "
            "— the paper trains SGD lr 1e-4 for 100 epochs on CIFAR-10 (App. A.1); a verdict "
            "for this budget"))
    return CometImagesConfig(preset, dataset, widths=(100, 500, 1000, 3000), epochs=100,
                             optimizer="sgd", lr=1e-4, seeds=(0, 1, 2), budget=(
                                 "paper: App. A.1: SGD lr 1e-4, 100 epochs, 3 seeds, N in "
                                 "100–3000, p_k in 0.1/0.5/0.9; batch size 64 is ours"))


# -- shared machinery ------------------------------------------------------------------------

def _data(preset: str, data_dir, dataset: str | None = None):
    """(dataset name, X_train, y_train, X_test, y_test) uint8 images and int64 labels."""
    if data_dir is None:
        name = dataset or "digits"
    else:
        name = dataset or find_dataset(data_dir)
    X_train, y_train = load_dataset(name, "train", data_dir)
    X_test, y_test = load_dataset(name, "test", data_dir)
    return name, X_train, y_train, X_test, y_test


def _flat(X_train, y_train, X_test, y_test) -> tuple:
    """The continual harness's input (``run_continual_model``'s ``data``): the images as
    float pixels flattened to (N, d), beside their labels."""
    return (as_float(X_train).reshape(len(X_train), -1), y_train,
            as_float(X_test).reshape(len(X_test), -1), y_test)


def _fingerprint(config) -> str:
    from experiments.sweep import settings_fingerprint

    data = {k: v for k, v in config.to_dict().items() if k not in ("budget",)}
    return settings_fingerprint(data)  # drops preset, models, seeds (NOT_SETTINGS)


def _holding_out(run):
    """Run an experiment with its ``out`` folder held (``experiments.output_folder.writer``):
    a second process writing into it is refused at once, naming the holder."""
    @functools.wraps(run)
    def wrapped(preset, out, *args, **kwargs):
        from experiments.output_folder import writer
        from routing.validation import check_bool

        for flag in ("force", "progress", "rows_only"):
            if flag in kwargs:
                kwargs[flag] = check_bool(kwargs[flag], flag)
        with writer(out):
            return run(preset, out, *args, **kwargs)
    return wrapped


def settings_of(name: str, preset: str, dataset: str = "digits") -> str:
    """The settings fingerprint of experiment ``name`` at ``preset`` on ``dataset`` (what a
    ``results.csv`` row of it records; ``sparselab reproduce`` keeps it in its step marker).

    Raises:
        ValueError: as ``experiment_config``.
    """
    return _fingerprint(experiment_config(name, preset, dataset))


def _write_atomically(frame: pd.DataFrame, path: pathlib.Path) -> None:
    """``frame`` as CSV at ``path``, atomically, mode 0666 minus the umask; a full disk or a
    refused permission is a one-line error (``experiments.output_folder.write_frame``)."""
    from experiments.output_folder import write_frame

    write_frame(frame, path)


def _prepare(out, name: str, settings: str, force: bool) -> pd.DataFrame:
    """Create ``out``; return the rows of ``results.csv`` (none with ``force``), refusing rows
    of this experiment made under other settings."""
    out = pathlib.Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / ".write-test").write_text("")
        (out / ".write-test").unlink()
    except OSError as error:
        raise ValueError(f"--out {out} is not writable: {error}") from None
    path = out / "results.csv"
    if force:
        path.unlink(missing_ok=True)
    if not path.exists():
        return pd.DataFrame()
    table = pd.read_csv(path, dtype={"settings": str})
    other = table[(table["experiment"] == name) & (table["settings"] != settings)]
    if len(other):
        raise ValueError(f"{path} holds {len(other)} rows of {name!r} made under other settings "
                         f"(fingerprint {other['settings'].iloc[0]}, this run's {settings}); "
                         f"write to a new --out folder, or pass --force to start over")
    return table


def _run_rows(out: pathlib.Path, name: str, settings: str, jobs: list, table: pd.DataFrame,
              progress: bool, data=None, engine: tuple | None = None) -> pd.DataFrame:
    """Run every job (model_key, seed, fields, run) not yet in ``table``: the row's numbers
    are ``run(data)`` after ``torch.manual_seed(seed)``; each new row is written to
    ``results.csv`` atomically. With ``engine`` = (workers, scheduler, device) the jobs run on
    Dask workers (``experiments.engine.Engine.calls``, ``data`` sent to each worker once) and
    the file's rows are put back in job order at the end, so that it is the serial run's.
    Returns this run's rows."""
    path = pathlib.Path(out) / "results.csv"
    rows = table.to_dict("records")
    done = {tuple(map(str, (r["experiment"], r["model_key"], r["seed"], r["settings"])))
            for r in rows}
    todo = [job for job in jobs if (name, str(job[0]), str(job[1]), settings) not in done]
    bar = tqdm(total=len(jobs), initial=len(jobs) - len(todo), desc=name,
               disable=not progress)

    def add(job, numbers):
        model_key, seed, fields, _ = job
        rows.append({"experiment": name, "model_key": model_key, "seed": seed,
                     "settings": settings, **fields, **numbers})
        _write_atomically(pd.DataFrame(rows), path)
        bar.update()

    with bar:
        if engine is None:
            from experiments.threads import single_threaded

            with single_threaded():  # as on a worker: the same numbers, a neighbour costs little
                for job in todo:
                    add(job, _seeded_row(data, job[3], job[1]))
        else:
            from experiments.engine import open_engine

            if todo:  # no row left (the claims and plots of a parallel run): no cluster
                with open_engine(*engine) as client:
                    for i, numbers in client.calls(_seeded_row, [(job[3], job[1])
                                                                      for job in todo],
                                                   shared=data, name=f"{name}-row"):
                        add(todo[i], numbers)
            order = {(str(k), str(s)): i for i, (k, s, *_) in enumerate(jobs)}
            rows.sort(key=lambda r: order.get((str(r["model_key"]), str(r["seed"])),
                                              len(order)))
            if todo:
                _write_atomically(pd.DataFrame(rows), path)
    frame = pd.DataFrame(rows)
    wanted = {(str(k), str(s)) for k, s, *_ in jobs}
    keep = [(str(k), str(s)) in wanted and e == name and str(f) == settings
            for e, k, s, f in zip(frame["experiment"], frame["model_key"], frame["seed"],
                                  frame["settings"].astype(str))]
    return frame[keep].reset_index(drop=True)


def _seeded_row(data, run, seed: int) -> dict:
    """One row's numbers: ``run(data)`` after ``torch.manual_seed(seed)`` (here, or as a Dask
    task of ``Engine.calls``, which passes the shared data first)."""
    torch.manual_seed(seed)
    return run(data)


def _engine(workers, scheduler, device) -> tuple | None:
    """(workers, scheduler, device) for ``_run_rows``, None without workers or scheduler.

    Raises:
        ValueError: as ``experiments.engine.check_engine_options``.
    """
    if workers is None and scheduler is None:
        return None
    from experiments.engine import check_engine_options

    check_engine_options(workers, scheduler, device)
    return workers, scheduler, device


def _write_config(out: pathlib.Path, name: str, config, settings: str, device, data_dir,
                  n_train: int, n_test: int) -> None:
    from experiments.scale_cli import environment

    (pathlib.Path(out) / "config.json").write_text(json.dumps(
        {"experiment": name, "preset": config.preset, "dataset": config.dataset,
         "data_dir": None if data_dir is None else str(data_dir), "n_train": n_train,
         "n_test": n_test, "config": config.to_dict(), "settings": settings,
         "budget": config.budget, **environment(device)}, indent=2, default=str))


def _seeds(config, seeds):
    if seeds is None:
        return config
    seeds = tuple(check_seed(s) for s in seeds)
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    return replace(config, seeds=seeds)


def _tensor(X: np.ndarray, device, flat: bool) -> torch.Tensor:
    x = as_float(X)
    return torch.from_numpy(x.reshape(len(x), -1) if flat else x).to(device)


def output_files(out) -> list[pathlib.Path]:
    """The files an experiment wrote into ``out`` (results.csv, config.json, claims.csv,
    table.md and the plots), for ``sparselab reproduce``'s step list."""
    out = pathlib.Path(out)
    names = ["results.csv", "config.json", "claims.csv", "table.md"]
    return [out / n for n in names if (out / n).exists()] + sorted(out.glob("*.png"))


# -- verdicts --------------------------------------------------------------------------------

def paired_claim(name: str, text: str, frame: pd.DataFrame, better: str, worse: str, x: str,
                 value: str, source: str, unit: str, against=None, budget: str = "",
                 describe: str = "") -> Claim:
    """The claim "``better`` has a lower ``value`` than ``worse``" (value: an error-like
    column — test error, forgetting, dead fraction) at every x the two share, decided by
    ``experiments.claims.comparison_verdict`` on the paired differences across seeds
    (``paired_difference``: per seed, mean over x of value(better) − value(worse)).

    Arguments:
        name: experiment; text: the claim with its source; frame: rows with model_label, x,
            seed and ``value``; better, worse: model labels; x: the size column.
        unit: how differences read ("test error", "dead fraction", …).
        against: x ↦ the worse model's x (default: the same x).
        budget: the preset's budget, appended to the diagnosis.
        describe: text put first in the diagnosis.

    Returns:
        a ``Claim`` (effect: mean paired difference, < 0 where ``better`` is better; *not
        tested* with effect nan where the two share no x, e.g. a model the run lacks).

    Raises:
        TypeError: ``better`` or ``worse`` is not a string.
        ValueError: ``x`` or ``value`` is not a column of ``frame``.
    """
    from experiments.claims import _check_column, _check_label

    _check_label(better, "better")
    _check_label(worse, "worse")
    _check_column(frame, x, "x")
    _check_column(frame, value, "value")

    def table(label):
        rows = frame[frame["model_label"] == label].dropna(subset=[value])
        if rows.empty:
            return pd.DataFrame(dtype=float)
        return rows.pivot_table(index=x, columns="seed", values=value, aggfunc="mean")

    a, b = table(better), table(worse)
    pairs = [(v, v if against is None else against(v)) for v in a.index]
    pairs = [(v, r) for v, r in pairs if not b.empty and r in b.index]
    common = dict(source=source, sizes=budget)
    if not pairs:
        return Claim(name, text, "not tested", "no comparable configurations", **common)
    mean_a, mean_b = a.mean(axis=1), b.mean(axis=1)
    wins = sum(bool(mean_a[v] < mean_b[r]) for v, r in pairs)
    stats = paired_difference(a, b, pairs)
    verdict = comparison_verdict(wins, len(pairs), stats)
    where = (lambda v: "") if len(pairs) == 1 and len(a.index) == 1 else (
        lambda v: f"{x} = {_fmt(v)}: ")
    evidence = (f"{wins}/{len(pairs)} lower {unit} (mean over seeds, {better} vs {worse}) — "
                + "; ".join(f"{where(v)}{mean_a[v]:.3f} vs {mean_b[r]:.3f}" for v, r in pairs))
    significance = _significance(stats, unit)
    diagnosis = ""
    if verdict != "supported":
        diagnosis = "; ".join(p for p in (describe, _diagnosis(frame, better, worse, x, stats,
                                                               value, unit), budget) if p)
    return Claim(name, text, verdict, evidence, source=source, effect=stats["mean"],
                 effect_low=stats["low"], effect_high=stats["high"],
                 significance=significance, diagnosis=diagnosis, sizes=budget)


def _fmt(v) -> str:
    return f"{v:g}" if isinstance(v, (int, float, np.integer, np.floating)) else str(v)


def _significance(stats: dict, unit: str) -> str:
    if not np.isfinite(stats["mean"]):
        return "no seed common to both models: no paired comparison"
    text = f"paired over {stats['n_seeds']} seeds: mean Δ {unit} = {stats['mean']:+.4f}"
    if np.isfinite(stats["low"]):
        excludes = stats["high"] < 0 or stats["low"] > 0
        per_x = stats["per_x"]
        text += (f" [{stats['low']:+.4f}, {stats['high']:+.4f}] (t, 95%); the interval "
                 f"{'excludes' if excludes else 'contains'} 0; per size, "
                 f"{int(per_x['significant'].sum())}/{len(per_x)} intervals exclude 0")
    else:
        text += "; one seed: no interval"
    return text


def _diagnosis(frame, better, worse, x, stats, value, unit) -> str:
    """Where the claimed-better model loses, and at its worst size whether it also trails on
    its training data (capacity or optimisation at this budget) or only on the test data
    (it fits the training data as well or better: overfitting)."""
    per_x = stats["per_x"].dropna(subset=["mean"])
    parts = []
    lost = per_x[per_x["mean"] >= 0]
    if len(lost):
        parts.append(f"{better} is not lower at {x} = " + ", ".join(
            f"{_fmt(r.x)} (Δ {r.mean:+.4f}" + (", significant" if r.significant else "")
            + ")" for r in lost.itertuples()))
    if np.isfinite(stats["low"]) and stats["low"] <= 0 <= stats["high"]:
        parts.append(f"the seeds do not separate the models: the paired interval "
                     f"[{stats['low']:+.4f}, {stats['high']:+.4f}] contains 0")
    if len(lost) and "train_accuracy" in frame and value == "test_error":
        worst = lost.loc[lost["mean"].idxmax()]
        mine = frame[(frame["model_label"] == better) & (frame[x] == worst["x"])]
        theirs = frame[(frame["model_label"] == worse) & (frame[x] == worst["ref"])]
        a, b = mine["train_accuracy"].mean(), theirs["train_accuracy"].mean()
        cause = ("it fits its training data as well or better, so it generalises worse"
                 if a >= b else "it fits its training data worse too: capacity or "
                 "optimisation at this training budget")
        parts.append(f"at {x} = {_fmt(worst['x'])} train accuracy {a:.3f} vs {b:.3f}: {cause}")
    return "; ".join(parts)


def _write_claims(out: pathlib.Path, claims: list[Claim]) -> None:
    pd.DataFrame([asdict(c) for c in claims], columns=CLAIM_COLUMNS).to_csv(
        out / "claims.csv", index=False)


def _claims_markdown(claims: list[Claim]) -> list[str]:
    from experiments.report import markdown_cell as cell

    lines = ["| claim | verdict | evidence | significance | reason (when not supported) |",
             "| --- | --- | --- | --- | --- |"]
    for c in claims:
        reason = "" if c.verdict == "supported" else cell(c.diagnosis)
        lines.append(f"| {cell(c.claim)} | **{c.verdict}** | {cell(c.evidence)} | "
                     f"{cell(c.significance)} | {reason} |")
    return lines


def _mean_sd(frame: pd.DataFrame, index, columns, value) -> pd.DataFrame:
    """(index × columns) table of "mean ± sd" (sd over seeds; the mean alone for one seed)."""
    g = frame.groupby([index, columns], sort=False)[value]
    mean, sd = g.mean().unstack(columns), g.std(ddof=1).unstack(columns)
    text = mean.copy().astype(object)
    for r in mean.index:
        for c in mean.columns:
            m, s = mean.loc[r, c], sd.loc[r, c]
            text.loc[r, c] = ("" if not np.isfinite(m) else f"{m:.3f} ± {s:.3f}"
                              if np.isfinite(s) else f"{m:.3f}")
    return text.sort_index()


# -- Baykal et al. §5 CIFAR-10 ---------------------------------------------------------------

@_holding_out
def run_cifar(preset: str, out, data_dir=None, seeds=None, device: str = "auto",
              progress: bool = True, force: bool = False, workers: int | None = None,
              scheduler: str | None = None, rows_only: bool = False) -> pd.DataFrame:
    """Baykal et al. 2022, §5 "CIFAR-10", Fig. 5 and Table 3: CNN + dense against CNN + DSM at
    equal activated units, test accuracy over seeds.

    For each activated-unit count a of the preset: "CNN + dense" (penultimate width a, all
    active) and "CNN + DSM 50% sparse" / "25% sparse" (width 2a / 4a, Top-K keeping a),
    the same CNN otherwise (``experiments.image_models.ConvNet``), trained with Adam on the
    cross-entropy; inputs scaled to [0, 1] and standardised per channel with the training
    set's mean and deviation.

    Arguments:
        preset: "tiny", "quick" (digits) or "paper" (CIFAR-10 from ``data_dir``).
        out: results folder (created).
        data_dir: folder with MNIST IDX or CIFAR-10 binary files; None: the digits.
        seeds: seeds to run (None: the preset's).
        device: "auto", "cpu" or "cuda".
        progress: show a progress bar.
        force: start the folder's results over.
        workers, scheduler: compute the rows on a local Dask cluster of ``workers``
            processes or on the cluster at ``scheduler`` (``experiments.engine``; the data
            are sent to each worker once); both None: here, one after another.
        rows_only: compute (or resume) the rows alone, without claims, plots and table
            (``sparselab reproduce --workers`` writes those in its main thread afterwards).

    Returns:
        the results rows of this run (DataFrame: model_label, width, k, activated_units,
        params, seed, train_accuracy, test_accuracy, test_error, wall_s, …).

    Raises:
        ValueError: bad preset, device, seeds, workers or scheduler; "paper" without
            ``data_dir``; rows of other settings in ``out``; and the data loaders' errors
            (FileNotFoundError too).
    """
    from experiments.image_models import ConvNet, TrainSettings, accuracy, fit_classifier
    from experiments.sweep import resolve_device, run_device

    check_choice(preset, "preset", PRESETS)
    engine = _engine(workers, scheduler, device)
    torch_device = run_device(device, scheduler)
    dataset, X_train, y_train, X_test, y_test = _data(preset, data_dir)
    config = _seeds(experiment_config("cifar", preset, dataset), seeds)
    settings = _fingerprint(config)
    out = pathlib.Path(out)
    table = _prepare(out, "cifar", settings, force)
    _write_config(out, "cifar", config, settings, torch_device, data_dir, len(y_train),
                  len(y_test))
    Xtr, Xte = _tensor(X_train, "cpu", False), _tensor(X_test, "cpu", False)
    mean = Xtr.mean(dim=(0, 1, 2), keepdim=True)
    std = Xtr.std(dim=(0, 1, 2), keepdim=True).clamp_min(1e-6)
    data = ((Xtr - mean) / std, torch.from_numpy(y_train), (Xte - mean) / std,
            torch.from_numpy(y_test))
    train = TrainSettings(epochs=config.epochs, batch_size=config.batch_size, lr=config.lr)
    shape = X_train.shape[1:]

    def job(label, width, k, seed):
        def run(data):  # here or on a worker: the device is the process's own
            torch_device = resolve_device(device)
            Xtr, ytr, Xte, yte = (t.to(torch_device) for t in data)
            start = time.perf_counter()
            model = ConvNet(shape, config.channels, width, k, 10, seed)
            model = model.to(torch_device)
            fit_classifier(model, Xtr, ytr, train, seed=seed)
            acc = accuracy(model, Xte, yte)
            return {"train_accuracy": accuracy(model, Xtr, ytr), "test_accuracy": acc,
                    "test_error": 1.0 - acc,
                    "params": sum(p.numel() for p in model.parameters()),
                    "head_flops": model.head.flops_per_example(),
                    "device": str(torch_device), "wall_s": round(time.perf_counter() - start, 3)}
        return (f"cnn;width={width};k={k}", seed,
                {"dataset": dataset, "model_label": label, "width": width, "k": k,
                 "activated_units": k}, run)

    jobs = []
    for seed in config.seeds:
        for a in config.activated:
            jobs.append(job("CNN + dense", a, a, seed))
            for fraction in config.fractions:
                jobs.append(job(_dsm_label(fraction), int(round(a / fraction)), a, seed))
    frame = _run_rows(out, "cifar", settings, jobs, table, progress, data, engine)
    if rows_only:
        return frame
    claims = cifar_claims(frame, config)
    _write_claims(out, claims)
    _plot_cifar(frame, out / "cifar_fig5.png", config)
    _write_table(out, "Baykal et al. 2022 §5 CIFAR-10 (Fig. 5, Table 3): CNN + dense vs "
                 "CNN + DSM", config, frame, claims, _cifar_tables(frame))
    return frame


def _dsm_label(fraction: float) -> str:
    return f"CNN + DSM {fraction:.0%} sparse"


def cifar_claims(frame: pd.DataFrame, config: CifarConfig) -> list[Claim]:
    """Table 3's and Fig. 5's claim for each DSM fraction: CNN + DSM beats CNN + dense at
    equal activated units (lower test error at every a, paired across seeds), with the paper's
    own Table 3 judged by the same count."""
    claims = []
    paper = PAPER_TABLE3.set_index("activated units")
    for fraction in config.fractions:
        label = _dsm_label(fraction)
        claim = paired_claim(
            "cifar", f"{label} beats CNN + dense at equal activated units (\"DSM outperforms "
            f"dense models at the same number of activated units\", Baykal et al. 2022, §5 "
            f"CIFAR-10, Fig. 5, Table 3) [{config.dataset}, Adam {config.epochs} epochs]",
            frame, label, "CNN + dense", "activated_units", "test_error",
            "Baykal et al. 2022, §5 CIFAR-10, Fig. 5, Table 3", "test error",
            budget=config.budget)
        if label in paper:
            wins = int((paper[label] > paper["CNN + dense"]).sum())
            claim = replace(claim, evidence=claim.evidence + (
                f". Paper's Table 3 (accuracy %): " + "; ".join(
                    f"a = {a}: {paper.loc[a, label]} vs {paper.loc[a, 'CNN + dense']}"
                    for a in paper.index)
                + f" — higher at {wins}/{len(paper)} (one run per cell, no interval)"))
        claims.append(claim)
    return claims


def _cifar_tables(frame: pd.DataFrame) -> list[str]:
    ours = _mean_sd(frame, "activated_units", "model_label", "test_accuracy")
    return ["Test accuracy (mean ± sd over seeds) by activated units:", "",
            ours.to_markdown(), "",
            "Baykal et al. 2022, Table 3 (CIFAR-10 test accuracy, %, one run per cell):", "",
            PAPER_TABLE3.to_markdown(index=False), ""]


def _plot_cifar(frame: pd.DataFrame, path: pathlib.Path, config) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.6))
    for label, rows in frame.groupby("model_label", sort=False):
        g = rows.groupby("activated_units")["test_accuracy"]
        ax.errorbar(g.mean().index, g.mean().values, yerr=g.sem().fillna(0).values,
                    marker="o", capsize=3, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("activated units of the penultimate layer")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"CNN + dense vs CNN + DSM ({config.dataset}, Fig. 5 style)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _write_table(out: pathlib.Path, title: str, config, frame, claims, tables) -> None:
    lines = [f"# {title}", "", f"Data: {config.dataset}; preset {config.preset}; seeds "
             f"{', '.join(map(str, config.seeds))}; {len(frame)} rows.", "",
             f"Budget: {config.budget}.", "", *tables, "Claims:", "",
             *_claims_markdown(claims), ""]
    (out / "table.md").write_text("\n".join(lines))


# -- Bricken et al. 2023 §5: continual learning ----------------------------------------------

@_holding_out
def run_continual(preset: str, out, data_dir=None, seeds=None, device: str = "auto",
                  progress: bool = True, force: bool = False, workers: int | None = None,
                  scheduler: str | None = None, rows_only: bool = False) -> pd.DataFrame:
    """Bricken et al. 2023, §5 (Table 1, Fig. 3), App. E.1 (pixels), F.3 (Split MNIST):
    class-incremental continual learning, every model of ``experiments.continual.MODELS`` in
    the same harness (``run_continual_model``), the accuracy matrix, final and average
    accuracy, forgetting and dead neurons per task, a Fig. 3-style plot and verdicts on the
    paper's three claims (SDMLP forgets less and ends higher; subtraction beats masking;
    fewer dead neurons). Every model's size is matched to the ReLU MLP's trainable parameters
    before training (``ContinualConfig.matched``, written to config.json and table.md).

    Arguments and errors: as ``run_cifar``; with ``data_dir`` the data are Split MNIST (IDX
    files there) or Split CIFAR-10 pixels (binary files there).

    Returns:
        the rows of this run: one per model and seed (model_label, final_accuracy,
        average_accuracy, forgetting, dead_fraction, acc_matrix / dead_per_task / curve as
        JSON, params, relu_mlp_params, params_rel_diff, params_matched, size, sizing, …).
    """
    from experiments.continual import ContinualSettings, run_continual_model
    from experiments.sweep import resolve_device, run_device

    check_choice(preset, "preset", PRESETS)
    engine = _engine(workers, scheduler, device)
    torch_device = run_device(device, scheduler)
    dataset, X_train, y_train, X_test, y_test = _data(preset, data_dir)
    config = _seeds(experiment_config("continual", preset, dataset), seeds)
    d_in = int(np.prod(X_train.shape[1:]))
    if config.d_in != d_in:  # files of another image size than the data set's own
        config = _with_matched(config, d_in)
    settings = _fingerprint(config)
    out = pathlib.Path(out)
    table = _prepare(out, "continual", settings, force)
    _write_config(out, "continual", config, settings, torch_device, data_dir, len(y_train),
                  len(y_test))
    continual = ContinualSettings(**config.continual)
    data = _flat(X_train, y_train, X_test, y_test)

    def job(label, seed):
        def run(data):  # here or on a worker: the device is the process's own
            torch_device = resolve_device(device)
            result = run_continual_model(label, data, continual, seed, torch_device,
                                         matched=config.matched[label])
            return {**result, "error": 1.0 - result["final_accuracy"],
                    "device": str(torch_device)}
        return (label, seed, {"dataset": dataset, "model_label": label}, run)

    jobs = [job(label, seed) for seed in config.seeds for label in config.models]
    frame = _run_rows(out, "continual", settings, jobs, table, progress, data, engine)
    if rows_only:
        return frame
    claims = continual_claims(frame, config)
    _write_claims(out, claims)
    _plot_continual(frame, out / "continual_fig3.png", config)
    _write_table(out, "Bricken et al. 2023 §5: class-incremental continual learning (Table 1, "
                 "Fig. 3; App. E.1, F.3)", config, frame, claims,
                 _continual_tables(frame, config))
    return frame


def _per_task(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """Long rows (model_label, seed, task, value) from a JSON-list column."""
    rows = []
    for r in frame.itertuples(index=False):
        for t, v in enumerate(json.loads(getattr(r, column)), start=1):
            rows.append({"model_label": r.model_label, "seed": r.seed, "task": t, column: v})
    return pd.DataFrame(rows)


def continual_claims(frame: pd.DataFrame, config: ContinualConfig) -> list[Claim]:
    """Bricken et al.'s three claims on the rows, each paired across seeds:

    1. SDMLP ends with a higher accuracy than the ReLU MLP, EWC and Top-K (§5, Table 1/7),
       and forgets less than the ReLU MLP (Fig. 20);
    2. subtraction beats masking in continual learning (Table 2, App. B.3, Fig. 10a);
    3. subtraction leaves fewer dead neurons than masking across tasks (Fig. 10c), and SDMLP
       fewer than Top-K (App. H: Top-K had 55 % dead neurons).
    """
    budget = config.budget
    frame = frame.assign(final="final")
    tag = f" [{config.dataset}, {config.continual['epochs_per_task']} epochs a task]"
    paper = PAPER_BRICKEN.set_index("model")
    mnist = "Split MNIST (Table 7, k=10)"

    def said(*labels):
        values = [f"{label} {paper.loc[label, mnist]:.2f}" for label in labels
                  if label in paper.index and pd.notna(paper.loc[label, mnist])]
        return f". Paper (Split MNIST, Table 7, 1K neurons): {', '.join(values)}" if values \
            else ""

    claims = []
    for other, source in (("ReLU MLP", "§5, Table 7"), ("EWC (ReLU MLP)", "§5, Tables 5 and 7"),
                          ("Top-K", "§5, Tables 5 and 7")):
        c = paired_claim("continual", f"SDMLP ends with a higher accuracy than {other} "
                         f"(class-incremental; Bricken et al. 2023, {source}){tag}", frame,
                         "SDMLP", other, "final", "error", f"Bricken et al. 2023, {source}",
                         "test error after the last task", budget=budget)
        claims.append(replace(c, evidence=c.evidence + said("SDMLP", other)))
    claims.append(paired_claim(
        "continual", f"SDMLP forgets less than the ReLU MLP (Bricken et al. 2023, §5, Fig. 20: "
        f"'SDMLP gradually forgets … ReLU catastrophically forgets'){tag}", frame, "SDMLP",
        "ReLU MLP", "final", "forgetting", "Bricken et al. 2023, §5, App. F.1 Fig. 20",
        "forgetting", budget=budget))
    c = paired_claim("continual", f"subtraction beats masking in continual learning (SDMLP vs "
                     f"SDMLP (mask); Bricken et al. 2023, Table 2, App. B.3, Fig. 10a){tag}",
                     frame, "SDMLP", "SDMLP (mask)", "final", "error",
                     "Bricken et al. 2023, Table 2, App. B.3, Fig. 10a",
                     "test error after the last task", budget=budget)
    claims.append(replace(c, evidence=c.evidence + ". Paper (Table 2, CIFAR-10 embeddings, "
                          "k = 10): Linear Subtract 0.63 vs Linear Mask 0.38"))
    dead = _per_task(frame, "dead_per_task")
    for other, source in (("SDMLP (mask)", "App. B.3, Fig. 10c"), ("Top-K", "App. H")):
        claims.append(paired_claim(
            "continual", f"SDMLP has fewer dead neurons than {other} across tasks (Bricken et "
            f"al. 2023, {source}){tag}", dead, "SDMLP", other, "task", "dead_per_task",
            f"Bricken et al. 2023, {source}", "dead fraction", budget=budget))
    return claims


def _continual_tables(frame: pd.DataFrame, config: ContinualConfig) -> list[str]:
    return _matched_table(config) + _continual_summary(frame)


def _matched_table(config: ContinualConfig) -> list[str]:
    """The "matched parameters" note and, per model, its size, trainable parameters, the
    ReLU MLP's, the relative difference and how the size was chosen."""
    rows = [{"model": label, "size": ", ".join(f"{k} = {v}" for k, v in m["size"].items()),
             "params": f"{m['params']:,}", "ReLU MLP params": f"{m['reference_params']:,}",
             "Δ params": f"{m['relative_difference']:+.2%}",
             "matched": "yes" if m["matched"] else "**no**", "how the size was chosen": m["rule"]}
            for label, m in (config.matched or {}).items()]
    if not rows:
        return []
    return [f"Matched parameters: {config.parameter_matching}.", "",
            pd.DataFrame(rows).to_markdown(index=False), ""]


def _continual_summary(frame: pd.DataFrame) -> list[str]:
    summary = frame.groupby("model_label", sort=False).agg(
        final_accuracy=("final_accuracy", "mean"), sd=("final_accuracy", "std"),
        average_accuracy=("average_accuracy", "mean"), forgetting=("forgetting", "mean"),
        dead_after_last=("dead_fraction", "mean"), params=("params", "first"),
        activated=("activated_units", "first"), units=("n_units", "first"),
        wall_s=("wall_s", "mean"))
    for column in ("params", "activated", "units"):
        summary[column] = summary[column].astype(int)
    return ["Means over seeds (final accuracy: whole test set after the last task; forgetting: "
            "Chaudhry et al. 2018; dead: share of hidden units — for MoE layers, experts or "
            "value slots — active for no test input after the last task):", "",
            summary.to_markdown(floatfmt=("", ".3f", ".3f", ".3f", ".3f", ".3f", ".0f",
                                          ".0f", ".0f", ".2f")), "",
            "Bricken et al. 2023, final validation accuracy, 1K neurons (the paper's numbers; "
            "blank where it gives none):", "",
            PAPER_BRICKEN.to_markdown(index=False, missingval=""), ""]


def _plot_continual(frame: pd.DataFrame, path: pathlib.Path, config) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
    colours = plt.get_cmap("tab20").colors
    for i, (label, rows) in enumerate(frame.groupby("model_label", sort=False)):
        style = dict(color="black", ls="--") if "oracle" in label else dict(
            color=colours[2 * i % 20])
        curves = [np.array(json.loads(c), dtype=float) for c in rows["curve"]]
        curves = [c for c in curves if c.size]
        if curves:
            n = min(len(c) for c in curves)
            stack = np.stack([c[:n] for c in curves])  # (seeds, n, 2)
            mean = stack[:, :, 1].mean(0)
            sem = stack[:, :, 1].std(0, ddof=1) / np.sqrt(len(stack)) if len(stack) > 1 else 0
            ax.plot(stack[0, :, 0], mean, label=label, lw=1.4, **style)
            ax.fill_between(stack[0, :, 0], mean - sem, mean + sem, alpha=0.2,
                            color=style["color"])
        dead = np.array([json.loads(d) for d in rows["dead_per_task"]], dtype=float)
        bx.plot(np.arange(1, dead.shape[1] + 1), dead.mean(0), marker="o", label=label,
                **style)
    ax.set_xlabel("tasks trained")
    ax.set_ylabel("test accuracy, all classes")
    ax.set_title(f"Split {config.dataset}, class-incremental (Fig. 3 style)", fontsize=9)
    bx.set_xlabel("after task")
    bx.set_ylabel("dead fraction of hidden units")
    bx.set_title("dead neurons per task (Fig. 10c style)", fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- COMET §5.2.1 Fig. 4 ---------------------------------------------------------------------

@_holding_out
def run_comet_images(preset: str, out, data_dir=None, seeds=None, device: str = "auto",
                     progress: bool = True, force: bool = False, workers: int | None = None,
                     scheduler: str | None = None, rows_only: bool = False) -> pd.DataFrame:
    """COMET §5.2.1, Fig. 4 (App. A.1): 4-layer MLPs (3 hidden ReLU layers of N neurons) on
    flattened images scaled to [0, 1]: COMET at each p_k against the standard model (N, dense)
    and the smaller model (round(p_k N), dense), test accuracy over seeds.

    Arguments and errors: as ``run_cifar`` ("paper" needs CIFAR-10 in ``data_dir``).

    Returns:
        the rows of this run (model_label "COMET", "standard model" or "smaller model"; width
        N, p_k (1 for the standard model), activated_units per layer, params,
        train_accuracy, test_accuracy, test_error, …).
    """
    from experiments.image_models import (TrainSettings, accuracy, fit_classifier,
                                          four_layer_mlp)
    from experiments.sweep import resolve_device, run_device

    check_choice(preset, "preset", PRESETS)
    engine = _engine(workers, scheduler, device)
    torch_device = run_device(device, scheduler)
    dataset, X_train, y_train, X_test, y_test = _data(preset, data_dir)
    config = _seeds(experiment_config("comet_images", preset, dataset), seeds)
    settings = _fingerprint(config)
    out = pathlib.Path(out)
    table = _prepare(out, "comet_images", settings, force)
    _write_config(out, "comet_images", config, settings, torch_device, data_dir,
                  len(y_train), len(y_test))
    data = (_tensor(X_train, "cpu", True), torch.from_numpy(y_train),
            _tensor(X_test, "cpu", True), torch.from_numpy(y_test))
    train = TrainSettings(epochs=config.epochs, batch_size=config.batch_size,
                          optimizer=config.optimizer, lr=config.lr)

    def job(label, width, p_k, smaller, seed):
        def run(data):  # here or on a worker: the device is the process's own
            torch_device = resolve_device(device)
            Xtr, ytr, Xte, yte = (t.to(torch_device) for t in data)
            start = time.perf_counter()
            model = four_layer_mlp(Xtr.shape[1], width, p_k, 10, seed, smaller=smaller,
                                   optimizer=config.optimizer, lr=config.lr).to(torch_device)
            fit_classifier(model, Xtr, ytr, train, seed=seed)
            acc = accuracy(model, Xte, yte)
            return {"train_accuracy": accuracy(model, Xtr, ytr), "test_accuracy": acc,
                    "test_error": 1.0 - acc, "activated_units": model.ks[0],
                    "layer_width": model.config.widths[0],
                    "params": sum(p.numel() for p in model.parameters()),
                    "device": str(torch_device), "wall_s": round(time.perf_counter() - start, 3)}
        key = f"{label};N={width};p_k={p_k:g}"
        return (key, seed, {"dataset": dataset, "model_label": label, "width": width,
                            "p_k": p_k}, run)

    jobs = []
    for seed in config.seeds:
        for width in config.widths:
            jobs.append(job("standard model", width, 1.0, False, seed))
            for p_k in config.p_ks:
                jobs.append(job("COMET", width, p_k, False, seed))
                jobs.append(job("smaller model", width, p_k, True, seed))
    frame = _run_rows(out, "comet_images", settings, jobs, table, progress, data, engine)
    if rows_only:
        return frame
    claims = comet_claims(frame, config)
    _write_claims(out, claims)
    _plot_comet(frame, out / "comet_fig4.png", config)
    _write_table(out, "COMET §5.2.1, Fig. 4: 4-layer MLPs by neurons and sparsity", config,
                 frame, claims, _comet_tables(frame))
    return frame


def comet_claims(frame: pd.DataFrame, config: CometImagesConfig) -> list[Claim]:
    """COMET §5.2.1's claims, paired across seeds:

    * per p_k: COMET beats the smaller model (round(p_k N) neurons, equal activated units) at
      every N;
    * "as network capacity grows, the COMET model emerges as the top performer": COMET's
      advantage over the standard model (accuracy difference) is larger at the largest N than
      at the smallest, at every p_k;
    * at the largest N, COMET beats the standard model at every p_k.
    """
    budget = config.budget
    tag = f" [{config.dataset}, {config.optimizer} {config.epochs} epochs]"
    source = "COMET §5.2.1, Fig. 4 (App. A.1)"
    none = ". The paper gives Fig. 4 as curves; our copy has no numbers to set beside ours"
    claims = []
    for p_k in config.p_ks:
        rows = frame[(frame["model_label"] != "standard model") & (frame["p_k"] == p_k)]
        c = paired_claim("comet_images", f"COMET beats the smaller model (p_k·N neurons, equal "
                         f"activated units) at p_k = {p_k:g}, every N ({source}){tag}", rows,
                         "COMET", "smaller model", "width", "test_error", source, "test error",
                         budget=budget)
        claims.append(replace(c, evidence=c.evidence + none))
    # COMET's advantage over the standard model, per (p_k, N, seed): negative = COMET better
    comet = frame[frame["model_label"] == "COMET"].set_index(["width", "seed", "p_k"])
    standard = frame[frame["model_label"] == "standard model"].set_index(["width", "seed"])
    gap = comet["test_error"] - standard["test_error"].reindex(
        comet.index.droplevel("p_k")).to_numpy()
    gap = gap.rename("gap").reset_index()
    widths = sorted(gap["width"].unique())
    if len(widths) >= 2:
        low, high = widths[0], widths[-1]
        ends = pd.concat([gap[gap["width"] == low].assign(model_label=f"N = {low:g}"),
                          gap[gap["width"] == high].assign(model_label=f"N = {high:g}")])
        c = paired_claim("comet_images", f"COMET's advantage over the standard model grows with "
                         f"capacity: (error COMET − error standard) lower at N = {high:g} than "
                         f"at N = {low:g}, at every p_k (\"as network capacity grows, the COMET "
                         f"model emerges as the top performer\", {source}){tag}", ends,
                         f"N = {high:g}", f"N = {low:g}", "p_k", "gap", source,
                         "error gap (COMET − standard)", budget=budget)
        claims.append(replace(c, evidence=c.evidence + none))
    top = frame[frame["width"] == max(config.widths)]
    top = pd.concat([top[top["model_label"] == "COMET"],
                     *[top[top["model_label"] == "standard model"].assign(p_k=p)
                       for p in config.p_ks]])
    c = paired_claim("comet_images", f"at the largest N = {max(config.widths):g}, COMET beats "
                     f"the standard model at every p_k ({source}){tag}", top, "COMET",
                     "standard model", "p_k", "test_error", source, "test error",
                     budget=budget)
    claims.append(replace(c, evidence=c.evidence + none))
    return claims


def _comet_tables(frame: pd.DataFrame) -> list[str]:
    labelled = frame.assign(model=[f"{m}" + ("" if m == "standard model" else f" p_k={p:g}")
                                   for m, p in zip(frame["model_label"], frame["p_k"])])
    return ["Test accuracy (mean ± sd over seeds) by neurons per layer N:", "",
            _mean_sd(labelled, "width", "model", "test_accuracy").T.to_markdown(), ""]


def _plot_comet(frame: pd.DataFrame, path: pathlib.Path, config) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(config.p_ks), figsize=(3.6 * len(config.p_ks), 3.4),
                             squeeze=False)
    standard = frame[frame["model_label"] == "standard model"].groupby("width")["test_accuracy"]
    for ax, p_k in zip(axes[0], config.p_ks):
        ax.errorbar(standard.mean().index, standard.mean().values,
                    yerr=standard.sem().fillna(0).values, marker="s", capsize=3,
                    label="standard model")
        for label in ("COMET", "smaller model"):
            g = frame[(frame["model_label"] == label) & (frame["p_k"] == p_k)].groupby(
                "width")["test_accuracy"]
            ax.errorbar(g.mean().index, g.mean().values, yerr=g.sem().fillna(0).values,
                        marker="o", capsize=3, label=label)
        ax.set_xscale("log")
        ax.set_xlabel("neurons per layer N")
        ax.set_title(f"p_k = {p_k:g}", fontsize=9)
    axes[0, 0].set_ylabel(f"test accuracy ({config.dataset})")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("4-layer MLPs, COMET vs standard vs smaller (Fig. 4 style)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


#: name -> the experiment's function (what ``sparselab scale --experiment`` would call).
EXPERIMENTS = {"cifar": run_cifar, "continual": run_continual,
               "comet_images": run_comet_images}
