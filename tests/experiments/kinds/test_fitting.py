"""experiments.kinds.fitting: exact fits against numpy least squares, Adam against the exact fit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import experiments.kinds.fitting as fitting
from experiments.kinds.fitting import FitReport, AdamConfig, evaluate, fit_model
from routing.models import DSM, Dense, LSHModel, RandomHashModel
from routing.models._base import Features, _uint16_rows_work
from lipschitz import RandomPolynomial, UniformCube, make_dataset
from routing.hyperplane_lsh import HyperplaneLSH


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def data():
    """A smooth target on [-1, 1]^4, rescaled to unit variance."""
    target = RandomPolynomial(4, 3, seed=0)
    X, y = make_dataset(target, UniformCube(4), 1500, seed=1)
    y = (y - y.mean()) / y.std()
    return X, y


def design_lstsq(Phi, y, bias=True):
    """Independent reference: numpy least squares (minimum norm) on an explicit design."""
    A = np.hstack([Phi, np.ones((len(Phi), 1))]) if bias else Phi
    w = np.linalg.lstsq(A, y, rcond=None)[0]
    return A @ w


def dense_phi(model, X):
    return np.maximum(X @ model.B.double().numpy().T + model.c.double().numpy(), 0.0)


def predictions(model, X):
    with torch.no_grad():
        return model(X).double().cpu().numpy()


# --------------------------------------------------------------------------------------------
# exact fit = numpy least squares


def test_dense_exact_fit_equals_lstsq(data):
    X, y = data
    model = Dense(4, 48, seed=2).double()
    report = fit_model(model, X, y, "exact", ridge=0.0)
    expected = design_lstsq(dense_phi(model, X), y)
    np.testing.assert_allclose(predictions(model, X), expected, atol=1e-8)
    assert report.solver == "cholesky" and report.fit == "exact" and report.steps == 0
    assert report.train_mse == pytest.approx(np.mean((expected - y) ** 2), rel=1e-8)


@pytest.mark.parametrize("make", [lambda: Dense(4, 48, seed=2), lambda: DSM(4, 64, 16, seed=3)],
                         ids=["dense", "densified DSM"])
def test_dense_normal_equations_over_many_chunks_equal_the_explicit_gram(data, make,
                                                                         monkeypatch):
    """On CPU the dense products accumulate the upper triangle of ΦᵀΦ with BLAS dsyrk,
    chunk after chunk (beta = 1), then mirror it: G equals [Φ 1]ᵀ[Φ 1] computed at once by
    numpy, and is exactly symmetric."""
    X, y = data
    model = make().double()
    monkeypatch.setattr(fitting, "_CHUNK_ELEMENTS", 64 * 100)  # ~100 rows a chunk: 15 chunks
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    with torch.no_grad():
        f = model.features(Xt)
        sparse = f.cols is not None
        assert not sparse or f.vals.shape[1] * fitting.SCATTER_RATIO > model.n_coef
        G, r = fitting._normal_equations_dense(model, Xt, yt, sparse, f.vals.shape[1], False)
        Phi = (torch.zeros(len(Xt), model.n_coef, dtype=torch.float64).scatter_(
            1, f.cols, f.vals.double()) if sparse else f.vals.double()).numpy()
    A = np.hstack([Phi, np.ones((len(Phi), 1))])
    np.testing.assert_allclose(G.numpy(), A.T @ A, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(r.numpy(), A.T @ y, rtol=1e-12, atol=1e-9)
    assert torch.equal(G, G.T)


@pytest.mark.parametrize("width,k", [(240, 8), (64, 16)], ids=["scatter", "densified"])
def test_dsm_exact_fit_equals_lstsq(data, width, k):
    X, y = data
    model = DSM(4, width, k, seed=3).double()
    # both ways of building the normal equations are exercised
    assert (k * fitting.SCATTER_RATIO <= width) == (width == 240)
    fit_model(model, X, y, "exact", ridge=0.0)
    phi = dense_phi(model, X)
    order = np.argsort(-phi, axis=1, kind="stable")[:, :k]
    mask = np.zeros_like(phi, bool)
    np.put_along_axis(mask, order, True, axis=1)
    expected = design_lstsq(phi * mask, y)  # the masked design
    np.testing.assert_allclose(predictions(model, X), expected, atol=1e-7)


def test_gram_scatter_kernel_matches_torch_reference():
    gen = torch.Generator().manual_seed(0)
    cols = torch.sort(torch.randperm(30, generator=gen)[:6]).values.repeat(20, 1)
    cols[::2] = torch.arange(6) * 5  # two different active sets, increasing per row
    vals = torch.rand(20, 6, generator=gen, dtype=torch.float64)
    y = torch.rand(20, generator=gen, dtype=torch.float64)
    outputs = []
    for kernel in ("numba", "torch"):
        G, r, colsum = torch.zeros(30, 30, dtype=torch.float64), torch.zeros(30,
                       dtype=torch.float64), torch.zeros(30, dtype=torch.float64)
        if kernel == "numba":
            fitting._scatter_gram_upper(cols.numpy(), vals.numpy(), y.numpy(), G.numpy(),
                                        r.numpy(), colsum.numpy())
            G = torch.triu(G) + torch.triu(G, 1).T
        else:
            fitting._scatter_gram_reference(cols, vals, y, G, r, colsum)
        outputs.append((G, r, colsum))
    for a, b in zip(*outputs):
        torch.testing.assert_close(a, b)


def test_random_hash_exact_fit_equals_lstsq(data):
    X, y = data
    model = RandomHashModel(4, 64, 8, seed=4).double()
    fit_model(model, X, y, "exact", ridge=0.0)
    mask = model.mask(X).numpy()
    expected = design_lstsq(dense_phi(model, X) * mask, y)
    np.testing.assert_allclose(predictions(model, X), expected, atol=1e-7)


def test_lsh_exact_fit_is_bucket_means(data):
    X, y = data
    y = y + 5.0  # a target mean far from the initial values 0
    model = LSHModel(4, n_bits=6, seed=5).double()
    report = fit_model(model, X, y, "exact", ridge=0.0)
    keys = HyperplaneLSH(4, 6, seed=5).bucket_ids(X)[:, 0]
    means = pd.Series(y).groupby(keys).mean()
    np.testing.assert_allclose(predictions(model, X), means[keys].to_numpy(), atol=1e-12)
    values = model.values.detach().numpy()[0, :, 0]
    empty = np.setdiff1d(np.arange(64), keys)
    assert len(empty) > 0  # in 4-D, 6 hyperplanes through 0 leave sign patterns unused
    # buckets no point reaches predict the training mean (LSHTable's fallback), not 0
    np.testing.assert_allclose(values[empty], y.mean(), rtol=1e-14)
    assert report.solver == "diagonal" and report.target_mean == pytest.approx(y.mean())


def test_lsh_exact_fit_large_table_uses_sparse_solver(data):
    X, y = data
    model = LSHModel(4, n_bits=16, seed=6).double()  # 65536 buckets > MAX_DENSE_COEF
    report = fit_model(model, X, y, "exact", ridge=0.0)
    keys = HyperplaneLSH(4, 16, seed=6).bucket_ids(X)[:, 0]
    means = pd.Series(y).groupby(keys).mean()
    np.testing.assert_allclose(predictions(model, X), means[keys].to_numpy(), atol=1e-12)
    assert report.solver == "diagonal"
    # the default ridge (1e-6 of the mean count) shrinks each bucket by a negligible factor
    fit_model(model, X, y, "exact")
    np.testing.assert_allclose(predictions(model, X), means[keys].to_numpy(), rtol=1e-5)


@pytest.mark.parametrize("n_bits", [4, 13])
def test_lsh_several_tables_is_the_joint_least_squares_fit(data, n_bits):
    X, y = data
    model = LSHModel(4, n_bits=n_bits, n_tables=3, seed=7).double()
    report = fit_model(model, X, y, "exact", ridge=0.0)  # singular: tables share a constant
    keys = HyperplaneLSH(4, n_bits, 3, seed=7).bucket_ids(X)
    used = [np.unique(keys[:, t]) for t in range(3)]
    Phi = np.hstack([(keys[:, [t]] == used[t][None, :]) / 3.0 for t in range(3)])
    expected = design_lstsq(Phi, y, bias=False)
    np.testing.assert_allclose(predictions(model, X), expected, atol=1e-6)
    assert report.solver in ("eigh-pinv", "lsqr")
    # minimum norm: no large opposite constants in the tables (they would leak into the
    # predictions of points that fall into buckets left empty by the training set)
    assert np.abs(model.values.detach().numpy()).max() < 3 * np.abs(y).max()


def test_lsh_several_tables_with_ridge_is_the_explicit_ridge_solution(data):
    """The preconditioned LSQR path solves the documented objective: ‖Φθ − (y − ȳ)‖² + λ‖θ‖²
    with λ = ridge·mean(ΦᵀΦ)_jj over the used buckets, then adds ȳ (also where no training
    point fell). Checked against the normal equations of an explicit design."""
    X, y = data
    y = y + 3.0
    n_bits, s, ridge = 5, 3, 1e-2  # a ridge large enough to move the solution visibly
    model = LSHModel(4, n_bits=n_bits, n_tables=s, seed=7).double()
    report = fit_model(model, X, y, "exact", ridge=ridge)
    keys = HyperplaneLSH(4, n_bits, s, seed=7).bucket_ids(X)
    used = [np.unique(keys[:, t]) for t in range(s)]
    Phi = np.hstack([(keys[:, [t]] == used[t][None, :]) / s for t in range(s)])
    lam = ridge * np.mean(np.sum(Phi**2, axis=0))
    theta = np.linalg.solve(Phi.T @ Phi + lam * np.eye(Phi.shape[1]), Phi.T @ (y - y.mean()))
    np.testing.assert_allclose(predictions(model, X), Phi @ theta + y.mean(), atol=1e-8)
    assert report.solver == "lsqr" and report.ridge_abs == pytest.approx(lam)
    values = model.values.detach().numpy()[:, :, 0]  # (s, 2^n_bits)
    for t in range(s):
        np.testing.assert_allclose(values[t, used[t]], theta[sum(map(len, used[:t])):][:len(used[t])]
                                   + y.mean(), atol=1e-8)
        empty = np.setdiff1d(np.arange(2**n_bits), used[t])
        np.testing.assert_allclose(values[t, empty], y.mean(), rtol=1e-14)


def test_lsh_degree_one_exact_fit_equals_per_bucket_lstsq(data):
    X, y = data
    model = LSHModel(4, n_bits=3, degree=1, seed=8).double()
    fit_model(model, X, y, "exact", ridge=0.0)
    keys = HyperplaneLSH(4, 3, seed=8).bucket_ids(X)[:, 0]
    expected = np.empty(len(y))
    for z in np.unique(keys):
        rows = keys == z
        expected[rows] = design_lstsq(X[rows], y[rows])  # affine fit in each bucket
    np.testing.assert_allclose(predictions(model, X), expected, atol=1e-7)


def test_ridge_is_relative_to_the_mean_diagonal(data):
    X, y = data
    model = Dense(4, 32, seed=9).double()
    report = fit_model(model, X, y, "exact", ridge=1e-2)
    A = np.hstack([dense_phi(model, X), np.ones((len(X), 1))])
    G = A.T @ A
    lam = 1e-2 * np.mean(np.diag(G)[:-1])
    penalty = np.diag(np.r_[np.full(32, lam), 0.0])  # the bias is not penalised
    w = np.linalg.solve(G + penalty, A.T @ y)
    np.testing.assert_allclose(model.weight.detach().numpy()[0], w[:-1], rtol=1e-6, atol=1e-9)
    assert report.ridge_abs == pytest.approx(lam)


def test_singular_dense_system_falls_back_to_pseudo_inverse():
    rng = np.random.default_rng(0)
    X, y = rng.uniform(-1, 1, (10, 3)), rng.standard_normal(10)
    model = Dense(3, 50).double()  # 51 unknowns, 10 equations
    report = fit_model(model, X, y, "exact", ridge=0.0)
    assert report.solver == "eigh-pinv"
    assert report.train_mse < 1e-12  # interpolates
    unused = ~(dense_phi(model, X) > 0).any(axis=0)
    assert (model.weight.detach().numpy()[0, unused] == 0).all()


def test_exact_fit_is_too_large_for_a_very_wide_dense_model(data):
    X, y = data
    with pytest.raises(ValueError, match="fit='adam'"):
        fit_model(Dense(4, fitting.MAX_DENSE_COEF + 1), X[:10], y[:10], "exact")


# --------------------------------------------------------------------------------------------
# Adam


@pytest.mark.parametrize("make,cfg", [
    (lambda: LSHModel(4, n_bits=5, seed=1), AdamConfig(lr=0.05, batch_size=100, epochs=60)),
    (lambda: DSM(4, 48, 6, seed=1), AdamConfig(lr=0.05, batch_size=100, epochs=150)),
    (lambda: RandomHashModel(4, 48, 6, seed=1), AdamConfig(lr=0.05, batch_size=100, epochs=150)),
    # dense random features are ill-conditioned: a narrow layer and a larger step converge
    (lambda: Dense(4, 8, seed=2), AdamConfig(lr=0.2, batch_size=100, epochs=150)),
], ids=["lsh", "dsm", "random_hash", "dense"])
def test_adam_agrees_with_the_exact_fit(data, make, cfg):
    """The problem is convex: Adam with a decaying learning rate must reach the minimum.

    The exact fit is the minimiser of the training MSE (up to the 1e-6 jitter), so Adam can
    only be above it; 2 % above and predictions within 0.05 (targets have unit variance)
    allows for the remaining optimiser noise and nothing else: an Adam or feature bug gives
    errors of the order of the target's variance.
    """
    X, y = data
    exact, trained = make(), make()
    best = fit_model(exact, X, y, "exact").train_mse
    report = fit_model(trained, X, y, "adam", adam=cfg, seed=0)
    assert best * (1 - 1e-4) <= report.train_mse <= best * 1.02
    gap = predictions(trained, X) - predictions(exact, X)
    assert np.sqrt(np.mean(gap**2)) < 0.05
    assert report.fit == "adam" and report.solver == "adam"
    assert report.features_cached == (type(trained) is not Dense)  # only sparse ones cached
    assert report.steps == cfg.epochs * (len(X) // cfg.batch_size)
    assert report.train_mse == pytest.approx(evaluate(trained, X, y)["mse"], rel=1e-5)


@pytest.mark.parametrize("make", [lambda: LSHModel(4, n_bits=5, n_tables=2, seed=1),
                                  lambda: DSM(4, 48, 6, seed=1), lambda: Dense(4, 16, seed=2)],
                         ids=["lsh", "dsm", "dense"])
def test_adam_standardises_targets_so_their_scale_does_not_matter(data, make):
    """Adam's step is fixed in parameter space: on raw targets the same budget would train
    y and 1e-3·y to different relative errors. On standardised targets both runs are the same
    up to rounding: equal nMSE, and predictions in each target's own units (mean included)."""
    X, y = data
    y = y + 2.0  # a mean as well as a scale, so the mean is put back too
    cfg = AdamConfig(lr=0.05, batch_size=100, steps=400)
    fits = []
    for scale in (1.0, 1e-3):
        model = make()
        report = fit_model(model, X, scale * y, "adam", adam=cfg, seed=0)
        fits.append((model, report.train_mse / np.var(scale * y), report))
    (big, nmse_big, report_big), (small, nmse_small, report_small) = fits
    assert nmse_big < 0.5  # it learned something: the equality below is not 1 = 1
    assert nmse_small == pytest.approx(nmse_big, rel=1e-3)
    np.testing.assert_allclose(predictions(small, X), 1e-3 * predictions(big, X),
                               rtol=1e-3, atol=1e-3 * 1e-3 * np.std(y))
    assert report_small.target_scale == pytest.approx(1e-3 * report_big.target_scale)
    assert report_small.target_mean == pytest.approx(1e-3 * np.mean(y))
    # the loss history is on the standardised scale: the same numbers for both targets
    np.testing.assert_allclose([l for _, l in report_small.loss_history],
                               [l for _, l in report_big.loss_history], rtol=1e-2)


