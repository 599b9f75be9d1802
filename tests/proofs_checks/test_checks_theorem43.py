"""Theorem 4.3: the packing family, the hard members, the certified (LP) width and the coverage
count as the deciding lower bounds, the least-squares width only shown, the scaling rule's
thresholds moved across by planted families, the SVI plants refuted, determinism and
validation."""

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
    CANNOT_SHOW, DECISIVE, SAMPLES_SVI, WIDTH_SVI, DenseLowerBoundParams, FewerBumps,
    RandomFeatures, Theorem43DenseLowerBoundCheck, best_error_at_points, certified_width,
    geometric_grid, lower_dimensional_inputs, ridge_fit,
)

# k = 1 over a factor 16 of ε: cheap (about 8 s a decision, 1.5 s a planted one) and decisive
SCALING = DenseLowerBoundParams(
    grids=((1, 0.5, (0.25, 0.125, 0.0625, 0.03125)),), n_draws=24, n_test=500, n_pairs=10,
    n_lipschitz_points=200, n_boot=300, n_power=2)
# for the exact parts only (the scaling parts are not asserted with it)
TINY = DenseLowerBoundParams(
    grids=((1, 0.5, (0.25, 0.125)),), n_draws=4, n_coverage_draws=4, n_test=300, n_pairs=10,
    n_lipschitz_points=200, n_boot=100, n_power=2)
REF = ((1, 0.5),)


def part(result, name, k=1):
    return result.details["parts"][f"{name} k={k}"]


def test_the_deciding_parts_are_the_certified_ones_and_ridge_is_only_shown():
    real = Theorem43DenseLowerBoundCheck(SCALING).decide(0)
    assert set(real.details["parts"]) == {"width_lp k=1", "samples_cov k=1"}
    ridge = real.details["shown_parts"]["width_ridge k=1"]
    assert ridge["verdict"] == "shown" and "upper bound" in ridge["why"]
    assert ridge["rule_would_say"] in {v.value for v in Verdict}
    # per draw the certified width is at most the least-squares one (an exact part)
    assert real.details["exact_parts"]["certified_width_at_most_least_squares"]
    for s in real.details["settings"]:
        assert np.all(np.asarray(s["widths_lp"]) <= np.asarray(s["widths_ridge"]))
    assert real.details["what_this_cannot_show"] == CANNOT_SHOW


def test_a_width_the_least_squares_rule_counts_as_failing_succeeds_with_the_best_top_layer():
    """The old statistic (first width at which a ridge top layer reaches ℓ∞ < ε on test points
    and centres) certified "this width fails" for widths at which the optimal top layer — a
    linear program over the same points, by the old criterion itself — reaches ε. So it was
    an upper bound, not the lower bound the theorem needs."""
    subspace = UniformSubspace(8, 1, seed=2)
    eps = 0.0625
    fam = PackingFamily(subspace.basis, eps, 1.0)
    grid = geometric_grid(1, 512)
    test = subspace.sample(300, seed=3)
    stream = subspace.sample(4 * grid[-1], seed=4)
    overstated = 0
    for j, signs in enumerate(fam.random_signs(4, 5)):
        f = fam.member(signs)
        feats = RandomFeatures(8, grid[-1], subspace.sample(grid[-1], seed=6 + j), 7 + j)
        X_eval = np.vstack([test, fam.centers])
        F_eval, y_eval = feats(X_eval), f(X_eval)
        F_c, y_c = feats(fam.centers), f(fam.centers)

        def ridge_reaches(w):
            F, y = feats(stream[:4 * w], w), f(stream[:4 * w])
            a = ridge_fit(np.vstack([F, F_c[:, :w]]), np.r_[y, y_c])
            return np.abs(F_eval[:, :w] @ a - y_eval).max() < eps

        w_ridge = next(w for w in grid if ridge_reaches(w))
        w_best = certified_width(F_eval, y_eval, eps, grid)  # optimum over the same points
        w_lp = certified_width(F_c, y_c, eps, grid)  # the check's: the centres only
        assert w_lp <= w_best <= w_ridge
        overstated += w_best < w_ridge
        if w_best < w_ridge:  # the ridge rule said "fails" at w_best; the optimum reaches ε
            assert best_error_at_points(F_eval[:, :int(w_best)], y_eval) < eps
    assert overstated >= 3


def test_width_threshold_moves_across_with_the_family():
    # the real family: lower end ≥ k − δ = 0.5; bumps ∝ x^(k − 1): family upper end < 0.5
    real = Theorem43DenseLowerBoundCheck(SCALING).decide(0)
    few = Theorem43DenseLowerBoundCheck(SCALING, family_factory=FewerBumps(1.0, REF),
                                        parts=("width_lp",)).decide(0)
    assert part(real, "width_lp")["verdict"] == "holds"
    assert part(real, "width_lp")["ci"][0] >= 0.5
    assert part(few, "width_lp")["verdict"] == "refuted"
    assert part(few, "width_lp")["ci_family"][1] < 0.5
    assert few.verdict == Verdict.REFUTED
    assert set(few.details["parts"]) == {"width_lp k=1"}  # a planted run measures its part


