"""Experiments as data: what target, which models, which sweep and seeds.

Every experiment is an ``ExperimentConfig`` written as ``config.json`` next to its results, so
that a figure can be regenerated from its folder alone (``ExperimentConfig.from_dict``).
"""

from __future__ import annotations

import pathlib
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from experiments.kinds.registry import END_TO_END, model_kind, model_kind_names
from routing.validation import check_int, check_real, check_seed

#: Generated targets (``lipschitz``), and "data": (X, y) read from a file of one's own
#: (``lipschitz.data_file``).
TARGET_FAMILIES = ("polynomial", "hypercube", "mlp", "data")
#: The routers of ``routing.layers``, trained end to end (``experiments.kinds.routers``).
ROUTER_KINDS = ("comet", "sigma_moe", "topk_moe", "pkm", "smear", "sdmlp")
#: The ``routing.layers`` layers a sweep trains end to end: the routers and their dense
#: baseline ``DenseMLP`` (every unit active; k, if given, must equal the width).
TRAINED_KINDS = ROUTER_KINDS + ("dense_mlp",)
#: The built-in model kinds (``experiments.kinds.registry``; ``model_kind_names()`` adds the ones
#: registered since).
MODEL_KINDS = ("dense", "dsm", "random_hash", "lsh", "lsh_table") + TRAINED_KINDS
#: Routers whose units are experts of width // n_experts hidden units each.
EXPERT_KINDS = ("sigma_moe", "topk_moe", "smear")
FITS = ("exact", "adam")
#: Names written before the regimes were named for what they are, read as their new names:
#: the regime "sgd" was Adam on the top layer for the frozen-feature kinds and end-to-end
#: training for the trained kinds (``canonical_fit``); its settings were ``sgd_*``.
LEGACY_FIELDS = {"sgd_steps": "train_steps", "sgd_lr": "train_lr", "sgd_batch": "train_batch"}
LEGACY_FIT = "sgd"


def canonical_fit(fit: str, kind: str | None = None) -> str:
    """A results row's ``fit`` under today's names: the legacy "sgd" becomes "end_to_end" for
    a kind trained end to end (``TRAINED_KINDS`` or a registered kind whose only regime is
    that) and "adam" for every other kind; any other value is returned as it is.

    Arguments:
        fit: the row's ``fit`` (str; nan-like values are returned unchanged).
        kind: the row's model kind (``ModelSpec.kind``), None when the row has none.
    """
    if fit != LEGACY_FIT:
        return fit
    if kind in TRAINED_KINDS:
        return END_TO_END
    if kind is not None:
        if kind in model_kind_names() and model_kind(kind).regimes == (END_TO_END,):
            return END_TO_END
    return "adam"


def with_current_names(data: dict[str, Any]) -> dict[str, Any]:
    """A config dict (``config.json``, a TOML table) with the legacy names of
    ``LEGACY_FIELDS`` and the fit "sgd" (the config's and its panels') under today's names (a
    copy; a dict setting both a legacy name and its new one keeps the new one's value only if
    they agree).

    Raises:
        ValueError: a legacy field and its new name both set, to different values.
    """
    data = dict(data)
    for old, new in LEGACY_FIELDS.items():
        if old in data:
            value = data.pop(old)
            if new in data and data[new] != value:
                raise ValueError(f"{old} (the old name of {new}) = {value!r} and {new} = "
                                 f"{data[new]!r} disagree: set {new} only")
            data[new] = value
    if data.get("fit") == LEGACY_FIT:
        data["fit"] = "adam"
    if isinstance(data.get("panels"), dict):
        data["panels"] = {name: ({**panel, "fit": "adam"} if isinstance(panel, dict)
                                 and panel.get("fit") == LEGACY_FIT else panel)
                          for name, panel in data["panels"].items()}
    return data


