"""The claims an experiment tests, each with its verdict, a paired significance statement, a
diagnosis computed from the data when it is not *supported*, its source and the run's sizes
against the paper's.

Rules, fixed in code (``_rules``):
- A comparison ("A beats B", "A underperforms B") is one paired test over all (size, seed)
  differences of ln error (``paired_difference``: ``inference.paired_test``, the t test on
  per-seed means over sizes, or the exact sign-flip over seeds when normality fails).
  *supported* needs the Holm-adjusted p ≤ ``ALPHA`` in the claimed direction and the minimal
  detectable effect (power 0.8 at the run's seeds) ≤ the family's pre-registered SESOI
  (``SESOI``: 10 % in nMSE; 1 point of accuracy for real data); otherwise *underpowered*
  (with the seeds that would decide), *not supported* (significant the other way) or
  *inconclusive*. Fewer than 2 seeds or sd = 0: *inconclusive (no seed noise measured)*.
  *mixed* only when per-size tests (Holm across sizes) disagree significantly.
- An equivalence ("matches", "as well as") is TOST against a stated band (routers: ±ln 1.1,
  the SESOI; Table 2: ±ln ``AS_WELL_AS``, chosen post hoc so that the paper's own Table 2
  reads within, and said so in the claim).
- Best-of selections (Table 1's sparsity, Table 2's width and k): every configuration is
  tested, Holm over them (``best_of``).
- Holm over each experiment's claims (``adjust_family``); negative and positive controls on
  the dense model head each experiment and stay outside the family (``control_claims``).
- The paper's own one-run Tables 1 and 2 are read on point values (``table1_rule``,
  ``table2_rule``): shown beside ours, never deciding.
- The subspace exponent: ``experiments.papers.subspace_sweep``.

Each claim is judged per training regime present in the rows (column ``fit``: "exact" least
squares, "adam": Adam on the top layer, or "end_to_end"), and the regime is named in the claim line.

Every claim is written down once (``_records.RECORDS``): the paper's own short phrase
(verbatim, or a paraphrase marked so), source, kind ("paper", "derived" or "ours"), axis of
comparison, quantifier, direction or band and rule; each ``Claim`` finds its record from its
experiment and text and carries quote, source, kind, axis and quantifier into ``claims.csv``.

The package: the claim records (``_records``), the decision rules (``_rules``), the controls
(``_controls``), the claim record and its paired statistics and diagnosis (``_paired``). Each
experiment's claims are written beside its configs, in ``experiments.papers``
(``scaling_claims.claims_for``; the paper's Tables 1 and 2 and their rules in ``baykal_tables``).
"""

from experiments.analysis.claims._controls import (CONTROL_DEFECTS, CONTROL_ROLES, control_claims,
                                                   control_status)
from experiments.analysis.claims._paired import (CLAIM_COLUMNS, LEVEL, NUMERIC_CLAIM_COLUMNS, REGIME_TEXT,
                                        REGIMES, Claim, claim_line, compare, compare_unchecked,
                                        comparison_diagnosis, decided, fit_regimes, geometric_mean,
                                        model_key_fields,
                                        lsh_description, mean_mse, paired_difference,
                                        seed_log_errors, significance_text, t_interval)
from experiments.analysis.claims._rules import (ALPHA, NO_NOISE, POWER, SESOI, Rule, Sesoi,
                                       adjust_family, best_of, comparison_verdict,
                                       equivalence_stats, equivalence_verdict, needed_seeds,
                                       sign_flip_seeds)

__all__ = ["Claim", "CLAIM_COLUMNS", "NUMERIC_CLAIM_COLUMNS", "REGIMES",
           "REGIME_TEXT", "LEVEL", "ALPHA", "POWER", "NO_NOISE", "SESOI", "Sesoi", "Rule", "compare", "comparison_verdict", "equivalence_verdict",
           "equivalence_stats", "best_of", "adjust_family", "needed_seeds", "sign_flip_seeds", "decided",
           "control_claims", "control_status", "CONTROL_ROLES", "CONTROL_DEFECTS", "comparison_diagnosis",
           "paired_difference", "t_interval", "seed_log_errors", "mean_mse",
           "significance_text", "lsh_description", "claim_line", "compare_unchecked", "fit_regimes",
           "geometric_mean", "model_key_fields"]
