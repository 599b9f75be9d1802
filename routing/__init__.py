"""Routing functions of sparse networks: LSH families, hash tables, Top-K, bucket geometry and
Sparse Distributed Memory calculators.

Source: Baykal et al. 2022, §2.2 (LSH model, Euclidean LSH) and Lemma 4.2 (bucket geometry);
Datar et al. 2004 (p-stable LSH); Charikar 2002 (hyperplane LSH; with offsets, affine
hyperplane LSH); Andoni et al. 2015 (cross-polytope LSH and its collision probability); Roller et al. 2021 (hash routing);
Bricken et al. 2023, App. A.7 (SDM). The torch twins of the hashers (same parameters, any
device) live in ``routing.torch_twins``.
"""

from __future__ import annotations

import importlib

# Names load on first use (PEP 562), so that `import routing.validation` or the CLI's
# --help does not compile the Numba kernels of every hasher.
_SOURCES = {
    "AffineHyperplaneLSH": "routing.affine_hyperplane_lsh",
    "BucketRegion": "routing.bucket_geometry",
    "ChaoEstimate": "routing.bucket_geometry",
    "bucket_diameters": "routing.bucket_geometry",
    "bucket_region_diameter": "routing.bucket_geometry",
    "bucket_size_histogram": "routing.bucket_geometry",
    "estimate_nonempty_buckets": "routing.bucket_geometry",
    "n_nonempty_buckets": "routing.bucket_geometry",
    "CollisionEstimate": "routing.collision",
    "clopper_pearson": "routing.collision",
    "collision_probability_cross_polytope": "routing.collision",
    "collision_probability_euclidean": "routing.collision",
    "collision_probability_hyperplane": "routing.collision",
    "empirical_collision_rate": "routing.collision",
    "pairs_at_angles": "routing.collision",
    "pairs_at_distances": "routing.collision",
    "CrossPolytopeLSH": "routing.cross_polytope_lsh",
    "EuclideanLSH": "routing.euclidean_lsh",
    "HyperplaneLSH": "routing.hyperplane_lsh",
    "LSHTable": "routing.lsh_table",
    "NotFittedError": "routing.lsh_table",
    "cap_fraction": "routing.sdm",
    "cap_intersection_fraction": "routing.sdm",
    "circle_intersection": "routing.sdm",
    "cosine_to_hamming": "routing.sdm",
    "expected_neurons_in_intersection": "routing.sdm",
    "fit_softmax_beta": "routing.sdm",
    "hamming_to_cosine": "routing.sdm",
    "snr_optimal_radius": "routing.sdm",
    "space_fraction": "routing.sdm",
    "topk_indices": "routing.topk",
    "topk_mask": "routing.topk",
    "UniformHash": "routing.uniform_hash",
}


__all__ = [
    "EuclideanLSH", "HyperplaneLSH", "AffineHyperplaneLSH", "CrossPolytopeLSH", "UniformHash",
    "topk_mask", "topk_indices",
    "LSHTable", "NotFittedError",
    "n_nonempty_buckets", "bucket_size_histogram", "estimate_nonempty_buckets", "ChaoEstimate",
    "bucket_diameters", "bucket_region_diameter", "BucketRegion",
    "collision_probability_euclidean", "collision_probability_hyperplane",
    "collision_probability_cross_polytope", "empirical_collision_rate", "CollisionEstimate", "clopper_pearson",
    "pairs_at_distances", "pairs_at_angles",
    "circle_intersection", "expected_neurons_in_intersection", "space_fraction",
    "hamming_to_cosine", "cosine_to_hamming", "snr_optimal_radius", "fit_softmax_beta",
    "cap_fraction", "cap_intersection_fraction",
]


def __getattr__(name: str):
    if name not in _SOURCES:
        raise AttributeError(f"module 'routing' has no attribute {name!r}")
    value = getattr(importlib.import_module(_SOURCES[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_SOURCES))
