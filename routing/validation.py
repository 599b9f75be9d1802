"""Argument checks shared by every sparselab package.

Errors are raised at the boundary (constructor, ``fit``, ``__call__``) and always name the
parameter and the allowed range, so that bad input never turns into a NaN, a hang or a silent
wrong answer further down.
"""

from __future__ import annotations

import math
import numbers
import os

import numpy as np

__all__ = ["check_finite_tensor", "check_int", "check_real", "check_points", "check_seed",
           "check_choice", "check_bool", "check_tensor", "as_numpy", "check_in_cube",
           "check_allocation", "check_array_memory", "check_instance", "format_bytes",
           "memory_limit_bytes", "ParameterTypeError", "MAX_SEED"]


class ParameterTypeError(TypeError, ValueError):
    """A parameter of the wrong type: a ``TypeError``, and a ``ValueError`` as every other
    bad parameter of sparselab (as scikit-learn's ``InvalidParameterError``), so a caller that
    catches either gets it."""


def as_numpy(value):
    """``value`` as a numpy array; a torch tensor is detached and copied to the CPU first.

    So that a numpy-taking function accepts the values of any tensor — one that requires a
    gradient, one on a GPU, a bfloat16 one (widened to float32) — instead of failing inside
    numpy with torch's "Can't call numpy() on Tensor that requires grad".
    """
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        value = value.detach().cpu()
        if str(value.dtype) in ("torch.bfloat16", "torch.float16"):
            value = value.float()
        return value.numpy()
    return np.asarray(value)


def check_in_cube(X: np.ndarray, name: str = "X", *, tol: float = 1e-12) -> np.ndarray:
    """Check that every entry of the array ``X`` lies in [-1, 1] (up to ``tol`` of rounding):
    the domain [-1, 1]^n on which the targets' Lipschitz certificates hold.

    Raises:
        ValueError: naming ``name``, the largest |entry| and the allowed range.
    """
    if X.size:
        largest = float(np.max(np.abs(X)))
        if not largest <= 1.0 + tol:
            raise ValueError(f"{name} must lie in the domain [-1, 1]^n (where the certificate "
                             f"holds); its largest |entry| is {largest:.6g}")
    return X


def check_int(value, name: str, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as a Python ``int`` after checking ``low <= value <= high``.

    Arguments:
        value: the value to check; bools and non-integral numbers are rejected.
        name: the parameter's name, used in the error message.
        low, high: inclusive bounds; ``None`` means unbounded.

    Raises:
        ValueError: if ``value`` is not an integer or lies outside ``[low, high]``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer{_range(low, high)}, got {value!r}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be an integer{_range(low, high)}, got {value}")
    return value


def check_real(
    value,
    name: str,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite ``float`` after checking it lies in the given interval.

    Arguments:
        value: a real number (not a bool).
        name: the parameter's name, used in the error message.
        low, high: bounds; ``None`` means unbounded.
        low_open, high_open: make the corresponding bound strict.

    Raises:
        ValueError: if ``value`` is not a finite real number or lies outside the interval.
    """
    interval = (
        ("(" if low_open else "[")
        + ("-inf" if low is None else f"{low:g}")
        + ", "
        + ("inf" if high is None else f"{high:g}")
        + (")" if high_open else "]")
    )
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number in {interval}, got {value!r}")
    value = float(value)
    ok = np.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        raise ValueError(f"{name} must be a finite real number in {interval}, got {value}")
    return value


def check_choice(value, name: str, choices):
    """Check that ``value`` is one of ``choices`` (any container of allowed values).

    Raises:
        ValueError: naming the parameter and the allowed values otherwise.
    """
    try:
        allowed = value in choices
    except TypeError:  # unhashable value, choices a dict or set
        allowed = False
    if not allowed:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def check_bool(value, name: str) -> bool:
    """Return ``value`` as a Python ``bool`` after checking it is one (or a numpy bool).

    Flags are never read by truthiness: the string ``'False'``, 0, 1 and None are rejected,
    so that ``log='False'`` cannot silently mean True.

    Raises:
        ValueError: naming the parameter otherwise.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


#: The largest seed accepted: seeds are stored as int64 (torch generators, result tables).
MAX_SEED = 2**63 - 1


def check_seed(seed, name: str = "seed") -> int:
    """Check that ``seed`` is an integer in [0, 2**63 - 1], usable by
    ``numpy.random.default_rng``, ``torch.Generator.manual_seed`` and an int64 column.

    Raises:
        ValueError: if ``seed`` is not an integer in that range.
    """
    return check_int(seed, name, low=0, high=MAX_SEED)


def check_points(X, n_cols: int | None = None, name: str = "X", dtype=np.float64,
                 check_finite: bool = True) -> np.ndarray:
    """Validate a batch of points and return it as a C-contiguous array.

    Arguments:
        X: array-like of shape (N, n_cols), real-valued; N may be 0.
        n_cols: required number of columns (input dimension), or ``None`` for any.
        name: the parameter's name, used in the error message.
        dtype: the floating dtype of the result (float64 by default; with ``dtype=None``
            float32 and float64 inputs keep their dtype, others become float64).
        check_finite: reject NaN and infinite entries (callers whose kernels check finiteness
            on the fly pass False, to avoid an (N, n_cols) boolean temporary).

    Returns:
        ``np.ndarray`` of shape (N, n_cols) and the requested dtype.

    Raises:
        ValueError: if ``X`` is not 2-D, has the wrong number of columns, is not real-valued,
            or contains NaN or infinite entries.
    """
    arr = as_numpy(X)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating)
        or np.issubdtype(arr.dtype, np.integer)
        or arr.dtype == np.bool_
    ):
        raise ValueError(f"{name} must be a real-valued array, got dtype {arr.dtype}")
    if arr.ndim != 2:
        expected = "(N, n_inputs)" if n_cols is None else f"(N, {n_cols})"
        raise ValueError(f"{name} must have shape {expected}, got shape {arr.shape}")
    if n_cols is not None and arr.shape[1] != n_cols:
        raise ValueError(f"{name} must have shape (N, {n_cols}), got shape {arr.shape}")
    if dtype is None:
        dtype = arr.dtype if arr.dtype in (np.float32, np.float64) else np.float64
    arr = np.ascontiguousarray(arr, dtype=dtype)
    if check_finite and not np.isfinite(arr).all():
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ValueError(f"{name} must be finite; it has {bad} NaN or infinite entries")
    return arr


