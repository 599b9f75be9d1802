"""Theorem 4.3: the packing family, the hard members defeating every width below M, and the
check refuted on a family that is not L-Lipschitz."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lipschitz import estimate_lipschitz
from proofs_checks._framework import Verdict
from proofs_checks.packing import BumpField, PackingFamily, grid_centers
from proofs_checks.strategies import subspaces
from proofs_checks.theorem43_dense_lower_bound import (
    CANNOT_SHOW, DenseLowerBoundParams, RandomFeatures, Theorem43DenseLowerBoundCheck,
    best_error_at_points,
)

SMALL = DenseLowerBoundParams(configs=((1, 0.25), (2, 0.35)), n_members=4, n_pairs=20,
                              n_test=1500, n_lipschitz_points=500)


def test_dense_lower_bound_check_holds():
    r = Theorem43DenseLowerBoundCheck(SMALL).run(0)
    assert r.verdict == Verdict.HOLDS
    assert r.measured >= 1 - 1e-6
    assert r.details["what_this_cannot_show"] == CANNOT_SHOW
    for c in r.details["configs"].values():
        assert c["separation_min_over_eps"] == pytest.approx(2.0)
        assert any("hard_member_best_error_over_eps" in row for row in c["widths"])
        if c["w_star"] is not None:  # least squares needs at least the exact bound's width
            assert c["w_star"] >= c["M"]


class _SteepFamily(PackingFamily):
    """Bumps of height ε but slope 2L: separated, yet not L-Lipschitz (planted)."""

    def member(self, signs):
        return BumpField(self.centers, signs, self.radius / 2, 2 * self.lipschitz)


def test_dense_lower_bound_refuted_for_a_family_that_is_not_lipschitz():
    steep = lambda basis, eps, L: _SteepFamily(basis, eps, L)  # noqa: E731
    p = DenseLowerBoundParams(configs=((1, 0.25),), n_members=2, n_pairs=5, n_test=500,
                              n_lipschitz_points=500)
    r = Theorem43DenseLowerBoundCheck(p, family_factory=steep).run(0)
    assert r.verdict == Verdict.REFUTED and not r.details["family_lipschitz_ok"]


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
    from lipschitz import UniformSubspace
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


def test_bump_field_errors_and_grid():
    with pytest.raises(ValueError, match="apart"):
        BumpField(np.array([[0.0, 0.0], [0.1, 0.0]]), [1, 1], 0.1)
    with pytest.raises(ValueError, match="signs"):
        BumpField(np.zeros((1, 2)), [2.0], 0.1)
    with pytest.raises(ValueError, match="radius"):
        BumpField(np.zeros((1, 2)), [1.0], 0.0)
    c = grid_centers(np.eye(2), 0.5)
    assert len(c) == 25 and np.abs(c).max() <= 1.0  # {-1, -0.5, 0, 0.5, 1}²