def test_adam_is_deterministic_and_cache_does_not_change_it(data):
    X, y = data
    cfg = AdamConfig(lr=0.01, batch_size=64, steps=60)
    runs = []
    for seed, cache in [(3, True), (3, True), (3, False), (4, True)]:
        model = DSM(4, 32, 4, seed=0)
        fit_model(model, X, y, "adam", adam=AdamConfig(**{**cfg.__dict__, "cache_features": cache}),
                  seed=seed)
        runs.append(model.weight.detach().clone())
    assert torch.equal(runs[0], runs[1])
    torch.testing.assert_close(runs[0], runs[2], rtol=1e-6, atol=1e-7)
    assert not torch.allclose(runs[0], runs[3])


def test_adam_without_cache_when_features_are_too_large(data):
    X, y = data
    # k = 4 units, each a float32 value and a uint16 column (the cache's narrowed columns;
    # int32 where this torch cannot index uint16 rows)
    per_unit = 4 + (2 if _uint16_rows_work() else 4)
    small = AdamConfig(steps=5, max_cache_bytes=len(X) * 4 * per_unit - 1)
    assert fit_model(DSM(4, 16, 4), X, y, "adam", adam=small).features_cached is False
    large = AdamConfig(steps=5, max_cache_bytes=len(X) * 4 * per_unit)
    assert fit_model(DSM(4, 16, 4), X, y, "adam", adam=large).features_cached is True


