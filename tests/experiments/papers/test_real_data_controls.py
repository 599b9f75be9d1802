"""The image experiments' control seeds (``CifarConfig.control_seeds`` and the others'):
checked on construction, no setting of the resume fingerprint, run for the reference model
alone, read by the controls and by nothing else, resumed like any row, and recorded in
``sparselab reproduce``'s step marker."""

import json
from dataclasses import replace

import pandas as pd
import pytest

from experiments.papers.real_data import (CONTROL_REFERENCE, CONTROL_SEEDS, CifarConfig,
                                          CometImagesConfig, ContinualConfig,
                                          experiment_config, run_cifar, settings_of)
from experiments.papers.real_data._rows import _seeds

#: The quick presets' fingerprints computed by the code before control seeds existed (their
#: rows in a folder made then must resume).
QUICK_FINGERPRINTS = {"cifar": "11c5a91a4428", "continual": "514622c2f267",
                      "comet_images": "387fdfecfb61"}


@pytest.mark.parametrize("name", sorted(QUICK_FINGERPRINTS))
def test_control_seeds_leave_the_quick_fingerprint_as_it_was(name):
    config = experiment_config(name, "quick", "digits")
    assert config.control_seeds  # the quick preset has them …
    assert settings_of(name, "quick") == QUICK_FINGERPRINTS[name]  # … outside the fingerprint
    assert settings_of(name, "quick", config=replace(
        experiment_config(name, "quick", config.dataset if name == "cifar" else "mnist_5k"),
        control_seeds=())) == QUICK_FINGERPRINTS[name]


@pytest.mark.parametrize("name", sorted(QUICK_FINGERPRINTS))
def test_each_quick_preset_runs_its_planned_control_seeds_after_the_run_seeds(name):
    config = experiment_config(name, "quick", "digits")
    count = CONTROL_SEEDS[(name, "quick")]
    first = max(config.seeds) + 1
    assert config.control_seeds == tuple(range(first, first + count))
    assert not experiment_config(name, "tiny", "digits").control_seeds


def test_control_seeds_are_checked_on_construction():
    with pytest.raises(ValueError, match="control_seeds must be disjoint from seeds"):
        CifarConfig("tiny", "digits", seeds=(0, 1), control_seeds=(1, 2))
    with pytest.raises(ValueError, match="control_seeds"):
        CometImagesConfig("tiny", "digits", control_seeds=(5, 5))
    with pytest.raises(ValueError, match="control_seeds"):
        CifarConfig("tiny", "digits", control_seeds=(-1,))
    with pytest.raises(ValueError, match="control_seeds"):
        CifarConfig("tiny", "digits", control_seeds="7")
    with pytest.raises(ValueError, match="control_activated"):
        CifarConfig("tiny", "digits", control_activated=(0, 8))
    with pytest.raises(ValueError, match="control_widths"):
        CometImagesConfig("tiny", "digits", control_widths=("32",))
    config = experiment_config("continual", "tiny", "digits")
    with pytest.raises(ValueError, match="control_seeds run the reference 'ReLU MLP'"):
        ContinualConfig("tiny", "digits", models=("SDMLP",), continual=config.continual,
                        control_seeds=(9,))
    assert CifarConfig("tiny", "digits", control_seeds=[7, 8]).control_seeds == (7, 8)


def test_given_seeds_move_control_seeds_they_would_share():
    config = CifarConfig("tiny", "digits", seeds=(0, 1), control_seeds=(2, 3, 4))
    assert _seeds(config, [5, 6]).control_seeds == (2, 3, 4)  # disjoint: kept
    moved = _seeds(config, [2, 3])
    assert moved.seeds == (2, 3) and moved.control_seeds == (4, 5, 6)


def _tiny(tmp_path, **changes):
    config = replace(experiment_config("cifar", "tiny", "digits"), **changes)
    out = tmp_path / "cifar"
    frame = run_cifar("tiny", out, config=config, progress=False, device="cpu")
    return out, frame


