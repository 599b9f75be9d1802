"""proofs_checks' public entry points refuse bad input, naming the parameter: child seeds whose
salts would be truncated, verdicts and flags of the wrong type, bool counts in a check's
params, and string flags or bad seed lists given to a run."""

import dataclasses

import numpy as np
import pytest

import proofs_checks as PC
from proofs_checks import child_seeds, final_verdict


def test_child_seeds_refuse_salts_that_would_be_truncated():
    assert child_seeds(0, 3, 2) == child_seeds(0, 3, np.int64(2))
    for salt in (True, 2.5, "2", -1):  # True and 2.5 were read as 1 and 2: another stream
        with pytest.raises(ValueError, match=r"salt\[0\]"):
            child_seeds(0, 3, salt)
    with pytest.raises(ValueError, match="n must be"):
        child_seeds(0, -1)  # was [] silently (state[:-1] of one seed)


def test_final_verdict_names_a_raw_verdict_of_the_wrong_type():
    with pytest.raises((ValueError, TypeError), match="raw must be a Verdict"):
        final_verdict(None, 0.9)


def test_final_verdict_refuses_a_string_flag_not_read_by_truthiness():
    with pytest.raises(ValueError, match="must be True or False, got 'False'"):
        final_verdict("holds", 0.9, "False")


def test_check_params_refuse_a_bool_count():
    cls = PC.get_check("collisions")
    with pytest.raises(ValueError, match="params.trials must be an integer"):
        cls(dataclasses.replace(cls.Params(), trials=True))


def test_check_runs_refuse_string_power_flags_and_bad_seed_lists():
    with pytest.raises(ValueError, match="power must be True or False, got 'False'"):
        PC.run_checks("tiny", None, only=["eq1_flops"], progress=False, power="False")
    with pytest.raises(ValueError, match="power must be True or False"):
        PC.get_check("eq1_flops").preset(PC.cli.PARAMS_OF_PRESET["tiny"]).run(0, power="False")
    with pytest.raises(ValueError, match="progress must be True or False"):
        PC.run_checks("tiny", None, only=["eq1_flops"], progress="False")
    planted = PC.get_check("collisions").preset(
        PC.cli.PARAMS_OF_PRESET["tiny"]).planted_violations()[0]
    for bad, word in ((None, "seeds must be an iterable"), (3, "seeds must be an iterable"),
                      ([0, 2.5], r"seeds\[1\] must be an integer")):
        with pytest.raises(ValueError, match=word):
            PC.measure_power(planted, bad)  # None and 3 were TypeError: not iterable
