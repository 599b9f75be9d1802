"""``sparselab scale``: run one scaling experiment and write its results folder.

    sparselab scale --experiment fig2 --preset quick --out runs/quick/fig2
    sparselab scale --experiment fig2 --preset quick --print-config > my.toml   # then edit
    sparselab scale --config my.toml --seeds 0,1,2,3,4

writes ``results.csv`` (tidy, one row per model, configuration and seed), ``config.json``
(the configs, their settings fingerprints, seeds, package versions, device, git revision),
plots as PNG and SVG, ``fits.csv`` (every power- and offset-law fit), ``table.md`` and
``claims.csv``. Re-running skips the runs already in ``results.csv``; a folder whose rows were
made under other settings is refused (``--force`` starts it over).
"""

from __future__ import annotations

import importlib.metadata
import json
import pathlib
import platform
import subprocess

import click

from experiments.cli_options import (DATA_DIR_HELP, DATA_HELP, DATA_NAMES, PRESET_HELP,
                                     REAL_DATA_EXPERIMENTS, SCALE_EXPERIMENTS, confirm_long_run,
                                     preset_option, yes_option)
from experiments.engine import engine_options

# The experiments' modules (torch, numba, scipy) load when the command runs, not for --help.


def environment(device) -> dict:
    """Package versions, device, Python and the git revision (None outside a checkout).

    Arguments:
        device: the device the run used: a ``torch.device`` or a name torch parses ("cpu",
            "cuda", "cuda:1"); or "auto" for rows computed on an existing cluster, whose
            workers each resolve it (recorded as "auto (each worker's)").

    Raises:
        ValueError: ``device`` is no device torch knows, nor "auto".
    """
    import torch

    if device == "auto":  # --scheduler: chosen on each worker, which the driver cannot see
        device = "auto (each worker's)"
    else:
        try:
            device = torch.device(device)
        except (RuntimeError, TypeError):
            raise ValueError(f"device must be a torch.device, a device name such as 'cpu' or "
                             f"'cuda:0', or 'auto', got {device!r}") from None
    versions = {}
    for package in ("sparselab", "numpy", "scipy", "numba", "torch", "pandas"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:  # pragma: no cover
            versions[package] = None
    try:
        revision = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                  cwd=pathlib.Path(__file__).parent, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):  # pragma: no cover
        revision = ""
    return {"versions": versions, "device": str(device), "python": platform.python_version(),
            "git_revision": revision or None}


def run_experiment(name: str, preset: str, out: pathlib.Path, device: str = "auto",
                   progress: bool = True, force: bool = False, configs: list | None = None,
                   claims: str | None = None, workers: int | None = None,
                   scheduler: str | None = None) -> tuple[list[pathlib.Path], list]:
    """Run (or resume) experiment ``name`` at ``preset`` into ``out``; return files and claims.

    ``config.json`` is written once the folder has been checked and before the first row, so
    that it describes the rows of ``results.csv`` even when the sweep is interrupted.

    Arguments:
        name, preset: the experiment (``experiments.presets.EXPERIMENTS``) and its preset.
        out: the results folder, created if needed.
        device: "auto", "cpu" or "cuda".
        progress: show a progress bar.
        force: delete ``out/results.csv`` first and run every row anew (as
            ``sparselab reproduce --force`` does for its steps).
        configs: the sweeps to run instead of the preset's (a config file's, or the preset's
            with ``--seeds``/``--n-train``/``--n-eval``); ``name`` and ``preset`` then only
            label them.
        claims: whose claims to judge (``experiments.report.write_experiment_outputs``);
            None: ``name``'s.
        workers, scheduler: compute the rows on a local Dask cluster of ``workers``
            single-threaded processes, or on the cluster at ``scheduler``
            (``experiments.engine``); both None: in this process.

    The folder is held (``experiments.output_folder.writer``) from the check of its rows to
    the last plot: a second process writing into it is refused at once.

    Raises:
        ValueError: unknown experiment/preset, bad device, unwritable ``out``, ``out`` being
            written by another process, or rows in ``out/results.csv`` made under other
            settings or of another experiment (without ``force``).
    """
    from experiments import output_folder, presets, sweep
    from experiments.rerun import write_or_reuse
    from routing.validation import check_bool

    progress, force = check_bool(progress, "progress"), check_bool(force, "force")

    configs = list(configs) if configs is not None else presets.experiment_configs(name, preset)
    torch_device = sweep.run_device(device, scheduler)
    out = pathlib.Path(out)
    with output_folder.writer(out):
        sweep.prepare_out(configs, out, force=force)
        config_path = out / "config.json"
        output_folder.write_text(config_path, json.dumps(
            {"experiment": name, "preset": preset, "claims": claims or name,
             "configs": [c.to_dict() for c in configs],
             "settings": [sweep.settings_fingerprint(c) for c in configs],
             **environment(torch_device)}, indent=2, default=str))
        engine = {} if workers is None and scheduler is None else dict(workers=workers,
                                                                         scheduler=scheduler)
        frame = sweep.run_sweep(configs, out, device=device, progress=progress, **engine)
        # fits, plots and claims are redone only when the rows, configs or code changed
        paths, claims, _ = write_or_reuse(name, configs, frame, out, claims=claims)
    return [out / "results.csv", config_path, *paths], claims