def test_adam_on_an_epoch_copy_of_the_cache_equals_the_gather_per_step(data):
    """Two copies of the cache within max_cache_bytes: each epoch's rows are copied once in
    its order and a batch is a slice; one copy only: a gather per step. Same fit, exactly,
    over several epochs (the copy is remade at each new order)."""
    X, y = data
    per_unit = 4 + (2 if _uint16_rows_work() else 4)
    one_copy = len(X) * 4 * per_unit
    fits = []
    for budget in (one_copy, 2 * one_copy - 1, 2 * one_copy):
        model = DSM(4, 16, 4)
        report = fit_model(model, X, y, "adam", adam=AdamConfig(steps=3 * len(X) // 64 + 5,
                                                              batch_size=64,
                                                              max_cache_bytes=budget), seed=3)
        assert report.features_cached and report.epochs > 3
        fits.append(model.coefficients().detach().clone())
    assert torch.equal(fits[0], fits[1]) and torch.equal(fits[1], fits[2])


def test_narrowed_features_keep_the_columns_in_the_smallest_type(data):
    """uint16 up to 2^16 columns, int32 above; unchanged for dense features, values the
    kernels do not read (float16) or n_coef beyond int32; the top layer gives the same bits."""
    X, _ = data
    model = DSM(4, 32, 4, seed=0)
    with torch.no_grad():
        model.weight.normal_(generator=torch.Generator().manual_seed(1))
    f = model.features(model.prepare(X))
    small = f.narrowed(model.n_coef)
    assert small.cols.dtype == (torch.uint16 if _uint16_rows_work() else torch.int32)
    assert torch.equal(small.cols.to(torch.int64), f.cols) and small.vals is f.vals
    assert torch.equal(model.top_layer(small), model.top_layer(f))
    assert torch.equal(model.top_layer(small[5:9]), model.top_layer(f[5:9]))
    assert f.narrowed(2**16 + 1).cols.dtype == torch.int32
    assert f.narrowed(2**31 + 1) is f
    half = Features(f.cols, f.vals.half())
    assert half.narrowed(model.n_coef) is half
    dense = Dense(4, 8).features(model.prepare(X))
    assert dense.narrowed(8) is dense
    with pytest.raises(ValueError, match="n_coef"):
        f.narrowed(0)


