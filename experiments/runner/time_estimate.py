"""How long a reproduction will take on this device, measured before it starts.

``sparselab reproduce --preset paper`` runs thousands of rows at sizes no laptop finishes in a
day; it says first how long it expects to take, from a calibration on the device it
will run on:

1. Sample. From each sweep (``ExperimentConfig``) of each scaling experiment, ``per_kind``
   models of each model kind are drawn at random (seeded; kinds differ most in cost: a
   trained router can take 30× a bucket table), each with the sweep's first seed.
2. Time at two reduced sizes. Each sampled row is computed (``experiments.runner.rows.compute_row``,
   one thread: the thread policy every worker runs) with its training size, evaluation size
   and Adam steps all multiplied by a factor s — once at s₁ and once at s₂ = 2·s₁ (CPU time
   of the thread on a CPU, so that a busy machine does not inflate it; wall time on a GPU)
   (s₁ the
   smallest factor that keeps at least ``MIN_N_TRAIN`` training points, ``MIN_N_EVAL``
   evaluation points and ``MIN_STEPS`` steps, and at least ``MIN_SCALE``; for a row fitted
   exactly, also at least ``ROWS_PER_COEF`` training points per coefficient of its model,
   so that the calibration solves the same kind of system as the full-size row: with fewer
   rows than coefficients the normal matrix is rank deficient, and the fit takes its
   minimum-norm eigendecomposition path instead of the Cholesky solve of a full-rank
   system, several times slower — timed there, one 16 384-wide DSM row of the paper's
   Table 1 took over 700 s on 2 000 rows). A row's cost is
   the sum of parts linear in those three (drawing data, the Gram matrix of an exact fit,
   Adam steps, evaluation) and of parts that do not depend on them (building the model, the
   w³ solve of an exact fit), so t(s) = a + b·s, and the full row takes
   t(1) = t(s₁) + (t(s₂) − t(s₁))·(1 − s₁)/(s₂ − s₁). (The first row of each model kind is
   computed once untimed first: Numba compiles on first use.) A row that grows more than
   ``SUPERLINEAR``-fold from s₁ to s₂ is not linear there yet (an LSH table's LSQR on
   fewer rows than buckets): it is timed again at twice the sizes, until it grows at most
   that much or reaches the full size; the extrapolation would multiply its growth by
   (1 − s₁)/(s₂ − s₁), 99 at s₁ = 0.01.
3. Scale up. A sweep's time is its number of rows (models × seeds) times the mean t(1) of
   its samples; the range printed takes every row of a sweep as fast as its fastest sample,
   or as slow as its slowest. N workers divide the time by N (rows are independent).

Where the rows are timed: in this process, one after another; or, given an open engine
(``sparselab reproduce --workers N`` or ``--scheduler``), on its workers, several at once —
each on one thread, as the run's rows will be, so that the calibration takes about 1/N of
its time (``_calibrate_row`` is the task). The estimate is assembled in the same order
either way.

What it does not see: steps other than the scaling experiments (the checks at their paper
parameters, the target gallery, the SDM curves, the COMET studies) are listed as not
included; memory limits (a row that does not fit fails; it is not timed here); a busy
machine (the estimate is for the cores free: a neighbour slows the run, not the estimate).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from experiments.runner.threads import single_threaded

__all__ = ["Estimate", "estimate_sweeps", "MIN_N_TRAIN", "MIN_N_EVAL", "MIN_STEPS",
           "MIN_SCALE", "ROWS_PER_COEF", "SUPERLINEAR"]

#: The smallest sizes a calibration row is computed at (below these a row is mostly
#: overhead, and an Adam batch could exceed the training set).
MIN_N_TRAIN, MIN_N_EVAL, MIN_STEPS = 2_000, 200, 50
#: The smallest factor s of a calibration row.
MIN_SCALE = 0.01
#: The fewest training points per coefficient of a calibration row fitted exactly. Below
#: about one the normal matrix is rank deficient and ``experiments.kinds.fitting._solve_dense``
#: takes its eigendecomposition path: measured on one thread, 4 096 coefficients took
#: 11–14 s on 1 000 rows against 2.6–3.2 s by Cholesky on 2 000. An LSH table's LSQR is
#: far from linear in the rows there: Fig. 4's 16 tables of 2^11 affine buckets took 0.6 s
#: on 2 000 rows and 6.2 s on 4 000 (extrapolated: over 500 s a row), then 1.1 s on 32 000,
#: 2.2 s on 64 000, 5.0 s on 128 000 and 9.4 s on the full 200 000; from two rows per
#: coefficient on, the estimate is 6.0 s (LSQR's iterations still grow with the rows, so it
#: stays low). Two was fixed before any estimate was compared with a full-size row.
ROWS_PER_COEF = 2
#: A sampled row whose time grows more than this factor when its sizes double is not yet
#: linear in them (t = a + b·s grows at most 2×; the margin is for timing noise, fixed
#: before any estimate was compared): it is timed again at twice the larger size, until it
#: grows by at most this factor or reaches the full size. Fig. 4's 16 tables of 2^9 sign
#: buckets grew 2.8× from 2 000 to 4 000 rows, and 10.8× for 2^11 affine buckets.
SUPERLINEAR = 2.2


@dataclass
class Estimate:
    """An estimate of the compute time of sweeps (``estimate_sweeps``).

    Attributes:
        seconds: the estimated time of every row, one after another on one worker (s).
        low, high: the range: every row of a sweep as fast as its fastest sample, or as
            slow as its slowest (s).
        rows: rows estimated.
        per_experiment: experiment -> (rows, seconds).
        sampled: rows timed (each at two sizes).
        calibration_seconds: wall time the calibration took (s).
        device: the device the rows were timed on.
        workers: the workers the time is divided by (None: not known, e.g. a cluster).
        excluded: steps whose time is not included.
        timed_on: where the rows were timed: "here" (this process) or "on the workers"
            (``estimate_sweeps``'s ``engine``).
        per_kind: (model kind, regime) -> (rows, seconds), over every sweep; ("data", "")
            holds the drawing of each seed's data (where the time goes: the heaviest kind
            is where a sweep is best trimmed).
        samples: one dict per sampled row: experiment, fit, kind, model (its key), scale
            (its s₁), doublings (how often s₁ was doubled because the row grew faster than
            linearly, ``SUPERLINEAR``), seconds_s1 and seconds_s2 (the row timed at s₁ and
            s₂ = min(1, 2·s₁), s) and seconds_full (extrapolated, s) — what the estimate
            rests on.
    """

    seconds: float
    low: float
    high: float
    rows: int
    per_experiment: dict[str, tuple[int, float]]
    sampled: int
    calibration_seconds: float
    device: str
    workers: int | None = 1
    excluded: list[str] = field(default_factory=list)
    samples: list[dict] = field(default_factory=list)
    timed_on: str = "here"
    per_kind: dict[tuple[str, str], tuple[int, float]] = field(default_factory=dict)

    @property
    def wall_seconds(self) -> float:
        """The estimated wall time of the run (s): ``seconds`` divided by the workers (by one
        when they are not known: a cluster's) — the headline of ``text``."""
        return self.seconds / (self.workers or 1)

    @property
    def clock(self) -> str:
        """What the rows were timed by (``_time_row``)."""
        return "wall time" if self.device.startswith("cuda") else \
            "CPU time of one thread: the cores free"

    def text(self) -> str:
        """The estimate in a few lines: total, per experiment, per model kind (heaviest
        first), what it is based on, what it leaves out."""
        workers = self.workers or 1
        lines = [f"Estimated time of this run on {self.device}: {_duration(self.seconds / workers)}"
                 f" (range {_duration(self.low / workers)} – {_duration(self.high / workers)})"
                 + (f" with {workers} workers" if workers > 1 else
                    " on one worker" if self.workers else
                    " on one worker; divide by the number of workers of the cluster"),
                 f"  {self.rows} rows of the scaling experiments: " + ", ".join(
                     f"{name} {rows} rows {_duration(seconds / workers)}"
                     for name, (rows, seconds) in self.per_experiment.items()),
                 f"  based on: {self.sampled} rows sampled at random from the sweeps' model "
                 f"kinds, each timed {self.timed_on} ({self.clock}) at two reduced sizes "
                 f"(training and evaluation sizes and Adam steps × s and × 2s, "
                 f"s ≥ {MIN_SCALE:g}, and for an exact fit ≥ {ROWS_PER_COEF} training points "
                 f"per coefficient) and "
                 f"extrapolated linearly to the full size; calibration took "
                 f"{_duration(self.calibration_seconds)}"]
        if self.per_kind and self.seconds > 0:
            def part(key, rows, seconds):
                what = ("drawing the data" if key == ("data", "") else
                        f"{key[0]} ({key[1]}) {rows} rows")
                return f"{what} {_duration(seconds / workers)} ({seconds / self.seconds:.0%})"

            heaviest = sorted(self.per_kind.items(), key=lambda item: -item[1][1])
            lines.insert(2, "  by model kind: " + ", ".join(
                part(key, rows, seconds) for key, (rows, seconds) in heaviest))
        if self.samples:
            slow = max(self.samples, key=lambda row: row["seconds_full"])
            timed = ("timed at the full size" if slow["scale"] >= 1.0 else
                     f"timed {slow['seconds_s1']:.3g} s at s = {slow['scale']:.3g} and "
                     f"{slow['seconds_s2']:.3g} s at s = {min(1.0, 2 * slow['scale']):.3g}")
            lines.append(f"  slowest sampled row: {slow['experiment']} {slow['model']} "
                         f"({slow['fit']}), {_duration(slow['seconds_full'])} a row, {timed}")
        grew = sum(row["doublings"] > 0 for row in self.samples)
        if grew:
            lines.append(f"  {grew} sampled rows grew faster than linearly at the reduced "
                         f"sizes (> {SUPERLINEAR:g}× when doubled) and were timed again at "
                         f"larger ones")
        if self.excluded:
            lines.append(f"  not included: {', '.join(self.excluded)}")
        return "\n".join(lines)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _extrapolate(t1: float, t2: float, s1: float, s2: float) -> float:
    """t(1) of t(s) = a + b·s through (s1, t1) and (s2, t2), b ≥ 0 (noise can make the
    smaller size look slower); t1 itself when s1 is already the full size."""
    if s1 >= 1.0:
        return t1
    return t1 + max(0.0, t2 - t1) * (1 - s1) / (s2 - s1)


def _calibration_scale(config) -> float:
    """The factor s₁ of a sweep's calibration rows: the smallest factor ≥ ``MIN_SCALE`` that
    keeps ``MIN_N_TRAIN`` training points, ``MIN_N_EVAL`` evaluation points and
    ``MIN_STEPS`` Adam steps (each capped at the sweep's own), at most 1."""
    return min(1.0, max(MIN_SCALE, MIN_N_TRAIN / config.n_train, MIN_N_EVAL / config.n_eval,
                        MIN_STEPS / config.train_steps))


def _row_scale(config, spec, scale: float) -> float:
    """The calibration factor of the row ``spec`` of sweep ``config``: ``scale`` (the sweep's
    s₁), raised for a row fitted exactly until its training points are at least
    ``ROWS_PER_COEF`` per coefficient of its model (``n_coef`` of the model built with the
    sweep's first seed; kinds without one keep ``scale``), at most 1.

    Raises:
        ValueError: what building the model raises (a bad spec).
    """
    from experiments.kinds.registry import model_kind
    from experiments.runner.specs import fit_of

    if fit_of(spec, config) != "exact":
        return scale
    model = model_kind(spec.kind).build(spec, config.target.n_inputs, config.seeds[0], config)
    n_coef = getattr(model, "n_coef", None)
    if n_coef is None:
        return scale
    return min(1.0, max(scale, ROWS_PER_COEF * n_coef / config.n_train))


def _submission_order(tasks: list[tuple]) -> list[int]:
    """The order in which ``estimate_sweeps`` hands its sampled rows (``(config, spec, ...)``)
    to the workers: the widest exact fits first — their calibration takes minutes (one
    16 384-wide DSM row of the paper's Table 1 took 9 minutes) and would otherwise start
    last and keep every other worker waiting — then the rest in the plan's order. Wide is
    judged from the spec alone (its width, or its tables × buckets), not from a built model:
    the order changes when a row is timed, never its time or the estimate."""
    from experiments.runner.specs import fit_of

    def size(task) -> int:
        config, spec = task[0], task[1]
        if fit_of(spec, config) != "exact":
            return 0
        if spec.width:
            return int(spec.width)
        return int(spec.n_tables or 1) * 2 ** int(spec.n_bits or 0)

    return sorted(range(len(tasks)), key=lambda i: -size(tasks[i]))


def _scaled(config, scale: float):
    """``config`` with its training and evaluation sizes and Adam steps multiplied by
    ``scale`` (rounded, at least 1).

    Raises:
        ValueError: ``scale`` outside (0, 1].
    """
    from routing.validation import check_real

    check_real(scale, "scale", low=0.0, high=1.0, low_open=True)
    return config.with_(n_train=max(1, round(config.n_train * scale)),
                        n_eval=max(1, round(config.n_eval * scale)),
                        train_steps=max(1, round(config.train_steps * scale)))


def _time_row(config, spec, seed: int, device) -> tuple[float, float]:
    """Seconds to draw a row's data and to compute the row on them
    (``experiments.runner.rows.compute_row``), with one thread (the thread policy of the sweeps,
    ``experiments.runner.threads``). They are apart because a sweep draws a seed's data once for
    all its models (``experiments.runner.rows.cached_data`` keeps them). On a CPU the time is the
    thread's CPU time — the row's cost with a core to itself, whatever else the machine runs
    meanwhile; on a GPU it is the wall time, the GPU's work waited for.

    Returns:
        (data seconds, row seconds).
    """
    import torch

    from experiments.runner.rows import cached_data, compute_row

    device = torch.device(device)
    if device.type == "cuda":
        def clock():
            torch.cuda.synchronize(device)
            return time.perf_counter()
    else:
        clock = time.thread_time
    with single_threaded():
        start = clock()
        cached_data(config, seed)
        middle = clock()
        compute_row(config, spec, seed, device)  # on the data above, kept
        return middle - start, clock() - middle


#: The model kinds each calibration has warmed in this process, by the calibration's token:
#: a Dask worker warms each kind once per calibration (``_calibrate_row``).
_WARMED: dict[str, set[str]] = {}


def _calibrate_row(timer: Callable, token: str, config, spec, seed: int, scale: float,
                   device, warm_spec) -> tuple[float, float, dict]:
    """One sampled row of a calibration (step 2 of the module's docstring), in this process
    (the driver, or a Dask worker: ``Engine.calls``).

    The first row of each model kind a calibration times in a process is preceded by
    ``warm_spec`` (the kind's narrowest model of the sweep) computed once untimed at the
    sweep's s₁: Numba compiles and torch allocates on first use.

    Arguments:
        timer: as ``estimate_sweeps``.
        token: the calibration's identity (the kinds it warmed here: ``_WARMED[token]``).
        config: the sweep at full size; spec: the row; seed: its seed.
        scale: the sweep's s₁ (``_calibration_scale``).
        device: a torch device, or "auto" / "cpu" / "cuda" resolved here (on a worker).
        warm_spec: the model computed untimed before the first row of its kind.

    Returns:
        (the data's seconds and the row's seconds extrapolated to the full size, the
        sample's record: scale, doublings, seconds_s1, seconds_s2, seconds_full).

    Raises:
        what computing the row raises.
    """
    if isinstance(device, str):  # on a Dask worker: its own device
        from experiments.runner.rows import resolve_device

        device = resolve_device(device)
    warmed = _WARMED.setdefault(token, set())
    if spec.kind not in warmed:
        timer(_scaled(config, scale), warm_spec, seed, device)
        warmed.add(spec.kind)
    r1 = _row_scale(config, spec, scale)  # s1, or more for a wide exact fit
    r2 = min(1.0, 2 * r1)
    t1 = timer(_scaled(config, r1), spec, seed, device)
    t2 = t1 if r1 >= 1.0 else timer(_scaled(config, r2), spec, seed, device)
    doublings = 0
    while r1 < 1.0 and t2[1] > SUPERLINEAR * t1[1]:
        # faster than a + b·s can grow: not yet the full size's regime
        r1, t1, r2, doublings = r2, t2, min(1.0, 2 * r2), doublings + 1
        t2 = t1 if r1 >= 1.0 else timer(_scaled(config, r2), spec, seed, device)
    # t(1) = t(r1) + slope·(1 - r1), for the data and for the row
    full = _extrapolate(t1[1], t2[1], r1, r2)
    return _extrapolate(t1[0], t2[0], r1, r2), full, {
        "scale": r1, "doublings": doublings, "seconds_s1": t1[1], "seconds_s2": t2[1],
        "seconds_full": full}


def estimate_sweeps(experiments: dict[str, list], device: str = "auto", per_kind: int = 2,
                    seed: int = 0, workers: int | None = 1,
                    timer: Callable[..., float] = _time_row, progress: bool = True,
                    excluded: list[str] | None = None, engine=None) -> Estimate:
    """Estimate the compute time of the sweeps of ``experiments`` on ``device`` (the module's
    docstring says how).

    Arguments:
        experiments: experiment name -> its ``ExperimentConfig`` list.
        device: "auto", "cpu" or "cuda": where the rows are timed (and will run).
        per_kind: models sampled per model kind of each sweep (all of them where it has
            fewer), ≥ 1.
        seed: seed of the sampling.
        workers: workers the time is divided by (None: unknown).
        timer: ``(config, spec, seed, device) -> (data seconds, row seconds)``
            (``_time_row``; tests give a model of time). With ``engine`` it runs on the
            workers: it must pickle (cloudpickle).
        progress: show a progress bar over the sampled rows.
        excluded: steps whose time is not included, named in the text.
        engine: an open ``experiments.runner.engine.Engine``: the sampled rows are timed on its
            workers, several at once (each on one thread: the time the row would take
            there), so the calibration takes about 1/N of its time on N workers; None:
            one after another in this process. The estimate is assembled in the same
            order either way: given the same timings, the same numbers.

    Returns:
        an ``Estimate``.

    Raises:
        ValueError: per_kind < 1, a bad device or workers; what computing a row raises.
    """
    import uuid

    import torch
    from tqdm.auto import tqdm

    from experiments.runner.specs import fit_of
    from experiments.runner.rows import resolve_device
    from routing.validation import check_bool, check_int, check_seed

    check_int(per_kind, "per_kind", low=1)
    seed = check_seed(seed)
    progress = check_bool(progress, "progress")
    if workers is not None:
        check_int(workers, "workers", low=1)
    if engine is None:
        torch_device = row_device = resolve_device(device)
    else:  # the rows are timed on the workers, each resolving ``device`` to its own
        row_device = device
        try:
            torch_device = resolve_device(device)
        except ValueError:  # "cuda" from a driver without a GPU
            torch_device = torch.device(device)
    rng = np.random.default_rng(seed)
    plan = []  # (experiment, config, {kind: (models of the kind, sampled specs)})
    for name, configs in experiments.items():
        for config in configs:
            kinds: dict[str, list] = {}
            for spec in config.models:
                kinds.setdefault(spec.kind, []).append(spec)
            plan.append((name, config, {
                kind: (len(specs), [specs[i] for i in sorted(rng.choice(
                    len(specs), size=min(per_kind, len(specs)), replace=False))])
                for kind, specs in kinds.items()}))
    # one task per sampled row, in the plan's order
    tasks = []
    for name, config, kinds in plan:
        if not kinds or not config.seeds:
            continue
        s1 = _calibration_scale(config)
        for kind, (_, specs) in kinds.items():
            # the kind's narrowest model of the sweep: computed untimed before the first row
            # of its kind a process times (``_calibrate_row``)
            narrowest = min((m for m in config.models if m.kind == kind),
                            key=lambda m: m.width or 0)
            tasks += [(config, spec, config.seeds[0], s1, row_device, narrowest)
                      for spec in specs]
    token = uuid.uuid4().hex
    start = time.perf_counter()
    results: list = [None] * len(tasks)
    with tqdm(total=len(tasks), desc="calibration", disable=not progress) as bar:
        try:
            if engine is None:
                for i, args in enumerate(tasks):
                    results[i] = _calibrate_row(timer, token, *args)
                    bar.update(1)
            else:
                order = _submission_order(tasks)  # the widest exact fits first
                for j, result in engine.calls(_calibrate_row,
                                              [(token, *tasks[i]) for i in order],
                                              shared=timer, name="calibration"):
                    results[order[j]] = result
                    bar.update(1)
        finally:
            _WARMED.pop(token, None)
    totals = {name: [0, 0.0, 0.0, 0.0] for name in experiments}  # rows, mid, low, high
    per_kind: dict[tuple[str, str], list] = {}  # (kind, regime) -> [rows, mid]
    samples, done = [], iter(results)
    for name, config, kinds in plan:
        if not kinds or not config.seeds:
            continue
        seeds, data = len(config.seeds), []
        # the control rows: each control model at each control seed, timed as its kind's
        controls = len(config.control_seeds)
        n_control: dict[str, int] = {}
        for spec in config.control_models:
            n_control[spec.kind] = n_control.get(spec.kind, 0) + 1
        for kind, (n_models, specs) in kinds.items():
            full = []
            for spec in specs:
                data_full, row_full, record = next(done)
                data.append(data_full)
                full.append(row_full)
                samples.append({"experiment": name, "fit": fit_of(spec, config), "kind": kind,
                                "model": spec.key(), **record})
            rows = n_models * seeds + n_control.get(kind, 0) * controls
            totals[name][0] += rows
            totals[name][1] += rows * float(np.mean(full))
            totals[name][2] += rows * min(full)
            totals[name][3] += rows * max(full)
            kind_total = per_kind.setdefault((kind, str(fit_of(specs[0], config))), [0, 0.0])
            kind_total[0] += rows
            kind_total[1] += rows * float(np.mean(full))
        drawn = seeds + controls  # a seed's data, drawn once for all its models
        for i, value in ((1, float(np.mean(data))), (2, min(data)), (3, max(data))):
            totals[name][i] += drawn * value
        per_kind.setdefault(("data", ""), [0, 0.0])[1] += drawn * float(np.mean(data))
    mid, low, high = (math.fsum(t[i] for t in totals.values()) for i in (1, 2, 3))
    return Estimate(seconds=mid, low=low, high=high,
                    rows=sum(t[0] for t in totals.values()),
                    per_experiment={n: (t[0], t[1]) for n, t in totals.items()},
                    sampled=len(samples), calibration_seconds=time.perf_counter() - start,
                    device=str(torch_device), workers=workers, excluded=list(excluded or []),
                    samples=samples, timed_on="here" if engine is None else "on the workers",
                    per_kind={key: (rows, seconds) for key, (rows, seconds) in per_kind.items()})


#: A paper-sized run whose estimated time exceeds this many seconds (one hour) is started
#: only with ``--yes`` (``check_long_run``); ``proofs_checks.run`` holds the same number
#: (it imports nothing of experiments; a test keeps the two equal).
CONFIRM_ABOVE_SECONDS = 3600.0


def needs_yes(seconds: float | None) -> bool:
    """Whether a paper-sized run of estimated wall time ``seconds`` must be confirmed with
    ``--yes``: above ``CONFIRM_ABOVE_SECONDS``, or no estimate (None: counted as over an
    hour, the paper sizes taking hours on every device measured).

    Raises:
        ValueError: ``seconds`` negative or not a number (NaN included).
    """
    if seconds is None:
        return True
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
            or not seconds >= 0:
        raise ValueError(f"seconds must be a number >= 0 or None, got {seconds!r}")
    return seconds > CONFIRM_ABOVE_SECONDS


def _not_confirmed_text(seconds: float | None) -> str:
    """The message of a run refused for want of ``--yes`` (``check_long_run``): the estimate,
    that nothing was computed, and how to start it."""
    what = ("it has no time estimate (counted as over an hour)" if seconds is None else
            f"its estimated time, {_duration(seconds)}, exceeds an hour")
    return (f"not started: {what}; nothing was computed. Rerun the same command with --yes "
            f"to start it.")


class LongRunNotConfirmed(ValueError):
    """A paper-sized run refused before it computed anything: its estimate exceeds an hour
    (or there is none) and ``yes`` was not given (``check_long_run``)."""


def check_long_run(seconds: float | None, yes: bool) -> None:
    """Refuse a paper-sized run before it computes anything when ``needs_yes(seconds)`` and
    ``yes`` is not given (the ``--yes`` of ``sparselab scale``/``reproduce``).

    Arguments:
        seconds: the run's estimated wall time (s) on its workers, None when not estimated.
        yes: whether the user confirmed the run (bool).

    Raises:
        LongRunNotConfirmed: (a ValueError) the estimate, that nothing was computed, and
            "Rerun the same command with --yes to start it."
        ValueError: a bad ``seconds`` (``needs_yes``); ``yes`` not a bool.
    """
    if not isinstance(yes, bool):
        raise ValueError(f"yes must be a bool (the --yes flag), got {yes!r}")
    if needs_yes(seconds) and not yes:
        raise LongRunNotConfirmed(_not_confirmed_text(seconds))
