"""One scaling experiment into its results folder: the sweeps (resumed), ``config.json``, and
the fits, plots, claims and report (``sparselab scale`` runs it)."""

from __future__ import annotations

import json
import pathlib

from experiments.runner.environment import environment


def run_experiment(name: str, preset: str, out: pathlib.Path, device: str = "auto",
                   progress: bool = True, force: bool = False, configs: list | None = None,
                   claims: str | None = None, workers: int | None = None,
                   scheduler: str | None = None) -> tuple[list[pathlib.Path], list]:
    """Run (or resume) experiment ``name`` at ``preset`` into ``out``; return files and claims.

    ``config.json`` is written once the folder has been checked and before the first row, so
    that it describes the rows of ``results.csv`` even when the sweep is interrupted.

    Arguments:
        name, preset: the experiment (``experiments.papers.catalogue.EXPERIMENTS``) and its preset.
        out: the results folder, created if needed.
        device: "auto", "cpu" or "cuda".
        progress: show a progress bar.
        force: delete ``out/results.csv`` first and run every row anew (as
            ``sparselab reproduce --force`` does for its steps).
        configs: the sweeps to run instead of the preset's (a config file's, or the preset's
            with ``--seeds``/``--n-train``/``--n-eval``); ``name`` and ``preset`` then only
            label them.
        claims: whose claims to judge (``experiments.pipeline.report.write_experiment_outputs``);
            None: ``name``'s.
        workers, scheduler: compute the rows on a local Dask cluster of ``workers``
            single-threaded processes, or on the cluster at ``scheduler``
            (``experiments.runner.engine``); both None: in this process.

    The folder is held (``experiments.runner.output_folder.writer``) from the check of its rows to
    the last plot: a second process writing into it is refused at once.

    Raises:
        ValueError: unknown experiment/preset, bad device, unwritable ``out``, ``out`` being
            written by another process, or rows in ``out/results.csv`` made under other
            settings or of another experiment (without ``force``).
    """
    from experiments.papers import catalogue
    from experiments.pipeline.rerun import write_or_reuse
    from experiments.runner import output_folder, rows, sweep
    from routing.validation import check_bool

    progress, force = check_bool(progress, "progress"), check_bool(force, "force")

    configs = list(configs) if configs is not None else catalogue.experiment_configs(name, preset)
    torch_device = sweep.run_device(device, scheduler)
    out = pathlib.Path(out)
    with output_folder.writer(out):
        sweep.prepare_out(configs, out, force=force)
        config_path = out / "config.json"
        output_folder.write_text(config_path, json.dumps(
            {"experiment": name, "preset": preset, "claims": claims or name,
             "configs": [c.to_dict() for c in configs],
             "settings": [rows.settings_fingerprint(c) for c in configs],
             **environment(torch_device)}, indent=2, default=str))
        engine = {} if workers is None and scheduler is None else dict(workers=workers,
                                                                         scheduler=scheduler)
        frame = sweep.run_sweep(configs, out, device=device, progress=progress, **engine)
        # fits, plots and claims are redone only when the rows, configs or code changed
        paths, claims, _ = write_or_reuse(name, configs, frame, out, claims=claims)
    return [out / "results.csv", config_path, *paths], claims
