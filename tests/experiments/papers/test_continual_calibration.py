"""The continual experiment's calibration rule (``experiments.papers.real_data.calibration``)."""

import pytest

from experiments.kinds.continual_harness import ContinualSettings, run_continual_model
from experiments.papers.real_data.calibration import (EWC_LAMBDAS, SDM_EWC_LAMBDAS, SDM_LRS,
                                               SGD_JUDGES, SGD_LRS, _first_best,
                                               calibrate_continual)
from experiments.papers.real_data import (CALIBRATED_RATES, PAPER_CONTINUAL_RATES, QUICK_CONTINUAL,
                                   QUICK_CONTINUAL_MNIST, experiment_config)
from experiments.papers.real_data._rows import _flat

#: the tiny preset's sizes: seconds for the whole rule
SMALL = dict(n_neurons=64, k=4, n_experts=16, fisher_samples=20, evals_per_task=1)
RATES = ("sdm_lr", "sgd_lr", "ewc_lambda", "sdm_ewc_lambda")


@pytest.fixture(scope="module")
def small():
    return calibrate_continual(1, overrides=SMALL)


def test_each_value_is_the_first_best_of_its_candidates(small):
    accuracy, chosen = small["accuracy"], small["chosen"]
    assert list(accuracy["sdm_lr"]) == list(SDM_LRS)
    assert list(accuracy["sgd_lr"]) == list(SGD_LRS)
    assert list(accuracy["ewc_lambda"]) == list(EWC_LAMBDAS)
    assert list(accuracy["sdm_ewc_lambda"]) == list(SDM_EWC_LAMBDAS)
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
    best = max(accuracy["sdm_ewc_lambda"].values())
    assert chosen["sdm_ewc_lambda"] == next(v for v in SDM_EWC_LAMBDAS
                                            if accuracy["sdm_ewc_lambda"][v] == best)
    assert small["data"]["name"] == "digits" and small["seed"] == 100
    assert chosen["epochs_per_task"] == 1
    assert {k: chosen[k] for k in SMALL} == SMALL


def test_an_accuracy_equals_an_independent_run_of_the_harness(small):
    """EWC at the chosen λ (with the chosen rates before it) is the harness's own number."""
    chosen = small["chosen"]
    config = experiment_config("continual", "quick", "digits")
    settings = ContinualSettings(class_order=config.continual["class_order"], **chosen)
    from experiments.runner.datasets import load_image_data

    d = load_image_data("digits")
    data = _flat(d.X_train, d.y_train, d.X_test, d.y_test)
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
    assert paper.calibration["values"] == PAPER_CONTINUAL_RATES
    assert "not calibrated on mnist" in paper.calibration["source"]


@pytest.mark.slow
@pytest.mark.parametrize("data, sizes", [("digits", QUICK_CONTINUAL),
                                         ("mnist_5k", QUICK_CONTINUAL_MNIST)])
def test_the_quick_rates_are_the_rule_on_the_quick_data_at_the_quick_epochs(data, sizes):
    """The rule rerun on each data set the quick preset reads, at its epochs, gives the rates
    the preset uses there and records in config.json (about 30 s on one core each)."""
    epochs = sizes["epochs_per_task"]
    result = calibrate_continual(epochs, data=data)
    assert {k: result["chosen"][k] for k in RATES} == CALIBRATED_RATES[(data, epochs)]
    config = experiment_config("continual", "quick", data)
    assert {k: config.continual[k] for k in RATES} == CALIBRATED_RATES[(data, epochs)]
    assert config.calibration["values"] == CALIBRATED_RATES[(data, epochs)]
    assert f"on {data} at {epochs} epochs a task" in config.calibration["source"]


def test_a_calibration_file_overrides_the_rates_and_is_recorded(tmp_path):
    import json

    from experiments.papers.real_data import read_calibration
    from experiments.papers.real_data._configs import with_calibration

    path = tmp_path / "rates.json"
    path.write_text(json.dumps({"chosen": {"sgd_lr": 0.03, "ewc_lambda": 1e5, "k": 4}}))
    config = with_calibration(experiment_config("continual", "quick", "digits"), path)
    assert config.continual["sgd_lr"] == 0.03 and config.continual["ewc_lambda"] == 1e5
    assert config.continual["sdm_lr"] == CALIBRATED_RATES[("digits", 20)]["sdm_lr"]
    assert config.calibration["values"]["sgd_lr"] == 0.03
    assert f"from file {path}" in config.calibration["source"]
    toml = tmp_path / "rates.toml"
    toml.write_text("sdm_lr = 3.0\n")
    assert read_calibration(toml)[0] == {"sdm_lr": 3.0}
    for bad, match in (({"n_neurons": 3}, "calibration may set"), ({}, "none of them"),
                       ({"sgd_lr": 0.0}, "sgd_lr"), ({"ewc_lambda": -1.0}, "ewc_lambda")):
        with pytest.raises(ValueError, match=match):
            read_calibration(bad)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="cannot be read as JSON"):
        read_calibration(tmp_path / "bad.json")


def test_the_command_line_refuses_bad_epochs_by_name():
    from experiments.papers.real_data.calibration import _main

    with pytest.raises(ValueError, match="epochs_per_task"):
        _main(["--epochs-per-task", "0"])
