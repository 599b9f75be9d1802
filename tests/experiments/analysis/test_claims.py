"""The claims of the report (experiments/analysis/claims/): paired significance by hand, the Table 1
and Table 2 rules in the paper's words (each threshold moved across its edge, and the paper's
own tables read as the paper reads them), the DSM-width anomaly explained, the verdict per
regime, and claims.csv files of the old four columns still read."""

import math
import pathlib

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from experiments.analysis.claims import CLAIM_COLUMNS, paired_difference, seed_log_errors
from experiments.papers.baykal_tables import AS_WELL_AS, PAPER_TABLE1, PAPER_TABLE2, anomaly_diagnoses, paper_table2_anomalies, table1_rule, table2_rule, width_anomalies
from experiments.papers.scaling_claims import claims_for


def _row(label, x, value, seed, fit="exact", model=None, train=None, **extra):
    return {"experiment": "e", "target": "t", "model": model or label.split()[0].lower(),
            "model_label": label, "activated_units": x, "width": x, "buckets": np.nan,
            "flops_paper": 18 * x, "eval_nmse": value, "eval_mse": value, "seed": seed,
            "fit": fit, "train_nmse": train if train is not None else value / 2, **extra}


def test_paired_difference_is_the_t_interval_of_per_seed_log_ratios():
    d = {0: -0.5, 1: -0.48, 2: -0.49}  # ln(better) − ln(worse) per seed, at both x
    rows = []
    for seed, diff in d.items():
        for x in (8, 16):
            rows += [_row("dense", x, 1.0, seed), _row("DSM width 64", x, np.exp(diff), seed)]
    frame = pd.DataFrame(rows)
    better = seed_log_errors(frame, "DSM width 64", "activated_units")
    worse = seed_log_errors(frame, "dense", "activated_units")
    result = paired_difference(better, worse, [(8, 8), (16, 16)])
    values = np.array(list(d.values()))
    half = stats.t.ppf(0.975, 2) * values.std(ddof=1) / np.sqrt(3)
    assert result["n_seeds"] == 3 and result["mean"] == pytest.approx(values.mean())
    assert (result["low"], result["high"]) == pytest.approx((values.mean() - half,
                                                             values.mean() + half))
    assert result["per_x"]["significant"].tolist() == [True, True]
    claim = claims_for("fig2", frame, [])[0]
    assert claim.verdict == "supported" and claim.effect == pytest.approx(values.mean())
    assert claim.p_value == pytest.approx(stats.ttest_1samp(values, 0.0).pvalue)
    assert "paired t on cluster means: p = " in claim.significance and claim.diagnosis == ""


def test_a_lost_comparison_gets_a_diagnosis_from_its_rows():
    rows = []
    for seed in (0, 1, 2):
        for x, dense, dsm, dsm_train in [(8, 1.0, 0.5 + 0.01 * seed, 0.25),
                                         (16, 0.5, 0.6 + 0.01 * seed, 0.1)]:
            rows += [_row("dense", x, dense, seed, train=dense),
                     _row("DSM width 64", x, dsm, seed, train=dsm_train)]
    claim = claims_for("fig2", pd.DataFrame(rows), [])[0]
    assert claim.verdict == "mixed"  # significantly lower at 8, significantly higher at 16
    # DSM loses at 16 while fitting its training data better: estimation, not approximation
    assert "loses at activated_units = 16" in claim.diagnosis
    assert "estimation error" in claim.diagnosis and "regime: every frozen-feature" in \
        claim.diagnosis


def test_claims_are_judged_per_regime_and_name_it():
    rows = []
    for seed in (0, 1, 2):
        for x in (8, 16):
            noise = 1 + 0.01 * seed
            rows += [_row("dense", x, 1.0, seed, fit="exact"),
                     _row("DSM width 64", x, 0.5 * noise, seed, fit="exact"),
                     _row("dense", x, 1.0, seed, fit="adam"),
                     _row("DSM width 64", x, 2.0 * noise, seed, fit="adam")]
    claims = claims_for("fig2", pd.DataFrame(rows), [])
    by_regime = {c.regime: c for c in claims if c.role == "claim"}
    assert set(by_regime) == {"exact", "adam"}
    assert by_regime["exact"].verdict == "supported" and "[exact least-squares top layer]" in \
        by_regime["exact"].claim
    assert by_regime["adam"].verdict == "not supported" and "[top layer trained with Adam]" in \
        by_regime["adam"].claim and "Adam" in by_regime["adam"].diagnosis


