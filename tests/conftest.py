"""Shared pytest configuration: the thread policy (one thread per test process), hypothesis
profiles, the CUDA skip marker, a one-thread fixture, and a count of the Numba kernels a run
compiled instead of loading them from the on-disk cache.

Tiers (``Makefile``): ``make test`` runs the tests not marked ``slow`` on two pytest-xdist
workers; ``make test-slow`` runs the ``slow`` ones (Dask clusters, reproduce, example scripts,
calibrations, subprocess-heavy and long tests) and the long fuzz profile.
"""

import os

# One thread per test process (an xdist worker is one process, and the machines have 2
# cores): set before torch, NumPy and Numba start their pools where this runs first, and
# inherited by every subprocess and Dask worker a test starts. (Numba's pool size is left
# alone so that tests of its thread split can still ask for two threads; its default count
# is set to one below.)
for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_name] = "1"

import numba  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

torch.set_num_threads(1)
try:
    torch.set_num_interop_threads(1)
except RuntimeError:  # already set, or inter-op work has started: it stays as it is
    pass
numba.set_num_threads(1)
try:  # NumPy's and SciPy's BLAS when pytest was started without the variables above
    import scipy.linalg  # noqa: F401,E402
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1)
except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
    pass

# Every run draws the same examples (derandomize: hypothesis seeds each test from its name), so
# a red run is a real failure that the next run repeats, never a draw; SPARSELAB_HYPOTHESIS=explore
# draws fresh examples (and keeps failures in .hypothesis/) to look for new ones.
settings.register_profile(
    "default", max_examples=40, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "explore", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("explore" if os.environ.get("SPARSELAB_HYPOTHESIS") == "explore"
                      else "default")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def one_thread():
    """One torch and one Numba thread for a module (``pytest.mark.usefixtures``): the test
    machines have 2 shared cores, where thread pools only add synchronisation delays."""
    torch_threads, numba_threads = torch.get_num_threads(), numba.get_num_threads()
    torch.set_num_threads(1)
    numba.set_num_threads(1)
    yield
    torch.set_num_threads(torch_threads)
    numba.set_num_threads(numba_threads)


# -- Numba's on-disk cache: which of sparselab's kernels did this run compile? ---------------
# `make install` compiles the kernels into their cache (experiments.pipeline.warm_up); every test
# process should load them from there. A kernel compiled here is one the warm-up did not cover
# (a signature only a test uses) or a cache that did not match; the terminal summary lists
# them per xdist worker, so a run whose workers each compile the same kernels shows it.

_PACKAGES = ("routing", "experiments", "proofs_checks", "lipschitz", "inference")
_COMPILED: list[str] = []


def _count_compilations() -> None:
    from numba.core import event

    class _Compiled(event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            function = ev.data["dispatcher"].py_func
            name = f"{function.__module__}.{function.__qualname__}"
            if name.split(".")[0] in _PACKAGES:
                _COMPILED.append(name)

    event.register("numba:compile", _Compiled())


_count_compilations()
_NODES: dict[str, list[str]] = {}


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand the names to the controller
        workeroutput["numba_compiled"] = list(_COMPILED)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):  # the xdist controller, as each worker ends
    _NODES[node.gateway.id] = list(getattr(node, "workeroutput", {}).get("numba_compiled", []))


def pytest_terminal_summary(terminalreporter):
    if terminalreporter.config.option.collectonly:
        return
    per_process = _NODES if _NODES else {"this process": list(_COMPILED)}
    counts = ", ".join(f"{name} {len(names)}" for name, names in sorted(per_process.items()))
    terminalreporter.write_line(f"Numba kernels compiled, not loaded from the cache: {counts}")
    everywhere = [set(names) for names in per_process.values()]
    twice = set.intersection(*everywhere) if len(everywhere) > 1 else set()
    if twice:
        terminalreporter.write_line(f"  compiled by every worker: {', '.join(sorted(twice))}")
