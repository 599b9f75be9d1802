"""Compile sparselab's Numba kernels into their on-disk cache once, at install time
(``make install`` runs ``python -m experiments.pipeline.warm_up``).

The kernels (``routing``, ``routing.layers``, ``routing.sdm``, ``routing.models``, the
checks) are ``@njit(cache=True)``: the first process that calls one compiles it for the
argument types of the call and writes the machine code next to the source
(``__pycache__/*.nbi``, ``*.nbc``); later processes load it in milliseconds. Compiling all of
them takes about 96 s of one core (measured: ``sparselab reproduce --preset tiny`` took 469 s
of CPU with an empty cache and 377 s with a full one). In a fresh clone nothing is cached yet,
so the first ``sparselab reproduce --workers 2`` compiled the kernels in the driver and in
both workers at once, on the same two cores.

What runs is the quick preset's own work, a sample of it, so that the kernels compile for the
argument types the runs use: one row of every curve of the scaling experiments (a curve's
regime, kind, hash family and label; its first model and seed), each check's decision and one planted run of each of its planted violations, and the
steps of ``sparselab reproduce --preset tiny`` that are not scaling experiments or checks
(the image experiments, the SDM curves, the COMET studies) into a temporary folder. Nothing is
written outside the caches and that folder. Afterwards the quick preset's work compiles
nothing (``compiled()`` counts compilations; ``tests/experiments/pipeline/test_warm_up.py`` checks a part of it in
a process with an empty cache).
"""

from __future__ import annotations

import pathlib
import tempfile
import time

__all__ = ["warm_up", "PARTS", "compiled"]

#: The parts of the warm-up, in the order they run.
PARTS = ("scaling rows", "checks", "other steps")


_COMPILED: list[str] = []  # what ``compiled`` returns
_LISTENING = False


def compiled() -> list[str]:
    """The names of the Numba functions compiled (not loaded from the cache) in this process
    since the first call of ``compiled`` or ``warm_up``, one entry per compiled signature,
    numba's own helpers included; ``[]`` when everything came from the cache. Counted
    through numba's "numba:compile" events (``numba.core.event``)."""
    global _LISTENING
    if not _LISTENING:
        from numba.core import event

        class _Listener(event.Listener):
            def on_start(self, ev):
                pass

            def on_end(self, ev):
                _COMPILED.append(ev.data["dispatcher"].py_func.__qualname__)

        event.register("numba:compile", _Listener())
        _LISTENING = True
    return list(_COMPILED)


def warm_up(progress: bool = True, parts=PARTS, preset: str = "quick") -> float:
    """Run a sample of a preset's work so that every Numba kernel it calls is compiled into
    the on-disk cache; returns the seconds it took (about 2.5 minutes of one core with an
    empty cache at the quick preset).

    Arguments:
        progress: print a line per part (to stdout).
        parts: which of ``PARTS`` to run (default all).
        preset: the preset whose scaling rows and checks are sampled ("tiny", "quick" or
            "paper"; the checks run their quick parameters for "tiny" and "quick", as
            ``sparselab check`` does).

    Returns:
        seconds (float).

    Raises:
        ValueError: ``progress`` not a bool; ``parts`` not a sequence of names of ``PARTS``;
            an unknown preset.
    """
    from experiments.papers.presets import PRESETS
    from experiments.runner.threads import single_threaded
    from routing.validation import check_bool, check_choice

    progress = check_bool(progress, "progress")
    preset = check_choice(preset, "preset", PRESETS)
    if isinstance(parts, str) or not hasattr(parts, "__iter__"):
        raise ValueError(f"parts must be a sequence of names of {PARTS}, got {parts!r}")
    parts = [check_choice(name, "parts[i]", PARTS) for name in parts]
    run = {"scaling rows": _scaling_rows, "checks": _checks, "other steps": _other_steps}
    compiled()
    start = time.perf_counter()
    with single_threaded():  # the runs' own thread policy (and their kernels' parallel paths)
        for name in parts:
            begun, before = time.perf_counter(), len(compiled())
            run[name](preset)
            if progress:
                print(f"[warm-up] {name}: {time.perf_counter() - begun:.1f} s, "
                      f"{len(compiled()) - before} compilations", flush=True)
    return time.perf_counter() - start


def _scaling_rows(preset: str) -> None:
    from experiments.papers.catalogue import EXPERIMENTS, experiment_configs
    from experiments.runner.rows import compute_row

    seen = set()
    for name in EXPERIMENTS:
        for config in experiment_configs(name, preset):
            for spec in config.models:
                # a curve's first (smallest) model: its kernels' argument types are the
                # curve's (sizes change the arrays' lengths, not their types)
                key = (config.fit, spec.kind, spec.family, spec.label)
                if key not in seen:
                    seen.add(key)
                    compute_row(config, spec, config.seeds[0], "cpu")
    from experiments.analysis.scaling import fit_offset_law

    fit_offset_law([1.0, 2.0, 4.0, 8.0], [1.0, 0.6, 0.45, 0.4])  # the offset fits' objective


def _checks(preset: str) -> None:
    from proofs_checks.run import PARAMS_OF_PRESET
    from proofs_checks.registry import all_checks

    for check_class in all_checks().values():
        check = check_class.preset(PARAMS_OF_PRESET[preset])
        check.decide(0)
        done = set()
        for index, seed in check.power_runs(0):
            if index not in done:
                done.add(index)
                check.planted_run(index, seed)


def _other_steps(preset: str) -> None:
    from experiments.pipeline.reproduce import steps as reproduce_steps
    from experiments.pipeline.reproduce_steps import ChecksStep, ScalingStep

    with tempfile.TemporaryDirectory() as folder:
        for name, _, step in reproduce_steps("tiny", device="cpu"):
            if isinstance(step, (ChecksStep, ScalingStep)):  # the two parts above
                continue
            out = pathlib.Path(folder) / name
            out.mkdir()
            step(out)


if __name__ == "__main__":  # pragma: no cover - ``make install``
    warm_up()
