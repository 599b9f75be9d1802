"""Experiments from a TOML file: ``sparselab scale --config FILE.toml``.

The file holds the same fields as the ``config.json`` a run writes beside its results, with
the fields every sweep shares written once under ``[defaults]``::

    experiment = "fig2"          # the results' name (and output folder)
    preset = "quick"             # a label; sizes are the file's
    claims = "fig2"              # whose claims to judge: an experiment of catalogue.EXPERIMENTS,
                                 # or "none" (default: the experiment's, if it has claims)

    [defaults]                   # fields of every [[configs]] entry that does not set them
    seeds = [0, 1, 2]
    n_train = 20000
    [defaults.target]
    family = "polynomial"        # polynomial | hypercube | mlp | data (path = "my.npz")
    n_inputs = 6
    degree = 3

    [[configs]]                  # one sweep (``ExperimentConfig``) each
    name = "fig2"
    fit = "exact"
    [[configs.models]]
    kind = "dense"
    width = 64

Models may sit under ``[defaults]`` too (``[[defaults.models]]``); a config fitting only some
of them lists their keys (``ModelSpec.key``), e.g. ``models = ["dense;width=16;n_tables=1"]``.
A field left out takes ``ExperimentConfig``'s default; ``fit_window`` bounds use ``inf`` /
``-inf`` for an open end (TOML has no null). ``write_toml`` writes any preset in this form
(``sparselab scale --print-config``), which is the easiest start. Errors name the field (with
its place, e.g. ``configs[1].models[3].widht``) and the allowed values. The image experiments
(cifar, continual, comet_images) have a file of their own form
(``experiments.pipeline.real_data_file``), read here too.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import tomllib
from typing import Any

from experiments.pipeline._toml import check_keys as _check_keys
from experiments.pipeline._toml import check_seeds as _seeds
from experiments.pipeline._toml import inline_arrays as _inline_arrays
from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec, with_current_names

__all__ = ["ExperimentFile", "read_config_file", "config_file_from_mapping", "write_toml",
           "with_overrides", "parse_seeds"]

_TOP = ("experiment", "preset", "claims", "defaults", "configs")
_CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(ExperimentConfig))
_TARGET_FIELDS = tuple(f.name for f in dataclasses.fields(TargetSpec))
_MODEL_FIELDS = tuple(f.name for f in dataclasses.fields(ModelSpec))


@dataclasses.dataclass(frozen=True)
class ExperimentFile:
    """An experiment read from a file.

    Attributes:
        experiment: its name (``results.csv``'s ``experiment`` column is each config's name).
        preset: a label written to ``config.json``.
        claims: the experiment whose claims are judged on the rows (``experiments.analysis.claims
            .claims_for``), or "none".
        configs: the sweeps.
    """

    experiment: str
    preset: str
    claims: str
    configs: tuple[ExperimentConfig, ...]


def read_config_file(path):
    """Read an experiment from a TOML file (module docstring); a file whose ``experiment`` is
    an image experiment (cifar, continual, comet_images) is read by
    ``experiments.pipeline.real_data_file``.

    Arguments:
        path: the ``.toml`` file.

    Returns:
        ``ExperimentFile``, or ``real_data_file.RealDataFile`` for an image experiment.

    Raises:
        ValueError: one message naming the file and the field at fault: unreadable or
            invalid TOML, an unknown field, a missing ``configs``, or a value out of range.
    """
    path = pathlib.Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as error:
        raise ValueError(f"config file {path} cannot be read: {error.strerror or error}") \
            from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"config file {path} is not valid TOML: {error}") from None
    from experiments.papers.real_data import CONFIG_CLASSES
    from experiments.pipeline.real_data_file import real_data_file_from_mapping

    image = isinstance(data.get("experiment"), str) and data["experiment"] in CONFIG_CLASSES
    try:
        if image:
            return real_data_file_from_mapping(data, base=path.parent)
        return config_file_from_mapping(data, base=path.parent)
    except (ValueError, TypeError) as error:
        raise ValueError(f"config file {path}: {error}") from None


def config_file_from_mapping(data: dict, base: pathlib.Path | None = None) -> ExperimentFile:
    """``ExperimentFile`` from the parsed TOML (a dict); a data target's relative ``path`` is
    taken relative to ``base`` (the file's folder).

    Raises:
        ValueError: an unknown or missing field, or a value out of range (naming it).
    """
    from experiments.papers.catalogue import EXPERIMENTS

    _check_keys(data, _TOP, None)
    experiment = data.get("experiment")
    if not isinstance(experiment, str) or not experiment.isidentifier():
        raise ValueError(f"experiment must be a name (letters, digits, _), got {experiment!r}")
    preset = data.get("preset", "custom")
    if not isinstance(preset, str):
        raise ValueError(f"preset must be a string, got {preset!r}")
    claim_sets = tuple(sorted(EXPERIMENTS)) + ("none",)
    claims = data.get("claims", experiment if experiment in EXPERIMENTS else "none")
    if claims not in claim_sets:
        raise ValueError(f"claims must be one of {claim_sets}, got {claims!r}")
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ValueError(f"defaults must be a table, got {defaults!r}")
    defaults = with_current_names(defaults)  # sgd_* and the fit "sgd": their old names
    _check_keys(defaults, _CONFIG_FIELDS, "defaults")
    entries = data.get("configs")
    if not isinstance(entries, list) or not entries:
        raise ValueError("configs must be a non-empty array of tables ([[configs]])")
    configs = []
    for i, entry in enumerate(entries):
        where = f"configs[{i}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where} must be a table, got {entry!r}")
        merged = _merge(defaults, with_current_names(entry))
        merged.setdefault("name", experiment)
        merged.setdefault("preset", preset)
        try:
            configs.append(_config(merged, where, base, defaults.get("models")))
        except (ValueError, TypeError) as error:
            message = str(error)
            raise ValueError(message if message.startswith(where) else f"{where}: {message}") \
                from None
    return ExperimentFile(experiment, preset, claims, tuple(configs))


def _config(data: dict, where: str, base: pathlib.Path | None,
            shared_models=None) -> ExperimentConfig:
    """One ``[[configs]]`` entry (merged over ``[defaults]``) as an ``ExperimentConfig``;
    its ``models`` are tables, or keys (``ModelSpec.key``) of the models under
    ``[defaults]`` (``shared_models``), so that a regime fitting a subset of them lists
    them by name only.

    Raises:
        ValueError: naming the field at fault, its place first (``where``).
    """
    _check_keys(data, _CONFIG_FIELDS, where)
    data = dict(data)
    target = dict(data.pop("target", {}))
    _check_keys(target, _TARGET_FIELDS, f"{where}.target")
    if "hidden" in target:
        target["hidden"] = tuple(target["hidden"])
    if target.get("family") == "data" and isinstance(target.get("path"), str) and base:
        target["path"] = str((base / target["path"]) if not pathlib.Path(
            target["path"]).is_absolute() else pathlib.Path(target["path"]))
    models = data.pop("models", None)
    if not isinstance(models, list) or not models:
        raise ValueError(f"{where}.models must be a non-empty array of tables "
                         f"([[configs.models]])")
    pool = _models_by_key(shared_models)
    specs = []
    for j, model in enumerate(models):
        if isinstance(model, str):
            if model not in pool:
                known = ", ".join(repr(key) for key in list(pool)[:3])
                raise ValueError(
                    f"{where}.models[{j}]: {model!r} is not the key of a model under "
                    f"[defaults] (" + (f"{len(pool)} there, e.g. {known}" if pool else
                                       "none there") + ")")
            specs.append(pool[model])
            continue
        if not isinstance(model, dict):
            raise ValueError(f"{where}.models[{j}] must be a table or the key of a model "
                             f"under [defaults], got {model!r}")
        _check_keys(model, _MODEL_FIELDS, f"{where}.models[{j}]")
        try:
            specs.append(ModelSpec(**model))
        except (ValueError, TypeError) as error:
            raise ValueError(f"{where}.models[{j}]: {error}") from None
    if "seeds" in data:
        data["seeds"] = _seeds(data["seeds"], f"{where}.seeds")
    if data.get("fit_window") is not None:
        data["fit_window"] = {column: tuple(None if isinstance(b, float) and math.isinf(b)
                                            else b for b in bounds)
                              if isinstance(bounds, list) else bounds
                              for column, bounds in data["fit_window"].items()}
    try:
        target_spec = TargetSpec(**target)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{where}.target: {error}") from None
    return ExperimentConfig(target=target_spec, models=tuple(specs), **data)


def _models_by_key(models) -> dict[str, ModelSpec]:
    """``[defaults]``'s model tables by ``ModelSpec.key``; {} when there are none, or they
    do not all read (their own errors are raised where a config uses them)."""
    if not isinstance(models, list) or not all(isinstance(m, dict) for m in models):
        return {}
    try:
        specs = [ModelSpec(**model) for model in models]
    except (ValueError, TypeError):
        return {}
    return {spec.key(): spec for spec in specs}


def _merge(defaults: dict, entry: dict) -> dict:
    """``entry`` over ``defaults``; tables (target, panels) merge key by key."""
    merged = dict(defaults)
    for key, value in entry.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict) and key != "fit_window":
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"0,1,2"`` → (0, 1, 2) (``--seeds``).

    Raises:
        ValueError: not a comma-separated list of distinct integers >= 0.
    """
    try:
        values = [int(part) for part in str(text).split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--seeds must be comma-separated integers >= 0, e.g. 0,1,2; got "
                         f"{text!r}") from None
    return _seeds(values, "--seeds")


def with_overrides(configs, seeds: tuple[int, ...] | None = None, n_train: int | None = None,
                   n_eval: int | None = None) -> list[ExperimentConfig]:
    """``configs`` with the command line's ``--seeds``, ``--n-train`` and ``--n-eval`` (None:
    keep each config's).

    Raises:
        ValueError: sizes < 1 (naming the option).
    """
    changes = {name: value for name, value in (("seeds", seeds), ("n_train", n_train),
                                                ("n_eval", n_eval)) if value is not None}
    return [config.with_(**changes) for config in configs] if changes else list(configs)


#: The ``TargetSpec`` fields each target family reads (``TargetSpec.build``,
#: ``ExperimentConfig.make_data``); ``write_toml`` leaves out the others when they hold
#: their default.
TARGET_FIELDS_READ = {"polynomial": ("family", "n_inputs", "degree", "subspace_k", "seed"),
                      "hypercube": ("family", "n_inputs", "subspace_k", "seed"),
                      "mlp": ("family", "n_inputs", "hidden", "subspace_k", "seed"),
                      "data": ("family", "n_inputs", "path", "sha256")}

#: What ``write_toml`` says under ``[defaults]`` when no config has a fit window.
_NO_FIT_WINDOW = (
    "# fit_window: none, every scaling-law fit uses every row. To pre-register one, e.g.\n"
    "# fit_window = { activated_units = [16, inf] }   # x column -> [min, max], inf: open\n")


def write_toml(experiment: str, preset: str, configs, claims: str | None = None) -> str:
    """The TOML text of an experiment, for a person to edit (``read_config_file`` reads it
    back to configs of the same settings fingerprints, models, panels and fit windows):
    fields equal in every config — the models included — go once under ``[defaults]``;
    None values are left out (they are the defaults); target fields the target's family does
    not read (``TARGET_FIELDS_READ``: ``hidden`` of a polynomial) are left out when they hold
    their default (one that does not still counts in the fingerprint, so it stays); a
    ``fit_window``'s open ends are written ``inf`` / ``-inf``, and without one a comment under
    ``[defaults]`` shows how to pre-register it.

    Arguments:
        experiment, preset: names written at the top; configs: ``ExperimentConfig`` list;
        claims: the claims line (None: left out, i.e. the experiment's own).

    Returns:
        str, the file's text.

    Raises:
        ValueError: ``experiment`` not a name (letters, digits, _), ``preset`` not a string,
            ``claims`` not an experiment of ``catalogue.EXPERIMENTS``, "none" or None (the rules
            of ``config_file_from_mapping``, so that the text reads back); no configs.
    """
    import tomli_w

    from experiments.papers.catalogue import EXPERIMENTS

    if not isinstance(experiment, str) or not experiment.isidentifier():
        raise ValueError(f"experiment must be a name (letters, digits, _), got {experiment!r}")
    if not isinstance(preset, str):
        raise ValueError(f"preset must be a string, got {preset!r}")
    claim_sets = tuple(sorted(EXPERIMENTS)) + ("none",)
    if claims is not None and claims not in claim_sets:
        raise ValueError(f"claims must be one of {claim_sets} or None, got {claims!r}")
    configs = list(configs)
    if not configs:
        raise ValueError("configs must hold at least one ExperimentConfig")

    dicts = [_tomlable(config.to_dict()) for config in configs]
    for d in dicts:
        d["target"] = _target_fields_read(d["target"])
    shared = {key: value for key, value in dicts[0].items()
              if key not in ("name", "preset")
              and all(d.get(key) == value for d in dicts[1:])}
    if "models" not in shared and (pool := _model_pool(configs)) is not None:
        # the models of the config holding every model go under [defaults] once; another
        # regime's subset of them is named by its keys
        shared["models"] = dicts[pool]["models"]
        for config, d in zip(configs, dicts):
            if d["models"] != shared["models"]:
                d["models"] = [spec.key() for spec in config.models]
    if "panels" not in shared and all(isinstance(d.get("panels"), dict) for d in dicts):
        # panels alike in every regime but their fit: the common part once
        common = _common([d["panels"] for d in dicts])
        if common:
            shared["panels"] = common
            for d in dicts:
                d["panels"] = _beyond(d["panels"], common)
    document: dict[str, Any] = {"experiment": experiment, "preset": preset}
    if claims is not None:
        document["claims"] = claims
    document["defaults"] = shared
    document["configs"] = [{key: value for key, value in d.items()
                            if not (key in shared and shared[key] == value)
                            and value != {}
                            and key != "preset"
                            and not (key == "name" and value == experiment)} for d in dicts]
    header = (f"# sparselab experiment {experiment!r} (preset {preset!r}).\n"
              f"# Run: sparselab scale --config THIS_FILE.toml [--seeds 0,1,2] "
              f"[--n-train N] [--n-eval N]\n")
    text = _inline_arrays(tomli_w.dumps(document, multiline_strings=False))
    if all(config.fit_window is None for config in configs):
        text = text.replace("[defaults]\n", "[defaults]\n" + _NO_FIT_WINDOW, 1)
    return header + text


def _common(tables: list[dict]) -> dict:
    """The entries every one of ``tables`` holds alike, sub-tables compared entry by entry
    (what ``_merge`` merges back)."""
    common = {}
    for key, value in tables[0].items():
        if not all(key in t for t in tables[1:]):
            continue
        if isinstance(value, dict) and all(isinstance(t[key], dict) for t in tables[1:]):
            inner = _common([t[key] for t in tables])
            if inner:
                common[key] = inner
        elif all(t[key] == value for t in tables[1:]):
            common[key] = value
    return common


def _beyond(table: dict, common: dict) -> dict:
    """``table`` without what ``common`` holds alike (``_merge(common, result) == table``)."""
    rest = {}
    for key, value in table.items():
        if key not in common:
            rest[key] = value
        elif isinstance(value, dict) and isinstance(common[key], dict):
            inner = _beyond(value, common[key])
            if inner:
                rest[key] = inner
        elif value != common[key]:
            rest[key] = value
    return rest


def _model_pool(configs) -> int | None:
    """The index of a config whose models hold every other config's (each model told by its
    ``ModelSpec.key``, one spec per key), or None."""
    by_key: dict[str, ModelSpec] = {}
    for config in configs:
        for spec in config.models:
            if by_key.setdefault(spec.key(), spec) != spec:
                return None  # one key, two specs (labels differ): keys cannot name them
    for i, config in enumerate(configs):
        keys = {spec.key() for spec in config.models}
        if len(keys) == len(config.models) and keys == set(by_key):
            return i
    return None


def _target_fields_read(target: dict) -> dict:
    """A target's TOML table without the fields its family does not read that hold their
    ``TargetSpec`` default (leaving them out reads back to the same target)."""
    defaults = {f.name: f.default for f in dataclasses.fields(TargetSpec)}
    read = TARGET_FIELDS_READ.get(target.get("family", defaults["family"]), _TARGET_FIELDS)
    return {key: value for key, value in target.items()
            if key in read or _tomlable(defaults.get(key)) != value}


def _tomlable(value, key: str = ""):
    """A config dict without None (TOML has no null): None fields are dropped, a fit
    window's open ends become ±inf, tuples become lists."""
    if key == "options" and isinstance(value, (list, tuple)):
        value = dict(value)
    if isinstance(value, dict):
        if key == "fit_window":
            return {column: [-math.inf if bounds[0] is None else bounds[0],
                             math.inf if bounds[1] is None else bounds[1]]
                    for column, bounds in value.items()}
        return {str(k): _tomlable(v, str(k)) for k, v in value.items() if v is not None
                and not (k == "n_tables" and v == 1)}  # ModelSpec's default
    if isinstance(value, (list, tuple)):
        items = [_tomlable(v) for v in value]
        if any(v is None for v in items):
            raise ValueError(f"{key or 'a list'} holds None, which TOML cannot write: {value!r}")
        return items
    return value