def test_table1_rule_is_the_papers_sentence():
    paper = {label: PAPER_TABLE1[label].iloc[0] for label in ("DSM 50% sparsity",
                                                              "DSM 25% sparsity")}
    assert table1_rule(paper, PAPER_TABLE1["dense"].iloc[-1])[0] == "supported"
    dense_large = 0.01
    assert table1_rule({"DSM 25% sparsity": dense_large * 0.999}, dense_large) == \
        ("supported", "DSM 25% sparsity")
    assert table1_rule({"DSM 25% sparsity": dense_large * 1.001}, dense_large)[0] == \
        "not supported"
    rows = []
    for seed in (0, 1, 2):
        for a, dense, dsm in [(16, 1.0, 0.9 + 0.01 * seed), (64, 0.5, 0.3)]:
            rows += [_row("dense", a, dense, seed),
                     _row("DSM 25% sparsity", a, dsm, seed, model="dsm"),
                     _row("DSM 50% sparsity", a, dsm * 1.1, seed, model="dsm")]
    literal = claims_for("table1", pd.DataFrame(rows), [])[0]
    assert "18k FLOPs" in literal.claim and literal.verdict == "not supported"  # 0.9 > 0.5
    assert "the paper's dense column is flat" in literal.diagnosis
    # both sparsities were tested; the claim's p is Holm's over the two
    assert "DSM 50% sparsity p = " in literal.evidence and literal.test.startswith("paired")


def test_table2_rule_reads_the_papers_own_table_as_supported_and_flips_at_the_tolerance():
    pairs = [(w, float(PAPER_TABLE2.drop(index="dense")[w].min()),
              float(PAPER_TABLE2.loc["dense", w])) for w in PAPER_TABLE2.columns]
    verdict, holding = table2_rule(pairs)
    assert verdict == "supported" and holding == [1024, 2048]  # 1.34× and 1.19×; 2.03× fails
    assert table2_rule([(256, AS_WELL_AS * 0.999, 1.0)])[0] == "supported"
    assert table2_rule([(256, AS_WELL_AS * 1.001, 1.0), (512, 3.0, 1.0)]) == \
        ("not supported", [])
    assert table2_rule([]) == ("not tested", [])


def _table2_rows(rise_train):
    rows = []
    for seed in (0, 1, 2):
        for width in (64, 128):
            rows.append(_row("dense", width, 1.0, seed, train=0.5, width_=width))
            # DSM k=32 gets worse with width; its training error falls (overfit) or rises
            value = 1.2 if width == 64 else 1.6 + 0.05 * seed
            train = 0.6 if width == 64 else (0.8 if rise_train else 0.3)
            rows.append(_row("DSM k=32", width, value, seed, model="dsm", train=train))
            rows.append(_row("DSM k=16", width, 1.3 * (64 / width) * (1 + 0.01 * seed), seed,
                             model="dsm"))
    return pd.DataFrame(rows).drop(columns=["width_"])


def test_a_dsm_that_gets_worse_with_width_is_explained():
    overfit = anomaly_diagnoses(_table2_rows(rise_train=False), "exact")
    assert len(overfit) == 1 and overfit[0].startswith("DSM k=32: nMSE rises")
    assert "beyond seed noise" in overfit[0] and "overfitting" in overfit[0]
    assert "active fraction k/width 0.5 → 0.25" in overfit[0]
    worse = anomaly_diagnoses(_table2_rows(rise_train=True), "adam")
    assert "fits worse" in worse[0] and "Adam" in worse[0]
    claim = claims_for("table2", _table2_rows(rise_train=False), [])[0]
    # "can": one configuration not worse than 1.5 × dense suffices (k=16 at 128: 0.65)
    assert claim.verdict == "supported" and "Point ratios ≤ ×1.5 at 2/2 widths" in \
        claim.evidence and claim.test.startswith("non-inferiority")
    # a DSM 1.6× worse than dense at its only width: refuted
    worse = _table2_rows(rise_train=False)
    worse = worse[(worse["model_label"] != "DSM k=16") & (worse["width"] == 128)]
    refuted = claims_for("table2", worse, [])[0]
    assert refuted.verdict == "not supported"
    table = pd.DataFrame({64: [1.0, 1.0], 128: [1.1, 0.5]}, index=["a", "b"])
    assert [a["model"] for a in width_anomalies(table)] == ["a"]
    assert any("DSM k=1024" in line for line in paper_table2_anomalies())


