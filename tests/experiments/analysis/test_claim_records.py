"""The claim records (experiments/analysis/claims/_records.py): every record complete, every verbatim
quote found in its paper's text (../shared/papers/, skipped when absent), no claim attributed
to a paper that does not make it, every claim of a run matched to a record and carrying its
quote, source, kind, axis and quantifier into claims.csv, LSH against dense decided at equal
activated units (or said to be undecidable), and the report counting the papers' claims apart
from ours."""

import pathlib

import numpy as np
import pandas as pd
import pytest

from experiments.analysis.claims import CLAIM_COLUMNS
from experiments.papers.scaling_claims import claims_for
from experiments.analysis.claims._records import (
    KINDS,
    PAPERS,
    QUOTE_FORMS,
    RECORDS,
    UNRECORDED,
    normalise,
    record,
    record_for,
)

PAPERS_DIR = pathlib.Path(__file__).resolve().parents[3].parent / "shared" / "papers"


def _paper_text(short_name):
    path = PAPERS_DIR / PAPERS[short_name]
    if not path.is_file():
        pytest.skip(f"the papers' texts are not at {PAPERS_DIR}")
    return normalise(path.read_text(encoding="utf-8"))


def test_every_record_is_complete_and_its_keys_unique():
    assert len({r.key for r in RECORDS}) == len(RECORDS)
    for r in RECORDS:
        assert r.kind in KINDS and r.quote_form in QUOTE_FORMS, r.key
        assert r.axis and r.quantifier and r.direction and r.rule and r.pattern, r.key
        if r.quote:
            assert r.quote_form and r.paper in PAPERS, r.key
        if r.kind == "paper":  # attributed to a paper: its own words, from that paper
            assert r.quote_form == "verbatim" and r.paper in PAPERS and r.source, r.key
            assert r.source.startswith(r.paper.split(" 20")[0].split(" et al")[0]), r.key


@pytest.mark.parametrize("r", [r for r in RECORDS if r.quote_form == "verbatim"],
                         ids=lambda r: r.key)
def test_every_verbatim_quote_occurs_in_its_paper(r):
    assert normalise(r.quote) in _paper_text(r.paper), f"{r.key}: {r.quote!r}"


def test_the_quote_check_refutes_a_claim_the_paper_does_not_make():
    # the misreadings: router wins at equal activated units are in neither paper
    csordas = _paper_text("Csordás et al. 2023")
    assert normalise("our evaluation condition is parameter-equal") in csordas
    assert normalise("σ-MoE outperforms dense models at the same number of activated "
                     "units") not in csordas
    bricken = _paper_text("Bricken et al. 2023")
    assert normalise("suboptimal for maximizing classification accuracy in non continual "
                     "learning settings") in bricken
    # normalisation: line breaks, hyphenation and curly quotes do not hide a phrase
    assert normalise("uni-\nform  random\nhash") == "uniform random hash"
    assert normalise("\u201cCNN + DSM\u201d") == '"cnn + dsm"'


def test_router_and_comet_claims_that_the_papers_do_not_make_are_ours():
    for label in ("σ-MoE", "top-k MoE", "PKM", "SDMLP", "COMET", "SMEAR"):
        r = record_for("routers", f"{label} beats the dense MLP trained alike at equal "
                                  "activated units, t (our question)")
        assert r.kind == "ours" and r is not UNRECORDED, label
    assert record_for("routers", "σ-MoE matches the parameter-equal dense MLP").kind == "paper"
    assert record_for("comet_images", "COMET beats the smaller model (p_k·N neurons) at p_k "
                                      "= 0.5, every N").kind == "ours"
    assert record_for("comet_images", "at the largest N = 512, COMET beats the standard model "
                                      "at every p_k").kind == "ours"
    assert record_for("comet_images", "COMET's advantage over the standard model grows with "
                                      "capacity").kind == "paper"
    assert record_for("fig2", "LSH sign s=1 beats dense from 2048 buckets, dense as wide as "
                              "the buckets").kind == "ours"
    assert record_for("fig2", "unheard of").key == "unrecorded"
    with pytest.raises(KeyError, match="key"):
        record("nope")
    with pytest.raises(TypeError, match="experiment"):
        record_for(None, "x")


def _row(label, x, value, seed, model, **extra):
    return {"experiment": "e", "target": "t", "model": model, "model_label": label,
            "activated_units": x, "width": x, "buckets": np.nan, "flops_paper": 18 * x,
            "eval_nmse": value, "eval_mse": value, "seed": seed, "fit": "exact",
            "train_nmse": value / 2, **extra}


