"""Baykal et al. 2022's regression models as model kinds: dense, DSM, random hash and the
LSH model (``routing.models``), each a frozen bottom layer under a trainable top layer.

They are linear in their trainable parameters, so they are fitted under either regime:
"exact" (ridge least squares, ``experiments.kinds.fitting``) or "adam" (Adam). Source: Baykal et al.
2022, §2.2 and §5.1.
"""

from __future__ import annotations

from typing import Any, Callable

from experiments.kinds.registry import ModelKind, register_model_kind
from routing.validation import check_int, check_real

#: Hash families of the "lsh" kind (``routing.models.lsh_model.HASH_FAMILIES``, the same
#: tuple; kept here so that reading a spec needs no torch): hyperplanes through the origin
#: ("sign", Charikar 2002, the default), affine hyperplanes ("affine"), Euclidean LSH
#: ("euclidean", Datar et al. 2004: the family of Baykal et al.'s Theorem 4.1) and a uniform
#: random hash ("uniform", blind to geometry: the baseline of Baykal et al. §1 and Fig. 4).
LSH_FAMILIES = ("sign", "affine", "euclidean", "uniform")

#: Largest number of float32 bottom-layer activations a model may hold for one batch of the
#: exact fit before we refuse (4 GiB): an estimate made before allocating anything.
MAX_FEATURE_BYTES = 4 << 30


class LinearKind(ModelKind):
    """A model of ``routing.models``: built by ``factory(spec, dim, seed)``, fitted by
    ``experiments.kinds.fitting.fit_model`` (exact or Adam), measured by its own size and cost
    properties.

    Arguments:
        name: the kind's name; factory: builds the torch model; fields: the spec fields it
            reads; check: extra checks of a spec (after the field check); description: one
            line.
    """

    regimes = ("exact", "adam")

    def __init__(self, name: str, factory: Callable, fields: tuple[str, ...],
                 check: Callable | None = None, description: str = "",
                 example: dict[str, Any] | None = None):
        self.name, self.factory, self.fields = name, factory, fields
        self._check, self.description, self.example = check, description, example or {}

    def check_spec(self, spec) -> None:
        super().check_spec(spec)
        if self._check is not None:
            self._check(spec)

    def build(self, spec, dim, seed, config):
        if "width" in self.fields and config.fit == "exact":
            needed = 4 * spec.width * min(config.n_train, 65536)
            if needed > MAX_FEATURE_BYTES:
                raise ValueError(f"width={spec.width} needs {needed / 2**30:.1f} GiB of features "
                                 f"per batch; at most {MAX_FEATURE_BYTES / 2**30:.0f} GiB")
        return self.factory(spec, dim, seed)

    def fit(self, model, spec, config, X, y, regime, seed) -> float:
        from experiments.kinds.fitting import AdamConfig, fit_model

        adam = AdamConfig(steps=config.train_steps, lr=config.train_lr,
                          batch_size=config.train_batch)
        return fit_model(model, X, y, fit=regime, adam=adam, ridge=config.ridge,
                         seed=seed).train_mse

    def evaluate(self, model, X, y) -> dict[str, float]:
        from experiments.kinds.fitting import evaluate

        return evaluate(model, X, y)

    def describe(self, model, spec, X) -> dict[str, Any]:
        lsh = spec.kind == "lsh"
        # LSH: the table's capacity (n_tables·2^n_bits) and the buckets the training data
        # reach, the values the fit sets (the plots' x for LSH, ``experiments.analysis.plots.with_size``)
        return {"width": getattr(model, "width", None), "k": getattr(model, "k", None),
                "buckets": model.total_units if lsh else None,
                "nonempty_buckets": model.n_nonempty(X) if lsh else None,
                "activated_units": model.activated_units, "params": model.n_params,
                "flops_paper": model.flops_paper(), "flops_true": model.flops_true()}


def _check_width(spec) -> None:
    check_int(spec.width, "width", low=1)


def _check_width_k(spec) -> None:
    check_int(spec.width, "width", low=1)
    check_int(spec.k, "k", low=1, high=spec.width)


def _check_lsh(spec) -> None:
    """The "lsh" kind's fields: family (None → "sign"), n_bits, and the Euclidean
    parameters exactly for the euclidean family, one table for the uniform family."""
    if spec.family is None:
        object.__setattr__(spec, "family", "sign")
    if spec.family not in LSH_FAMILIES:
        raise ValueError(f"family must be one of {LSH_FAMILIES}, got {spec.family!r}")
    check_int(spec.n_bits, "n_bits", low=1, high=24)
    check_int(spec.n_tables, "n_tables", low=1)
    if spec.family == "euclidean":
        check_int(spec.n_hashes, "n_hashes", low=1)
        check_real(spec.bucket_width, "bucket_width", low=0.0, low_open=True)
    elif spec.n_hashes is not None or spec.bucket_width is not None:
        raise ValueError(f"n_hashes and bucket_width are parameters of the euclidean "
                         f"family only, got n_hashes={spec.n_hashes}, bucket_width="
                         f"{spec.bucket_width} for family {spec.family!r}")
    if spec.family == "uniform":
        check_int(spec.n_tables, "n_tables", low=1, high=1)


def _dense(spec, dim, seed):
    from routing.models import Dense

    return Dense(dim, spec.width, seed=seed)


def _dsm(spec, dim, seed):
    from routing.models import DSM

    return DSM(dim, spec.width, spec.k, seed=seed)


def _random_hash(spec, dim, seed):
    from routing.models import RandomHashModel

    return RandomHashModel(dim, spec.width, spec.k, seed=seed)


def _lsh(spec, dim, seed):
    from routing.models import LSHModel
    from routing.models.lsh_model import lsh_hasher

    hasher = lsh_hasher(spec.family, dim, spec.n_bits, spec.n_tables, seed,
                        n_hashes=spec.n_hashes, bucket_width=spec.bucket_width)
    return LSHModel(dim, n_bits=spec.n_bits, hasher=hasher, n_tables=spec.n_tables, seed=seed)


register_model_kind(LinearKind(
    "dense", _dense, ("width",), _check_width,
    "dense ReLU bottom layer of `width` random units under a fitted top layer (§5.1)",
    {"width": 16}))
register_model_kind(LinearKind(
    "dsm", _dsm, ("width", "k"), _check_width_k,
    "data-dependent sparse model: the top k of `width` random units per example (§2.2)",
    {"width": 32, "k": 4}))
register_model_kind(LinearKind(
    "random_hash", _random_hash, ("width", "k"), _check_width_k,
    "k of `width` random units chosen by a hash of x, blind to geometry (§5)",
    {"width": 32, "k": 4}))
register_model_kind(LinearKind(
    "lsh", _lsh, ("n_bits", "n_tables", "n_hashes", "bucket_width", "family"), _check_lsh,
    "a trainable value per bucket of `n_tables` hash tables of a hash family (§2.2)",
    {"n_bits": 3, "n_tables": 2}))