@dataclass(frozen=True)
class TargetSpec:
    """A target function and its input distribution (Baykal et al. 2022, §5.1).

    Attributes:
        family: "polynomial" (RandomPolynomial), "hypercube" (RandomHypercubeFunction) or
            "mlp" (RandomMLP, the random 3-layer net of Table 2).
        n_inputs: input dimension (the paper: 8).
        degree: polynomial degree (the paper: 4).
        hidden: MLP hidden widths.
        subspace_k: if set, inputs are uniform on a random subspace of this dimension
            (UniformSubspace), otherwise uniform on the cube.
        seed: seed of the target function (fixed across the sweep's seeds).
        path: family "data" only: a ``.npz`` (arrays X, y) or ``.csv`` (column y and input
            columns) file (``lipschitz.data_file.load_xy``); each sweep seed draws disjoint
            training and evaluation rows from it (``ExperimentConfig.make_data``). Its
            ``n_inputs`` is the file's number of input columns.
        sha256: family "data" only: the file's sha256, filled in on construction; a file
            that no longer matches a recorded value is refused (its rows would not be the
            ones a results folder was made from).

    Raises:
        ValueError: a field out of range (each is checked whatever the family: degree an
            integer >= 0, hidden widths >= 1, subspace_k None or in [1, n_inputs], seed in
            [0, 2**63 - 1]), or a bad data file.
    """

    family: str = "polynomial"
    n_inputs: int = 8
    degree: int = 4
    hidden: tuple[int, ...] = (64, 64)
    subspace_k: int | None = None
    seed: int = 0
    path: str | None = None
    sha256: str | None = None

    def __post_init__(self):
        if self.family not in TARGET_FAMILIES:
            raise ValueError(f"family must be one of {TARGET_FAMILIES}, got {self.family!r}")
        if self.family == "data":
            self._check_data_file()
        elif self.path is not None or self.sha256 is not None:
            raise ValueError(f"path and sha256 are fields of family 'data' only, got "
                             f"path={self.path!r} for family {self.family!r}")
        check_int(self.n_inputs, "n_inputs", low=1)
        # every field, whatever the family: a config records them all (config.json, TOML),
        # so a field the family does not read must still be a valid value, never 2.5
        check_int(self.degree, "degree", low=0)
        try:
            hidden = list(self.hidden)
        except TypeError:
            raise ValueError(f"hidden must be a sequence of widths >= 1, got "
                             f"{self.hidden!r}") from None
        for i, width in enumerate(hidden):
            check_int(width, f"hidden[{i}]", low=1)
        if self.subspace_k is not None:
            check_int(self.subspace_k, "subspace_k", 1, self.n_inputs)
        check_seed(self.seed)

    def _check_data_file(self) -> None:
        """Family "data": the file exists and parses, its hash matches a recorded one, and
        n_inputs is its number of input columns."""
        from lipschitz.data_file import file_sha256, load_xy

        if not isinstance(self.path, str) or not self.path:
            raise ValueError(f"target family 'data' needs path, a .npz or .csv file, got "
                             f"{self.path!r}")
        if self.subspace_k is not None:
            raise ValueError("subspace_k is a field of generated targets; a 'data' target's "
                             "inputs are the file's")
        X, _ = load_xy(self.path)
        digest = file_sha256(self.path)
        if self.sha256 is not None and self.sha256 != digest:
            raise ValueError(f"data file {self.path} changed: its sha256 is {digest}, the "
                             f"config records {self.sha256}")
        object.__setattr__(self, "sha256", digest)
        if self.n_inputs not in (X.shape[1], TargetSpec.n_inputs):
            raise ValueError(f"n_inputs={self.n_inputs} but data file {self.path} has "
                             f"{X.shape[1]} input columns")
        object.__setattr__(self, "n_inputs", X.shape[1])

    def build(self):
        """(target, distribution).

        Raises:
            ValueError: family "data", which has no function to build (its rows are read by
                ``ExperimentConfig.make_data``).
        """
        if self.family == "data":
            raise ValueError(f"target family 'data' ({self.path}) is rows of a file, not a "
                             f"function: it has no target to build")
        from lipschitz import (RandomHypercubeFunction, RandomMLP, RandomPolynomial, UniformCube,
                               UniformSubspace)

        if self.family == "polynomial":
            target = RandomPolynomial(self.n_inputs, self.degree, seed=self.seed)
        elif self.family == "hypercube":
            target = RandomHypercubeFunction(self.n_inputs, seed=self.seed)
        else:
            target = RandomMLP(self.n_inputs, tuple(self.hidden), seed=self.seed)
        if self.subspace_k is None:
            return target, UniformCube(self.n_inputs)
        return target, UniformSubspace(self.n_inputs, self.subspace_k, seed=self.seed)

    def label(self) -> str:
        base = {"polynomial": f"poly(n={self.n_inputs}, deg={self.degree})",
                "hypercube": f"hypercube(n={self.n_inputs})",
                "mlp": f"mlp(n={self.n_inputs}, hidden={list(self.hidden)})",
                "data": f"data({pathlib.Path(self.path or '').name}, n={self.n_inputs})",
                }[self.family]
        return base if self.subspace_k is None else f"{base} on k={self.subspace_k} subspace"


