"""experiments.papers.sdm_curves: the curves' config refuses fields it cannot draw, naming them
(the tables, figure and claims: tests/experiments/cli/test_sdm_cli.py)."""

import pytest

from experiments.papers.sdm_curves import SdmCurvesConfig


@pytest.mark.parametrize("make, field", [
    (lambda: SdmCurvesConfig(weightings=(3,)), "weightings"),
    (lambda: SdmCurvesConfig(radii=(99,)), "radii"),
], ids=["sdm-weighting", "sdm-radius"])
def test_sdm_curves_config_checks_its_fields(make, field):
    with pytest.raises(ValueError, match=field):
        make()