def test_adam_steps_and_epochs(data):
    X, y = data
    report = fit_model(LSHModel(4, n_bits=3), X, y, "adam", adam=AdamConfig(batch_size=500, epochs=2))
    assert report.steps == 6 and report.epochs == pytest.approx(2.0)
    report = fit_model(LSHModel(4, n_bits=3), X[:7], y[:7], "adam",
                       adam=AdamConfig(batch_size=500, steps=3))
    assert report.steps == 3 and report.epochs == pytest.approx(3.0)  # batch = whole set
    assert len(report.loss_history) == 3 and isinstance(report, FitReport)
    assert report.to_dict()["adam"]["batch_size"] == 500


# --------------------------------------------------------------------------------------------
# evaluate and bad input


def test_evaluate_mse_and_linf():
    model = Dense(2, 4)
    with torch.no_grad():
        model.bias.fill_(0.5)  # weights are 0: the model predicts 0.5 everywhere
    X = np.zeros((5, 2))
    y = np.array([0.0, 1.0, 0.5, -1.0, 2.0])
    result = evaluate(model, X, y, batch_size=2)
    assert result["mse"] == pytest.approx(np.mean((0.5 - y) ** 2))
    assert result["linf"] == pytest.approx(1.5)


@pytest.mark.parametrize("kwargs,match", [
    (dict(fit="rmsprop"), "fit must be one of"),
    (dict(ridge=-1.0), "ridge"),
    (dict(ridge=float("nan")), "ridge"),
    (dict(seed=-2), "seed"),
    (dict(adam={"lr": 1e-3}), "AdamConfig"),
])
def test_bad_fit_arguments(data, kwargs, match):
    X, y = data
    with pytest.raises(ValueError, match=match):
        fit_model(Dense(4, 4), X, y, **kwargs)


