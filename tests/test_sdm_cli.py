"""Tests of ``sparselab sdm curves`` (experiments/sdm_cli.py)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from experiments.sdm_cli import sdm_command, write_sdm_curves
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
                                      "sdm_curves_config.json"]
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