@dataclass(frozen=True)
class ModelSpec:
    """One model of a sweep.

    Attributes:
        kind: "dense", "dsm", "random_hash", "lsh" (the torch LSH model, a trainable value
            per bucket of a hash family ``family``, Baykal et al. §2.2) or "lsh_table"
            (``routing.LSHTable`` with Euclidean LSH, the learner of Theorem 4.1; its
            "buckets" are the non-empty ones), a router of ``ROUTER_KINDS``, or "dense_mlp"
            (``routing.layers.DenseMLP``, the dense baseline the routers are trained beside:
            every unit active, trained end to end).
        width: total width of the bottom layer (dense, dsm, random_hash, dense_mlp).
        k: activated units (dsm, random_hash, the routers; dense_mlp: None or the width).
        n_bits: lsh: hyperplanes per table (families sign, affine), or log2 of the slots per
            table (euclidean: the code vectors are folded into them; uniform: the buckets);
            the table holds n_tables · 2^n_bits values, of which a results row counts the
            non-empty ones on the training data (``nonempty_buckets``).
        n_tables: hash tables s (lsh, lsh_table; the uniform family: 1).
        n_hashes, bucket_width: Euclidean LSH parameters (lsh_table, and lsh of family
            euclidean; None otherwise).
        n_experts: experts of the MoE routers (sigma_moe, topk_moe, smear); each has
            width / n_experts hidden units, and k activated units are k / expert size experts
            (smear merges all experts into one, so its k must equal the expert size).
        lr: learning rate of a router (default: its config's, from its paper).
        label: legend name (defaults to the kind, with the width for DSM curves).
        family: the hash family of kind "lsh", one of ``LSH_FAMILIES`` (None is read as
            "sign", the family of specs written before families existed); None for every
            other kind. Part of ``key()``.
        options: further parameters of a kind registered by a user (a dict, kept as sorted
            (name, value) pairs so that the spec stays hashable); None for the built-in
            kinds. Part of ``key()``.

    Which fields a kind reads, and their ranges, are the kind's (``experiments.kinds.registry``:
    ``model_kind(kind).fields`` and ``check_spec``); a field a kind does not read is refused.

    For the routers, ``width`` is the total number of hidden units and ``k`` the activated
    units per example: comet (one hidden layer, p_k = k / width), pkm (width = n_keys², k
    values), sdmlp (width neurons, k_target = k).

    Raises:
        ValueError: ``lr`` <= 0, ``n_tables`` < 1, or a field the kind does not take or
            accept (``ModelKind.check_spec``: an unknown kind names the registered ones).
    """

    kind: str
    width: int | None = None
    k: int | None = None
    n_bits: int | None = None
    n_tables: int = 1
    n_hashes: int | None = None
    bucket_width: float | None = None
    n_experts: int | None = None
    lr: float | None = None
    label: str | None = None
    family: str | None = None
    options: tuple[tuple[str, Any], ...] | None = None

    def __post_init__(self):
        if isinstance(self.options, dict):
            object.__setattr__(self, "options", tuple(sorted(self.options.items())))
        elif self.options is not None:
            object.__setattr__(self, "options", tuple(sorted(
                (str(name), value) for name, value in self.options)))
        if self.lr is not None:
            check_real(self.lr, "lr", low=0.0, low_open=True)
        check_int(self.n_tables, "n_tables", low=1)  # every kind's default is 1
        model_kind(self.kind).check_spec(self)

    def option(self, name: str, default: Any = None) -> Any:
        """The value of ``options[name]`` (``default`` when not given)."""
        return dict(self.options or ()).get(name, default)

    def key(self) -> str:
        """A string identifying the configuration (used to resume sweeps): the kind and every
        field that is set but the label (for "lsh", the hash family too)."""
        parts = [self.kind] + [f"{name}={value}" for name, value in asdict(self).items()
                               if name not in ("kind", "label") and value is not None]
        return ";".join(parts)

    def display(self) -> str:
        return self.label or self.kind


