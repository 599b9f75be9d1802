# sparselab: the whole set-up is `make reproduce` and `make test` (see README.md).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# torch is pinned here only (the library itself requires torch>=2.3): on the machines this
# project runs on, 2.13.0 resolves to a CPU build already on disk instead of GBs of CUDA wheels.
TORCH_PIN ?= torch==2.13.0
PRESET ?= quick
# `make reproduce` runs its steps on a local Dask cluster of one single-threaded worker per
# core (the results are the serial run's, bit for bit); `make reproduce WORKERS=` runs them
# one after another in one process instead.
# (the CPUs this process may run on: not `nproc`, which prints 1 under OMP_NUM_THREADS=1)
WORKERS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)' 2>/dev/null)

.PHONY: install test test-slow test-all reproduce bench docs fuzz device-check clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 10), "sparselab needs Python >= 3.10"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet "$(TORCH_PIN)"
	$(PY) -m pip install --quiet -e ".[dev]" "$(TORCH_PIN)"
	# compile the Numba kernels into their on-disk cache once (about 2.5 minutes of one
	# core), so that a first run's processes (a reproduce's driver and workers) load them
	# instead of each compiling them (experiments/pipeline/warm_up.py)
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \
		$(PY) -m experiments.pipeline.warm_up > $(VENV)/warm_up.log 2>&1 || \
		{ cat $(VENV)/warm_up.log; exit 1; }
	touch $@

# The tests in two tiers, on pytest-xdist workers (one per core of the 2-core machines this
# project runs on; `make test TEST_WORKERS=4` elsewhere), one thread each (the BLAS pools
# here, torch's and Numba's in tests/conftest.py). Each test has a time limit
# (pytest-timeout), so a hang fails the run instead of stalling it, and the 20 slowest are
# listed at the end.
#   make test       every unit and property test at tiny sizes: no Dask cluster, no
#                   reproduce, a few command-line smoke tests (8.5 min of CPU after a fresh
#                   install, much of it Numba compiling signatures only tests use: about
#                   4.5 min of wall time on 2 free cores)
#   make test-slow  the tests marked slow (Dask clusters, reproduce, the example scripts, the
#                   continual calibration, the docs site in a browser, subprocess-heavy and
#                   long tests; a test file per worker, so a module's cluster starts once) and
#                   the fuzz suite's long profile
#   make test-all   both
TEST_WORKERS ?= 2
PYTEST := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
	$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --durations=20

test: install
	$(PYTEST) -m "not slow and not docs_browser" --timeout=120

test-slow: install $(VENV)/.installed-docs
	$(PYTEST) -m "slow or docs_browser" --dist loadfile --timeout=900
	SPARSELAB_FUZZ=long $(PYTEST) --timeout=600 tests/test_fuzz_api.py

test-all:
	$(MAKE) --no-print-directory test
	$(MAKE) --no-print-directory test-slow

reproduce: install
	$(VENV)/bin/sparselab reproduce --preset $(PRESET) $(if $(WORKERS),--workers $(WORKERS))

bench: install
	$(PY) benchmarks/run_all.py --out runs/bench

# the fuzz suite's long profile alone (`make test` runs its quick one, `make test-slow` this
# one): bad and unusual arguments to every public callable (60 examples each; 10–16 minutes
# on one core)
fuzz: install
	SPARSELAB_FUZZ=long $(PY) -m pytest -q tests/test_fuzz_api.py

# the GPU check (benchmarks/device_check.sh): the CUDA tests, the CUDA benchmarks, a sweep and
# an image experiment on CUDA beside the CPU, the paper preset's estimate on CUDA; ~8 minutes
# on one GPU, into runs/device_check (or OUT=folder)
device-check:
	benchmarks/device_check.sh $(OUT)

# the API reference and guides (mkdocs + mkdocstrings), into site/; warnings are errors
docs: $(VENV)/.installed-docs
	$(VENV)/bin/mkdocs build --strict

$(VENV)/.installed-docs: $(VENV)/.installed
	$(PY) -m pip install --quiet -e ".[docs]" "$(TORCH_PIN)"
	touch $@

clean:
	rm -rf $(VENV) runs site .pytest_cache .hypothesis
