"""experiments.runner.specs: the configs as data (ExperimentConfig, TargetSpec, ModelSpec) and the
data seeds, each field checked whatever the path that reaches it."""

import math

import numpy as np
import pytest

from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec, data_seeds


def test_data_seeds_refuse_a_string_seed():
    assert data_seeds(3) == data_seeds(np.int64(3))
    for seed in ("3", 2.5, -1, True):  # "3" was accepted: numpy hashed another stream
        with pytest.raises(ValueError, match="seed"):
            data_seeds(seed)


def test_experiment_config_checks_seeds_and_training_settings():
    base = dict(name="e", preset="tiny", target=TargetSpec(n_inputs=2, degree=1),
                models=(ModelSpec("dense", width=4),))
    assert ExperimentConfig(**base, seeds=[0, 1]).seeds == (0, 1)
    for bad in (3, (0, 0), ("0",), (-1,)):
        with pytest.raises(ValueError, match="seeds"):
            ExperimentConfig(**base, seeds=bad)
    with pytest.raises(ValueError, match="train_lr"):
        ExperimentConfig(**base, train_lr=math.inf)


def test_target_spec_checks_every_field_whatever_the_family():
    assert TargetSpec("hypercube", 2, degree=0).build()[0].n_inputs == 2
    with pytest.raises(ValueError, match="degree must be an integer >= 0, got 2.5"):
        TargetSpec("hypercube", 2, degree=2.5)  # was recorded in the config, never read
    with pytest.raises(ValueError, match=r"subspace_k must be an integer in \[1, 2\], got 3"):
        TargetSpec("polynomial", 2, subspace_k=3)  # was UniformSubspace's "k must be ..."
    with pytest.raises(ValueError, match=r"hidden\[1\] must be an integer >= 1"):
        TargetSpec("mlp", 2, hidden=(4, 0))
    with pytest.raises(ValueError, match="seed must be an integer"):
        TargetSpec("hypercube", 2, seed=-1)
