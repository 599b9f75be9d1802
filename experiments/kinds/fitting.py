"""Fitting the trainable top layer of a model: exact ridge least squares, or Adam on the MSE.

Every model of ``routing.models`` is g(x) = bias + θ · features(x) with frozen features, so
its best top layer on a training set is a linear least-squares problem (Baykal et al. 2022,
§5.1 train the top layer with an optimiser; the exact fit removes optimiser noise from scaling
comparisons, and ``FitReport.fit`` records which was used).

``fit="exact"`` minimises Σ_n (g(x_n) − y_n)² + λ‖θ‖² (the bias is not penalised) through the
normal equations in float64, built from the sparse features without forming the dense design:

* dense features (``Dense``): G = ΦᵀΦ by matrix products over chunks of rows (on CPU
  BLAS ``dsyrk``, the upper triangle only: half the products of ``addmm``, 1.9× faster at
  2,048 features);
* sparse features with at most ``MAX_DENSE_COEF`` coefficients (``DSM``, ``RandomHashModel``):
  each example touches a coefficients, so G is accumulated by scattering its a×a block
  (O(N·a²): a Numba kernel on the upper triangle on CPU, ``index_add_`` elsewhere; reference
  ``_scatter_gram_reference``) when a <= n_coef/``SCATTER_RATIO``; for denser features the
  chunk is densified and multiplied (O(N·n_coef²) but far faster per operation);
* larger sparse problems: Φ as a ``scipy.sparse`` matrix and G = ΦᵀΦ sparse, solved by
  sparse LU (``spsolve``) when λ > 0 and by LSQR on Φ (minimum norm) when λ = 0;
* sparse features without an output bias and with several values per example (``LSHModel``
  with s > 1 tables or Δ > 0: n_tables·2^n_bits buckets), whatever their number: LSQR on Φ
  with unit-norm columns (Jacobi-preconditioned, the ridge as extra rows: ``_lsqr_jacobi``),
  never forming G, whose LU fills in (measured: 72 s against 0.2 s).

Whenever each example has a single feature and there is no bias (the LSH model with one table
and Δ = 0, any size), G is diagonal: it is never formed, and the exact fit is the
bucket means Σ_{x_n in z} y_n / (count_z + λ); with s > 1 tables it is the joint least-squares
fit of all tables (what SGD converges to), not the average of per-table means
(``routing.LSHTable``'s estimator). With Δ > 0 it is a least-squares polynomial per bucket.

Coefficients that no training example activates (G_jj = 0: unused units, empty buckets) are
left out of the system and set to 0 in the centred problem below, which is also where SGD
leaves them. The ridge is
relative: λ = ``ridge`` · mean(G_jj over the active coefficients), so the default 1e-6 is a
numerical jitter invariant to the number of samples and the feature scale. Dense systems are
Jacobi-scaled and solved by Cholesky, with an eigendecomposition pseudo-inverse (minimum
norm) as the fallback for numerically singular systems (ridge = 0 with collinear features).

Both fits see centred targets y − ȳ (ȳ the training targets' mean) and add ȳ back through
``model.shift_output``: for a model with an unpenalised output bias (dense, DSM, random hash)
the exact solution is the same as on y; for the LSH model, which has none, a bucket that no
training point reaches predicts ȳ rather than 0 (``routing.LSHTable``'s fallback), in both
fits alike.

``fit="adam"`` runs Adam on the mean squared error (``AdamConfig``) of standardised targets
z = (y − ȳ)/s_y (s_y the training targets' population standard deviation; 1 if they are
constant), then maps the top layer back to the units of y (θ ← s_y·θ, bias ← s_y·bias, and
the mean through ``shift_output``): Adam's steps have a fixed size in parameter space, so
without this the same learning rate and step budget would train a target of standard
deviation 3e-3 (the random polynomial of Baykal et al. §5.1) and one of 1 to different
relative errors; ``experiments.kinds.router_training`` standardises the routers' targets the same
way. The loss history is on the standardised scale; ``train_mse`` is in the units of y. The
sparse frozen features
of the training set (N·k indices and values; the routing of DSM, RandomHashModel, LSHModel)
are computed once and cached when they fit in ``AdamConfig.max_cache_bytes``, so a step costs
only the top layer; dense features (N·width values) and larger caches are recomputed per
batch (at small dim, gathering cached dense rows is no faster than recomputing them: measured
2.5× slower for width 4096). Deterministic given ``seed`` on CPU.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np
import scipy.sparse
import scipy.sparse.linalg
from scipy.linalg.blas import dsyrk as syrk
import torch
from numba import njit
from tqdm.auto import tqdm

from routing.models import Features, RegressionModel
from routing.validation import check_bool, check_int, check_real, check_seed, check_tensor

__all__ = ["AdamConfig", "FitReport", "fit_model", "evaluate", "adam_optimizer", "clear_grads",
           "MAX_DENSE_COEF"]

FITS = ("exact", "adam")
SCHEDULES = ("cosine", "constant")
# Dense normal equations of at most this many coefficients (2 GiB in float64).
MAX_DENSE_COEF = 16384
# Scatter a×a blocks while a·SCATTER_RATIO <= n_coef; above, densify the chunk and multiply.
# Measured on CPU (float64, one thread, DSM width 2048, N = 20000): the Numba scatter of the
# upper triangle (~10 ns per entry: cache misses in G) takes 0.55 s at k = 64 and 7.2 s at
# k = 256, the matrix product 3.6–4.3 s whatever k: the crossover is near width/k ≈ 12.
SCATTER_RATIO = 12
# Entries of the sparse G = ΦᵀΦ the scipy path accepts (about 1.5 GiB).
MAX_SPARSE_GRAM = 2**27
_CHUNK_ELEMENTS = 2**22  # feature values (or scattered block entries) per chunk of rows


@dataclass(frozen=True)
class AdamConfig:
    """Settings of ``fit="adam"`` (Adam on the MSE of the top layer).

    Attributes:
        lr: Adam learning rate (default 1e-3, Adam's usual default).
        batch_size: examples per step (default 256; the whole set if it is smaller).
        steps: number of steps; ``None`` (default) means ``epochs`` passes over the data.
        epochs: passes over the data when ``steps`` is None (default 20); each pass is a new
            random permutation, an incomplete last batch is dropped.
        schedule: "cosine" (default: lr · (1 + cos(π·step/steps))/2, decaying to 0, which
            lets Adam settle near the least-squares solution) or "constant".
        betas: Adam's (β1, β2), default (0.9, 0.999).
        cache_features: cache the training set's sparse frozen features (default True) when
            they take at most ``max_cache_bytes`` (default 1 GiB); dense features never are.
            Where two copies fit in it, each epoch's rows are copied once in the epoch's
            order, so that a batch is a slice rather than a gather (the same numbers).

    Raises:
        ValueError: for values outside lr > 0, batch_size >= 1, steps >= 1, epochs >= 1,
            the schedules above, 0 <= β < 1, max_cache_bytes >= 0.
    """

    lr: float = 1e-3
    batch_size: int = 256
    steps: int | None = None
    epochs: int = 20
    schedule: str = "cosine"
    betas: tuple[float, float] = (0.9, 0.999)
    cache_features: bool = True
    max_cache_bytes: int = 2**30

    def __post_init__(self):
        check_real(self.lr, "lr", 0.0, low_open=True)
        check_int(self.batch_size, "batch_size", 1)
        if self.steps is not None:
            check_int(self.steps, "steps", 1)
        check_int(self.epochs, "epochs", 1)
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if len(self.betas) != 2:
            raise ValueError(f"betas must be a pair (β1, β2), got {self.betas!r}")
        for i, beta in enumerate(self.betas):
            check_real(beta, f"betas[{i}]", 0.0, 1.0, high_open=True)
        check_bool(self.cache_features, "cache_features")
        check_int(self.max_cache_bytes, "max_cache_bytes", 0)


@dataclass
class FitReport:
    """What ``fit_model`` did.

    Attributes:
        fit: "exact" or "adam".
        train_mse: mean squared error of the fitted model on the training set (recomputed
            after fitting, not a running average).
        steps: optimiser steps (0 for the exact fit).
        epochs: passes over the training data (steps·batch_size/N for Adam; 1 for exact).
        wall_s: seconds spent in ``fit_model``.
        n_train: training examples.
        device: where the fit ran.
        solver: "cholesky" or "eigh-pinv" (dense normal equations), "diagonal" (bucket
            means), "sparse-lu" or "lsqr" (sparse normal equations); "adam" (the Adam fit).
        ridge: the relative ridge argument; ridge_abs: the λ actually added (exact only).
        features_cached: whether Adam trained on cached features (None for exact).
        loss_history: (step, batch loss) about 100 times during the Adam fit, the loss on the
            standardised targets (dimensionless).
        adam: the ``AdamConfig`` as a dict (None for exact).
        target_mean: ȳ, the training targets' mean both fits centre by (units of y).
        target_scale: s_y, the standard deviation the Adam fit divides the centred targets by (units
            of y; None for exact, which does not scale).
    """

    fit: str
    train_mse: float
    steps: int
    epochs: float
    wall_s: float
    n_train: int
    device: str
    solver: str
    ridge: float | None = None
    ridge_abs: float | None = None
    features_cached: bool | None = None
    loss_history: list[tuple[int, float]] = field(default_factory=list)
    adam: dict | None = None
    target_mean: float | None = None
    target_scale: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def fit_model(model: RegressionModel, X, y, fit: str = "exact", *, adam: AdamConfig | None = None,
              ridge: float = 1e-6, seed: int = 0, progress: bool = False) -> FitReport:
    """Fit the top layer of ``model`` to (X, y) in place.

    Arguments:
        model: an ``routing.models`` model; its device and dtype are used.
        X: (N, dim) array or tensor, N >= 1; moved to the model's device.
        y: (N,) targets.
        fit: "exact" (ridge least squares on centred targets) or "adam" (Adam on standardised
            targets); both add the targets' mean back (module docstring).
        adam: the Adam settings (default ``AdamConfig()``); ignored by the exact fit.
        ridge: relative ridge of the exact fit, >= 0 (see the module docstring).
        seed: seed of the Adam batch order (the model's own seed fixes its frozen parts).
        progress: show a progress bar (Adam steps, exact-fit chunks).

    Returns:
        ``FitReport``.

    Raises:
        ValueError: for an unknown ``fit``, a negative ridge, X or y of the wrong shape or
            not finite, or an exact fit too large for memory (more than MAX_DENSE_COEF
            coefficients with dense features, or a sparse normal matrix beyond
            MAX_SPARSE_GRAM entries): use fit="adam" then; an Adam fit that diverged (NaN or
            infinite parameters or loss), naming ``lr``.
        NotImplementedError: a model with neither an output bias nor its own
            ``shift_output`` (the fits add the targets' mean back through it).
    """
    if not isinstance(model, RegressionModel):
        raise ValueError(f"model must be an routing.models model, got {type(model).__name__}")
    if fit not in FITS:
        raise ValueError(f"fit must be one of {FITS}, got {fit!r}")
    ridge = check_real(ridge, "ridge", 0.0)
    seed = check_seed(seed)
    progress = check_bool(progress, "progress")
    if adam is None:
        adam = AdamConfig()
    elif not isinstance(adam, AdamConfig):
        raise ValueError(f"adam must be an AdamConfig, got {type(adam).__name__}")
    X = model.prepare(X)
    y = _prepare_targets(y, len(X), model)
    if len(X) == 0:
        raise ValueError("X must have at least one row")
    start = time.perf_counter()
    mean = float(y.to(torch.float64).mean())
    if fit == "exact":
        report = _fit_exact(model, X, y, mean, ridge, progress)
    else:
        report = _fit_adam(model, X, y, mean, adam, seed, progress)
    report.wall_s = time.perf_counter() - start
    return report


@torch.no_grad()
def evaluate(model: RegressionModel, X, y, batch_size: int = 8192) -> dict[str, float]:
    """Mean squared error and ℓ∞ error (max |g(x) − y|) of ``model`` on (X, y).

    Arguments:
        model: a model; X (N, dim) and y (N,) arrays or tensors, N >= 1.
        batch_size: rows per forward pass.

    Returns:
        {"mse": float, "linf": float}, computed in float64; both finite.

    Raises:
        ValueError: if X or y has the wrong shape or is not finite, or N = 0; or, naming
            ``model``, when a prediction is NaN or infinite, or the squared errors overflow
            float64 (a metric never hides a NaN: max(0, nan) would read 0).
    """
    X = model.prepare(X)
    y = _prepare_targets(y, len(X), model).to(torch.float64)
    if len(X) == 0:
        raise ValueError("X must have at least one row")
    batch_size = check_int(batch_size, "batch_size", 1)
    sq, worst = 0.0, 0.0
    for lo in range(0, len(X), batch_size):
        pred = model(X[lo:lo + batch_size]).to(torch.float64)
        bad = int((~torch.isfinite(pred)).sum())
        if bad:
            raise ValueError(f"model gives {bad} NaN or infinite predictions on rows "
                             f"{lo}..{lo + len(pred) - 1} of X: its parameters are not finite "
                             "or overflow (a diverged fit?)")
        err = pred - y[lo:lo + batch_size]
        sq += float((err * err).sum())
        worst = max(worst, float(err.abs().max()))
    return {"mse": _finite_metric(sq / len(X), "mse"), "linf": _finite_metric(worst, "linf")}


def _finite_metric(value: float, name: str) -> float:
    """``value`` if finite, else a ValueError: finite predictions whose errors overflow."""
    if not math.isfinite(value):
        raise ValueError(f"model's {name} overflows float64 ({value}): its predictions or y "
                         "are too large; rescale y")
    return value


# --------------------------------------------------------------------------------------------
# exact fit


def _fit_exact(model, X, y, mean, ridge, progress) -> FitReport:
    """Ridge least squares on the centred targets y − mean, then ``shift_output(mean)``."""
    n = len(X)
    y_centred = (y.to(torch.float64) - mean).to(y.dtype)
    probe = model.features(X[:1])
    width = probe.vals.shape[1]  # features per example (a)
    sparse = probe.cols is not None
    n_coef = model.n_coef
    if sparse and width == 1 and model.output_bias is None:
        # one coefficient per example (the LSH model with one table, degree 0): the normal
        # matrix is diagonal, so the solution is per-bucket — the bucket means for indicator
        # features — without forming an n_coef × n_coef matrix
        theta, bias, solver, lam = _solve_diagonal(model, X, y_centred, ridge, progress)
    elif sparse and model.output_bias is None:
        # bucket models with several values per example (LSHModel with s > 1 tables or
        # Δ > 0): LSQR on the sparse design. The normal matrix of s tables of 2^m buckets is
        # s·2^m square, and LU on it fills in: measured on 20000 points in 8-D, s = 4 tables
        # of 2^14 buckets took 72 s by sparse LU and 0.2 s by plain LSQR (0.15 s against 30 s
        # by dense Cholesky for 4 × 2^12), the two agreeing to 1e-9 on the fitted values
        theta, bias, solver, lam = _solve_sparse(model, X, y_centred, ridge, progress,
                                                 method="lsqr")
    elif n_coef <= MAX_DENSE_COEF:
        G, r = _normal_equations_dense(model, X, y_centred, sparse, width, progress)
        theta, bias, solver, lam = _solve_dense(G, r, n_coef, ridge)
    elif sparse:
        gram_entries = min(n_coef**2, n * width**2)
        if gram_entries > MAX_SPARSE_GRAM:
            raise ValueError(f"fit='exact' would need a sparse normal matrix of up to "
                             f"{gram_entries} entries (at most {MAX_SPARSE_GRAM}); "
                             f"use fit='adam'")
        theta, bias, solver, lam = _solve_sparse(model, X, y_centred, ridge, progress)
    else:
        raise ValueError(f"fit='exact' needs a {n_coef}×{n_coef} normal matrix; at most "
                         f"{MAX_DENSE_COEF} coefficients (width) are supported; use fit='adam'")
    model.set_coefficients(theta, bias)
    model.shift_output(mean)
    train_mse = evaluate(model, X, y)["mse"]
    return FitReport(fit="exact", train_mse=train_mse, steps=0, epochs=1.0, wall_s=0.0,
                     n_train=n, device=str(X.device), solver=solver, ridge=ridge,
                     ridge_abs=lam, target_mean=mean)


@torch.no_grad()
def _solve_diagonal(model, X, y, ridge, progress):
    """Exact ridge solution when every example has one feature: θ_j = Σ v y / (Σ v² + λ)
    over the examples of coefficient j (0 for coefficients no example touches)."""
    n_coef = model.n_coef
    diag = torch.zeros(n_coef, dtype=torch.float64, device=X.device)
    r = torch.zeros(n_coef, dtype=torch.float64, device=X.device)
    y64 = y.to(torch.float64)
    for lo in _chunks(len(X), _CHUNK_ELEMENTS, progress, "bucket sums"):
        f = model.features(X[lo:lo + _CHUNK_ELEMENTS])
        v = f.vals[:, 0].to(torch.float64)
        diag.index_add_(0, f.cols[:, 0], v * v)
        r.index_add_(0, f.cols[:, 0], v * y64[lo:lo + len(f)])
    active = diag > 0
    lam = float(ridge * diag[active].mean()) if bool(active.any()) else 0.0
    theta = torch.where(active, r / (diag + lam), torch.zeros_like(r))
    return theta, None, "diagonal", lam


def _chunks(n: int, rows: int, progress: bool, what: str):
    starts = range(0, n, max(1, rows))
    return tqdm(starts, desc=what, disable=not progress, leave=False)


@torch.no_grad()
def _normal_equations_dense(model, X, y, sparse, width, progress):
    """(G, r) of the system [θ; bias], float64 on the model's device (bias row last if any)."""
    n_coef = model.n_coef
    has_bias = model.output_bias is not None
    size = n_coef + has_bias
    device = X.device
    G = torch.zeros(size, size, dtype=torch.float64, device=device)
    r = torch.zeros(size, dtype=torch.float64, device=device)
    scatter = sparse and width * SCATTER_RATIO <= n_coef
    if scatter and device.type != "cpu":
        rows = _CHUNK_ELEMENTS // (width * width)  # the reference builds (rows, a, a) blocks
    else:
        rows = _CHUNK_ELEMENTS // (width if scatter else n_coef)
    y64 = y.to(torch.float64)
    # on CPU the dense products accumulate the upper triangle of ΦᵀΦ in a Fortran-ordered
    # array (``scipy.linalg.blas.dsyrk`` updates it in place), mirrored at the end
    upper = (np.zeros((n_coef, n_coef), order="F")
             if device.type == "cpu" and not scatter else None)
    for lo in _chunks(len(X), rows, progress, "normal equations"):
        f = model.features(X[lo:lo + max(1, rows)])
        yc = y64[lo:lo + len(f)]
        V = f.vals.to(torch.float64)  # (c, a)
        if scatter:
            colsum = torch.zeros(n_coef, dtype=torch.float64, device=device)
            if device.type == "cpu":  # upper triangle only, mirrored below
                _scatter_gram_upper(f.cols.contiguous().numpy(), V.contiguous().numpy(),
                                    yc.contiguous().numpy(), G.numpy(), r.numpy(),
                                    colsum.numpy())
            else:
                _scatter_gram_reference(f.cols, V, yc, G, r, colsum)
            if has_bias:
                G[:n_coef, n_coef] += colsum
        else:
            if sparse:  # densify the chunk: (c, n_coef)
                V = torch.zeros(len(f), n_coef, dtype=torch.float64,
                                device=device).scatter_(1, f.cols, V)
            if upper is not None:  # BLAS syrk: the upper triangle, half gemm's products
                upper = syrk(1.0, V.contiguous().numpy().T, beta=1.0, c=upper, trans=0,
                             lower=0, overwrite_c=1)
            else:
                G[:n_coef, :n_coef].addmm_(V.T, V)
            r[:n_coef].addmv_(V.T, yc)
            if has_bias:
                G[:n_coef, n_coef] += V.sum(dim=0)
        if has_bias:
            r[n_coef] += yc.sum()
            G[n_coef, n_coef] += len(f)
    if upper is not None:
        G[:n_coef, :n_coef] = torch.from_numpy(np.triu(upper) + np.triu(upper, 1).T)
    if scatter and device.type == "cpu":
        G[:n_coef, :n_coef] = torch.triu(G[:n_coef, :n_coef]) + torch.triu(G[:n_coef, :n_coef], 1).T
    if has_bias:
        G[n_coef, :n_coef] = G[:n_coef, n_coef]
    return G, r


@njit(cache=True)
def _scatter_gram_upper(cols, vals, y, G, r, colsum):
    """G[ci, cj] += v_i v_j for i <= j (cols increasing per row, so ci <= cj: the upper
    triangle), r[ci] += v_i y, colsum[ci] += v_i, for every row. Serial; O(N·a²/2)."""
    n, a = cols.shape
    for row in range(n):
        c = cols[row]
        v = vals[row]
        for i in range(a):
            ci = c[i]
            vi = v[i]
            r[ci] += vi * y[row]
            colsum[ci] += vi
            Gi = G[ci]
            for j in range(i, a):
                Gi[c[j]] += vi * v[j]


def _scatter_gram_reference(cols, V, y, G, r, colsum):
    """Torch version of :func:`_scatter_gram_upper` on the full square (any device)."""
    size = G.shape[0]
    block = (V[:, :, None] * V[:, None, :]).reshape(-1)  # (c·a·a,)
    index = (cols[:, :, None] * size + cols[:, None, :]).reshape(-1)
    G.view(-1).index_add_(0, index, block)
    r.index_add_(0, cols.reshape(-1), (V * y[:, None]).reshape(-1))
    colsum.index_add_(0, cols.reshape(-1), V.reshape(-1))


def _solve_dense(G, r, n_coef, ridge):
    """Solve (G + λ·I_θ) w = r on the active coefficients; returns (θ, bias, solver, λ)."""
    size = G.shape[0]
    diag = G.diagonal()
    active = (diag > 0).nonzero()[:, 0]
    is_theta = active < n_coef
    lam = float(ridge * diag[active][is_theta].mean()) if bool(is_theta.any()) else 0.0
    Ga = G[active][:, active]
    Ga.diagonal().add_(lam * is_theta.to(Ga.dtype))
    ra = r[active]
    scale = Ga.diagonal().rsqrt()  # Jacobi scaling: unit diagonal
    Gs = Ga * scale[:, None] * scale[None, :]
    L, info = torch.linalg.cholesky_ex(Gs)
    # a numerically singular system (ridge 0, collinear features) may still factor, with
    # pivots at rounding level: its solution would blow up along the null space
    eps = torch.finfo(Gs.dtype).eps
    singular = int(info) != 0 or float(L.diagonal().min()) ** 2 < 1e3 * len(Gs) * eps
    if not singular:
        ws = torch.cholesky_solve((ra * scale)[:, None], L)[:, 0]
        solver = "cholesky"
    else:  # singular (ridge 0, collinear features): minimum-norm solution
        evals, evecs = torch.linalg.eigh(Gs)
        keep = evals > evals.max() * len(evals) * torch.finfo(evals.dtype).eps
        V = evecs[:, keep]
        ws = V @ ((V.T @ (ra * scale)) / evals[keep])
        solver = "eigh-pinv"
    w = torch.zeros(size, dtype=torch.float64, device=G.device)
    w[active] = ws * scale
    bias = w[n_coef] if size > n_coef else None
    return w[:n_coef], bias, solver, lam


@torch.no_grad()
def _solve_sparse(model, X, y, ridge, progress, method: str = "lu"):
    """Sparse least squares with scipy; returns (θ, bias, solver, λ). ``method`` "lu": sparse
    normal equations by sparse LU when λ > 0, LSQR on the design otherwise (or when LU fails);
    "lsqr": LSQR on the design always, never forming ΦᵀΦ."""
    n_coef = model.n_coef
    has_bias = model.output_bias is not None
    cols, vals = [], []
    for lo in _chunks(len(X), 2**16, progress, "sparse features"):
        f = model.features(X[lo:lo + 2**16])
        cols.append(f.cols.cpu().numpy())
        vals.append(f.vals.to(torch.float64).cpu().numpy())
    cols, vals = np.concatenate(cols), np.concatenate(vals)
    n, a = cols.shape
    indptr = np.arange(0, n * a + 1, a)
    Phi = scipy.sparse.csr_matrix((vals.ravel(), cols.ravel(), indptr), shape=(n, n_coef))
    if has_bias:
        Phi = scipy.sparse.hstack([Phi, np.ones((n, 1))], format="csr")
    yn = y.to(torch.float64).cpu().numpy()
    if method == "lsqr":
        G = None
        diag = np.asarray(Phi.multiply(Phi).sum(axis=0)).ravel()
    else:
        G = (Phi.T @ Phi).tocsc()
        diag = G.diagonal()
    active = np.flatnonzero(diag > 0)
    is_theta = active < n_coef
    lam = float(ridge * diag[active][is_theta].mean()) if is_theta.any() else 0.0
    wa, solver = None, "sparse-lu"
    if lam > 0 and G is not None:  # positive definite
        r = Phi.T @ yn
        Ga = (G[active][:, active] + scipy.sparse.diags(lam * is_theta.astype(np.float64))).tocsc()
        ra = r[active]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", scipy.sparse.linalg.MatrixRankWarning)
            wa = scipy.sparse.linalg.spsolve(Ga, ra)
        if not (np.all(np.isfinite(wa))
                and np.linalg.norm(Ga @ wa - ra) <= 1e-8 * max(np.linalg.norm(ra), 1e-300)):
            wa = None
    if wa is None and method == "lsqr":
        wa = _lsqr_jacobi(Phi[:, active], yn, lam * is_theta, diag[active])
        solver = "lsqr"
    if wa is None:  # ridge 0 (possibly singular): minimum-norm least squares on the design
        wa = scipy.sparse.linalg.lsqr(Phi[:, active], yn, damp=math.sqrt(lam), atol=1e-14,
                                      btol=1e-14, iter_lim=20 * len(active) + 100)[0]
        solver = "lsqr"
    w = np.zeros(Phi.shape[1])
    w[active] = wa
    device = model.device
    theta = torch.from_numpy(w[:n_coef]).to(device)
    bias = torch.tensor(w[n_coef]).to(device) if has_bias else None
    return theta, bias, solver, lam


def _lsqr_jacobi(Phi, y: np.ndarray, penalty: np.ndarray, diag: np.ndarray) -> np.ndarray:
    """argmin_w ‖Φw − y‖² + Σ_j penalty_j·w_j² by LSQR on column-scaled variables.

    With D = diag(diag^(−1/2)) (unit columns, Jacobi preconditioning) and w = D·u, LSQR
    solves the stacked system [Φ·D; diag(√penalty)·D]·u = [y; 0], the same objective in u;
    the scaling cut the iterations tenfold on LSH tables (1971 → 149 for 16 tables of 2^10
    buckets on 20000 points). With a zero penalty the solution is the least-squares one of
    least ‖D⁻¹w‖ (unique fitted values; the minimum norm in u, not in w).

    Arguments:
        Phi: (N, P) scipy sparse design, every column non-zero.
        y: (N,) float64 targets.
        penalty: (P,) float64 ridge per column, >= 0.
        diag: (P,) float64 squared column norms of Phi, > 0.

    Returns:
        w: (P,) float64.
    """
    scale = 1.0 / np.sqrt(diag)
    D = scipy.sparse.diags(scale)
    A = scipy.sparse.vstack([Phi @ D, scipy.sparse.diags(np.sqrt(penalty) * scale)], format="csr")
    b = np.concatenate([y, np.zeros(len(diag))])
    u = scipy.sparse.linalg.lsqr(A, b, atol=1e-14, btol=1e-14,
                                 iter_lim=20 * len(diag) + 100)[0]
    return scale * u


# --------------------------------------------------------------------------------------------
# Adam


def adam_optimizer(params, lr: float = 1e-3, betas=(0.9, 0.999)) -> torch.optim.Adam:
    """``torch.optim.Adam`` over ``params``, in torch's fused implementation where it has one.

    The fused Adam (one kernel for every parameter; CPU since torch 2.4, and CUDA) is the same
    algorithm as the default multi-tensor one, equal up to rounding; on the small top layers
    here it cut the optimiser step from about 0.6 to 0.35 ms. Where torch has no fused Adam
    for these parameters (older torch on CPU, other devices) the default one is used.

    Raises:
        ValueError: ``lr`` not a finite real > 0; ``betas`` not two finite reals in [0, 1).
    """
    lr = check_real(lr, "lr", 0.0, low_open=True)
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise ValueError(f"betas must be two reals in [0, 1), got {betas!r}")
    betas = tuple(check_real(b, f"betas[{i}]", 0.0, 1.0, high_open=True)
                  for i, b in enumerate(betas))
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, betas=betas, fused=True)
    except RuntimeError:  # "fused=True requires ... of supported devices"
        return torch.optim.Adam(params, lr=lr, betas=betas)


def clear_grads(optimizer: torch.optim.Optimizer) -> None:
    """``optimizer.zero_grad(set_to_none=True)`` without its wrappers: every parameter's
    ``grad`` set to None. torch wraps ``zero_grad`` in a dynamo guard and a profiler range:
    about 23 µs a call on CPU against 3 µs for this loop (a 2-parameter layer, one thread),
    paid once per training step by the loops here.

    Arguments:
        optimizer: any ``torch.optim.Optimizer``.

    Raises:
        ValueError: ``optimizer`` not a ``torch.optim.Optimizer``.

    Source: torch.optim.Optimizer.zero_grad (set_to_none=True).
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise ValueError(f"optimizer must be a torch.optim.Optimizer, got "
                         f"{type(optimizer).__name__}")
    for group in optimizer.param_groups:
        for p in group["params"]:
            p.grad = None


def _fit_adam(model, X, y, mean, cfg: AdamConfig, seed: int, progress: bool) -> FitReport:
    """Adam on the standardised targets z = (y − mean)/s_y; the top layer is then mapped back
    to the units of y (θ and the bias times s_y, then ``shift_output(mean)``)."""
    n = len(X)
    y64 = y.to(torch.float64)
    scale = float(y64.std(unbiased=False))
    scale = scale if scale > 0 else 1.0  # constant targets: nothing to scale
    z = ((y64 - mean) / scale).to(model.dtype)  # (N,) standardised targets
    bs = min(cfg.batch_size, n)
    per_epoch = n // bs
    steps = cfg.steps if cfg.steps is not None else cfg.epochs * per_epoch
    cache = _feature_cache(model, X, cfg)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = adam_optimizer(params, lr=cfg.lr, betas=cfg.betas)
    if cfg.schedule == "cosine":
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: 0.5 * (1.0 + math.cos(math.pi * min(step, steps) / steps)))
    else:
        schedule = None
    generator = torch.Generator().manual_seed(seed)
    every = max(1, steps // 100)
    history = []
    # the epoch's cached rows in its order, where a second copy fits in max_cache_bytes: a
    # batch is then a slice (a view) instead of a gather per step (same rows, same numbers)
    whole = cache is not None and 2 * cache.nbytes() <= cfg.max_cache_bytes
    order, pos = None, n
    model.train()
    for step in tqdm(range(steps), desc=f"adam {model.name}", disable=not progress, leave=False):
        if pos + bs > n:
            order = torch.randperm(n, generator=generator).to(X.device)
            pos = 0
            if whole:
                shuffled, z_shuffled = cache[order], z[order]
        batch = slice(pos, pos + bs) if whole else order[pos:pos + bs]
        pos += bs
        if whole:
            error = model.top_layer(shuffled[batch]) - z_shuffled[batch]
        elif cache is not None:
            error = model.top_layer(cache[batch]) - z[batch]
        else:  # the frozen features and the top layer in one pass where the model can
            error = model.forward_prepared(X[batch]) - z[batch]
        loss = (error * error).mean()
        clear_grads(optimizer)
        loss.backward()
        optimizer.step()
        if schedule is not None:
            schedule.step()
        if step % every == 0 or step == steps - 1:
            history.append((step, float(loss.detach())))
    model.eval()
    _check_not_diverged(params, history, cfg.lr)
    with torch.no_grad():  # back to the units of y
        bias = model.output_bias
        model.set_coefficients(model.coefficients().detach() * scale,
                               None if bias is None else bias.detach() * scale)
        model.shift_output(mean)
    train_mse = _mse_from_cache(model, cache, y) if cache is not None else evaluate(model, X, y)["mse"]
    return FitReport(fit="adam", train_mse=train_mse, steps=steps, epochs=steps * bs / n,
                     wall_s=0.0, n_train=n, device=str(X.device), solver="adam",
                     features_cached=cache is not None, loss_history=history, adam=asdict(cfg),
                     target_mean=mean, target_scale=scale)


@torch.no_grad()
def _check_not_diverged(params, history, lr: float) -> None:
    """Raise a ValueError naming lr when the Adam fit diverged: a parameter or a recorded loss is not
    finite (a diverged fit must never report train_mse = nan as a result)."""
    finite = all(bool(torch.isfinite(p).all()) for p in params)
    losses = [loss for _, loss in history]
    if finite and all(math.isfinite(loss) for loss in losses):
        return
    last = next((step for step, loss in history if not math.isfinite(loss)), None)
    where = f" (the loss is not finite from step {last})" if last is not None else ""
    raise ValueError(f"the Adam fit diverged{where}: the top layer's parameters are NaN or "
                     f"infinite with lr={lr:g}; lower lr (AdamConfig.lr)")


@torch.no_grad()
def _feature_cache(model, X, cfg: AdamConfig) -> Features | None:
    """The frozen features of all of X, or None if not wanted or larger than allowed; their
    columns in the narrowest integer type the top layer's kernels read (``Features.narrowed``).
    """
    if not cfg.cache_features:
        return None
    probe = model.features(X[: min(len(X), 256)])
    if probe.cols is None:
        return None  # dense features: reading a cached row costs as much as recomputing it
    if probe.narrowed(model.n_coef).nbytes() / len(probe) * len(X) > cfg.max_cache_bytes:
        return None
    rows = max(1, _CHUNK_ELEMENTS // probe.vals.shape[1])
    parts = [model.features(X[lo:lo + rows]).narrowed(model.n_coef)
             for lo in range(0, len(X), rows)]
    return Features(torch.cat([p.cols for p in parts]), torch.cat([p.vals for p in parts]))


@torch.no_grad()
def _mse_from_cache(model, cache: Features, y) -> float:
    rows = max(1, _CHUNK_ELEMENTS // cache.vals.shape[1])
    sq = 0.0
    for lo in range(0, len(cache), rows):
        err = model.top_layer(cache[lo:lo + rows]).to(torch.float64) - y[lo:lo + rows].to(torch.float64)
        sq += float((err * err).sum())
    return sq / len(cache)


def _prepare_targets(y, n: int, model) -> torch.Tensor:
    y = check_tensor(y, "y", (n,), allow_bool=False)
    return y.to(device=model.device,
                dtype=torch.float64 if y.dtype == torch.float64 else model.dtype)