def test_bad_data(data):
    X, y = data
    model = Dense(4, 4)
    with pytest.raises(ValueError, match=r"shape \(N, 4\)"):
        fit_model(model, X[:, :3], y)
    with pytest.raises(ValueError, match=r"y must have shape \(1500,\)"):
        fit_model(model, X, y[:-1])
    with pytest.raises(ValueError, match=r"y must have shape"):
        fit_model(model, X, y[:, None])
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="finite"):
        fit_model(model, bad, y)
    bad_y = y.copy()
    bad_y[0] = np.inf
    with pytest.raises(ValueError, match="finite"):
        fit_model(model, X, bad_y, "adam")
    with pytest.raises(ValueError, match="at least one row"):
        fit_model(model, X[:0], y[:0])
    with pytest.raises(ValueError, match="model"):
        fit_model(torch.nn.Linear(4, 1), X, y)


@pytest.mark.parametrize("kwargs,name", [
    (dict(lr=0.0), "lr"), (dict(batch_size=0), "batch_size"), (dict(steps=0), "steps"),
    (dict(epochs=0), "epochs"), (dict(schedule="linear"), "schedule"),
    (dict(betas=(0.9, 1.0)), "betas"), (dict(max_cache_bytes=-1), "max_cache_bytes"),
])
def test_bad_adam_config(kwargs, name):
    with pytest.raises(ValueError, match=name):
        AdamConfig(**kwargs)


