"""The install-time warm-up (``experiments.pipeline.warm_up``): after it, the work it samples loads its
Numba kernels from the on-disk cache instead of compiling them."""

import json
import os
import subprocess
import sys

import pytest

from experiments.pipeline import warm_up


def test_compiled_counts_a_compilation():
    """The counter the other test relies on sees a compilation (so its "nothing compiled"
    can fail)."""
    from numba import njit

    before = len(warm_up.compiled())

    @njit(cache=False)
    def add_one(x):
        return x + 1

    assert add_one(1) == 2
    names = warm_up.compiled()
    assert len(names) > before
    assert "test_compiled_counts_a_compilation.<locals>.add_one" in names[before:]


_CHILD = """
import json, sys, tempfile, pathlib
from experiments.pipeline import warm_up
from experiments.papers import real_data
from experiments.runner.threads import single_threaded
warm_up.compiled()
if sys.argv[1] == "warm":
    warm_up.warm_up(progress=False, parts=("other steps",), preset="tiny")
else:  # the continual experiment's tiny run, one seed: the work the warm-up sampled
    with single_threaded(), tempfile.TemporaryDirectory() as folder:
        real_data.run_continual("tiny", pathlib.Path(folder) / "c", seeds=(1,), device="cpu",
                                progress=False)
import gc, numba
hits = sum(sum(o.stats.cache_hits.values()) for o in gc.get_objects()
           if isinstance(o, numba.core.dispatcher.Dispatcher))
print(json.dumps([warm_up.compiled(), hits]))
"""


def _child(mode, cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), OMP_NUM_THREADS="1",
               NUMBA_NUM_THREADS="1")
    run = subprocess.run([sys.executable, "-c", _CHILD, mode], capture_output=True, text=True,
                         env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="NUMBA_CACHE_DIR in a child process")
def test_after_the_warm_up_the_sampled_work_compiles_nothing(tmp_path):
    cache = tmp_path / "numba_cache"
    cache.mkdir()
    compiled, _ = _child("warm", cache)  # in another process, as at install
    assert compiled, "the warm-up compiled nothing: was the cache not empty?"
    compiled, loaded = _child("run", cache)
    assert compiled == []
    assert loaded > 0  # the work does call Numba kernels: it loaded them from the cache
