"""Lipschitz certificates: never below the empirical estimate; sympy re-derivations; a target
with a certificate that is too small is caught."""

import pytest
from hypothesis import given, settings

from lipschitz import RandomHypercubeFunction, RandomMLP, RandomPolynomial, ScaledTarget
from proofs_checks._framework import Verdict
from proofs_checks.lipschitz_certificates import (
    CertificatesParams, LipschitzCertificatesCheck, empirical_lipschitz, sympy_hypercube_bound,
    sympy_mlp_bound, sympy_polynomial_bound,
)
from proofs_checks.strategies import lipschitz_targets

SMALL = CertificatesParams(n_instances=2, n_points=300, ascent_steps=5, n_sympy=1)


def test_certificates_hold():
    r = LipschitzCertificatesCheck(SMALL).run(0)
    assert r.verdict == Verdict.HOLDS
    assert r.measured <= 1 + 1e-6
    assert all(s["agrees"] for s in r.details["sympy"])
    # the hypercube certificate is exact and the corners are sampled: ratio 1
    assert min(r.details["per_family"]["RandomHypercubeFunction"]["ratios"]) > 1 - 1e-9


class _Undercertified(ScaledTarget):
    @property
    def lipschitz_bound(self):
        return 0.5 * super().lipschitz_bound


def test_certificates_refuted_for_an_undercertified_target():
    fam = {"undercertified": lambda rng, n: _Undercertified(RandomHypercubeFunction(n, seed=1), 1.0)}
    r = LipschitzCertificatesCheck(SMALL, families=fam).run(0)
    assert r.verdict == Verdict.REFUTED and r.details["violations"]


@settings(max_examples=10, deadline=None)
@given(lipschitz_targets(max_inputs=5))
def test_empirical_estimate_never_exceeds_the_certificate(f):
    assert empirical_lipschitz(f, 200, 0, ascent_steps=5) <= f.lipschitz_bound * (1 + 1e-6)


def test_sympy_rederivations():
    p = RandomPolynomial(3, 3, 1.7, seed=4)
    s = sympy_polynomial_bound(p)
    assert s["bound"] == pytest.approx(p.lipschitz_bound, rel=1e-12)
    assert s["sum_abs_coef_times_degree"] == pytest.approx(1.7, rel=1e-12)
    h = RandomHypercubeFunction(3, seed=2)
    assert sympy_hypercube_bound(h)["max_grad_norm_sq"] == h.sensitivity()
    m = RandomMLP(3, (4,), "sigmoid", seed=3)
    assert sympy_mlp_bound(m)["bound"] == pytest.approx(m.lipschitz_bound, rel=1e-9)
