"""experiments.runner.output_folder: a released folder keeps no lock file, and a run that fails before
writing anything leaves no empty folder behind."""

import subprocess
import sys

import pytest

from experiments.runner.output_folder import LOCK_NAME, claim, release, writer


def test_no_lock_file_is_left_after_a_run(tmp_path):
    out = tmp_path / "out"
    with writer(out):
        assert (out / LOCK_NAME).exists()
        (out / "results.csv").write_text("x\n")
    assert sorted(p.name for p in out.iterdir()) == ["results.csv"]


def test_a_failed_run_leaves_no_empty_folder_but_keeps_a_folder_it_found(tmp_path):
    out = tmp_path / "new" / "out"
    with pytest.raises(RuntimeError), writer(out):
        raise RuntimeError("the run failed before its first file")
    assert not out.exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    with pytest.raises(RuntimeError), writer(kept):
        raise RuntimeError("failed")
    assert kept.is_dir() and list(kept.iterdir()) == []


def test_the_last_release_removes_the_lock_and_the_folder_is_free_for_another_process(
        tmp_path):
    claim(tmp_path)
    claim(tmp_path)
    release(tmp_path)
    assert (tmp_path / LOCK_NAME).exists()  # still held: one claim left
    release(tmp_path)
    assert not (tmp_path / LOCK_NAME).exists()
    code = ("import sys\nfrom experiments.runner import output_folder\n"
            "output_folder.claim(sys.argv[1])\nprint('free')\n")
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                            text=True, check=True)
    assert result.stdout.strip() == "free"
