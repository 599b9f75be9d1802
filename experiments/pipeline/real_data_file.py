"""The image experiments (cifar, continual, comet_images) as TOML files:
``sparselab scale --experiment cifar --preset tiny --print-config > my.toml`` writes one,
``sparselab scale --config my.toml`` runs it (``experiments.papers.real_data``)::

    experiment = "cifar"          # cifar | continual | comet_images
    preset = "tiny"               # tiny | quick | paper: the output folder's (runs/tiny/cifar)

    [config]                      # the experiment's config (CifarConfig, ContinualConfig,
    dataset = "digits"            # CometImagesConfig): every field but the preset and those
    channels = [4, 8, 8]          # computed from the others and the data (DERIVED_FIELDS:
    activated = [4, 8]            # the continual models' matched sizes)
    seeds = [0, 1]
    budget = "…"                  # what its verdicts are for (the data's part is added)

    [data]                        # the data the run reads, checked when it runs
    data_dir = "/data/mnist"      # a folder's data (mnist, cifar10); relative: to the file
    n_train = 1347                # split, n_train, n_test, image_shape, sha256: the data
    sha256 = "2bdf8723f126…"      # read must have them (delete them to run on other data)

The continual experiment's settings sit in ``[config.continual]`` (``ContinualSettings``'
fields) and where its rates come from in ``[config.calibration]``. A preset's file run so
computes the preset's rows under the same settings fingerprint, so it resumes the preset's
folder. Errors name the field and its place (``config.epochs``, ``config.continual.k``,
``data.sha256``), as ``experiments.pipeline.config_file``'s.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

__all__ = ["RealDataFile", "real_data_file_from_mapping", "write_real_data_toml"]

_TOP = ("experiment", "preset", "config", "data")
#: What ``[data]`` may hold: the folder and the identity fields checked (the data set's name
#: is ``config.dataset``).
_DATA_FIELDS = ("data_dir", "split", "n_train", "n_test", "image_shape", "sha256")


@dataclasses.dataclass(frozen=True)
class RealDataFile:
    """An image experiment read from a file.

    Attributes:
        experiment: "cifar", "continual" or "comet_images".
        preset: its preset (the config's; names the default output folder).
        config: the experiment's config (``experiments.papers.real_data.CONFIG_CLASSES``).
        data_dir: the folder of its data (str), None for a bundled data set.
        data_identity: the identity fields the data read must have ({} : no check).
    """

    experiment: str
    preset: str
    config: Any
    data_dir: str | None
    data_identity: dict


def write_real_data_toml(experiment: str, config, data: dict | None = None) -> str:
    """The TOML text of an image experiment's config, for a person to edit
    (``real_data_file_from_mapping`` reads it back to the same config).

    Arguments:
        experiment: "cifar", "continual" or "comet_images".
        config: its config (``experiments.papers.real_data.config_of``'s: the budget the
            preset's alone); the fields of ``DERIVED_FIELDS`` are left out.
        data: the data's identity (``experiments.runner.datasets.data_identity``'s dict, or
            a ``[data]`` table read back): its folder and checked fields are written; None:
            no ``[data]`` table.

    Returns:
        str, the file's text.

    Raises:
        ValueError: an unknown experiment; a config that is not its class.
    """
    import tomli_w

    from experiments.papers.real_data import CONFIG_CLASSES, DERIVED_FIELDS
    from experiments.pipeline._toml import inline_arrays
    from routing.validation import check_choice

    check_choice(experiment, "experiment", tuple(CONFIG_CLASSES))
    kind = CONFIG_CLASSES[experiment]
    if not isinstance(config, kind):
        raise ValueError(f"config must be a {kind.__name__} (the experiment {experiment!r}), "
                         f"got {type(config).__name__}")
    fields = {key: _plain(value) for key, value in config.to_dict().items()
              if key != "preset" and key not in DERIVED_FIELDS and value is not None}
    document: dict[str, Any] = {"experiment": experiment, "preset": config.preset,
                                "config": fields}
    if data:
        table = {key: _plain(data[key]) for key in _DATA_FIELDS
                 if data.get(key) is not None}
        if table.get("data_dir") is not None:
            table["data_dir"] = str(pathlib.Path(table["data_dir"]).resolve())
        if table:
            document["data"] = table
    header = (f"# sparselab image experiment {experiment!r} (preset {config.preset!r}).\n"
              f"# Run: sparselab scale --config THIS_FILE.toml [--seeds 0,1] [--out DIR]\n"
              f"# [data]: the data the rows are made on; a run on other data is refused "
              f"(delete the\n# identity fields, keeping data_dir, to run on other files).\n")
    return header + inline_arrays(tomli_w.dumps(document, multiline_strings=False))


def _plain(value):
    """Tuples as lists, inside dicts too (what TOML writes)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def real_data_file_from_mapping(data: dict, base: pathlib.Path | None = None) -> RealDataFile:
    """``RealDataFile`` from the parsed TOML (a dict); a relative ``data.data_dir`` is taken
    relative to ``base`` (the file's folder).

    Raises:
        ValueError: an unknown field, or a value out of range, naming it with its place
            (``config.epochs``, ``config.continual.k``, ``data.sha256``); a
            ``[config.calibration]`` whose rates are not the ``[config.continual]`` ones.
    """
    from experiments.papers.real_data import CONFIG_CLASSES, DERIVED_FIELDS, PRESETS
    from experiments.pipeline._toml import check_keys as _check_keys
    from experiments.pipeline._toml import check_seeds as _seeds

    _check_keys(data, _TOP, None)
    experiment = data.get("experiment")
    if experiment not in CONFIG_CLASSES:
        raise ValueError(f"experiment must be one of {tuple(CONFIG_CLASSES)} for an image "
                         f"experiment, got {experiment!r}")
    preset = data.get("preset")
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS} (the output folder's), got "
                         f"{preset!r}")
    kind = CONFIG_CLASSES[experiment]
    allowed = tuple(f.name for f in dataclasses.fields(kind)
                    if f.name != "preset" and f.name not in DERIVED_FIELDS)
    fields = data.get("config")
    if not isinstance(fields, dict):
        raise ValueError(f"config must be a table ([config]) of {kind.__name__}'s fields, got "
                         f"{fields!r}")
    _check_keys(fields, allowed, "config")
    fields = {key: tuple(value) if isinstance(value, list) else value
              for key, value in fields.items()}
    if "seeds" in fields:
        fields["seeds"] = _seeds(list(fields["seeds"]), "config.seeds")
    if experiment == "continual":
        _check_continual(fields)
    try:
        config = kind(preset=preset, **fields)
    except (ValueError, TypeError) as error:
        raise ValueError(f"config: {error}") from None
    table = data.get("data", {})
    if not isinstance(table, dict):
        raise ValueError(f"data must be a table ([data]), got {table!r}")
    _check_keys(table, _DATA_FIELDS, "data")
    data_dir = table.get("data_dir")
    if data_dir is not None:
        if not isinstance(data_dir, str) or not data_dir:
            raise ValueError(f"data.data_dir must be a folder's path (a string), got "
                             f"{data_dir!r}")
        if base is not None and not pathlib.Path(data_dir).is_absolute():
            data_dir = str(base / data_dir)
    identity = {key: value for key, value in table.items() if key != "data_dir"}
    return RealDataFile(experiment, preset, config, data_dir, identity)


