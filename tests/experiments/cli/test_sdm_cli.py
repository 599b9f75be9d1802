"""Tests of ``sparselab sdm curves`` (experiments/cli/sdm.py)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from experiments.cli.sdm import sdm_command
from experiments.papers.sdm_curves import NEGLIGIBLE_BAND, PLANT_EXCESS, SdmCurvesConfig, _exponential_gap, _planted_beta, _weighting_claims, _weighting_spread, sdm_curves_tables, write_sdm_curves
from routing.sdm import circle_intersection, fit_softmax_beta


def test_cli_writes_csv_and_png_with_the_library_values(tmp_path):
    out = tmp_path / "sdm"
    result = CliRunner().invoke(
        sdm_command, ["curves", "--n", "16", "--d", "3,5", "--weighting", "binary,linear,exp", "--beta", "0.2",
                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    png = (out / "sdm_curves.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    curves = pd.read_csv(out / "sdm_curves.csv")
    fits = pd.read_csv(out / "sdm_softmax_fits.csv")
    assert len(curves) == 2 * 3 * 17 and len(fits) == 2 * 3
    for d in (3, 5):
        for weighting, beta in (("binary", None), ("linear", None), ("exponential", 0.2)):
            rows = curves[(curves.d == d) & (curves.weighting == weighting)].sort_values("d_v")
            np.testing.assert_array_equal(rows.d_v, np.arange(17))
            logs = circle_intersection(16, d, np.arange(17), weighting, beta, log=True)
            np.testing.assert_array_equal(rows.log_intersection, logs)  # written with 17 digits
            np.testing.assert_allclose(rows.normalised, np.exp(logs - logs[0]), rtol=1e-15)
            fit = fit_softmax_beta(16, d, weighting=weighting, beta=beta)
            row = fits[(fits.d == d) & (fits.weighting == weighting)].iloc[0]
            assert row.softmax_beta == fit.beta and row.intercept == fit.intercept
            np.testing.assert_allclose(rows.softmax_fit, np.exp(fit.predict_log(rows.cosine) - logs[0]), rtol=1e-13)
    config = json.loads((out / "sdm_curves_config.json").read_text())
    assert config["radii"] == [3, 5] and config["weightings"] == ["binary", "linear", "exponential"]


def test_write_sdm_curves_default_is_figure_7_and_returns_paths(tmp_path):
    paths = write_sdm_curves(tmp_path)
    assert [p.name for p in paths] == ["sdm_curves.csv", "sdm_softmax_fits.csv", "sdm_curves.png",
                                      "sdm_curves_config.json", "claims.csv"]
    curves = pd.read_csv(paths[0])
    assert set(curves.d) == {5, 11, 15} and set(curves.n) == {64}
    binary = curves[curves.weighting == "binary"]
    assert (binary[binary.d_v == 0].normalised == 1.0).all()


@pytest.mark.parametrize(
    "args,name",
    [(["--d", "70"], "d"), (["--weighting", "cosine"], "weighting"), (["--beta", "-1"], "beta"),
     (["--d", "a,b"], "--d")],
)
def test_cli_rejects_bad_input_naming_the_parameter(tmp_path, args, name):
    result = CliRunner().invoke(sdm_command, ["curves", "--n", "64", "--out", str(tmp_path), *args])
    assert result.exit_code != 0 and name in result.output


# -- App. A.7's claim: the weightings differ negligibly (an equivalence on computed curves) ----
@pytest.fixture(scope="module")
def small_curves():
    config = SdmCurvesConfig(n=32, radii=(3, 6), beta=0.05)
    return config, sdm_curves_tables(config)[0]


def test_weighting_claim_is_written_with_its_record_and_positive_control(tmp_path):
    paths = write_sdm_curves(tmp_path, n=32, radii=(3, 6))
    claims = pd.read_csv(paths[-1], keep_default_na=False)
    claim, control = claims.iloc[0], claims.iloc[1]
    assert claim.record == "sdm_weightings_negligible" and claim.kind == "paper"
    assert claim.quote.startswith("Weighting neuron read and write operations")
    assert claim.source.startswith("Bricken et al. 2023, App. A.7") and claim.axis
    assert claim.verdict == "supported" and float(claim.sesoi) == NEGLIGIBLE_BAND
    assert "no p-value" in claim.significance and claim.p_value == ""  # deterministic
    assert control.role == "positive control" and control.verdict == "supported"


def test_weighting_spread_is_the_largest_gap_between_curves(small_curves):
    config, curves = small_curves
    rows = curves[(curves.d == 6) & (curves.d_v <= 13)].pivot(index="d_v", columns="weighting",
                                                              values="normalised")
    expected = (rows.max(axis=1) - rows.min(axis=1)).max()
    assert _weighting_spread(curves, 6, config.weightings, 13) == pytest.approx(expected,
                                                                               rel=1e-15)
    assert _weighting_spread(curves, 6, ("linear",), 13) == 0.0
    assert _weighting_spread(curves, 6, ("binary", "linear"), 13) < expected
    with pytest.raises(ValueError, match="weightings"):
        _weighting_spread(curves, 6, ("binary", "exponential"), 40)  # past n: rows missing


def test_weighting_verdict_moves_across_the_band(small_curves):
    config, curves = small_curves
    spread = max(_weighting_spread(curves, d, config.weightings, min(32, 2 * d + 1))
                 for d in config.radii)
    assert 0 < spread < NEGLIGIBLE_BAND  # the measured gap, below the band
    inside = _weighting_claims(config, curves, band=spread * (1 + 1e-9))[0]
    outside = _weighting_claims(config, curves, band=spread * (1 - 1e-6))[0]
    assert (inside.verdict, outside.verdict) == ("supported", "not supported")
    assert outside.diagnosis and inside.effect == pytest.approx(spread)


def test_a_weighting_that_differs_reads_not_supported():
    # a real exponential weighting far steeper than ours: its curve leaves the band
    config = SdmCurvesConfig(n=32, radii=(3, 6), beta=0.5)
    claim = _weighting_claims(config, sdm_curves_tables(config)[0])[0]
    assert claim.verdict == "not supported" and claim.effect > NEGLIGIBLE_BAND


def test_the_plant_lies_at_its_planted_gap_and_is_refuted(small_curves):
    config, curves = small_curves
    beta = _planted_beta(config.n, config.radii, PLANT_EXCESS * NEGLIGIBLE_BAND)
    assert _exponential_gap(config.n, config.radii, beta) == pytest.approx(
        PLANT_EXCESS * NEGLIGIBLE_BAND, rel=1e-6)
    assert _exponential_gap(config.n, config.radii, 0.0) == 0.0  # β = 0 is the binary curve
    control = _weighting_claims(config, curves)[1]
    assert control.role == "positive control" and control.verdict == "supported"
    assert f"{beta:.4g}" in control.evidence


def test_one_weighting_is_not_tested_and_a_bad_band_is_refused():
    config = SdmCurvesConfig(n=16, radii=(3,), weightings=("binary",))
    curves = sdm_curves_tables(config)[0]
    assert _weighting_claims(config, curves)[0].verdict == "not tested"
    for band in (0.0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="band"):
            _weighting_claims(config, curves, band=band)
