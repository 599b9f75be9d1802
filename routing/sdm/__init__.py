"""Sparse Distributed Memory: circle-intersection calculators, weightings and their checks.

Binary SDM (Kanerva 1988; Bricken et al. 2023, App. A.7, Eqs. 6-9): the number of points of
{0,1}^n within Hamming radius d of both a query and a pattern at distance d_v, with the binary,
linear and exponential neuron weightings, exact or in log space; continuous SDM on the sphere
(Bricken et al. 2023, §3): cap and cap-intersection fractions; the softmax fit of
Bricken & Pehlevan 2021, the SNR-optimal radius of Kanerva 1993, and sympy derivations of
App. A.7, Eqs. 10-11.
"""

from routing.sdm._checks import check_weighting
from routing.sdm._continuous import cap_fraction, cap_intersection_fraction
from routing.sdm._empirical import MonteCarloIntersection, brute_force_intersection, monte_carlo_intersection
from routing.sdm._hamming import (
    cosine_to_hamming,
    expected_neurons_in_intersection,
    hamming_to_cosine,
    snr_optimal_radius,
    space_fraction,
)
from routing.sdm._intersection import circle_intersection
from routing.sdm._softmax_fit import SoftmaxFit, fit_softmax_beta
from routing.sdm._weighting import (
    ExponentialWeightingCheck,
    LinearWeightingCheck,
    check_exponential_weighting,
    check_linear_weighting,
)

__all__ = [
    "circle_intersection",
    "expected_neurons_in_intersection",
    "space_fraction",
    "hamming_to_cosine",
    "cosine_to_hamming",
    "snr_optimal_radius",
    "fit_softmax_beta",
    "check_weighting",
    "SoftmaxFit",
    "brute_force_intersection",
    "monte_carlo_intersection",
    "MonteCarloIntersection",
    "cap_fraction",
    "cap_intersection_fraction",
    "check_linear_weighting",
    "check_exponential_weighting",
    "LinearWeightingCheck",
    "ExponentialWeightingCheck",
]
