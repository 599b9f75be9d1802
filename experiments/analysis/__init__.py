"""What rows mean: scaling-law fits, scaling plots, the target gallery and the claims' statistics
(paired tests, decision rules, controls, the claim records)."""
