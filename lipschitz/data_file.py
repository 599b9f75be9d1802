"""A data set of one's own, (X, y) read from a file, in place of a generated target.

Two formats, both read without unpickling:

- ``.npz``: arrays ``X`` (N, d) and ``y`` (N,) (``numpy.savez``), any real dtype;
- ``.csv``: a header row; the column ``y`` holds the labels, every other column is an input
  (read with pandas).

The rows must be finite; inputs are used as they are (the models of ``experiments`` expect
roughly [-1, 1]^d, as the generated targets' cube: rescale beforehand if yours are not).
"""

from __future__ import annotations

import hashlib
import pathlib

import numpy as np

__all__ = ["load_xy", "file_sha256", "DATA_SUFFIXES"]

DATA_SUFFIXES = (".npz", ".csv")


def file_sha256(path) -> str:
    """The sha256 of a file's bytes, as 64 hex digits (to tell a changed file from the one a
    results folder was made with).

    Raises:
        ValueError: the file cannot be read (naming it).
    """
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as error:
        raise ValueError(f"data file {path} cannot be read: {error.strerror or error}") from None
    return digest.hexdigest()


def load_xy(path) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) from a ``.npz`` or ``.csv`` file (module docstring).

    Arguments:
        path: str or ``pathlib.Path`` of the file.

    Returns:
        X float64 (N, d) and y float64 (N,), N >= 2, d >= 1, every entry finite.

    Raises:
        ValueError: one line naming the file and what was expected: a missing file, another
            suffix, no ``X``/``y`` arrays or no ``y`` column, wrong shapes, fewer than 2 rows,
            non-numeric or non-finite entries.
    """
    path = pathlib.Path(path)
    if path.suffix.lower() not in DATA_SUFFIXES:
        raise ValueError(f"data file {path} must end in one of {DATA_SUFFIXES}")
    if not path.is_file():
        raise ValueError(f"data file {path} does not exist")
    if path.suffix.lower() == ".npz":
        X, y = _read_npz(path)
    else:
        X, y = _read_csv(path)
    if X.ndim != 2 or X.shape[1] < 1:
        raise ValueError(f"data file {path}: X must be 2-D (N, d) with d >= 1, got shape "
                         f"{X.shape}")
    if y.ndim != 1 or len(y) != len(X):
        raise ValueError(f"data file {path}: y must be 1-D with one label per row of X "
                         f"({len(X)}), got shape {y.shape}")
    if len(X) < 2:
        raise ValueError(f"data file {path}: needs at least 2 rows, got {len(X)}")
    for name, array in (("X", X), ("y", y)):
        if not np.all(np.isfinite(array)):
            bad = int(np.sum(~np.isfinite(array)))
            raise ValueError(f"data file {path}: {name} has {bad} non-finite entries")
    return X, y


def _read_npz(path: pathlib.Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = [name for name in ("X", "y") if name not in archive.files]
            if missing:
                raise ValueError(f"data file {path} must hold arrays 'X' and 'y', has "
                                 f"{sorted(archive.files)}")
            X, y = archive["X"], archive["y"]
    except ValueError as error:
        if str(error).startswith("data file"):
            raise
        raise ValueError(f"data file {path} is not a numpy .npz of numeric arrays: "
                         f"{error}") from None
    except (OSError, EOFError) as error:
        raise ValueError(f"data file {path} is not a readable .npz archive: {error}") from None
    for name, array in (("X", X), ("y", y)):
        if array.dtype.kind not in "biuf":
            raise ValueError(f"data file {path}: {name} must be real numbers, got dtype "
                             f"{array.dtype}")
    return X.astype(np.float64), y.astype(np.float64)


def _read_csv(path: pathlib.Path) -> tuple[np.ndarray, np.ndarray]:
    import pandas as pd

    try:
        table = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise ValueError(f"data file {path} is not a CSV with a header row: "
                         f"{str(error).splitlines()[0]}") from None
    if "y" not in table.columns:
        raise ValueError(f"data file {path} needs a column 'y' (the labels), has "
                         f"{list(table.columns)}")
    inputs = [c for c in table.columns if c != "y"]
    non_numeric = [c for c in table.columns if not pd.api.types.is_numeric_dtype(table[c])
                   or pd.api.types.is_bool_dtype(table[c])]
    if non_numeric:
        raise ValueError(f"data file {path}: columns {non_numeric} are not numbers")
    return table[inputs].to_numpy(np.float64), table["y"].to_numpy(np.float64)
