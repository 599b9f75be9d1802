"""Routing functions of sparse networks: LSH families, hash tables, Top-K, bucket geometry and
Sparse Distributed Memory calculators.

Source: Baykal et al. 2022, §2.2 (LSH model, Euclidean LSH) and Lemma 4.2 (bucket geometry);
Bricken et al. 2023, App. A.7 (SDM circle intersections).
"""

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

__all__ = [
    "circle_intersection", "expected_neurons_in_intersection", "space_fraction",
    "hamming_to_cosine", "cosine_to_hamming", "snr_optimal_radius", "fit_softmax_beta",
    "cap_fraction", "cap_intersection_fraction",
]
