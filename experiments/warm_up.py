"""Compile sparselab's Numba kernels into their on-disk cache once, at install time
(``make install`` runs ``python -m experiments.warm_up``).

The kernels (``routing``, ``routing.layers``, ``routing.sdm``, the models of
``experiments.models``) are ``@njit(cache=True)``: the first process that calls one compiles it
for the argument types of the call and writes the machine code next to the source
(``__pycache__/*.nbi``, ``*.nbc``); later processes load it in milliseconds. In a fresh clone
nothing is cached yet, so the first ``sparselab reproduce --workers 2`` compiled every kernel in
the driver and in both workers at once, all on the same two cores: measured on the quick
preset, 1,357 s of CPU in a fresh clone against 1,180 s with the cache filled (11:28 against
9:58 of wall time). Filling the cache once, here, costs one process's compilation.

What runs: one row of every model kind in both regimes at a tiny size (the kinds' kernels for
float32 features and int64 keys, as the sweeps call them), the decision of every registered
check at its tiny parameters without power (the hashing, bucket-geometry and counting kernels
the checks use), the SDM curves of a small memory, and one row of each image experiment's
models; nothing is written outside the caches. A kernel called later with other argument types
compiles then, as it would have anyway.
"""

from __future__ import annotations

import tempfile
import time

__all__ = ["warm_up", "PARTS"]

#: The parts of the warm-up, in the order they run.
PARTS = ("model kinds", "checks", "SDM curves", "image models")


def warm_up(progress: bool = True, parts=PARTS) -> float:
    """Call every Numba kernel once with the argument types sparselab's runs use, so that
    its compiled code is in the on-disk cache; returns the seconds it took (about two
    minutes of one core with an empty cache).

    Arguments:
        progress: print a line per part (to stdout).
        parts: which of ``PARTS`` to run (default all).

    Returns:
        seconds (float).

    Raises:
        ValueError: ``progress`` not a bool; ``parts`` not a sequence of names of ``PARTS``.
    """
    from routing.validation import check_bool, check_choice

    progress = check_bool(progress, "progress")
    if isinstance(parts, str) or not hasattr(parts, "__iter__"):
        raise ValueError(f"parts must be a sequence of names of {PARTS}, got {parts!r}")
    parts = [check_choice(name, "parts[i]", PARTS) for name in parts]
    run = {"model kinds": _kinds, "checks": _checks, "SDM curves": _sdm,
           "image models": _images}
    start = time.perf_counter()
    for name, part in [(name, run[name]) for name in parts]:
        begun = time.perf_counter()
        part()
        if progress:
            print(f"[warm-up] {name}: {time.perf_counter() - begun:.1f} s", flush=True)
    return time.perf_counter() - start


def _kinds() -> None:
    from experiments.model_kinds import model_kind, model_kind_names
    from experiments.specs import ExperimentConfig, ModelSpec, TargetSpec
    from experiments.sweep import compute_row

    specs = [ModelSpec(name, **model_kind(name).example) for name in model_kind_names()]
    # every LSH family, several tables and a bucket width (the LSH model's kernels per family)
    specs += [ModelSpec("lsh", n_bits=3, n_tables=2), ModelSpec("lsh", n_bits=3, family="affine"),
              ModelSpec("lsh", n_bits=3, family="euclidean", n_hashes=2, bucket_width=1.0),
              ModelSpec("lsh", n_bits=4, family="uniform"),
              ModelSpec("lsh_table", n_hashes=2, bucket_width=1.0, n_tables=2),
              # wide enough for the scattered Gram matrix of the exact fit
              ModelSpec("dsm", width=512, k=8), ModelSpec("random_hash", width=512, k=8)]
    for fit in ("exact", "sgd"):
        config = ExperimentConfig(name="warm_up", preset="tiny",
                                  target=TargetSpec(n_inputs=4, degree=2), models=tuple(specs),
                                  seeds=(0,), n_train=256, n_eval=64, fit=fit, sgd_steps=5,
                                  sgd_batch=64)
        for spec in specs:
            compute_row(config, spec, 0, "cpu")


def _checks() -> None:
    from proofs_checks.cli import PARAMS_OF_PRESET
    from proofs_checks.registry import all_checks

    for check in all_checks().values():
        check.preset(PARAMS_OF_PRESET["tiny"]).decide(0)


def _sdm() -> None:
    from experiments.sdm_cli import write_sdm_curves

    with tempfile.TemporaryDirectory() as folder:
        write_sdm_curves(folder, n=64, radii=(5, 11), weightings=("binary",))


def _images() -> None:
    from experiments import real_data

    with tempfile.TemporaryDirectory() as folder:
        real_data.run_continual("tiny", folder, seeds=(0,), device="cpu", progress=False)


if __name__ == "__main__":  # pragma: no cover - ``make install``
    warm_up()
