"""A target of one's own: any numpy or torch function of the cube with a stated Lipschitz
bound, probed at construction."""

from __future__ import annotations

import importlib
import itertools
import warnings
from typing import Any, Callable

import numpy as np
import torch

from lipschitz._target import MAX_LIPSCHITZ_BOUND, Target
from lipschitz.estimate import estimate_lipschitz
from routing.validation import check_array_memory, check_choice, check_int, check_real, check_seed

#: Relative slack of the probe: an estimate above ``bound · (1 + PROBE_RTOL)`` is refused.
#: The estimate is a difference quotient or a gradient computed in floating point, so a bound
#: that is exactly the true constant (a linear function's ‖w‖₂) can be exceeded by rounding;
#: 1e-6 is far above that rounding and far below any understatement worth noticing.
PROBE_RTOL = 1e-6
#: Inputs up to this dimension get the 2^n corners of the cube added to the probe sample
#: (where many functions of the cube are steepest); at most 1024 points.
PROBE_CORNERS_MAX_DIM = 10
#: Step of the difference quotients standing in for the gradient of a numpy function.
_FD_STEP = 1e-5


class CustomTarget(Target):
    r"""A user's function f: [-1, 1]^n_inputs -> R with a stated ℓ2 Lipschitz bound.

    Wraps a numpy or a torch callable so that it works wherever a built-in target does
    (``make_dataset``, ``estimate_lipschitz``, ``f.torch`` on any device). The bound is the
    user's claim, not a certificate sparselab derives: at construction it is *probed* with
    ``estimate_lipschitz`` (the largest gradient norm and nearest-neighbour difference quotient,
    both lower bounds on the true constant) on a seeded sample of ``n_probe`` uniform points of
    the cube plus, for n_inputs ≤ 10, its 2^n corners; an estimate above
    ``lipschitz_bound · (1 + PROBE_RTOL)`` proves the bound wrong and is refused. A probe that
    passes does not prove the bound (the sample may miss the steepest place).

    The callable's kind is detected once: ``fn`` is called on a float64 torch tensor, and if it
    returns a tensor it is a torch function (evaluated with torch on the input's device;
    numpy input goes through a float64 CPU tensor, and autograd gives exact gradients).
    Otherwise it is a numpy function: it gets float64 arrays, and ``f.torch`` moves the input to
    the CPU and back. Its gradient for autograd (which ``estimate_lipschitz`` uses) is made
    from differences: the coordinate central differences give a direction u, and the gradient
    returned is q·u with q = |f(b) − f(a)| / ‖b − a‖₂ for the two points a, b = x ∓ h·u
    clipped into the cube — a true difference quotient of f, so its norm never overstates the
    Lipschitz constant beyond rounding (h = 1e-5; 2·n_inputs + 2 extra evaluations per point).

    Every output is checked: ``fn`` must return a real array of shape (N,) with finite entries
    for input of shape (N, n_inputs).

    Arguments:
        fn: a callable taking a float (N, n_inputs) array or tensor and returning (N,) values.
        n_inputs: the input dimension n ≥ 1.
        lipschitz_bound: the stated ℓ2 Lipschitz bound of ``fn`` on [-1, 1]^n, ≥ 0.
        name: a label for plots and ``repr`` (default: ``fn``'s ``__name__``).
        backend: "auto" (detect, as above), "numpy" or "torch".
        n_probe: number of uniform probe points, ≥ 2 (default 2048).
        seed: seed of the probe sample, ≥ 0.

    Attributes:
        probe: the ``LipschitzEstimate`` measured at construction.
        backend: "numpy" or "torch", the detected or given kind of ``fn``.

    Raises:
        ValueError: ``fn`` not callable; ``n_inputs``, ``lipschitz_bound`` (in [0, 1e100],
            ``MAX_LIPSCHITZ_BOUND``), ``n_probe``, ``seed`` or ``backend`` out of range;
            ``n_probe`` · ``n_inputs`` too large for memory; ``fn`` failing on, or returning a
            wrong shape, dtype or a non-finite value for, a batch of probe points; or a probe
            estimate above the bound (the message quotes the measured value and the bound).

    Example:
        >>> import numpy as np
        >>> f = CustomTarget(lambda X: np.sin(X).sum(axis=1), n_inputs=3,
        ...                  lipschitz_bound=3 ** 0.5)
        >>> f(np.zeros((2, 3)))
        array([0., 0.])
    """

    def __init__(self, fn: Callable, n_inputs: int, lipschitz_bound: float, *,
                 name: str | None = None, backend: str = "auto", n_probe: int = 2048,
                 seed: int = 0):
        if not callable(fn):
            raise ValueError(f"fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.n_inputs = check_int(n_inputs, "n_inputs", low=1)
        self._bound = check_real(lipschitz_bound, "lipschitz_bound", low=0.0,
                                 high=MAX_LIPSCHITZ_BOUND)
        self.name = str(name) if name is not None else getattr(fn, "__name__", "custom")
        backend = check_choice(backend, "backend", ("auto", "numpy", "torch"))
        self.n_probe = check_int(n_probe, "n_probe", low=2)
        # the probe points, their gradients and values and the k-d tree: about 4 copies
        check_array_memory({"n_probe": self.n_probe, "n_inputs": self.n_inputs}, 32,
                           "the float64 probe points, their gradients and neighbour search")
        self.seed = check_seed(seed)
        X = probe_points(self.n_inputs, self.n_probe, self.seed)
        self.backend = _detect_backend(fn, X) if backend == "auto" else backend
        # at most n - 1 neighbours on n probe points: a small n_probe is valid, not an error
        # about estimate_lipschitz's n_neighbors, which the user never gave
        self.probe = estimate_lipschitz(self, X, n_neighbors=min(4, len(X) - 1))
        if self.probe.value > self._bound * (1.0 + PROBE_RTOL):
            raise ValueError(
                f"lipschitz_bound={self._bound:.6g} is below the Lipschitz constant measured "
                f"on {self.probe.n_points} probe points: {self.probe.value:.6g} (largest "
                f"gradient norm {self.probe.gradient:.6g}, largest difference quotient "
                f"{self.probe.difference_quotient:.6g}); state a bound of at least "
                f"{self.probe.value:.6g}")

    @property
    def lipschitz_bound(self) -> float:
        """The stated ℓ2 Lipschitz bound (probed at construction, not proved)."""
        return self._bound

    def config(self) -> dict[str, Any]:
        """JSON-serialisable description; ``fn`` as "module:qualname" (``from_config`` can
        rebuild the target when that name is importable, i.e. not a lambda or a local)."""
        module = getattr(self.fn, "__module__", None)
        qualname = getattr(self.fn, "__qualname__", None)
        return {"family": "CustomTarget", "fn": f"{module}:{qualname}",
                "n_inputs": self.n_inputs, "lipschitz_bound": self._bound, "name": self.name,
                "backend": self.backend, "n_probe": self.n_probe, "seed": self.seed}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "CustomTarget":
        """Rebuild a target from ``config()``: imports ``fn`` by its "module:qualname".

        Raises:
            ValueError: a function that cannot be imported by name (a lambda, a function
                defined inside another, a module not on the path), or as the constructor.
        """
        params = dict(config)
        params.pop("family", None)
        reference = str(params.pop("fn", ""))
        module_name, _, qualname = reference.partition(":")
        if not module_name or not qualname or "<" in qualname:
            raise ValueError(f"fn {reference!r} cannot be imported by name: give a function "
                             "defined at the top level of an importable module")
        try:
            obj = importlib.import_module(module_name)
            for part in qualname.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError) as error:
            raise ValueError(f"fn {reference!r} cannot be imported: {error}") from None
        return cls(obj, **params)

    def _numpy(self, X: np.ndarray) -> np.ndarray:
        if self.backend == "torch":
            with torch.no_grad():
                y = self.fn(torch.from_numpy(X))
            return _check_output(y, X.shape[0], self.name).to(torch.float64).numpy()
        y = _check_output(self.fn(X), X.shape[0], self.name)
        return y.detach().to("cpu", torch.float64).numpy() if isinstance(y, torch.Tensor) else y

    def _torch(self, X: torch.Tensor) -> torch.Tensor:
        if self.backend == "torch":
            return _check_output(self.fn(X), X.shape[0], self.name).to(X.dtype)
        return _NumpyFunction.apply(X, self)


