"""``routing.LSHTable`` with Euclidean LSH as a model kind: the learner of Baykal et al.
2022's Theorem 4.1 (each bucket predicts the mean label of its training points; s tables are
averaged). Always fitted exactly (bucket means), on the CPU."""

from __future__ import annotations

from typing import Any

import numpy as np

from experiments.kinds.registry import ModelKind, register_model_kind
from routing.validation import check_int, check_real


class LSHTableKind(ModelKind):
    """The "lsh_table" kind: ``EuclideanLSH(dim, n_hashes, bucket_width, n_tables, seed)``
    under an ``LSHTable``; its buckets are the non-empty ones on the training data."""

    name = "lsh_table"
    regimes = ("exact",)
    fields = ("n_tables", "n_hashes", "bucket_width")
    cpu_only = True
    description = "bucket means of Euclidean LSH tables: Theorem 4.1's learner"
    example = {"n_hashes": 2, "bucket_width": 1.0, "n_tables": 2}

    def check_spec(self, spec) -> None:
        super().check_spec(spec)
        check_int(spec.n_tables, "n_tables", low=1)
        check_int(spec.n_hashes, "n_hashes", low=1)
        check_real(spec.bucket_width, "bucket_width", low=0.0, low_open=True)

    def build(self, spec, dim, seed, config):
        from routing.euclidean_lsh import EuclideanLSH
        from routing.lsh_table import LSHTable

        return LSHTable(EuclideanLSH(dim, spec.n_hashes, spec.bucket_width,
                                     n_tables=spec.n_tables, seed=seed))

    def to_device(self, model, device):
        return model

    def fit(self, model, spec, config, X, y, regime, seed) -> float:
        model.fit(X, y)
        return float(np.mean((model.predict(X) - y) ** 2))

    def evaluate(self, model, X, y) -> dict[str, float]:
        error = model.predict(X) - y
        return {"mse": float(np.mean(error**2)), "linf": float(np.max(np.abs(error)))}

    def describe(self, model, spec, X) -> dict[str, Any]:
        from routing.bucket_geometry import n_nonempty_buckets

        dim = X.shape[1]
        nonempty = int(np.sum(n_nonempty_buckets(model.hasher.bucket_ids(X))))
        # Paper convention: 2·(dim+1) per activated unit; one activated bucket per table.
        # True cost: hashing (2·dim·n_hashes per table) plus one lookup and the average.
        return {"width": None, "k": None, "buckets": nonempty, "nonempty_buckets": nonempty,
                "activated_units": spec.n_tables, "params": nonempty,
                "flops_paper": 2 * (dim + 1) * spec.n_tables,
                "flops_true": 2 * dim * spec.n_hashes * spec.n_tables + spec.n_tables}


register_model_kind(LSHTableKind())