def _check_continual(fields: dict) -> None:
    """The continual config's ``[config.continual]`` (``ContinualSettings``' fields, built
    once to check their values) and ``[config.calibration]`` (its record of where the rates
    come from: its ``values`` must be the rates run)."""
    from experiments.kinds.continual_harness import ContinualSettings
    from experiments.pipeline._toml import check_keys as _check_keys

    settings = fields.get("continual")
    if not isinstance(settings, dict):
        raise ValueError(f"config.continual must be a table ([config.continual]) of "
                         f"ContinualSettings' fields, got {settings!r}")
    _check_keys(settings, tuple(f.name for f in dataclasses.fields(ContinualSettings)),
                "config.continual")
    try:
        ContinualSettings(**settings)
    except (ValueError, TypeError) as error:
        raise ValueError(f"config.continual: {error}") from None
    record = fields.get("calibration")
    if record is None:
        return
    if not isinstance(record, dict):
        raise ValueError(f"config.calibration must be a table, got {record!r}")
    _check_keys(record, ("values", "source"), "config.calibration")
    values = record.get("values", {})
    if not isinstance(values, dict) or not isinstance(record.get("source", ""), str):
        raise ValueError(f"config.calibration must hold a table of rates (values) and a "
                         f"string (source), got {record!r}")
    for key, value in values.items():
        if key not in settings or settings[key] != value:
            raise ValueError(
                f"config.calibration.values.{key} is {value!r} but config.continual.{key} is "
                f"{settings.get(key)!r}: the record must name the rates run (edit both, or "
                f"delete [config.calibration])")