def test_cifar_runs_the_reference_alone_at_control_seeds_and_only_the_controls_read_them(
        tmp_path):
    plain_out, plain = _tiny(tmp_path / "plain")
    out, frame = _tiny(tmp_path, control_seeds=(7, 8, 9), control_activated=(4, 16))
    reference = CONTROL_REFERENCE["cifar"]
    extra = frame[~frame.set_index(["model_key", "seed"]).index.isin(
        plain.set_index(["model_key", "seed"]).index)]
    # at the control seeds: the reference at control_activated; at the run's seeds: the
    # reference at the one control size the run lacks (16)
    assert set(extra["model_label"]) == {reference}
    assert sorted(zip(extra["seed"], extra["activated_units"])) == sorted(
        [(s, a) for s in (7, 8, 9) for a in (4, 16)] + [(0, 16), (1, 16)])
    # the run's own rows are the plain run's, number for number
    same = frame.merge(plain, on=["model_key", "seed"], suffixes=("", "_plain"))
    assert len(same) == len(plain)
    assert (same["test_error"] == same["test_error_plain"]).all()
    claims = pd.read_csv(out / "claims.csv")
    before = pd.read_csv(plain_out / "claims.csv")
    mine, theirs = claims[claims["role"] == "claim"], before[before["role"] == "claim"]
    assert list(mine["verdict"]) == list(theirs["verdict"])
    assert list(mine["evidence"]) == list(theirs["evidence"])  # no claim reads a control row
    controls = claims[claims["role"].isin(["negative control", "positive control"])]
    negative, positive = controls["claim"].tolist()
    assert "3 control seeds" in negative and "over 5 seeds, 3 of them control seeds" in positive
    assert "over 2 activated_units" in controls["evidence"].iloc[0]  # 4 and 16: every seed
    assert "16 vs 4" in controls["evidence"].iloc[1]
    table = (out / "table.md").read_text()
    assert "2 seeds (and 3 control seeds of the reference model, for the controls)" in table
    # the fingerprint is the plain run's, and more control seeds resume the folder
    assert json.loads((out / "config.json").read_text())["settings"] == \
        json.loads((plain_out / "config.json").read_text())["settings"]
    more = _tiny(tmp_path, control_seeds=(7, 8, 9, 10), control_activated=(4, 16))[1]
    assert len(more) == len(frame) + 2
    assert (more.drop(columns="wall_s").iloc[:len(frame)].reset_index(drop=True)
            .equals(frame.drop(columns="wall_s").reset_index(drop=True)))


def test_reproduce_marks_an_image_step_with_its_control_seeds():
    from experiments.pipeline.reproduce import CONTROLS_KEY, real_data_steps

    markers = {name: marker for name, marker, _ in real_data_steps("quick")}
    for name, marker in markers.items():
        config = experiment_config(name, "quick", "digits")
        assert marker[CONTROLS_KEY]["control_seeds"] == list(config.control_seeds), name
    assert markers["cifar"][CONTROLS_KEY]["control_activated"] == [32, 128]
    assert markers["comet_images"][CONTROLS_KEY]["control_widths"] == [32, 128]
    assert set(markers["continual"][CONTROLS_KEY]) == {"control_seeds"}


def test_comet_images_runs_the_standard_model_alone_at_its_control_seeds_and_widths(
        tmp_path):
    from experiments.cli.plot import control_rows_of, read_results
    from experiments.papers.real_data import run_comet_images

    config = replace(experiment_config("comet_images", "tiny", "digits"), seeds=(0,),
                     control_seeds=(3, 4), control_widths=(8, 32, 64))
    assert config.widths == (8, 32)
    out = tmp_path / "comet"
    frame = run_comet_images("tiny", out, config=config, progress=False, device="cpu")
    extra = frame[(frame["seed"] != 0) | (frame["width"] == 64)]
    assert set(extra["model_label"]) == {CONTROL_REFERENCE["comet_images"]}
    assert sorted(zip(extra["seed"], extra["width"])) == [
        (0, 64), (3, 8), (3, 32), (3, 64), (4, 8), (4, 32), (4, 64)]
    claims = pd.read_csv(out / "claims.csv")
    assert not claims[claims["role"] == "claim"]["evidence"].str.contains("64").any()
    positive = claims[claims["role"] == "positive control"].iloc[0]
    assert "over 3 seeds, 2 of them control seeds" in positive["claim"]
    assert "32 vs 8" in positive["evidence"] and "64 vs 8" in positive["evidence"]
    # the plot leaves out the control seeds' rows and the width the run lacks
    assert control_rows_of(out, read_results(out)).sum() == len(extra)


def test_plot_leaves_out_the_control_rows_unless_asked(tmp_path):
    from experiments.cli.plot import control_rows_of, plot_results, read_results

    out, frame = _tiny(tmp_path, control_seeds=(7, 8), control_activated=(4, 16))
    rows = read_results(out)
    mask = control_rows_of(out, rows)
    reference = rows["model_label"] == CONTROL_REFERENCE["cifar"]
    expected = reference & (rows["seed"].isin([7, 8]) | (rows["activated_units"] == 16))
    assert (mask == expected.to_numpy()).all() and mask.sum() == 6
    _, dropped = plot_results(out, "activated_units", "test_error")
    assert dropped == 6
    _, dropped = plot_results(out, "activated_units", "test_error", controls=True)
    assert dropped == 0
    (out / "config.json").write_text("{not json")  # a broken record: refused, not guessed
    with pytest.raises(ValueError, match=r"config.json cannot be read as JSON.*--with-controls"):
        plot_results(out, "activated_units", "test_error")
    assert plot_results(out, "activated_units", "test_error", controls=True)[1] == 0
    (out / "config.json").unlink()  # nothing records them: every row is plotted
    assert not control_rows_of(out, rows).any()
