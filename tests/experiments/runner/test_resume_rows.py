"""The one resumable-rows implementation (experiments.runner.rows.resume_rows), the naming of
settings that differ (settings_difference) and a folder made ready for rows
(experiments.runner.output_folder.prepare_folder)."""

import pandas as pd
import pytest

from experiments.runner.output_folder import prepare_folder
from experiments.runner.rows import resume_rows, settings_difference


def jobs(n):
    return [((f"m{i}", i), i) for i in range(n)]


def compute_counting(calls):
    def compute(i):
        calls.append(i)
        return {"model_key": f"m{i}", "seed": i, "value": 10 * i}
    return compute


def test_rows_resume_computing_only_the_missing_ones(tmp_path):
    path, calls = tmp_path / "results.csv", []
    first = resume_rows(path, pd.DataFrame(), jobs(3), compute_counting(calls),
                        ("model_key", "seed"), progress=False)
    assert calls == [0, 1, 2] and list(first["value"]) == [0, 10, 20]
    # an interrupted run: one row lost; the rerun computes it alone, the others read back
    table = pd.read_csv(path).iloc[[0, 2]]
    calls.clear()
    again = resume_rows(path, table, jobs(3), compute_counting(calls), ("model_key", "seed"),
                        progress=False)
    assert calls == [1]
    assert sorted(again["value"]) == [0, 10, 20] and len(pd.read_csv(path)) == 3
    # a finished folder: nothing computed; a key listed twice is computed once
    calls.clear()
    resume_rows(path, pd.read_csv(path), jobs(3) + jobs(3), compute_counting(calls),
                ("model_key", "seed"), progress=False)
    assert calls == []
    calls.clear()
    resume_rows(tmp_path / "twice.csv", pd.DataFrame(), jobs(2) + jobs(2),
                compute_counting(calls), ("model_key", "seed"), progress=False)
    assert calls == [0, 1]


def test_rows_of_other_keys_stay_in_the_file_and_columns_are_kept(tmp_path):
    path = tmp_path / "results.csv"
    old = pd.DataFrame([{"model_key": "gone", "seed": 0, "value": -1.0}])
    rows = resume_rows(path, old, jobs(2), compute_counting([]), ("model_key", "seed"),
                       columns=["model_key", "seed", "value", "absent"], progress=False)
    assert list(rows["model_key"]) == ["m0", "m1"]  # this run's rows only
    written = pd.read_csv(path)
    assert list(written.columns) == ["model_key", "seed", "value", "absent"]
    assert list(written["model_key"]) == ["gone", "m0", "m1"]


def test_parallel_rows_are_put_back_in_the_serial_order(tmp_path):
    path, seen = tmp_path / "results.csv", []

    def parallel(tasks):  # as a cluster: the last submitted finishes first
        for i in reversed(tasks):
            yield {"model_key": f"m{i}", "seed": i, "value": 10 * i}

    rows = resume_rows(path, pd.DataFrame(), jobs(4), None, ("model_key", "seed"),
                       parallel=parallel, progress=False, on_row=seen.append)
    assert [row["seed"] for row in seen] == [3, 2, 1, 0]
    assert list(pd.read_csv(path)["seed"]) == [0, 1, 2, 3] == list(rows["seed"])
    with pytest.raises(ValueError, match="progress"):
        resume_rows(path, pd.DataFrame(), jobs(1), None, ("model_key",), progress="no")


def test_settings_difference_names_fields_and_cuts_at_the_width():
    old = {"n_train": 100.0, "config": {"k": 4.0, "models": ["a", "b"]}, "gone": 1.0}
    new = {"n_train": 200.0, "config": {"k": 4.0, "models": ["a"]}}
    assert settings_difference(old, new) == [
        'config.models ["a", "b"] there, ["a"] now', "gone 1 there, None now",
        "n_train 100 there, 200 now"]
    assert settings_difference(old, old) == []
    long = {"text": "x" * 10}
    # a value of exactly `width` characters is whole; one more is cut to width with "…"
    assert settings_difference(long, {}, width=10) == [f"text {'x' * 10} there, None now"]
    assert settings_difference(long, {}, width=9) == [f"text {'x' * 6}… there, None now"]
    with pytest.raises(ValueError, match="width"):
        settings_difference(long, {}, width=1)
    with pytest.raises(TypeError, match="old"):
        settings_difference([], {})


def test_prepare_folder_creates_checks_and_starts_over_with_force(tmp_path):
    out = prepare_folder(tmp_path / "a" / "b")
    assert out.is_dir() and list(out.iterdir()) == []
    (out / "results.csv").write_text("x\n1\n")
    prepare_folder(out)
    assert (out / "results.csv").exists()  # kept without force
    prepare_folder(out, force=True)
    assert not (out / "results.csv").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="--out .*file is not writable: it is a file"):
        prepare_folder(tmp_path / "file")
    with pytest.raises(ValueError, match="force"):
        prepare_folder(out, force="yes")