def check_seeds(seeds, name: str = "seeds") -> tuple[int, ...]:
    """``seeds`` (a non-empty list, tuple or range of distinct seeds, each an integer in
    [0, 2**63 - 1]) as a tuple of ints.

    Raises:
        ValueError: naming ``name`` otherwise (a bare int, a string, a repeated seed, ...).
    """
    if not isinstance(seeds, (list, tuple, range, np.ndarray)) or len(seeds) == 0:
        raise ValueError(f"{name} must be a non-empty sequence of distinct integer seeds, "
                         f"got {seeds!r}")
    values = tuple(check_seed(s, name) for s in seeds)
    if len(set(values)) != len(values):
        raise ValueError(f"{name} must be distinct, got {values}")
    return values


@dataclass(frozen=True)
class ExperimentConfig:
    """A sweep: a target, a list of models, seeds, data sizes and the fitting method.

    Attributes:
        name: experiment name (fig2, fig3, …).
        preset: the preset it was built from.
        target: the ``TargetSpec``.
        models: the ``ModelSpec`` list.
        seeds: each seed draws new training / evaluation data and new random model parts;
            the target itself is fixed by ``target.seed``.
        n_train, n_eval: sample sizes.
        fit: "exact" (least squares / bucket means) or "adam" (Adam on the top layer); the
            kinds trained end to end ignore it (``END_TO_END``). "sgd", its old name, is
            read as "adam".
        train_steps, train_lr, train_batch: the training budget: Adam's when fit == "adam",
            and the steps and batch of the kinds trained end to end (their rate is their own).
            Written ``sgd_steps``, ``sgd_lr``, ``sgd_batch`` before (``LEGACY_FIELDS``).
        ridge: ridge penalty of the exact fit.
        noise_std: label noise of the training data.
        panels: plot panels: name -> (x column, list of model labels).
        fit_window: pre-registered window of the scaling-law fits (``experiments.analysis.scaling``):
            x column -> (min, max), both ends included, None for an open end; a fit against
            column c uses only the rows with min ≤ c ≤ max (``apply_fit_window``), columns
            without an entry are fitted whole. None: every fit uses every row. Written to
            ``config.json``; it changes no row of ``results.csv``, so it is no setting of the
            resume fingerprint (``experiments.runner.rows.NOT_SETTINGS``).
        control_seeds: seeds, disjoint from ``seeds``, at which only ``control_models`` run:
            extra seeds of the experiment's reference model for its negative and positive
            controls (``experiments.analysis.claims.control_claims``), cheap beside the
            compared models. Their rows are ordinary rows of ``results.csv`` (resumed like
            any other); the claims, fits and plots use the run's ``seeds`` only
            (``experiments.runner.sweep.run_rows``). Like ``seeds`` and ``models`` they are
            no setting of the fingerprint: a row's key holds its seed and model.
        control_models: the reference models run at ``control_seeds``, each one of
            ``models`` (same ``ModelSpec.key``); given exactly when ``control_seeds`` is.

    Raises:
        ValueError: a field out of its range, naming it (``fit`` not one of ``FITS``;
            ``n_train``, ``n_eval``, ``train_steps``, ``train_batch`` < 1; ``train_lr`` <= 0;
            ``ridge`` or ``noise_std`` < 0; bad seeds or ``fit_window``; control seeds that
            repeat, meet ``seeds`` or come without control models, or the reverse; a control
            model that is not one of ``models``).

    Source: the controls of the sparselab protocol (VERDICTS.md, "Controls").
    """

    name: str
    preset: str
    target: TargetSpec
    models: tuple[ModelSpec, ...]
    seeds: tuple[int, ...] = (0, 1, 2)
    n_train: int = 20_000
    n_eval: int = 5_000
    fit: str = "exact"
    train_steps: int = 2_000
    train_lr: float = 1e-3
    train_batch: int = 256
    ridge: float = 1e-6
    noise_std: float = 0.0
    panels: dict[str, Any] = field(default_factory=dict)
    fit_window: dict[str, tuple[float | None, float | None]] | None = None
    control_seeds: tuple[int, ...] = ()
    control_models: tuple[ModelSpec, ...] = ()

    def __post_init__(self):
        if self.fit == LEGACY_FIT:  # the old name of the Adam regime
            object.__setattr__(self, "fit", "adam")
        if self.fit not in FITS:
            raise ValueError(f"fit must be one of {FITS}, got {self.fit!r}")
        check_int(self.n_train, "n_train", low=1)
        check_int(self.n_eval, "n_eval", low=1)
        object.__setattr__(self, "seeds", check_seeds(self.seeds))
        check_int(self.train_steps, "train_steps", low=1)
        check_real(self.train_lr, "train_lr", 0.0, low_open=True)
        check_int(self.train_batch, "train_batch", low=1)
        check_real(self.ridge, "ridge", 0.0)
        check_real(self.noise_std, "noise_std", 0.0)
        if self.fit_window is not None:
            object.__setattr__(self, "fit_window", _check_fit_window(self.fit_window))
        self._check_controls()

    def _check_controls(self) -> None:
        """``control_seeds`` and ``control_models`` as tuples, checked (class docstring)."""
        seeds, models = self.control_seeds, self.control_models
        if isinstance(seeds, (list, tuple, range, np.ndarray)) and len(seeds) == 0:
            seeds = ()
        else:
            seeds = check_seeds(seeds, "control_seeds")
        if not isinstance(models, (list, tuple)):
            raise ValueError(f"control_models must be a sequence of ModelSpec, got {models!r}")
        models = tuple(ModelSpec(**m) if isinstance(m, dict) else m for m in models)
        for i, spec in enumerate(models):
            if not isinstance(spec, ModelSpec):
                raise ValueError(f"control_models[{i}] must be a ModelSpec, got {spec!r}")
        shared = sorted(set(seeds) & set(self.seeds))
        if shared:
            raise ValueError(f"control_seeds must be disjoint from seeds {list(self.seeds)}: "
                             f"{shared} are in both")
        if bool(seeds) != bool(models):
            raise ValueError(f"control_seeds and control_models come together (the reference "
                             f"models run at the control seeds), got {len(seeds)} control "
                             f"seeds and {len(models)} control models")
        keys = {spec.key() for spec in self.models}
        for i, spec in enumerate(models):
            if spec.key() not in keys:
                raise ValueError(f"control_models[{i}] ({spec.display()}, {spec.key()}) must "
                                 f"be one of the config's models")
        object.__setattr__(self, "control_seeds", seeds)
        object.__setattr__(self, "control_models", models)

    def jobs(self) -> list[tuple[int, ModelSpec]]:
        """The rows of this sweep as (seed, model) in the serial order: every model at each
        of ``seeds``, then each control model at each of ``control_seeds``."""
        return ([(seed, spec) for seed in self.seeds for spec in self.models]
                + [(seed, spec) for seed in self.control_seeds for spec in self.control_models])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ExperimentConfig":
        data = with_current_names(data)
        target = dict(data.pop("target"))
        target["hidden"] = tuple(target.get("hidden", (64, 64)))
        models = tuple(ModelSpec(**m) for m in data.pop("models"))
        data["seeds"] = tuple(data["seeds"])
        if "control_seeds" in data:  # a config.json written before control seeds: none
            data["control_seeds"] = tuple(data["control_seeds"])
        if "control_models" in data:
            data["control_models"] = tuple(ModelSpec(**m) for m in data["control_models"])
        return cls(target=TargetSpec(**target), models=models, **data)

    def make_data(self, seed: int):
        """The data of one seed of this sweep: (X (n_train, d), y (n_train,), X_eval
        (n_eval, d), y_eval (n_eval,)), float64; training labels carry ``noise_std`` noise,
        evaluation labels none. Training and evaluation data use independent seeds derived
        from ``seed`` (``data_seeds``)."""
        from lipschitz import make_dataset

        train_seed, eval_seed = data_seeds(seed)
        if self.target.family == "data":
            return self._rows_of_file(train_seed)
        target, distribution = self.target.build()
        X, y = make_dataset(target, distribution, self.n_train, self.noise_std, train_seed)
        X_eval, y_eval = make_dataset(target, distribution, self.n_eval, 0.0, eval_seed)
        return X, y, X_eval, y_eval

    def _rows_of_file(self, seed: int):
        """A data target's (X, y, X_eval, y_eval): n_train and n_eval disjoint rows of the
        file drawn by a permutation seeded by ``seed``; ``noise_std`` noise on the training
        labels, as for generated targets.

        Raises:
            ValueError: the file has fewer than n_train + n_eval rows.
        """
        from lipschitz.data_file import load_xy

        X, y = load_xy(self.target.path)
        if self.n_train + self.n_eval > len(X):
            raise ValueError(f"n_train + n_eval = {self.n_train + self.n_eval} rows are more "
                             f"than data file {self.target.path} has ({len(X)})")
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(X))
        train, held_out = order[:self.n_train], order[self.n_train:self.n_train + self.n_eval]
        y_train = y[train]
        if self.noise_std > 0:
            y_train = y_train + rng.normal(0.0, self.noise_std, size=len(train))
        return X[train], y_train, X[held_out], y[held_out]

    def with_(self, **changes) -> "ExperimentConfig":
        """This config with ``changes`` (``dataclasses.replace``). New ``seeds`` that meet the
        control seeds (``--seeds 0,1,2,3,4`` at a preset whose control seeds start at 3) move
        the control seeds, as many, to just after the largest new seed, unless
        ``control_seeds`` is changed too.

        Raises:
            ValueError: as the constructor, naming the field."""
        if "seeds" in changes and "control_seeds" not in changes and self.control_seeds:
            seeds = check_seeds(changes["seeds"])
            if set(seeds) & set(self.control_seeds):
                first = max(seeds) + 1
                changes["control_seeds"] = tuple(range(first, first + len(self.control_seeds)))
        return replace(self, **changes)


