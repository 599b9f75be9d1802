"""Routing functions of sparse networks: LSH families, hash tables, Top-K, bucket geometry and
Sparse Distributed Memory calculators.

Source: Baykal et al. 2022, §2.2 (LSH model, Euclidean LSH) and Lemma 4.2 (bucket geometry);
Datar et al. 2004 (p-stable LSH); Charikar 2002 (hyperplane LSH; with offsets, affine
hyperplane LSH); Andoni et al. 2015 (cross-polytope LSH); Roller et al. 2021 (hash routing);
Bricken et al. 2023, App. A.7 (SDM). The torch twins of the hashers (same parameters, any
device) live in ``routing.torch_twins``.
"""

from routing.affine_hyperplane_lsh import AffineHyperplaneLSH
from routing.bucket_geometry import (
    BucketRegion,
    ChaoEstimate,
    bucket_diameters,
    bucket_region_diameter,
    bucket_size_histogram,
    estimate_nonempty_buckets,
    n_nonempty_buckets,
)
from routing.collision import (
    CollisionEstimate,
    clopper_pearson,
    collision_probability_euclidean,
    collision_probability_hyperplane,
    empirical_collision_rate,
    pairs_at_angles,
    pairs_at_distances,
)
from routing.cross_polytope_lsh import CrossPolytopeLSH
from routing.euclidean_lsh import EuclideanLSH
from routing.hyperplane_lsh import HyperplaneLSH
from routing.lsh_table import LSHTable, NotFittedError
from routing.sdm import (
    cap_fraction,
    cap_intersection_fraction,
    circle_intersection,
    cosine_to_hamming,
    expected_neurons_in_intersection,
    fit_softmax_beta,
    hamming_to_cosine,
    snr_optimal_radius,
    space_fraction,
)
from routing.topk import topk_indices, topk_mask
from routing.uniform_hash import UniformHash

__all__ = [
    "EuclideanLSH", "HyperplaneLSH", "AffineHyperplaneLSH", "CrossPolytopeLSH", "UniformHash",
    "topk_mask", "topk_indices",
    "LSHTable", "NotFittedError",
    "n_nonempty_buckets", "bucket_size_histogram", "estimate_nonempty_buckets", "ChaoEstimate",
    "bucket_diameters", "bucket_region_diameter", "BucketRegion",
    "collision_probability_euclidean", "collision_probability_hyperplane",
    "empirical_collision_rate", "CollisionEstimate", "clopper_pearson",
    "pairs_at_distances", "pairs_at_angles",
    "circle_intersection", "expected_neurons_in_intersection", "space_fraction",
    "hamming_to_cosine", "cosine_to_hamming", "snr_optimal_radius", "fit_softmax_beta",
    "cap_fraction", "cap_intersection_fraction",
]