def probe_points(n_inputs: int, n_probe: int, seed: int) -> np.ndarray:
    """The probe sample of ``CustomTarget``: ``n_probe`` uniform points of [-1, 1]^n_inputs
    (``numpy.random.default_rng(seed)``) followed, for n_inputs ≤ 10, by the 2^n corners.

    Returns:
        float64 array (n_probe [+ 2^n_inputs], n_inputs).
    """
    X = np.random.default_rng(seed).uniform(-1.0, 1.0, size=(n_probe, n_inputs))
    if n_inputs <= PROBE_CORNERS_MAX_DIM:
        corners = np.array(list(itertools.product((-1.0, 1.0), repeat=n_inputs)))
        X = np.vstack([X, corners])
    return X


def _detect_backend(fn: Callable, X: np.ndarray) -> str:
    """"torch" when ``fn`` maps a float64 tensor that requires grad to a tensor carrying that
    grad (so autograd and devices work), else "numpy"."""
    Xt = torch.from_numpy(X[:2].copy()).requires_grad_(True)
    try:
        with warnings.catch_warnings():  # numpy's complaints about tensors it was handed
            warnings.simplefilter("ignore")
            y = fn(Xt)
    except Exception:  # noqa: BLE001 - any failure on a tensor means: not a torch function
        y = None
    if isinstance(y, torch.Tensor) and y.requires_grad:
        return "torch"
    try:
        fn(X[:2].copy())
    except Exception as error:  # noqa: BLE001 - reported with the shape it was given
        raise ValueError(f"fn failed on a float64 array (and on a float64 tensor) of shape "
                         f"(2, {X.shape[1]}): {type(error).__name__}: {error}") from error
    return "numpy"