def _check_fit_window(window) -> dict[str, tuple[float | None, float | None]]:
    """``window`` as {column: (min or None, max or None)} with float bounds (a JSON list read
    back from ``config.json`` becomes a tuple again).

    Raises:
        ValueError: not a dict of column names to pairs of finite numbers or None with
            min ≤ max.
    """
    if not isinstance(window, dict):
        raise ValueError(f"fit_window must be None or a dict {{x column: (min, max)}}, got "
                         f"{window!r}")
    result = {}
    for column, bounds in window.items():
        if not isinstance(column, str) or not isinstance(bounds, (tuple, list)) \
                or len(bounds) != 2:
            raise ValueError(f"fit_window must map x column names to pairs (min, max), None "
                             f"for an open end, got {column!r}: {bounds!r}")
        low, high = (None if b is None else check_real(b, f"fit_window[{column!r}] bound")
                     for b in bounds)
        if low is not None and high is not None and low > high:
            raise ValueError(f"fit_window[{column!r}] must have min <= max, got {bounds!r}")
        result[column] = (low, high)
    return result


def fit_of(spec: ModelSpec, config: ExperimentConfig | None) -> str:
    """The fit regime a model of a sweep gets: the config's where the model's kind supports
    it, else the kind's own (the LSH table is always exact: bucket means; the routers and
    their trained dense baseline always "adam": they learn their routing or features, no closed
    form). ``config`` None asks for the kind's default regime."""
    kind = model_kind(spec.kind)
    return kind.regime(config.fit if config is not None else kind.regimes[0])


def data_seeds(seed: int) -> tuple[int, int]:
    """Independent training and evaluation data seeds derived from a sweep seed.

    Raises:
        ValueError: ``seed`` not an integer in [0, 2**63 - 1] (``routing.validation.
            check_seed``; "3" or 2.5 would otherwise seed another stream or fail in numpy).
    """
    a, b = np.random.SeedSequence([check_seed(seed), 2022]).generate_state(2)
    return int(a), int(b)