def _seeds_option(ctx, param, value):
    from experiments.config_file import parse_seeds

    if value is None:
        return None
    try:
        return parse_seeds(value)
    except ValueError as error:
        raise click.BadParameter(str(error).replace("--seeds ", "")) from None


@click.command(short_help="Run a scaling experiment (a preset or a TOML file) and plot it.")
@click.option("--experiment", "name", default=None,
              type=click.Choice(SCALE_EXPERIMENTS + REAL_DATA_EXPERIMENTS),
              help="Which experiment: Baykal et al. 2022 §5 on targets (fig2-4, table1-2), the "
                   "routers, subspace; on images: cifar (Baykal §5), continual (Bricken et al. "
                   "2023 §5), comet_images (COMET Fig. 4).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=pathlib.Path),
              default=None,
              help="Run the experiment of a TOML file instead (fields as config.json; start "
                   "from --print-config).")
@click.option("--module", "modules", multiple=True,
              type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="A .py file registering model kinds of one's own (repeatable; "
                   "examples/own_router.py).")
@preset_option(help=PRESET_HELP + " With --config: the file's sizes, this only labels them.")
@click.option("--seeds", callback=_seeds_option, default=None, metavar="0,1,2",
              help="Seeds to run, overriding the preset's or the file's.")
@click.option("--n-train", type=click.IntRange(min=1), default=None,
              help="Training rows per seed, overriding the preset's or the file's.")
@click.option("--n-eval", type=click.IntRange(min=1), default=None,
              help="Evaluation rows per seed, overriding the preset's or the file's.")
@click.option("--data", "data", default=None, type=click.Choice(DATA_NAMES), help=DATA_HELP)
@click.option("--data-dir", default=None,
              type=click.Path(exists=True, file_okay=False, path_type=pathlib.Path),
              help=DATA_DIR_HELP)
@click.option("--calibration", default=None,
              type=click.Path(exists=True, dir_okay=False, path_type=pathlib.Path),
              help="continual: a JSON or TOML file of learning rates and λs (sdm_lr, sgd_lr, "
                   "ewc_lambda, sdm_ewc_lambda) replacing the preset's calibrated ones; "
                   "`python -m experiments.continual_calibration --out FILE` writes one.")
@click.option("--print-config", is_flag=True,
              help="Print the experiment as TOML (to edit and pass to --config) and exit.")
@click.option("--out", type=click.Path(file_okay=False, path_type=pathlib.Path), default=None,
              help="Results folder [default: runs/<preset>/<experiment>, where "
                   "`sparselab reproduce` puts it].")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True)
@click.option("--force", is_flag=True,
              help="Start the folder's results over (delete its results.csv) instead of "
                   "resuming.")