def _check_output(y, n: int, name: str):
    """``y`` as float64 ndarray (numpy) or a floating tensor (torch), shape (n,), finite.

    Raises:
        ValueError: another shape, a non-real dtype or a non-finite entry.
    """
    if isinstance(y, torch.Tensor):
        if y.is_complex() or y.dtype == torch.bool:
            raise ValueError(f"fn ({name}) must return real values, got dtype {y.dtype}")
        shape, finite = tuple(y.shape), bool(torch.isfinite(y.detach()).all())
        y = y if torch.is_floating_point(y) else y.to(torch.float64)
    else:
        y = np.asarray(y)
        if not (np.issubdtype(y.dtype, np.floating) or np.issubdtype(y.dtype, np.integer)):
            raise ValueError(f"fn ({name}) must return real values, got dtype {y.dtype}")
        y = y.astype(np.float64, copy=False)
        shape, finite = y.shape, bool(np.isfinite(y).all())
    if shape != (n,):
        raise ValueError(f"fn ({name}) must return shape ({n},) for input of shape "
                         f"({n}, n_inputs), got {shape} (reshape to one value per row)")
    if not finite:
        raise ValueError(f"fn ({name}) returned NaN or infinite values on points of the cube")
    return y


class _NumpyFunction(torch.autograd.Function):
    """A numpy target inside autograd: forward on CPU float64, backward from differences
    (``CustomTarget``'s docstring gives the construction and why its norm is honest)."""

    @staticmethod
    def forward(ctx, X: torch.Tensor, target: CustomTarget) -> torch.Tensor:
        x = X.detach().to("cpu", torch.float64).numpy()
        ctx.target, ctx.x, ctx.device, ctx.dtype = target, x, X.device, X.dtype
        return torch.from_numpy(target._numpy(x)).to(X.device, X.dtype)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        gradient = _difference_gradient(ctx.target._numpy, ctx.x)  # (N, n)
        g = torch.from_numpy(gradient).to(ctx.device, ctx.dtype)
        return grad_output[:, None] * g, None


def _difference_gradient(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """(N, n) vectors q·u: u the unit direction of the central-difference gradient of f at
    each row of ``x``, q the difference quotient of f between x ∓ h·u clipped into the cube."""
    n_rows, n = x.shape
    steps = _FD_STEP * np.eye(n)
    plus = np.clip(x[:, None, :] + steps, -1.0, 1.0).reshape(-1, n)   # (N·n, n)
    minus = np.clip(x[:, None, :] - steps, -1.0, 1.0).reshape(-1, n)
    width = (plus - minus).reshape(n_rows, n, n).sum(axis=2)            # (N, n): 2h or less
    direction = (f(plus) - f(minus)).reshape(n_rows, n) / width
    norm = np.linalg.norm(direction, axis=1, keepdims=True)
    unit = np.divide(direction, norm, out=np.zeros_like(direction), where=norm > 0)
    a = np.clip(x - _FD_STEP * unit, -1.0, 1.0)
    b = np.clip(x + _FD_STEP * unit, -1.0, 1.0)
    distance = np.linalg.norm(b - a, axis=1)
    rise = f(b) - f(a)  # ≥ 0 up to rounding: u points uphill
    quotient = np.divide(rise, distance, out=np.zeros(n_rows), where=distance > 0)
    return quotient[:, None] * unit
