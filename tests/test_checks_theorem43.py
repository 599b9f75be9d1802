"""Theorem 4.3: the packing family, the hard members, the scaling rule's thresholds moved
across by planted families, the planted violation refuted, determinism and validation."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lipschitz import UniformSubspace, estimate_lipschitz
from proofs_checks._framework import Verdict
from proofs_checks.packing import BumpField, PackingFamily, grid_centers
from proofs_checks.strategies import subspaces
from proofs_checks.theorem43_dense_lower_bound import (
    CANNOT_SHOW, DenseLowerBoundParams, RandomFeatures, Theorem43DenseLowerBoundCheck,
    _RidgeAccumulator, best_error_at_points, geometric_grid, lower_dimensional_inputs,
    ridge_fit,
)

# k = 1 over a factor 16 of ε: cheap (about 1.5 s a decision) and decisive at these seeds
SCALING = DenseLowerBoundParams(
    grids=((1, 0.5, (0.25, 0.125, 0.0625, 0.03125)),), n_draws=24, n_sample_draws=12,
    n_test=500, n_pairs=10, n_lipschitz_points=200, n_boot=300, n_power=2)
# for the exact parts only (the scaling parts are not asserted with it)
TINY = DenseLowerBoundParams(
    grids=((1, 0.5, (0.25, 0.125)),), n_draws=4, n_sample_draws=2, n_test=300, n_pairs=10,
    n_lipschitz_points=200, n_boot=100, n_power=2)


def radius_power(alpha):
    """A family of bumps of height ε and radius ε^α/L (L-Lipschitz for α ≤ 1, ε ≤ 1): it has
    ~ε^(−αk) bumps, so the width and samples it needs grow as (1/ε)^(αk), not (1/ε)^k."""
    return lambda basis, eps, L: PackingFamily(basis, eps, L * eps ** (1 - alpha))


def part(result, name, k=1):
    return result.details["scaling"][f"k={k}"][name]


def test_width_threshold_moves_across_with_the_family():
    # the real family: lower end ≥ k − δ = 0.5; bumps of radius ε^0.25: upper end < 0.5
    real = Theorem43DenseLowerBoundCheck(SCALING).decide(3)
    slow = Theorem43DenseLowerBoundCheck(SCALING, family_factory=radius_power(0.25)).decide(3)
    assert part(real, "width")["verdict"] == "holds"
    assert part(real, "width")["ci"][0] >= 0.5
    assert part(slow, "width")["verdict"] == "refuted"
    assert part(slow, "width")["ci"][1] < 0.5
    assert slow.verdict == Verdict.REFUTED


def test_sample_threshold_moves_across_with_the_family():
    real = Theorem43DenseLowerBoundCheck(SCALING).decide(0)
    fixed = Theorem43DenseLowerBoundCheck(SCALING, family_factory=radius_power(0.0)).decide(0)
    assert real.verdict == Verdict.HOLDS
    assert part(real, "samples")["verdict"] == "holds"
    assert 0.5 <= part(real, "samples")["ci"][0] < 0.6  # just above k − δ
    assert part(fixed, "samples")["verdict"] == "refuted"
    assert part(fixed, "samples")["ci"][1] < 0.5
    # the details carry the split, the constant and the per-draw replicates
    assert real.details["calibration"]["k=1"]["epsilon"] == 0.5
    assert real.details["calibration"]["k=1"]["C"] > 0
    assert real.details["validation"]["k=1"] == [0.25, 0.125, 0.0625, 0.03125]
    rows = [s for s in real.details["settings"] if s["epsilon"] < 0.5]
    assert all(len(s["widths"]) == 24 and len(s["n_star"]) == 12 for s in rows)
    assert real.details["what_this_cannot_show"] == CANNOT_SHOW


def test_the_planted_violation_is_refuted():
    p = DenseLowerBoundParams(grids=((2, 0.7, (0.5, 0.35, 0.25, 0.177, 0.125)),),
                              n_test=500, n_pairs=10, n_lipschitz_points=200, n_boot=300)
    (planted,) = Theorem43DenseLowerBoundCheck(p).planted_violations()
    assert planted.name == "inputs_one_dimension_lower"
    check = planted.build()
    assert check.params is p and check.subspace_factory is lower_dimensional_inputs
    for seed in (0, 1):
        r = check.decide(seed)
        assert r.verdict == Verdict.REFUTED
        assert part(r, "width", k=2)["ci"][1] < 1.5
        assert all(s["M"] < 20 for s in r.details["settings"])  # a 1-dimensional Γ


class _SteepFamily(PackingFamily):
    """Bumps of height ε but slope 2L: separated, yet not L-Lipschitz."""

    def member(self, signs):
        return BumpField(self.centers, signs, self.radius / 2, 2 * self.lipschitz)


class _LowFamily(PackingFamily):
    """Bumps of slope L but height ε/2: L-Lipschitz, only ε apart, fitted by small widths."""

    def member(self, signs):
        return BumpField(self.centers, signs, self.radius / 2, self.lipschitz)


class _WideFamily(PackingFamily):
    """Declares half its bumps' radius: the coverage balls are too small, so two members
    differing at an 'empty' ball still differ on the samples."""

    def __init__(self, basis, epsilon, lipschitz=1.0):
        super().__init__(basis, epsilon, lipschitz)
        self.radius = self.radius / 4

    def member(self, signs):
        return BumpField(self.centers, signs, 4 * self.radius, self.lipschitz)


def test_exact_parts_hold_and_each_fails_on_its_planted_family():
    real = Theorem43DenseLowerBoundCheck(TINY).decide(0)
    exact = real.details["exact_parts"]
    assert exact["family_lipschitz"] and exact["family_separated"]
    assert exact["hard_members_defeat_w_below_M"]
    assert exact["min_hard_member_error_over_eps"] >= 1 - 1e-6
    assert exact["indistinguishable_at_n_cov_minus_1"] and exact["indistinguishable_checked"] > 0
    for s in real.details["settings"]:
        assert s["separation_min_over_eps"] == pytest.approx(2.0)
        assert s["lipschitz_empirical_max"] <= 1 + 1e-6

    steep = Theorem43DenseLowerBoundCheck(TINY, family_factory=_SteepFamily).decide(0)
    assert steep.verdict == Verdict.REFUTED
    assert not steep.details["exact_parts"]["family_lipschitz"]
    assert steep.details["exact_parts"]["family_separated"]

    low = Theorem43DenseLowerBoundCheck(TINY, family_factory=_LowFamily).decide(0)
    assert low.verdict == Verdict.REFUTED
    assert not low.details["exact_parts"]["family_separated"]
    assert not low.details["exact_parts"]["hard_members_defeat_w_below_M"]
    assert low.details["exact_parts"]["min_hard_member_error_over_eps"] < 1

    wide = Theorem43DenseLowerBoundCheck(TINY, family_factory=_WideFamily).decide(0)
    assert wide.verdict == Verdict.REFUTED
    assert not wide.details["exact_parts"]["indistinguishable_at_n_cov_minus_1"]


def test_same_seed_same_numbers():
    a = Theorem43DenseLowerBoundCheck(TINY).decide(5)
    b = Theorem43DenseLowerBoundCheck(TINY).decide(5)
    assert a.details == b.details and a.measured_text == b.measured_text
    c = Theorem43DenseLowerBoundCheck(TINY).decide(6)
    assert c.details["settings"] != a.details["settings"]


@pytest.mark.parametrize("change, match", [
    ({"grids": ()}, "grids"),
    ({"grids": ((3, 0.5, (0.25, 0.125)),), "dim": 2}, "k"),
    ({"grids": ((1, 0.5, (0.25,)),)}, "validation epsilons"),
    ({"grids": ((1, 0.5, (0.5, 0.25)),)}, "validation epsilons"),
    ({"grids": ((1, 0.5, (0.125, 0.25)),)}, "validation epsilons"),
    ({"grids": ((1, 0.5),)}, "grids"),
    ({"n_sample_draws": 30}, "n_sample_draws"),
    ({"quantile": 0.0}, "quantile"),
    ({"margin": -0.1}, "margin"),
    ({"width_ratio": 1.0}, "width_ratio"),
    ({"max_width": 2}, "max_width"),
    ({"sample_width_factor": 0.5}, "sample_width_factor"),
    ({"n_boot": 10}, "n_boot"),
])
def test_parameter_validation(change, match):
    from dataclasses import replace

    with pytest.raises(ValueError, match=match):
        Theorem43DenseLowerBoundCheck(replace(TINY, **change)).decide(0)


def test_helpers():
    assert geometric_grid(1, 10) == [1, 2, 3, 4, 5, 6, 7, 8, 10]
    assert geometric_grid(4, 4) == [4]
    with pytest.raises(ValueError, match="ratio"):
        geometric_grid(1, 10, 1.0)
    rng = np.random.default_rng(0)
    for n in (5, 40):  # dual and primal forms give the same ridge solution
        F, y = rng.standard_normal((n, 20)), rng.standard_normal(n)
        a = ridge_fit(F, y)
        lam = 1e-8 * np.trace(F.T @ F) / 20
        np.testing.assert_allclose(a, np.linalg.solve(F.T @ F + lam * np.eye(20), F.T @ y),
                                   rtol=1e-5, atol=1e-8)
    F, y = rng.standard_normal((60, 8)), rng.standard_normal(60)
    acc = _RidgeAccumulator(8)
    for n in (3, 8, 20, 60):
        np.testing.assert_allclose(acc.solve(F[:n], y[:n]), ridge_fit(F[:n], y[:n]), rtol=1e-9)
    assert lower_dimensional_inputs(6, 2, 0).basis.shape == (6, 1)
    assert lower_dimensional_inputs(6, 1, 0).basis.shape == (6, 1)


@settings(max_examples=15, deadline=None)
@given(subspaces(st.integers(2, 8), st.integers(1, 2)), st.floats(0.15, 0.6), st.floats(0.5, 3),
       st.integers(0, 1000))
def test_packing_family_is_separated_and_lipschitz(subspace, eps, L, seed):
    fam = PackingFamily(subspace.basis, eps, L)
    assert np.abs(fam.centers).max() <= 1.0
    s1, s2 = fam.random_signs(2, seed)
    f1, f2 = fam.member(s1), fam.member(s2)
    diff = np.abs(f1(fam.centers) - f2(fam.centers))
    np.testing.assert_allclose(diff[s1 != s2], 2 * eps)
    X = np.vstack([subspace.sample(300, seed=seed), fam.centers + 0.3 * eps / L])
    assert estimate_lipschitz(f1, np.clip(X, -1, 1)).value <= L * (1 + 1e-6)
    Xt = torch.tensor(X[:50])
    np.testing.assert_allclose(f1.torch(Xt).numpy(), f1(X[:50]), atol=1e-12)


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 1000), st.integers(1, 2))
def test_no_width_below_M_fits_the_constructed_member(seed, k):
    from scipy.linalg import null_space

    s = UniformSubspace(6, k, seed=seed)
    fam = PackingFamily(s.basis, 0.3, 1.0)
    M = fam.n_centers
    for w in sorted({1, M // 2, M - 1} - {0}):
        feats = RandomFeatures(6, w, s.sample(w, seed=seed), seed)
        Phi = feats(fam.centers)
        U = null_space(Phi.T)
        sigma = np.where(U[:, 0] >= 0, 1.0, -1.0)
        assert best_error_at_points(Phi, fam.member(sigma)(fam.centers)) >= 0.3 * (1 - 1e-6)
    # nested units: the first w of a wider layer are the layer of width w
    wide = RandomFeatures(6, 10, s.sample(10, seed=seed), seed)
    np.testing.assert_array_equal(wide(fam.centers, 4), wide(fam.centers)[:, :4])
    assert math.isfinite(float(wide(fam.centers).sum()))


def test_bump_field_errors_and_grid():
    with pytest.raises(ValueError, match="apart"):
        BumpField(np.array([[0.0, 0.0], [0.1, 0.0]]), [1, 1], 0.1)
    with pytest.raises(ValueError, match="signs"):
        BumpField(np.zeros((1, 2)), [2.0], 0.1)
    with pytest.raises(ValueError, match="radius"):
        BumpField(np.zeros((1, 2)), [1.0], 0.0)
    c = grid_centers(np.eye(2), 0.5)
    assert len(c) == 25 and np.abs(c).max() <= 1.0  # {-1, -0.5, 0, 0.5, 1}²
    with pytest.raises(ValueError, match="anchors"):
        RandomFeatures(3, 5, np.zeros((4, 3)), 0)