def test_old_claims_csv_files_are_read_with_every_column(tmp_path):
    from experiments.pipeline.reproduce import _read_claims

    path = tmp_path / "claims.csv"
    path.write_text("experiment,claim,verdict,evidence\nfig4,DSM wins,supported,x\n")
    table = _read_claims(path)
    assert list(table.columns) == CLAIM_COLUMNS
    assert table.loc[0, "diagnosis"] == "" and np.isnan(table.loc[0, "effect"])
    path.write_text("\n")
    assert list(_read_claims(path).columns) == CLAIM_COLUMNS


def test_lsh_against_uniform_hash_is_paired_from_below():
    from experiments.analysis.claims import compare
    from experiments.papers.router_study import matched_below

    pick = matched_below([64.0, 512.0, 4096.0])
    assert pick(100.0) == 64.0 and pick(1000.0) == 512.0 and pick(600.0) == 512.0
    assert pick(130.0) is None  # 64 < 130 / 2: nothing within a factor 2 below
    assert pick(50.0) is None  # nothing below at all
    with pytest.raises(ValueError, match="factor"):
        matched_below([1.0], 0.5)

    def frame(lsh_error):
        rows = []
        for seed in (0, 1, 2):
            for size, value in ((100.0, lsh_error), (1000.0, lsh_error)):
                rows.append({**_row("LSH sign s=1", size, value + 0.01 * seed, seed),
                             "size": size})
            for size in (64.0, 512.0):
                rows.append({**_row("uniform hash", size, 1.0 + 0.01 * seed, seed),
                             "size": size})
        return pd.DataFrame(rows)

    for lsh_error, verdict in ((0.5, "supported"), (1.5, "not supported")):
        f = frame(lsh_error)
        claim = compare("fig2", "LSH beats uniform", f, "LSH sign s=1", "uniform hash", "size",
                        against=matched_below(f[f.model_label == "uniform hash"]["size"]))
        assert claim.verdict == verdict
        assert "100: " in claim.evidence and "(at 64)" in claim.evidence


def test_a_comparison_is_decided_paired_across_seeds():
    from experiments.analysis.claims import NO_NOISE, comparison_verdict

    def stats_(mean, p, sd=0.05, n=3):
        return {"mean": mean, "p_value": p, "sd": sd, "n_seeds": n, "mde": 0.05,
                "mixed": False}

    sesoi = np.log(1.1)
    assert comparison_verdict(stats_(-0.2, 0.01), sesoi) == "supported"
    assert comparison_verdict(stats_(-0.2, 0.2), sesoi) == "inconclusive"  # not significant
    assert comparison_verdict(stats_(0.2, 0.01), sesoi) == "not supported"
    assert comparison_verdict(stats_(-0.2, np.nan, sd=np.nan, n=1), sesoi) == NO_NOISE
    with pytest.raises(ValueError, match="sesoi"):
        comparison_verdict(stats_(-0.2, 0.01), 0.0)


# -- bad input: unknown labels, missing values, counts and sizes -----------------------------
_GOLDEN = pathlib.Path(__file__).parents[2] / "data" / "tiny_sweep_all_kinds.csv"


def _golden():
    return pd.read_csv(_GOLDEN, dtype={"settings": str})


def test_compare_refuses_an_unknown_label_instead_of_a_nan_effect():
    from experiments.analysis.claims import compare
    frame = _golden()
    with pytest.raises(ValueError, match="worse_label 'dense_MLP' has no rows"):
        compare("e", "t", frame, "dsm", "dense_MLP", "activated_units")
    with pytest.raises(TypeError, match="better_label must be a model label"):
        compare("e", "t", frame, 3, "dense", "activated_units")
    # known labels give a measured, finite effect, or "not tested" where they share no x
    assert math.isfinite(compare("e", "t", frame, "comet", "dense", "width").effect)
    assert compare("e", "t", frame, "dsm", "dense", "width").verdict == "not tested"


def test_lsh_description_refuses_a_label_without_rows_instead_of_an_empty_text():
    from experiments.analysis.claims import lsh_description
    assert lsh_description(_golden(), "lsh").startswith("LSH model lsh")
    with pytest.raises(ValueError, match="label 'LSH' has no rows"):
        lsh_description(_golden(), "LSH")


