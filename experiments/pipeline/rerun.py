"""Rerunning a finished results folder costs seconds, not a refit.

A scaling experiment's derived outputs (fits, plots, ``table.md``, ``claims.csv``; for the
subspace experiment ``geometry.csv``) are a function of three things only: the bytes of its
``results.csv``, its configs (panels, fit windows, sizes) with the claim set judged, and the
code that computes them. ``outputs_key`` hashes the three; ``write_or_reuse`` writes the
outputs (``experiments.pipeline.report.write_experiment_outputs``) and records the key and the files
in ``outputs.json`` beside them, and a rerun whose key matches, with every recorded file
present, reads the claims back from ``claims.csv`` instead of recomputing anything. A changed
row, config, claim set or source file (of ``CODE_PACKAGES``) gives another key: the outputs
are written anew.
"""

from __future__ import annotations

import functools
import hashlib
import json
import pathlib
import types

#: The file beside the outputs that records their key and their names.
OUTPUTS_RECORD = "outputs.json"
#: Packages whose source the outputs depend on (fits, claims, plots, the subspace geometry).
CODE_PACKAGES = ("experiments", "inference", "routing", "lipschitz")
#: Libraries whose version can change a plot or a fit.
LIBRARIES = ("numpy", "pandas", "scipy", "statsmodels", "matplotlib")


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """sha256 (hex) of the source of ``CODE_PACKAGES`` (every ``.py`` file, by path relative
    to the repository and content) and of the versions of ``LIBRARIES``: an edit of a plot
    or a claim rule makes recorded outputs stale."""
    import importlib.metadata

    root = pathlib.Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for package in CODE_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    for library in LIBRARIES:
        try:
            digest.update(f"{library}={importlib.metadata.version(library)}".encode())
        except importlib.metadata.PackageNotFoundError:  # pragma: no cover
            digest.update(f"{library}=none".encode())
    return digest.hexdigest()


def outputs_key(name: str, configs, claims: str | None, results: pathlib.Path) -> str:
    """The key of an experiment's derived outputs: sha256 (hex) of the bytes of ``results``
    (its ``results.csv``), the configs' ``to_dict()`` (sorted JSON), ``name``, ``claims`` and
    ``code_fingerprint()``.

    Arguments:
        name: the experiment's name; configs: its ``ExperimentConfig`` list; claims: the
            claim set judged (``write_experiment_outputs``'s ``claims``; None: ``name``'s).
        results: the ``results.csv`` the outputs are computed from.

    Raises:
        ValueError: ``results`` cannot be read (naming it).
    """
    try:
        rows = pathlib.Path(results).read_bytes()
    except OSError as error:
        raise ValueError(f"results {results} cannot be read: {error.strerror or error}") \
            from None
    settings = json.dumps({"name": name, "claims": claims,
                           "configs": [c.to_dict() for c in configs]},
                          sort_keys=True, default=str)
    digest = hashlib.sha256()
    for part in (hashlib.sha256(rows).hexdigest(), settings, code_fingerprint()):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def stored_outputs(out: pathlib.Path, key: str):
    """The outputs recorded in ``out/outputs.json`` under ``key``, when every file is
    present: (paths, claims), the claims as records of ``claims.csv`` (objects with its
    columns as attributes: ``claim``, ``verdict``, …); None when the record is missing,
    unreadable, of another key or a file is gone."""
    out = pathlib.Path(out)
    try:
        record = json.loads((out / OUTPUTS_RECORD).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("key") != key:
        return None
    paths = [out / name for name in record.get("files", [])]
    if not paths or not all(path.is_file() for path in paths):
        return None
    import pandas as pd

    try:
        table = pd.read_csv(out / "claims.csv", keep_default_na=False)
    except (OSError, ValueError, pd.errors.EmptyDataError):
        return None
    claims = [types.SimpleNamespace(**row) for row in table.to_dict("records")]
    return paths, claims


def write_or_reuse(name: str, configs, frame, out: pathlib.Path, claims: str | None = None):
    """``experiments.pipeline.report.write_experiment_outputs(name, configs, frame, out, claims)``,
    unless ``out/outputs.json`` records outputs of the same key (``outputs_key``, on
    ``out/results.csv``) whose files are all there: then those files and their claims.

    Returns:
        (paths, claims, reused): the output files, the claims (``Claim`` objects when
        written; ``claims.csv`` records when reused) and whether they were reused.

    Raises:
        ValueError: as ``write_experiment_outputs``; ``out/results.csv`` unreadable.
    """
    from experiments.runner import output_folder

    out = pathlib.Path(out)
    key = outputs_key(name, configs, claims, out / "results.csv")
    stored = stored_outputs(out, key)
    if stored is not None:
        return (*stored, True)
    from experiments.pipeline.report import write_experiment_outputs

    (out / OUTPUTS_RECORD).unlink(missing_ok=True)  # no stale record while writing
    paths, judged = write_experiment_outputs(name, configs, frame, out, claims=claims)
    files = [str(pathlib.Path(path).relative_to(out)) for path in paths]
    output_folder.write_text(out / OUTPUTS_RECORD, json.dumps({"key": key, "files": files},
                                                              indent=2))
    return paths, judged, False