def check_tensor(a, name: str, shape: tuple, *, device=None, dtype=None,
                 allow_bool: bool = True):
    """Validate a real-valued array or tensor and return it as a torch tensor.

    Arguments:
        a: array-like or ``torch.Tensor``.
        name: the parameter's name, used in the error messages.
        shape: the required shape; ``None`` entries accept any length, e.g. (None, dim) for a
            batch of points or (n,) for n targets.
        device, dtype: where and as what to return it (``None``: unchanged).
        allow_bool: accept boolean entries (as 0/1).

    Returns:
        ``torch.Tensor`` of the required shape on ``device`` with ``dtype``.

    Raises:
        ValueError: if ``a`` is not real-valued (complex, object, string or, unless
            ``allow_bool``, boolean), has another shape, or has NaN or infinite entries.
    """
    import torch  # here: the rest of this module is numpy-only

    if not isinstance(a, torch.Tensor):
        arr = as_numpy(a)
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.floating)
                                       or np.issubdtype(arr.dtype, np.integer)
                                       or arr.dtype == np.bool_):
            raise ValueError(f"{name} must be a real-valued array, got dtype {arr.dtype}")
        a = torch.from_numpy(np.ascontiguousarray(arr))
    if a.is_complex() or (a.dtype == torch.bool and not allow_bool):
        raise ValueError(f"{name} must be real-valued, got dtype {a.dtype}")
    if a.ndim != len(shape) or any(s is not None and n != s for n, s in zip(a.shape, shape)):
        expected = ", ".join("N" if s is None else str(s) for s in shape)
        expected = f"({expected},)" if len(shape) == 1 else f"({expected})"
        raise ValueError(f"{name} must have shape {expected}, got shape {tuple(a.shape)}")
    a = a.to(device=device if device is not None else a.device,
             dtype=dtype if dtype is not None else a.dtype)
    check_finite_tensor(a, name)
    return a