def test_table_rules_refuse_infinite_errors():
    assert table1_rule({"DSM": 0.5}, 1.0) == ("supported", "DSM")
    with pytest.raises(ValueError, match="dsm_at_smallest"):
        table1_rule({"DSM": float("inf")}, 1.0)  # was "not supported": an inf is no error
    assert table2_rule([(64.0, 1.4, 1.0)]) == ("supported", [64.0])
    with pytest.raises(ValueError, match="pairs"):
        table2_rule([(64.0, float("nan"), 1.0)])  # was "not supported"
    with pytest.raises(ValueError, match="values"):
        from experiments.analysis.claims import t_interval
        t_interval([1.0, float("nan"), 2.0])  # was dropped silently


def test_matched_below_names_a_bad_x():
    from experiments.papers.router_study import matched_below
    with pytest.raises((ValueError, TypeError), match="x must be a real number"):
        matched_below([1.0, 2.0])(None)


def test_claims_counts_and_sizes_are_checked():
    from experiments.analysis.claims import compare, comparison_diagnosis, comparison_verdict
    from experiments.papers.router_study import matched_below
    frame = _golden()
    with pytest.raises(ValueError, match="n_train must be an integer >= 1, got 2.5"):
        compare("e", "t", frame, "comet", "dense", "width", n_train=2.5)  # was accepted
    stats = paired_difference(seed_log_errors(frame, "dsm", "activated_units"),
                              seed_log_errors(frame, "dense", "activated_units"), [(4, 16)])
    with pytest.raises(ValueError, match="n_train must be an integer"):
        comparison_diagnosis(frame, "dsm", "dense", "activated_units", stats, "exact", 2.5)
    assert comparison_verdict(stats, 0.1) == "underpowered"  # 2 seeds: MDE 0.49 > 0.1
    with pytest.raises(ValueError, match="sesoi must be a finite number"):
        comparison_verdict(stats, "0.1")
    with pytest.raises(ValueError, match="p_adjusted must be a number in"):
        comparison_verdict(stats, 0.1, p_adjusted=float("nan"))
    assert matched_below([1.0, 250.0])(2.0) == 1.0
    with pytest.raises(ValueError, match=r"sizes\[0\] must be a real number"):
        matched_below(["1.0", 250.0])  # was parsed as 1.0


def test_claims_never_turn_a_missing_value_into_a_verdict_or_text():
    from experiments.analysis.claims import lsh_description, t_interval
    from experiments.papers.scaling_claims import sizes_text
    nan = float("nan")
    assert table1_rule({"DSM": nan, "DSM 2": 0.5}, 1.0) == ("supported", "DSM 2")
    assert table1_rule({"DSM": 2.0, "DSM 2": nan}, 1.0) == ("not supported", "")
    assert table1_rule({"DSM": nan, "DSM 2": nan}, 1.0) == ("not tested", "")  # was "not supported"
    frame = _golden()
    with pytest.raises(ValueError, match="label 'random_hash' has no rows with a finite"):
        lsh_description(frame, "random_hash")  # was "min() arg is an empty sequence"
    frame.loc[frame.model_label == "lsh", "eval_nmse"] = nan
    # without eval_nmse on every row it reads eval_mse, and says so (it said "nMSE")
    assert " best MSE 0.00238 at 16 buckets" in lsh_description(frame, "lsh")
    frame.loc[frame.model_label == "lsh", "eval_mse"] = nan
    with pytest.raises(ValueError, match="label 'lsh' has no rows with a finite"):
        lsh_description(frame, "lsh")  # was "best nMSE nan"
    with pytest.raises(TypeError, match="name must be an experiment name"):
        sizes_text(None, [])  # was ""
    assert t_interval(np.array([1.0, 2.0, 3.0]))[0] == 2.0
    with pytest.raises(ValueError, match=r"values must be a 1-D array"):
        t_interval(np.array([[1.0], [2.0], [3.0]]))  # a column was flattened


def test_sizes_text_says_when_a_config_changed_the_target():
    """A config file's own target: the claim's budget note says the paper's sizes are for
    another function instead of repeating them as if they applied."""
    import dataclasses

    from experiments.papers.catalogue import experiment_configs
    from experiments.papers.scaling_claims import PAPER_SIZES, sizes_text

    configs = experiment_configs("fig2", "quick")
    assert sizes_text("fig2", configs).endswith(PAPER_SIZES["fig2"])
    changed = [dataclasses.replace(c, target=dataclasses.replace(c.target, degree=3))
               for c in configs]
    text = sizes_text("fig2", changed)
    assert "is not the paper's" in text and PAPER_SIZES["fig2"] not in text
    assert "deg=3" in text and "deg=4" in text