# --------------------------------------------------------------------------------------------
# CUDA


@pytest.mark.cuda
@pytest.mark.parametrize("make", [lambda: Dense(4, 64), lambda: DSM(4, 256, 8),
                                  lambda: RandomHashModel(4, 64, 8),
                                  lambda: LSHModel(4, n_bits=15, n_tables=2)],
                         ids=["dense", "dsm", "random_hash", "lsh"])
def test_cuda_exact_fit_matches_cpu(data, make):
    X, y = data
    cpu, gpu = make().double(), make().double().to("cuda")
    fit_model(cpu, X, y, "exact")
    report = fit_model(gpu, X, y, "exact")
    assert report.device.startswith("cuda")
    np.testing.assert_allclose(predictions(gpu, X), predictions(cpu, X), atol=1e-6)


@pytest.mark.cuda
def test_cuda_adam_runs_and_learns(data):
    X, y = data
    model = DSM(4, 64, 8).to("cuda")
    report = fit_model(model, X, y, "adam", adam=AdamConfig(lr=0.05, batch_size=100, epochs=50))
    assert report.device.startswith("cuda") and report.train_mse < 0.5


def test_clear_grads_is_zero_grad_set_to_none():
    """``clear_grads`` sets every parameter's grad to None, and training with it gives the
    parameters ``optimizer.zero_grad(set_to_none=True)`` gives (Adam and SGD)."""
    from experiments.kinds.fitting import adam_optimizer, clear_grads

    def train(clear, make):
        torch.manual_seed(0)
        layer = torch.nn.Linear(5, 3)
        optimizer = make(layer.parameters())
        X = torch.randn(40, 5)
        for step in range(6):
            clear(optimizer)
            assert all(p.grad is None for p in layer.parameters())
            (layer(X[step::6]) ** 2).mean().backward()
            optimizer.step()
        return [p.detach().clone() for p in layer.parameters()]

    for make in (lambda p: adam_optimizer(p, lr=0.01),
                 lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)):
        ours = train(clear_grads, make)
        torchs = train(lambda o: o.zero_grad(set_to_none=True), make)
        assert all(torch.equal(a, b) for a, b in zip(ours, torchs))


