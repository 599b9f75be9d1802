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

import pathlib

import click

from experiments.cli.options import (
    DATA_DIR_HELP,
    DATA_HELP,
    DATA_NAMES,
    PRESET_HELP,
    REAL_DATA_EXPERIMENTS,
    SCALE_EXPERIMENTS,
    confirm_long_run,
    engine_options,
    preset_option,
    yes_option,
)
from experiments.pipeline.scale import run_experiment

# The experiments' modules (torch, numba, scipy) load when the command runs, not for --help.


def _seeds_option(ctx, param, value):
    from experiments.pipeline.config_file import parse_seeds

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
                   "`python -m experiments.papers.real_data.calibration --out FILE` writes one.")
@click.option("--print-config", is_flag=True,
              help="Print the experiment as TOML (to edit and pass to --config) and exit; "
                   "an image experiment's with the identity of the data it reads.")
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
        # continual: a module's routers join its models (experiments.kinds.continual_harness)
        _refuse(name, {"--n-train": n_train, "--n-eval": n_eval,
                       "--module": None if name == "continual" else modules or None})
        _load_modules(modules)
        if print_config:
            _print_real_data(name, preset, data, data_dir, seeds, calibration)
            return
        # the image runs have no estimator; a paper run without its data folder is refused
        # for that below (naming --data-dir) before anyone is asked for --yes
        if preset == "paper" and (data_dir is not None or data is not None):
            _confirm_paper(name, yes)
        _run_real_data(name, preset, out, data_dir, seeds, device, force, workers, scheduler,
                       data=data, calibration=calibration)
        return
    sweep_only = (("--data", data), ("--data-dir", data_dir), ("--calibration", calibration))
    if config_file is None:
        _refuse_sweep_only(sweep_only)
    from experiments.kinds.registry import load_kind_module
    from experiments.papers.catalogue import experiment_configs
    from experiments.pipeline.config_file import (
        read_config_file,
        with_overrides,
        write_toml,
    )
    from experiments.pipeline.real_data_file import RealDataFile

    try:
        for module in modules:
            load_kind_module(module)
        if config_file is not None:
            experiment = read_config_file(config_file)
            if isinstance(experiment, RealDataFile):
                _real_data_file(experiment, dict(sweep_only, **{
                    "--n-train": n_train, "--n-eval": n_eval, "--module": None if
                    experiment.experiment == "continual" else modules or None}),
                    print_config, seeds, out, device, force, yes, workers, scheduler)
                return
            _refuse_sweep_only(sweep_only)
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
    """Print the estimated time of a paper-sized sweep (``experiments.runner.time_estimate
    .estimate_sweeps``, calibrated in this process) and return its wall time on the run's
    workers (s); rows already in ``out/results.csv`` (kept unless ``force``) are left out.
    None, with a line saying why, when no estimate can be made here (e.g. ``--device cuda``
    on a machine without a GPU)."""
    from experiments.runner import rows, sweep, time_estimate
    from experiments.runner.specs import fit_of

    todo = configs
    if not force and (out / "results.csv").exists():
        done = sweep.load_results(out / "results.csv")
        # a row's key as ``run_sweep`` writes it
        have = set(map(tuple, done[rows.ROW_KEY].astype(str).to_numpy())) if len(done) \
            else set()
        todo = []
        for config in configs:
            settings = rows.settings_fingerprint(config)
            left = tuple(m for m in config.models if any(
                tuple(map(str, (config.name, config.target.label(), m.key(), fit_of(m, config),
                                s, settings))) not in have for s in config.seeds))
            if left:
                todo.append(config.with_(models=left))
    try:
        result = time_estimate.estimate_sweeps({name: todo}, device=device,
                                          workers=(workers or 1) if scheduler is None else None)
    except ValueError as error:
        click.echo(f"no estimate of the run's time on this machine: {error}")
        return None
    click.echo(result.text())
    return result.wall_seconds


def _load_modules(modules) -> None:
    """Register the model kinds of each ``--module`` file (``load_kind_module``)."""
    from experiments.kinds.registry import load_kind_module

    try:
        for module in modules:
            load_kind_module(module)
    except ValueError as error:
        raise click.ClickException(str(error)) from None


def _refuse(name, refused: dict) -> None:
    """A usage error naming the first option of ``refused`` given (not None)."""
    given = [option for option, value in refused.items() if value is not None]
    if given:
        raise click.UsageError(f"{given[0]} is not an option of the image experiment {name!r}")


def _refuse_sweep_only(options) -> None:
    """A usage error naming the first of the image experiments' options given to a sweep."""
    for option, value in options:
        if value is not None:
            raise click.UsageError(f"{option} is an option of the image experiments "
                                   f"{', '.join(REAL_DATA_EXPERIMENTS)}")


def _confirm_paper(name, yes: bool) -> None:
    click.echo(f"no time estimate for the image experiment {name!r} at the paper "
               f"preset (hours on the full data sets)")
    confirm_long_run(None, yes)


def _print_real_data(name, preset, data, data_dir, seeds, calibration) -> None:
    """``--print-config`` of an image experiment: its config at ``preset`` and the identity
    of the data it reads, as TOML (``experiments.pipeline.real_data_file``)."""
    from experiments.papers import real_data
    from experiments.pipeline.real_data_file import write_real_data_toml

    try:
        config, identity = real_data.config_of(name, preset, data, data_dir, seeds,
                                               calibration)
        click.echo(write_real_data_toml(name, config, identity), nl=False)
    except (ValueError, FileNotFoundError) as error:
        raise click.ClickException(str(error)) from None


def _real_data_file(experiment, refused, print_config, seeds, out, device, force, yes,
                    workers, scheduler) -> None:
    """``sparselab scale --config FILE.toml`` of an image experiment
    (``experiments.pipeline.real_data_file.RealDataFile``): print it again (with --seeds) or
    run it into the preset's folder."""
    import dataclasses

    from experiments.pipeline.real_data_file import write_real_data_toml

    name, preset = experiment.experiment, experiment.preset
    for option, value in refused.items():
        if value is not None:
            raise click.UsageError(f"{option} is not an option of the image experiment "
                                   f"{name!r}'s config file (its [config] and [data] tables "
                                   f"hold the settings and the data)")
    if print_config:
        config = experiment.config if seeds is None else dataclasses.replace(
            experiment.config, seeds=seeds)
        click.echo(write_real_data_toml(name, config, {"data_dir": experiment.data_dir,
                                                       **experiment.data_identity}), nl=False)
        return
    if preset == "paper":
        _confirm_paper(name, yes)
    _run_real_data(name, preset, out, experiment.data_dir, seeds, device, force, workers,
                   scheduler, config=experiment.config,
                   data_identity=experiment.data_identity or None)


def _run_real_data(name, preset, out, data_dir, seeds, device, force, workers, scheduler,
                   data=None, calibration=None, config=None, data_identity=None) -> None:
    """``sparselab scale --experiment cifar|continual|comet_images`` (``experiments.papers.real_data``;
    ``--workers``/``--scheduler`` train the rows on Dask workers, the data sent to each once),
    or the config of such an experiment read from a file (``config``, ``data_identity``).
    """
    import pandas as pd

    from experiments.papers import real_data

    out = out or pathlib.Path("runs") / preset / name
    options = {} if calibration is None else {"calibration": calibration}
    if config is not None:
        options.update(config=config, data_identity=data_identity)
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
