"""Theorem B.1 (the Theorem 4.1 learner on a curved k-manifold): inputs and target, the
intrinsic-dimension planted violation refuted across the table-size threshold, the real
learner not refuted, determinism and parameter errors."""

from dataclasses import replace

import numpy as np
import pytest

from lipschitz import CurvedManifold
from proofs_checks._framework import Verdict
from proofs_checks.theorem_b1_manifold import (
    HigherDimensionalInputs, ManifoldParams, TheoremB1ManifoldCheck,
)

SMALL = ManifoldParams(probes=(), n_draws=40, n_calibration=6, n_test=300, n_boot=300)


def part(result, name, k=1):
    return result.details["per_k"][str(k)][name]


def test_inputs_are_the_curved_manifold_and_the_target_is_in_its_tangent_span():
    check = TheoremB1ManifoldCheck(SMALL)
    inputs, target, X_test, y_test = check._problem(1, 0)
    assert isinstance(inputs, CurvedManifold) and inputs.k == 1 and inputs.curvature == 1.0
    assert X_test.shape == (300, 8)
    u = target.direction
    frame = inputs.tangent_frame
    np.testing.assert_allclose(frame @ (frame.T @ u), u, atol=1e-12)  # u ∈ span(tangents)
    planted = TheoremB1ManifoldCheck(SMALL, input_factory=HigherDimensionalInputs(1))
    assert planted._problem(1, 0)[0].k == 2


def test_intrinsic_dimension_crosses_the_table_threshold():
    real = TheoremB1ManifoldCheck(SMALL).decide(0)
    planted = TheoremB1ManifoldCheck(SMALL, input_factory=HigherDimensionalInputs(1)).decide(0)
    t_real, t_planted = part(real, "table_size"), part(planted, "table_size")
    assert t_real["verdict"] == Verdict.HOLDS.value and t_real["estimate"]["ci_high"] <= 1.5
    assert t_planted["verdict"] == Verdict.REFUTED.value
    assert t_planted["estimate"]["ci_low"] > 1.5
    assert real.verdict != Verdict.REFUTED and planted.verdict == Verdict.REFUTED
    assert "far above 1" in real.measured_text  # the constant is reported plainly


def test_quick_planted_violation_is_refuted():
    check = TheoremB1ManifoldCheck(replace(ManifoldParams(), probes=()))
    (planted,) = check.planted_violations()
    assert planted.name == "intrinsic_dim_k+1"
    assert planted.build().decide(3).verdict == Verdict.REFUTED


def test_determinism():
    a, b = TheoremB1ManifoldCheck(SMALL).decide(4), TheoremB1ManifoldCheck(SMALL).decide(4)
    assert a.to_dict() == b.to_dict()


def test_claim_states_what_is_assumed():
    assert "assumed" in TheoremB1ManifoldCheck.claim
    assert "missing appendix" in TheoremB1ManifoldCheck.source
    assert TheoremB1ManifoldCheck.name == "theoremB1_manifold"


def test_parameter_errors():
    with pytest.raises(ValueError, match="curvature"):
        TheoremB1ManifoldCheck(replace(SMALL, curvature=-1.0)).decide(0)
    with pytest.raises(ValueError, match="k"):  # 2k ≤ d = 8 on a curved manifold
        TheoremB1ManifoldCheck(replace(SMALL, epsilons=((5, (0.5, 0.25)),))).decide(0)
    with pytest.raises(ValueError, match="strictly decreasing"):
        TheoremB1ManifoldCheck(replace(SMALL, epsilons=((1, (0.25, 0.5)),))).decide(0)