def test_sample_threshold_moves_across_with_the_family():
    real = Theorem43DenseLowerBoundCheck(SCALING).decide(0)
    few = Theorem43DenseLowerBoundCheck(SCALING, family_factory=FewerBumps(SAMPLES_SVI, REF),
                                        parts=("samples_cov",)).decide(0)
    assert real.verdict == Verdict.HOLDS
    assert part(real, "samples_cov")["verdict"] == "holds"
    assert part(real, "samples_cov")["ci"][0] >= 0.5
    assert part(few, "samples_cov")["verdict"] == "refuted"
    assert part(few, "samples_cov")["ci_family"][1] < 0.5
    # the details carry the split, the constant and the per-draw replicates
    assert real.details["calibration"]["k=1"]["epsilon"] == 0.5
    assert real.details["calibration"]["k=1"]["C"] > 0
    assert real.details["validation"]["k=1"] == [0.25, 0.125, 0.0625, 0.03125]
    rows = [s for s in real.details["settings"] if s["epsilon"] < 0.5]
    assert all(len(s["widths_lp"]) == 24 and len(s["n_cov"]) == 48 for s in rows)


def test_refutation_needs_the_family_wise_interval():
    # the Bonferroni interval (1 − 0.05/m) is wider than the 95 % one that decides holds
    few = Theorem43DenseLowerBoundCheck(SCALING, family_factory=FewerBumps(1.0, REF),
                                        parts=("width_lp",)).decide(0)
    w = part(few, "width_lp")
    assert w["family_confidence"] == pytest.approx(1 - 0.05 / 2)
    assert w["ci_family"][0] <= w["ci"][0] and w["ci_family"][1] >= w["ci"][1]


@pytest.mark.parametrize("name, svi", [("width_lp", WIDTH_SVI), ("samples_cov", SAMPLES_SVI)])
def test_each_decisive_part_is_refuted_on_its_svi_plant(name, svi):
    check = Theorem43DenseLowerBoundCheck(SCALING)
    assert {v.part: v.size for v in check.smallest_violations()} == {
        "width_lp": WIDTH_SVI, "samples_cov": SAMPLES_SVI}
    (at_svi,) = [p for p in check.planted_violations() if p.part == name and p.size == svi]
    assert at_svi.runs is None  # the gate: n_power runs
    sizes = sorted(p.size for p in check.planted_violations() if p.part == name)
    assert len(sizes) >= 3 and sizes[0] < svi < sizes[-1]  # a power curve around the SVI
    built = at_svi.build()
    assert built.parts == (name,) and isinstance(built.family_factory, FewerBumps)
    for seed in (0, 1):
        assert built.part_verdict(built.decide(seed), name) == Verdict.REFUTED


def test_tiny_run_declares_svis_and_is_underpowered():
    r = Theorem43DenseLowerBoundCheck.preset("tiny").run(0)
    assert r.verdict == Verdict.UNDERPOWERED and r.smoke
    assert {v["part"] for v in r.svi} == set(DECISIVE)
    assert set(r.mdv) == set(DECISIVE)
    assert all(d["runs"] <= 2 for d in r.power_details)
    assert r.post_hoc  # the least-squares width's log offset, disclosed


def test_fewer_bumps_family():
    s = UniformSubspace(8, 2, seed=0)
    ref = ((2, 0.7),)
    at_ref = FewerBumps(0.5, ref)(s.basis, 0.7, 1.0)
    assert at_ref.n_centers == PackingFamily(s.basis, 0.7, 1.0).n_centers
    small = FewerBumps(0.5, ref)(s.basis, 0.125, 1.0)
    assert small.n_centers < PackingFamily(s.basis, 0.125, 1.0).n_centers
    assert small.lipschitz <= 1.0 and small.radius > 0.125  # L-Lipschitz, wider bumps
    f1, f2 = (small.member(x) for x in small.random_signs(2, 1))
    gap = np.abs(f1(small.centers) - f2(small.centers))
    np.testing.assert_allclose(gap[gap > 0], 0.25)  # still 2ε apart where the signs differ
    with pytest.raises(ValueError, match="reference"):
        FewerBumps(0.5, ((1, 0.5),))(s.basis, 0.3, 1.0)


def test_certified_width_is_the_first_width_whose_optimum_reaches_eps():
    rng = np.random.default_rng(0)
    Phi = np.maximum(rng.standard_normal((12, 40)), 0.0)
    t = rng.choice([-0.3, 0.3], 12)
    grid = geometric_grid(1, 40)
    errors = [best_error_at_points(Phi[:, :w], t) for w in grid]
    assert all(a >= b - 1e-9 for a, b in zip(errors, errors[1:]))  # nested: non-increasing
    first = next(w for w, e in zip(grid, errors) if e < 0.3 * (1 - 1e-6))
    assert certified_width(Phi, t, 0.3, grid) == first
    assert certified_width(Phi[:, :1], t, 0.3, grid) == math.inf
    with pytest.raises(ValueError, match="targets"):
        certified_width(Phi, t[:5], 0.3, grid)
    with pytest.raises(ValueError, match="epsilon"):
        certified_width(Phi, t, 0.0, grid)


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
    ({"n_coverage_draws": 1}, "n_coverage_draws"),
    ({"coverage_factor": 0.5}, "coverage_factor"),
    ({"quantile": 0.0}, "quantile"),
    ({"margin": -0.1}, "margin"),
    ({"width_ratio": 1.0}, "width_ratio"),
    ({"max_width": 2}, "max_width"),
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
    with pytest.raises(ValueError, match="parts"):
        Theorem43DenseLowerBoundCheck(TINY, parts=("width_ridge",))
