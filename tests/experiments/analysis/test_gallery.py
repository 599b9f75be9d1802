"""experiments.analysis.gallery: the target gallery's config and Lipschitz ratios refuse bad
fields and flags, each error naming the parameter (the files it writes: ``sparselab targets``,
tests/experiments/cli/test_cli.py)."""

import numpy as np
import pytest

from experiments.analysis.gallery import GalleryConfig, lipschitz_ratios


@pytest.mark.parametrize("make, field", [
    (lambda: GalleryConfig(resolution="3"), "resolution"),
    (lambda: GalleryConfig(n_points=True), "n_points"),
], ids=["gallery-resolution", "gallery-n_points"])
def test_gallery_config_checks_its_fields(make, field):
    with pytest.raises(ValueError, match=field):
        make()


def test_lipschitz_ratios_refuse_a_string_progress_flag():
    config = GalleryConfig(n_inputs=2, degree=2, hidden=(4,), n_seeds=1, n_points=10)
    with pytest.raises(ValueError, match="progress must be True or False, got 'False'"):
        lipschitz_ratios(config, progress="False")
    assert (lipschitz_ratios(config, progress=np.bool_(False))["ratio"] <= 1.0 + 1e-9).all()
