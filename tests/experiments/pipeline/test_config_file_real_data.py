"""The image experiments as TOML (experiments.pipeline.real_data_file): a preset's printed
config reads back to the same settings fingerprint and resumes the preset's folder; bad
fields are refused naming their place."""

import dataclasses

import pandas as pd
import pytest
from click.testing import CliRunner

from experiments.cli import main
from experiments.papers.real_data import (DERIVED_FIELDS, config_of, run_comet_images,
                                          run_continual, settings_of)
from experiments.pipeline.config_file import read_config_file
from experiments.pipeline.real_data_file import (RealDataFile, real_data_file_from_mapping,
                                                 write_real_data_toml)

pytestmark = pytest.mark.usefixtures("one_thread")


def printed(tmp_path, name, preset="tiny", **options):
    """The preset's config printed as TOML into a file, and that file read back."""
    config, identity = config_of(name, preset, **options)
    path = tmp_path / f"{name}.toml"
    path.write_text(write_real_data_toml(name, config, identity))
    return config, read_config_file(path)


@pytest.mark.parametrize("name", ["cifar", "continual", "comet_images"])
def test_a_printed_preset_reads_back_to_the_same_fingerprint(tmp_path, name):
    config, back = printed(tmp_path, name)
    assert isinstance(back, RealDataFile)
    assert (back.experiment, back.preset, back.data_dir) == (name, "tiny", None)
    assert set(back.data_identity) == {"split", "n_train", "n_test", "image_shape", "sha256"}
    written = {k: v for k, v in config.to_dict().items() if k not in DERIVED_FIELDS}
    assert {k: v for k, v in back.config.to_dict().items()
            if k not in DERIVED_FIELDS and v is not None} == written
    assert settings_of(name, "tiny", config=back.config) == settings_of(name, "tiny")
    # a setting edited in the file is a new fingerprint (the test can fail)
    edited = (dataclasses.replace(back.config, epochs=3) if name != "continual" else
              dataclasses.replace(back.config, continual={**back.config.continual, "k": 8}))
    assert settings_of(name, "tiny", config=edited) != settings_of(name, "tiny")


def test_seeds_and_calibration_are_written_and_read_back(tmp_path):
    config, back = printed(tmp_path, "continual", seeds=[3],
                           calibration={"sgd_lr": 0.05})
    assert back.config.seeds == (3,) and back.config.continual["sgd_lr"] == 0.05
    assert back.config.calibration == config.calibration
    assert "sgd_lr from a dict" in back.config.calibration["source"]


def mapping(name="cifar", **config):
    """A parsed TOML of the tiny preset of ``name`` with ``config``'s fields replaced."""
    preset, _ = config_of(name, "tiny")
    fields = {k: v for k, v in preset.to_dict().items()
              if k != "preset" and k not in DERIVED_FIELDS and v is not None}
    return {"experiment": name, "preset": "tiny", "config": {**fields, **config}}


def test_bad_fields_are_refused_naming_their_place(tmp_path):
    with pytest.raises(ValueError, match=r"config: unknown field 'epochz' \(allowed: dataset, "):
        real_data_file_from_mapping(mapping(epochz=2))
    with pytest.raises(ValueError, match="config: unknown field 'matched'"):  # derived
        real_data_file_from_mapping(mapping("continual", matched={}))
    with pytest.raises(ValueError, match="config: epochs must be"):
        real_data_file_from_mapping(mapping(epochs=0))
    with pytest.raises(ValueError, match="config.seeds must be a non-empty list"):
        real_data_file_from_mapping(mapping(seeds=[]))
    with pytest.raises(ValueError, match="preset must be one of"):
        real_data_file_from_mapping({**mapping(), "preset": "custom"})
    with pytest.raises(ValueError, match="unknown field 'claims' at the top level"):
        real_data_file_from_mapping({**mapping(), "claims": "none"})
    with pytest.raises(ValueError, match="data: unknown field 'name'"):
        real_data_file_from_mapping({**mapping(), "data": {"name": "digits"}})
    continual = mapping("continual")
    settings = continual["config"]["continual"]
    with pytest.raises(ValueError, match="config.continual: unknown field 'kk'"):
        real_data_file_from_mapping(mapping("continual", continual={**settings, "kk": 1}))
    with pytest.raises(ValueError, match="config.continual: .*k"):
        real_data_file_from_mapping(mapping("continual", continual={**settings, "k": 0}))
    # the calibration record must name the rates run
    with pytest.raises(ValueError, match="config.calibration.values.sgd_lr is 0.1 but "
                                         "config.continual.sgd_lr is 0.2"):
        real_data_file_from_mapping(mapping("continual", continual={**settings, "sgd_lr": 0.2}))
    # a relative data folder is the file's
    read = real_data_file_from_mapping({**mapping(), "data": {"data_dir": "mnist"}}, tmp_path)
    assert read.data_dir == str(tmp_path / "mnist")
    # read_config_file names the file first
    path = tmp_path / "bad.toml"
    path.write_text('experiment = "comet_images"\npreset = "tiny"\n[config]\nwidth = 3\n')
    with pytest.raises(ValueError, match=r"config file .*bad.toml: config: unknown field "
                                         r"'width' \(allowed: dataset, widths"):
        read_config_file(path)


