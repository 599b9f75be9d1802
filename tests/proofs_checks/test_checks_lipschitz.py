"""Lipschitz certificates: never below the empirical estimate; sympy re-derivations; targets
certified 10 % below their exact constant are refuted; both thresholds (relative 1e-6 on
empirical/certified, relative 1e-12 on sympy agreement) flip with a target off by a hair."""

from dataclasses import replace

import pytest
from hypothesis import given, settings

from lipschitz import RandomHypercubeFunction, RandomMLP, RandomPolynomial
from proofs_checks._framework import Verdict
from proofs_checks.lipschitz_certificates import (
    RTOL, SYMBOLIC, CertificatesParams, LipschitzCertificatesCheck, UnderstatedHypercube,
    UnderstatedMLP, UnderstatedPolynomial, empirical_lipschitz, sympy_hypercube_bound,
    sympy_mlp_bound, sympy_polynomial_bound,
)
from proofs_checks.strategies import lipschitz_targets

SMALL = CertificatesParams(n_instances=2, n_points=300, ascent_steps=5, n_sympy=1, n_power=3)


def test_certificates_hold():
    r = LipschitzCertificatesCheck(SMALL).decide(0)
    assert r.verdict == Verdict.HOLDS
    assert r.measured <= 1 + 1e-6
    assert all(s["agrees"] for s in r.details["sympy"])
    # the hypercube certificate is exact and the corners are sampled: ratio 1
    assert min(r.details["per_family"]["RandomHypercubeFunction"]["ratios"]) > 1 - 1e-9
    assert r.details["undetectable_understatement"]["RandomHypercubeFunction"] < 1e-9
    assert r.details["calibration"].startswith("none")
    # the wider MLPs' slack is in the printed line
    assert "MLP slack" in r.measured_text and "[relu]" in r.measured_text


def test_planted_understatements_are_refuted_by_exactly_one_over_0_9():
    check = LipschitzCertificatesCheck(SMALL)
    planted = check.planted_violations()
    assert [p.name for p in planted] == ["hypercube_bound_x0.9", "linear_bound_x0.9",
                                         "mlp_bound_x0.9", "hypercube_bound_x0.99",
                                         "hypercube_bound_x0.5"]
    (svi,) = check.smallest_violations()
    assert svi.size == pytest.approx(0.1) and svi.part == "all"
    assert [p.size == pytest.approx(0.1) for p in planted] == [True] * 3 + [False] * 2
    for p in planted[:3]:
        for seed in (0, 1):
            r = p.build().decide(seed)
            assert r.verdict == Verdict.REFUTED, (p.name, seed)
            assert r.measured == pytest.approx(1 / 0.9, rel=1e-6)
            assert "diagnosis" in r.details


def _one_family(factor, family="linear"):
    make = {"linear": lambda rng, n: UnderstatedPolynomial(
                n, 1, float(rng.uniform(0.1, 3)), seed=int(rng.integers(2**31)), factor=factor),
            "hypercube": lambda rng, n: UnderstatedHypercube(
                n, seed=int(rng.integers(2**31)), factor=factor),
            "mlp": lambda rng, n: UnderstatedMLP(n, (1,), "relu", seed=int(rng.integers(2**31)),
                                                 factor=factor)}[family]
    return LipschitzCertificatesCheck(SMALL, families={family: make})


@pytest.mark.parametrize("family", ["linear", "hypercube", "mlp"])
@pytest.mark.parametrize("factor, verdict", [(1 - 0.1 * RTOL, Verdict.HOLDS),
                                             (1 - 10 * RTOL, Verdict.REFUTED)])
def test_rtol_threshold_flips_with_a_certificate_off_by_a_hair(family, factor, verdict):
    r = _one_family(factor, family).decide(0)
    assert r.verdict == verdict
    assert r.measured == pytest.approx(1 / factor, rel=1e-9)


class _OffPolynomial(RandomPolynomial):
    """A polynomial whose class bound is off by a relative ``rel`` from its ‖G‖₂."""

    rel = 0.0

    @property
    def lipschitz_bound(self):
        return (1 + self.rel) * super().lipschitz_bound


@pytest.mark.parametrize("rel, verdict", [(1e-13, Verdict.HOLDS), (1e-11, Verdict.REFUTED)])
def test_sympy_threshold_flips_with_a_class_bound_off_by_a_hair(rel, verdict):
    cls = type("Off", (_OffPolynomial,), {"rel": rel})
    make, derive, agrees = SYMBOLIC["polynomial"]
    symbolic = {"polynomial": (lambda rng: cls(3, 3, float(rng.uniform(0.5, 2)),
                                               seed=int(rng.integers(2**31))), derive, agrees)}
    fam = {"hypercube": lambda rng, n: RandomHypercubeFunction(n, seed=int(rng.integers(9)))}
    r = LipschitzCertificatesCheck(SMALL, families=fam, symbolic=symbolic).decide(0)
    assert r.verdict == verdict
    assert all(s["agrees"] == (verdict == Verdict.HOLDS) for s in r.details["sympy"])


def test_run_reports_power_and_determinism():
    r = LipschitzCertificatesCheck(replace(SMALL, n_power=14)).run(0)
    assert r.power == 1.0 and r.power_lower >= 0.8
    assert r.mdv["all"]["mdv"] == pytest.approx(0.1) and not r.mdv["all"]["underpowered"]
    assert [c[0] for c in r.mdv["all"]["curve"]] == pytest.approx([0.01, 0.1, 0.5])
    assert r.verdict == Verdict.HOLDS and r.raw_verdict == Verdict.HOLDS
    a = LipschitzCertificatesCheck(SMALL).decide(3)
    b = LipschitzCertificatesCheck(SMALL).decide(3)
    assert a.details == b.details


def test_validation():
    for bad, name in [(dict(n_instances=0), "n_instances"), (dict(max_inputs=1), "max_inputs"),
                      (dict(n_points=1), "n_points"), (dict(n_power=0), "n_power")]:
        with pytest.raises(ValueError, match=name):
            LipschitzCertificatesCheck(CertificatesParams(**bad)).decide(0)
    with pytest.raises(ValueError, match="factor"):
        UnderstatedHypercube(3, factor=0.0)
    with pytest.raises(ValueError, match="factor"):
        UnderstatedPolynomial(3, 1, factor=-1.0)


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