@yes_option
@engine_options
def scale_command(name: str | None, config_file: pathlib.Path | None,
                  modules: tuple[pathlib.Path, ...], preset: str,
                  seeds: tuple[int, ...] | None, n_train: int | None, n_eval: int | None,
                  data: str | None, data_dir: pathlib.Path | None,
                  calibration: pathlib.Path | None, print_config: bool,
                  out: pathlib.Path | None, device: str, force: bool, yes: bool,
                  workers: int | None, scheduler: str | None) -> None:
    """Run a scaling experiment (Figures 2-4, Tables 1-2, subspace, routers) and plot it.

    Either a preset (--experiment fig2 --preset quick) or a file of one's own
    (--config my.toml); --seeds, --n-train and --n-eval override either, and --module
    my_router.py registers model kinds of one's own first. At --preset paper the run's time
    estimate is printed first, and a run estimated over an hour starts only with --yes.
    """
    if (name is None) == (config_file is None):
        raise click.UsageError("give exactly one of --experiment NAME and --config FILE.toml")
    if name in REAL_DATA_EXPERIMENTS:
        if calibration is not None and name != "continual":
            raise click.UsageError("--calibration is an option of the experiment 'continual'")
        # the image runs have no estimator; a paper run without its data folder is refused
        # for that below (naming --data-dir) before anyone is asked for --yes
        if preset == "paper" and not print_config and (data_dir is not None or data is not None):
            click.echo(f"no time estimate for the image experiment {name!r} at the paper "
                       f"preset (hours on the full data sets)")
            confirm_long_run(None, yes)
        _run_real_data(name, preset, out, data_dir, seeds, device, force, workers, scheduler,
                       refused={"--n-train": n_train, "--n-eval": n_eval,
                                "--print-config": print_config or None,
                                "--module": modules or None}, data=data,
                       calibration=calibration)
        return
    for option, value in (("--data", data), ("--data-dir", data_dir),
                          ("--calibration", calibration)):
        if value is not None:
            raise click.UsageError(f"{option} is an option of the image experiments "
                                   f"{', '.join(REAL_DATA_EXPERIMENTS)}")
    from experiments.config_file import read_config_file, with_overrides, write_toml
    from experiments.model_kinds import load_kind_module
    from experiments.presets import experiment_configs

    try:
        for module in modules:
            load_kind_module(module)
        if config_file is not None:
            experiment = read_config_file(config_file)
            name, preset, claims = experiment.experiment, experiment.preset, experiment.claims
            configs = list(experiment.configs)
        else:
            configs, claims = experiment_configs(name, preset), None
        configs = with_overrides(configs, seeds=seeds, n_train=n_train, n_eval=n_eval)
        if print_config:
            click.echo(write_toml(name, preset, configs, claims=claims or name), nl=False)
            return
        # one folder per preset: a tiny run never lands in the folder of a quick one
        out = out or pathlib.Path("runs") / preset / name
        click.echo(f"sparselab scale: experiment {name}, preset {preset}, output folder {out}",
                   err=True)
        if preset == "paper":
            confirm_long_run(_paper_estimate(name, configs, out, force, device, workers,
                                             scheduler), yes)
        paths, claims = run_experiment(name, preset, out, device=device, force=force,
                                       configs=configs, claims=claims, workers=workers,
                                       scheduler=scheduler)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    for path in paths:
        click.echo(f"wrote {path}")
    for claim in claims:
        click.echo(f"[{claim.verdict}] {claim.claim}")


def _paper_estimate(name, configs, out, force, device, workers, scheduler) -> float | None:
    """Print the estimated time of a paper-sized sweep (``experiments.estimate
    .estimate_sweeps``, calibrated in this process) and return its wall time on the run's
    workers (s); rows already in ``out/results.csv`` (kept unless ``force``) are left out.
    None, with a line saying why, when no estimate can be made here (e.g. ``--device cuda``
    on a machine without a GPU)."""
    from experiments import estimate, sweep
    from experiments.specs import fit_of

    todo = configs
    if not force and (out / "results.csv").exists():
        done = sweep.load_results(out / "results.csv")
        # a row's key as ``run_sweep`` writes it
        have = set(map(tuple, done[sweep.ROW_KEY].astype(str).to_numpy())) if len(done) \
            else set()
        todo = []
        for config in configs:
            settings = sweep.settings_fingerprint(config)
            left = tuple(m for m in config.models if any(
                tuple(map(str, (config.name, config.target.label(), m.key(), fit_of(m, config),
                                s, settings))) not in have for s in config.seeds))
            if left:
                todo.append(config.with_(models=left))
    try:
        result = estimate.estimate_sweeps({name: todo}, device=device,
                                          workers=(workers or 1) if scheduler is None else None)
    except ValueError as error:
        click.echo(f"no estimate of the run's time on this machine: {error}")
        return None
    click.echo(result.text())
    return result.wall_seconds


def _run_real_data(name, preset, out, data_dir, seeds, device, force, workers, scheduler,
                   refused, data=None, calibration=None) -> None:
    """``sparselab scale --experiment cifar|continual|comet_images`` (``experiments.real_data``;
    ``--workers``/``--scheduler`` train the rows on Dask workers, the data sent to each once).
    """
    given = [option for option, value in refused.items() if value is not None]
    if given:
        raise click.UsageError(f"{given[0]} is not an option of the image experiment {name!r}")
    import pandas as pd

    from experiments import real_data

    out = out or pathlib.Path("runs") / preset / name
    options = {} if calibration is None else {"calibration": calibration}
    try:
        real_data.EXPERIMENTS[name](preset, out, data_dir=data_dir, seeds=seeds, device=device,
                                    force=force, workers=workers, scheduler=scheduler,
                                    data=data, **options)
    except (ValueError, FileNotFoundError) as error:
        raise click.ClickException(str(error)) from None
    for path in real_data.output_files(out):
        click.echo(f"wrote {path}")
    for claim in pd.read_csv(out / "claims.csv").itertuples():
        # tiny is a smoke test: its rule ran (claims.csv keeps the verdict), none is meant
        shown = "smoke test, no verdict meant" if preset == "tiny" else claim.verdict
        click.echo(f"[{shown}] {claim.claim}")