def _fig2(lsh_error, dense_widths=(4, 8, 4096)):
    """Dense at ``dense_widths``, DSM width 64 and 128 at k = 4, 8, and a sign-LSH model of
    s = 4 tables (4 activated units) at 2048 and 4096 buckets with nMSE ``lsh_error``."""
    rows = []
    for seed in (0, 1, 2):
        noise = 1 + 0.002 * seed
        for w in dense_widths:
            rows.append(_row("dense", w, 1.0 * noise ** 2, seed, "dense"))
        for total, scale, power in ((64, 0.5, 1), (128, 0.4, 3)):  # seed noise differs
            for k in (4, 8):
                rows.append(_row(f"DSM width {total}", k, scale * noise ** power, seed, "dsm",
                                 width=total))
        for buckets, shrink, power in ((2048, 1.0, 1), (4096, 0.8, 4)):
            rows.append(_row("LSH sign s=4", 4, lsh_error * shrink * noise ** power, seed, "lsh",
                             width=np.nan, buckets=buckets,
                             model_key="lsh;n_bits=11;n_tables=4;family=sign"))
    return pd.DataFrame(rows)


def test_every_claim_of_a_run_has_its_record_in_claims_csv():
    claims = claims_for("fig2", _fig2(0.5), [])
    for column in ("quote", "source", "kind", "axis", "quantifier", "record"):
        assert column in CLAIM_COLUMNS
    for c in claims:
        assert c.record != "unrecorded" and c.kind and c.axis and c.quantifier, c.claim
        if c.kind == "paper":
            assert c.quote and c.source.startswith("Baykal et al. 2022"), c.claim
    keys = {c.record for c in claims}
    assert {"fig2a_dsm_vs_dense", "lsh_vs_dense_equal_units", "fig2b_lsh_vs_dense_equal_size",
            "fig2a_dsm_improves_with_width", "fig2b_lsh_improves_with_buckets",
            "negative_control", "positive_control"} <= keys
    improves = next(c for c in claims if c.record == "fig2a_dsm_improves_with_width")
    assert improves.verdict == "supported"  # width 128 (0.4) below width 64 (0.5) at each k
    buckets = next(c for c in claims if c.record == "fig2b_lsh_improves_with_buckets")
    assert buckets.verdict == "supported"  # 4096 buckets at 0.8× the error of 2048


@pytest.mark.parametrize("lsh_error, verdict", [(0.5, "supported"), (2.0, "not supported")])
def test_lsh_against_dense_is_decided_at_equal_activated_units(lsh_error, verdict):
    claim = next(c for c in claims_for("fig2", _fig2(lsh_error), [])
                 if c.record == "lsh_vs_dense_equal_units")
    assert claim.verdict == verdict and claim.kind == "paper"
    assert "(at 4)" in claim.evidence  # against dense of width s = 4, not of 2048 units
    assert claim.axis.startswith("activated units")


def test_lsh_against_dense_at_equal_units_says_what_the_rows_lack():
    claim = next(c for c in claims_for("fig2", _fig2(0.5, dense_widths=(8, 4096)), [])
                 if c.record == "lsh_vs_dense_equal_units")
    assert claim.verdict == "not tested"
    assert "not decidable from these rows: needs a dense model of width s = 4" in \
        claim.evidence and "8, 4096" in claim.evidence


def test_the_report_counts_the_papers_claims_apart_from_ours():
    from experiments.pipeline.report import claims_overview, claims_table_lines

    claims = claims_for("fig2", _fig2(0.5), [])
    table = pd.DataFrame([{c: getattr(claim, c) for c in CLAIM_COLUMNS} for claim in claims])
    text = "\n".join(claims_overview(table))
    papers = sum(c.kind == "paper" and c.role == "claim" for c in claims)
    ours = sum(c.kind == "ours" and c.role == "claim" for c in claims)
    assert papers and ours
    assert f"the papers' claims {papers} (" in text and f"our own questions {ours} (" in text
    lines = claims_table_lines(table, with_experiment=False)
    assert "| kind | quote | axis | quantifier | regime | source | verdict |" in lines[2]
    equal_units = next(l for l in lines if "at equal activated units (s tables" in l)
    assert "| paper | “Sparsity helps for the DSM and LSH models" in equal_units


@pytest.mark.parametrize("smear_factor, verdict", [(1.0, "supported"),
                                                   (1.5, "not supported")])
def test_router_claims_are_recorded_and_smear_is_tested_as_non_inferiority(smear_factor,
                                                                           verdict):
    from tests.experiments.papers.test_router_outputs import _synthetic_routers

    configs, frame = _synthetic_routers("quick", seeds=(0, 1, 2, 3, 4))
    frame["eval_mse"] *= np.exp(np.random.default_rng(0).normal(0, 0.01, len(frame)))
    smear = frame["model_label"] == "SMEAR"
    top_k = frame[frame["model_label"] == "top-k MoE"].set_index(
        ["target", "activated_units", "seed"])["eval_mse"]
    frame.loc[smear, "eval_mse"] = smear_factor * top_k.reindex(pd.MultiIndex.from_frame(
        frame.loc[smear, ["target", "activated_units", "seed"]])).to_numpy() * np.exp(
        0.003 * (frame.loc[smear, "seed"].to_numpy() - 2.0))  # seed noise, evenly spread
    claims = claims_for("routers", frame, configs)
    assert all(c.record != "unrecorded" for c in claims)
    beats = [c for c in claims if " beats the dense MLP trained alike" in c.claim]
    assert beats and all(c.kind == "ours" and "not this paper's claim" in c.source
                         for c in beats)
    smear_claims = [c for c in claims if c.record == "smear_vs_topk"]
    assert smear_claims and {c.verdict for c in smear_claims} == {verdict}
    assert all(c.kind == "paper" for c in smear_claims)
    assert any(c.record == "sigma_moe_vs_softmax_topk" for c in claims)