def check_finite_tensor(a, name: str) -> None:
    """Raise ValueError naming ``name`` (and how many entries are bad) unless every entry of
    the torch tensor ``a`` is finite.

    One reduction first, about 10x cheaper than ``isfinite`` + ``all`` on a batch: a NaN or
    an infinite entry makes the sum non-finite; only a non-finite sum (which a finite tensor
    gives when the sum overflows) is checked entry by entry. The sum is of a detached view:
    no autograd node, no warning for tensors that require a gradient.
    """
    import torch  # here: the rest of this module is numpy-only

    if not math.isfinite(a.detach().sum()):
        finite = torch.isfinite(a)
        if not bool(finite.all()):
            bad = int((~finite).sum())
            raise ValueError(f"{name} must be finite; it has {bad} NaN or infinite entries")


def check_instance(value, name: str, cls, what: str | None = None):
    """Return ``value`` after checking it is an instance of ``cls`` (a class or a tuple).

    Arguments:
        value: the value to check.
        name: the parameter's name, used in the error message.
        cls: the allowed class or tuple of classes.
        what: how to describe the allowed values (default: the classes' names).

    Raises:
        ParameterTypeError (a TypeError and a ValueError): naming the parameter, the allowed
            type and the type given, so that a wrong object fails at the boundary instead of
            as an AttributeError further down.
    """
    if not isinstance(value, cls):
        classes = cls if isinstance(cls, tuple) else (cls,)
        allowed = what or " or ".join(
            c.__name__ if c.__module__ == "builtins"
            else f"{c.__module__.split('.')[0]}.{c.__name__}" for c in classes)
        raise ParameterTypeError(f"{name} must be {allowed}, got {type(value).__name__} "
                                 f"{_short_repr(value)}")
    return value


def _short_repr(value, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def format_bytes(n_bytes: float) -> str:
    """``n_bytes`` in binary units, three significant digits: ``format_bytes(3 * 2**30)`` is
    '3 GiB'."""
    n_bytes = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n_bytes < 1024 or unit == "PiB":
            return f"{n_bytes:.0f} B" if unit == "B" else f"{n_bytes:.3g} {unit}"
        n_bytes /= 1024
    return f"{n_bytes:.3g} PiB"  # pragma: no cover - the loop returns


def memory_limit_bytes() -> int:
    """The physical memory of this machine in bytes (the most any one array may take); 2**40
    where the operating system does not say."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # no sysconf (Windows) or no such name
        return 2**40


def check_allocation(n_elements, itemsize: int, name: str, value, what: str = "") -> None:
    """Refuse a size parameter whose array would not fit in this machine's memory.

    Called before numpy or torch allocate, so that ``n=10**12`` gives an error naming ``n``
    and the memory it needs rather than numpy's "Unable to allocate 7.28 TiB" or torch's
    "Overflow when unpacking long long".

    Arguments:
        n_elements: number of array elements the call would allocate (any non-negative
            integer, Python ints of any size included).
        itemsize: bytes per element (8 for float64/int64, 4 for float32).
        name, value: the size parameter responsible and its value, for the message.
        what: what the memory is for (e.g. "the (n, dim) float64 sample").

    Raises:
        ValueError: naming ``name``, its value, the memory it would need and the machine's
            physical memory (``memory_limit_bytes``), if that memory is exceeded.
    """
    n_bytes = int(n_elements) * int(itemsize)
    limit = memory_limit_bytes()
    if n_bytes > limit:
        for_what = f" for {what}" if what else ""
        raise ValueError(f"{name}={value} would need {format_bytes(n_bytes)} of memory{for_what}; "
                         f"this machine has {format_bytes(limit)}: choose a smaller {name}")


def check_array_memory(sizes: dict, itemsize: int, what: str) -> None:
    """Refuse size parameters whose product of array elements would not fit in memory.

    Arguments:
        sizes: the parameters that make the array's shape, name -> value (integers, already
            checked), e.g. ``{"n_tables": 2, "n_bits": 8, "dim": 10**12}``.
        itemsize: bytes per element.
        what: what the array is (e.g. "the float64 hyperplane directions").

    Raises:
        ValueError: as ``check_allocation``, naming every parameter and blaming the largest.
    """
    n_elements = math.prod(int(v) for v in sizes.values())
    name = max(sizes, key=lambda k: int(sizes[k]))
    shape = ", ".join(f"{k}={v}" for k, v in sizes.items())
    check_allocation(n_elements, itemsize, name, sizes[name], f"{what} ({shape})")


def _range(low, high) -> str:
    if low is None and high is None:
        return ""
    if high is None:
        return f" >= {low}"
    if low is None:
        return f" <= {high}"
    return f" in [{low}, {high}]"
