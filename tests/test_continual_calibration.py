"""The continual experiment's calibration rule (``experiments.continual_calibration``)."""

import pytest

from experiments.continual import ContinualSettings, run_continual_model
from experiments.continual_calibration import (EWC_LAMBDAS, SDM_LRS, SGD_JUDGES, SGD_LRS,
                                               _first_best, calibrate_continual)
from experiments.real_data import PAPER_CONTINUAL_RATES, QUICK_CONTINUAL, experiment_config
from experiments.real_data._rows import _data, _flat

#: the tiny preset's sizes: seconds for the whole rule
SMALL = dict(n_neurons=64, k=4, n_experts=16, fisher_samples=20, evals_per_task=1)
RATES = ("sdm_lr", "sgd_lr", "ewc_lambda")


@pytest.fixture(scope="module")
def small():
    return calibrate_continual(1, overrides=SMALL)


def test_each_value_is_the_first_best_of_its_candidates(small):
    accuracy, chosen = small["accuracy"], small["chosen"]
    assert list(accuracy["sdm_lr"]) == list(SDM_LRS)
    assert list(accuracy["sgd_lr"]) == list(SGD_LRS)
    assert list(accuracy["ewc_lambda"]) == list(EWC_LAMBDAS)
    for judges in accuracy["sgd_lr"].values():
        assert tuple(judges) == SGD_JUDGES
    values = [a for a in accuracy["sdm_lr"].values()] + list(accuracy["ewc_lambda"].values())
    values += [a for judges in accuracy["sgd_lr"].values() for a in judges.values()]
    assert all(0.0 <= a <= 1.0 for a in values)
    best = max(accuracy["sdm_lr"].values())
    assert chosen["sdm_lr"] == next(v for v in SDM_LRS if accuracy["sdm_lr"][v] == best)
    means = {v: sum(j.values()) / 3 for v, j in accuracy["sgd_lr"].items()}
    assert chosen["sgd_lr"] == next(v for v in SGD_LRS if means[v] == max(means.values()))
    best = max(accuracy["ewc_lambda"].values())
    assert chosen["ewc_lambda"] == next(v for v in EWC_LAMBDAS
                                        if accuracy["ewc_lambda"][v] == best)
    assert chosen["epochs_per_task"] == 1
    assert {k: chosen[k] for k in SMALL} == SMALL


def test_an_accuracy_equals_an_independent_run_of_the_harness(small):
    """EWC at the chosen λ (with the chosen rates before it) is the harness's own number."""
    chosen = small["chosen"]
    config = experiment_config("continual", "quick", "digits")
    settings = ContinualSettings(class_order=config.continual["class_order"], **chosen)
    data = _flat(*_data("quick", None, "digits")[1:])
    row = run_continual_model("EWC (ReLU MLP)", data, settings, 100, "cpu")
    assert row["final_accuracy"] == small["accuracy"]["ewc_lambda"][chosen["ewc_lambda"]]


def test_first_best_breaks_ties_by_order():
    assert _first_best({0.3: 0.5, 1.0: 0.5, 3.0: 0.1}) == 0.3
    assert _first_best({0.3: 0.4, 1.0: 0.5, 3.0: 0.5}) == 1.0


@pytest.mark.parametrize("kwargs, match", [
    (dict(epochs_per_task=0), "epochs_per_task"),
    (dict(epochs_per_task=2, seed=0), "verdict seed"),
    (dict(epochs_per_task=2, seed=3), "verdict seed"),
    (dict(epochs_per_task=2, seed=-1), "seed"),
    (dict(epochs_per_task=2, overrides={"sdm_lr": 1.0}), "sdm_lr"),
    (dict(epochs_per_task=2, overrides={"n_neuron": 8}), "n_neuron"),
    (dict(epochs_per_task=2, overrides=[("k", 4)]), "overrides must be a dict"),
])
def test_bad_arguments_are_refused_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        calibrate_continual(**kwargs)


def test_the_paper_preset_keeps_the_rates_calibrated_at_40_epochs():
    paper = experiment_config("continual", "paper", "mnist")
    assert {k: paper.continual[k] for k in RATES} == PAPER_CONTINUAL_RATES


def test_the_quick_rates_are_the_rule_at_the_quick_epochs():
    """The rule rerun at the quick preset's epochs gives the quick preset's rates (about 20 s
    on one core)."""
    result = calibrate_continual(QUICK_CONTINUAL["epochs_per_task"])
    assert {k: result["chosen"][k] for k in RATES} == {k: QUICK_CONTINUAL[k] for k in RATES}


def test_the_command_line_refuses_bad_epochs_by_name():
    from experiments.continual_calibration import _main

    with pytest.raises(ValueError, match="epochs_per_task"):
        _main(["--epochs-per-task", "0"])