#: Table 7 of Bricken et al. 2023 (Split MNIST, 1K neurons): (method, k, accuracy) as printed.
TABLE7 = (("SDMLP", "1", "0.69"), ("SDMLP", "10", "0.53"), ("EWC", "NA", "0.61"),
          ("MAS", "NA", "0.49"), ("ReLU", "NA", "0.21"), ("SDMLP+EWC", "10", "0.83"),
          ("Oracle", "NA", "0.98"))


def test_the_continual_records_cite_table_7s_rows_as_the_paper_prints_them():
    """Every Table 7 number a continual record or ``PAPER_BRICKEN`` cites is a row of the
    paper's Table 7 (Split MNIST, 1K neurons); the EWC record says where its table and text
    disagree; a continual claim is matched to its own record by the comparison it names."""
    from experiments.papers.real_data.continual import PAPER_BRICKEN, TABLE7 as COLUMN

    path = PAPERS_DIR / PAPERS["Bricken et al. 2023"]
    if not path.is_file():
        pytest.skip(f"the papers' texts are not at {PAPERS_DIR}")
    lines = path.read_text(encoding="utf-8").splitlines()
    end = next(i for i, l in enumerate(lines) if l.startswith("Table 7:"))
    start = max(i for i, l in enumerate(lines[:end]) if l.startswith("Method\tNeurons"))
    table = lines[start:end]  # Table 7's rows alone, not Table 5's or Table 8's
    for method, k, value in TABLE7:
        assert f"{method}\t1K\t{k}\t{value}" in table, (method, k, value)
    # the Top-K row is printed in Cyrillic look-alikes ("Тор-К"): matched by its numbers
    assert any(l.endswith("\t1K\t10\t0.22") and l.split("\t")[0] not in ("SDMLP", "SDMLP+EWC")
               for l in table)
    paper = {(r.model, r.k): r[PAPER_BRICKEN.columns.get_loc(COLUMN)]
             for r in PAPER_BRICKEN.itertuples(index=False)}
    assert paper[("SDMLP", "1")] == 0.69 and paper[("SDMLP", "10")] == 0.53
    assert paper[("EWC (ReLU MLP)", "")] == 0.61 and paper[("MAS (not run here)", "")] == 0.49
    assert paper[("Top-K", "10")] == 0.22 and paper[("ReLU MLP", "")] == 0.21
    assert paper[("SDMLP + EWC", "10")] == 0.83
    assert paper[("oracle (ReLU MLP, joint)", "")] == 0.98
    ewc = record("sdmlp_vs_ewc")
    assert ewc.kind == "paper" and "App. F.3" in ewc.source
    assert "SDMLP k = 1 0.69, SDMLP k = 10 0.53, EWC 0.61, MAS 0.49" in ewc.source
    assert "disagree" in ewc.note and "k = 10" in ewc.note
    assert "ReLU 0.21" in record("sdmlp_vs_relu").source
    assert "Top-K (k = 10) 0.22" in record("sdmlp_vs_topk").source
    for text, key in (("SDMLP (k = 8) ends with a higher accuracy than EWC (ReLU MLP)",
                       "sdmlp_vs_ewc"),
                      ("SDMLP (k = 8) ends with a higher accuracy than ReLU MLP",
                       "sdmlp_vs_relu"),
                      ("SDMLP (k = 8) ends with a higher accuracy than Top-K (k = 8)",
                       "sdmlp_vs_topk"),
                      ("SDMLP (k = 8) forgets less than ReLU MLP", "sdmlp_forgets_less")):
        assert record_for("continual", text).key == key, text
    assert record_for("continual", "SDMLP ends lower than ReLU MLP").key == "unrecorded"


def test_comet_claim_texts_leave_quote_and_source_to_their_records():
    from experiments.papers.real_data import comet_claims, experiment_config

    config = experiment_config("comet_images", "tiny", "digits")
    rng = np.random.default_rng(0)
    rows = []
    for seed in (0, 1, 2):
        for width in config.widths:
            rows.append({"model_label": "standard model", "width": width, "p_k": 1.0,
                         "seed": seed, "test_error": 0.2 + rng.normal(0, 0.01)})
            for p_k in config.p_ks:
                for label, error in (("COMET", 0.15), ("smaller model", 0.3)):
                    rows.append({"model_label": label, "width": width, "p_k": p_k,
                                 "seed": seed, "test_error": error + rng.normal(0, 0.01)})
    claims = comet_claims(pd.DataFrame(rows), config)
    keys = {c.record for c in claims}
    assert keys == {"comet_vs_smaller_every_n", "comet_advantage_grows",
                    "comet_vs_standard_largest"}
    for c in claims:
        assert "§" not in c.claim and "top performer" not in c.claim, c.claim
        assert c.source.startswith("COMET §5.2.1") or c.source.startswith("ours, after COMET")
        assert c.quote == record(c.record).quote