def test_other_data_than_the_files_are_refused_naming_the_field(tmp_path):
    _, back = printed(tmp_path, "comet_images")
    other = {**back.data_identity, "sha256": "0" * 64}
    with pytest.raises(ValueError, match=r"data.sha256: the data read \(digits\) have "
                                         r"'2bdf8723"):
        run_comet_images("tiny", tmp_path / "out", config=back.config, data_identity=other,
                         progress=False)
    with pytest.raises(ValueError, match="preset 'quick' differs from the config's preset"):
        run_comet_images("quick", tmp_path / "out", config=back.config, progress=False)
    with pytest.raises(ValueError, match="config must be a CometImagesConfig"):
        run_comet_images("tiny", tmp_path / "out", config=config_of("cifar", "tiny")[0],
                         progress=False)
    assert not (tmp_path / "out").exists()  # refused before the folder was made


def test_cli_prints_and_refuses_options_beside_a_file(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["scale", "--experiment", "cifar", "--preset", "tiny",
                                  "--seeds", "4,5", "--print-config"])
    assert result.exit_code == 0, result.output
    path = tmp_path / "cifar.toml"
    path.write_text(result.output)
    assert read_config_file(path).config.seeds == (4, 5)
    again = runner.invoke(main, ["scale", "--config", str(path), "--print-config"])
    assert again.exit_code == 0 and again.output == result.output  # a fixed point
    refused = runner.invoke(main, ["scale", "--config", str(path), "--data", "digits"])
    assert refused.exit_code == 2 and "--data is not an option" in refused.output
    refused = runner.invoke(main, ["scale", "--config", str(path), "--n-train", "5"])
    assert refused.exit_code == 2 and "--n-train is not an option" in refused.output


def test_a_continual_run_from_the_printed_file_resumes_the_presets_folder(tmp_path):
    """The end-to-end promise: a tiny continual run (one seed) finished at the preset, then
    run again from its printed TOML into the same folder, computes no row."""
    out = tmp_path / "runs" / "tiny" / "continual"
    frame = run_continual("tiny", out, seeds=[0], progress=False)
    before = (out / "results.csv").read_bytes()
    runner = CliRunner()
    result = runner.invoke(main, ["scale", "--experiment", "continual", "--preset", "tiny",
                                  "--seeds", "0", "--print-config"])
    assert result.exit_code == 0, result.output
    (tmp_path / "continual.toml").write_text(result.output)
    result = runner.invoke(main, ["scale", "--config", str(tmp_path / "continual.toml"),
                                  "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "results.csv").read_bytes() == before  # zero new rows, none recomputed
    assert len(pd.read_csv(out / "results.csv")) == len(frame)
    # and a setting edited in the file is refused there, naming it
    text = (tmp_path / "continual.toml").read_text().replace("epochs_per_task = 2",
                                                             "epochs_per_task = 3")
    (tmp_path / "edited.toml").write_text(text)
    result = runner.invoke(main, ["scale", "--config", str(tmp_path / "edited.toml"),
                                  "--out", str(out)])
    assert result.exit_code == 1
    assert "continual.epochs_per_task 2 there, 3 now" in result.output