# -- NaN, divergence and bad parameters -----------------------------------------------------
_X2 = np.random.default_rng(0).uniform(-1, 1, (40, 2))


class _NaNModel(Dense):
    def forward(self, X):
        return super().forward(X) * float("nan")


def test_evaluate_never_hides_nan_predictions():
    model = _NaNModel(2, 4, seed=0)
    fit_model(Dense(2, 4, seed=0), _X2, _X2.sum(1))
    with pytest.raises(ValueError, match="model gives 40 NaN"):
        evaluate(model, _X2, _X2.sum(1))


def test_diverged_adam_fit_raises_naming_lr():
    import math

    model = Dense(2, 8, seed=0)
    with pytest.raises(ValueError, match="lr=1e\\+30"):
        fit_model(model, _X2, _X2.sum(1), fit="adam", adam=AdamConfig(lr=1e30, steps=20))
    # the same fit at a sane lr is finite: the threshold is the divergence, not Adam itself
    report = fit_model(Dense(2, 8, seed=0), _X2, _X2.sum(1), fit="adam", adam=AdamConfig(steps=20))
    assert math.isfinite(report.train_mse)


def test_adam_optimizer_names_the_bad_beta():
    import math

    from experiments.kinds.fitting import adam_optimizer
    with pytest.raises((ValueError, TypeError), match=r"betas\[1\] must be"):
        adam_optimizer([torch.nn.Parameter(torch.zeros(2))], 1e-3, (0.9, math.inf))
