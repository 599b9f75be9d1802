#!/usr/bin/env bash
# The GPU check: everything sparselab runs on CUDA, in one script that fits in 8 minutes on one
# GPU and writes its results to one folder (run it first, once, whenever a GPU is available):
#   1. cuda_tests    the tests marked `cuda` (routers, models, fits, the Dask workers' GPU
#                    assignment), with a JUnit XML;
#   2. bench         the benchmarks that time a CUDA path beside the CPU one (`make bench`'s
#                    models and routers: benchmarks/run_all.py --only models routers);
#   3. sweep_cuda, sweep_cpu   one scaling sweep (`sparselab scale --experiment routers`) on
#                    each device, and the CPU/CUDA ratio of their row times;
#   4. image_cuda, image_cpu   one image experiment (`--experiment cifar`, on the bundled
#                    digits) on each device, and its ratio;
#   5. estimate_cuda `sparselab reproduce --preset paper --estimate --device cuda`.
# Every step runs under `timeout` with its own limit and a failure never stops the others.
# The folder gets one log per step, summary.tsv (step, status, seconds, limit, exit code),
# ratios.json and summary.md (the machine, the GPU, the date, the table and the ratios); the
# script exits 0 when every step that ran passed, 1 otherwise.
#
# Usage: benchmarks/device_check.sh [FOLDER]   (FOLDER: default $OUT, else runs/device_check)
# Environment:
#   DEVICE_CHECK_CPU_ONLY=1   skip the CUDA steps (status "skipped"): the script on a machine
#                             without a GPU (its test does this); without it a missing GPU
#                             fails the CUDA steps.
#   DEVICE_CHECK_PRESET       preset of the sweep and image steps (default quick; its test:
#                             tiny).
#   DEVICE_CHECK_SEEDS        seeds of the sweep and image steps (default 0: one seed keeps the
#                             quick sizes within the time limits; the ratios are per row).
#   DEVICE_CHECK_SCALE=S      multiply every step's time limit by S (default 1).
#   PYTHON                    the interpreter (default .venv/bin/python, else python3); it
#                             needs sparselab's dependencies and pytest, and torch with CUDA.
# The limits add up to 475 s; a step stopped by its limit keeps what it wrote, and the ratios
# are taken over the rows both devices finished.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
folder="${1:-${OUT:-$root/runs/device_check}}"  # a relative FOLDER: from where it is called
mkdir -p "$folder" || { echo "device_check: cannot create $folder" >&2; exit 2; }
folder="$(cd "$folder" && pwd)"
cd "$root"
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
cpu_only="${DEVICE_CHECK_CPU_ONLY:-0}"
preset="${DEVICE_CHECK_PRESET:-quick}"
seeds="${DEVICE_CHECK_SEEDS:-0}"
scale="${DEVICE_CHECK_SCALE:-1}"
# one thread per process, as in the tests: the CPU/CUDA ratios compare one core with one GPU
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1
export PYTHONUNBUFFERED=1
sparselab=("$PYTHON" -m experiments.cli)

has_cuda=0
if [[ "$cpu_only" != 1 ]] && "$PYTHON" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' \
        >/dev/null 2>&1; then
    has_cuda=1
fi

summary="$folder/summary.tsv"
printf 'step\tstatus\tseconds\tlimit_s\texit_code\n' > "$summary"
failures=0

# step NAME LIMIT_S cpu|cuda COMMAND...: run COMMAND into NAME.log under `timeout`, record it
step() {
    local name="$1" limit="$2" needs="$3"; shift 3
    local log="$folder/$name.log" status code start seconds
    limit="$(awk -v l="$limit" -v s="$scale" 'BEGIN { v = int(l * s + 0.5); printf "%d", v < 1 ? 1 : v }')"
    if [[ "$needs" == cuda && "$cpu_only" == 1 ]]; then
        echo "skipped: DEVICE_CHECK_CPU_ONLY=1" > "$log"
        printf '%s\tskipped\t0\t%s\t\n' "$name" "$limit" >> "$summary"
        echo "== $name: skipped (CPU only)"
        return 0
    fi
    if [[ "$needs" == cuda && "$has_cuda" != 1 ]]; then
        echo "failed: torch sees no CUDA device (DEVICE_CHECK_CPU_ONLY=1 skips this step)" > "$log"
        printf '%s\tfailed\t0\t%s\t\n' "$name" "$limit" >> "$summary"
        failures=$((failures + 1))
        echo "== $name: failed (no CUDA device)"
        return 0
    fi
    echo "== $name (limit ${limit} s): $*"
    start=$(date +%s.%N)
    timeout --kill-after=10 "$limit" "$@" > "$log" 2>&1 < /dev/null
    code=$?
    seconds="$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
    case $code in
        0) status=ok ;;
        124 | 137) status=timeout ;;
        *) status=failed ;;
    esac
    [[ $status == ok ]] || failures=$((failures + 1))
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$status" "$seconds" "$limit" "$code" >> "$summary"
    echo "   $status after $seconds s (exit $code); log: $log"
}

# the machine, before anything runs (nvidia-smi is absent on a machine without a GPU)
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm)"
    echo "cpus: $("$PYTHON" -c 'import os; print(len(os.sched_getaffinity(0)))' 2>/dev/null)"
    echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo none)"
    "$PYTHON" -c 'import torch; print("torch:", torch.__version__, "cuda:", torch.version.cuda)
print("gpu:", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")' 2>&1
    if command -v nvidia-smi > /dev/null; then
        nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
    fi
} > "$folder/machine.txt" 2>&1

step cuda_tests 90 cuda "$PYTHON" -m pytest -q -p no:cacheprovider -m cuda -o addopts="" \
    --junitxml="$folder/cuda_tests.xml" tests
step bench 75 cuda "$PYTHON" benchmarks/run_all.py --out "$folder/bench" --only models routers
for device in cuda cpu; do
    step "sweep_$device" 45 "$device" "${sparselab[@]}" scale --experiment routers \
        --preset "$preset" --seeds "$seeds" --device "$device" --force --out "$folder/sweep_$device"
done
for device in cuda cpu; do
    step "image_$device" 35 "$device" "${sparselab[@]}" scale --experiment cifar \
        --preset "$preset" --seeds "$seeds" --device "$device" --force --out "$folder/image_$device"
done
step estimate_cuda 150 cuda "${sparselab[@]}" reproduce --preset paper --estimate --device cuda \
    --out "$folder/estimate_paper"

# CPU/CUDA ratios: the rows' own times (results.csv's wall_s, without start-up), over the rows
# both runs finished (a step stopped by its time limit keeps the rows it wrote), and the
# steps' whole times (start-up included)
"$PYTHON" - "$folder" > "$folder/ratios.log" 2>&1 <<'EOF'
import csv, json, pathlib, sys

folder = pathlib.Path(sys.argv[1])
with open(folder / "summary.tsv") as f:
    steps = {r["step"]: r for r in csv.DictReader(f, delimiter="\t")}
KEY = ("experiment", "model_key", "model_label", "width", "k", "activated_units", "seed")


def rows(name):
    """{row key: wall_s} of folder/name/results.csv ({} when there is none)."""
    path = folder / name / "results.csv"
    if not path.exists():
        return {}
    with open(path) as f:
        table = list(csv.DictReader(f))
    return {tuple(r.get(c, "") for c in KEY): float(r["wall_s"]) for r in table
            if r.get("wall_s") not in (None, "")}


def ratio(a, b):
    return round(a / b, 3) if a is not None and b else None


ratios = {}
for part in ("sweep", "image"):
    cpu, cuda = rows(f"{part}_cpu"), rows(f"{part}_cuda")
    both = sorted(set(cpu) & set(cuda))
    cpu_s = sum(cpu[k] for k in both) if both else None
    cuda_s = sum(cuda[k] for k in both) if both else None
    step_s = {d: float(steps[f"{part}_{d}"]["seconds"]) if steps[f"{part}_{d}"]["status"] == "ok"
              else None for d in ("cpu", "cuda")}
    ratios[part] = {"rows_cpu": len(cpu), "rows_cuda": len(cuda), "rows_in_both": len(both),
                    "rows_s_cpu": sum(cpu.values()) if cpu else None,
                    "rows_s_cuda": sum(cuda.values()) if cuda else None,
                    "rows_cpu_over_cuda": ratio(cpu_s, cuda_s),
                    "step_s_cpu": step_s["cpu"], "step_s_cuda": step_s["cuda"],
                    "step_cpu_over_cuda": ratio(step_s["cpu"], step_s["cuda"])}
(folder / "ratios.json").write_text(json.dumps(ratios, indent=2))
EOF
[[ $? == 0 ]] || { echo "ratios: failed (ratios.log)"; failures=$((failures + 1)); }

{
    echo "# sparselab device check"
    echo
    sed 's/^/    /' "$folder/machine.txt"
    echo
    echo "preset $preset, seeds $seeds, CPU only: $([[ $cpu_only == 1 ]] && echo yes || echo no)"
    echo
    echo "| step | status | seconds | limit (s) | exit code |"
    echo "| --- | --- | --- | --- | --- |"
    tail -n +2 "$summary" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }'
    echo
    echo "CPU/CUDA ratios (ratios.json; empty where a side did not run):"
    echo
    sed 's/^/    /' "$folder/ratios.json" 2>/dev/null
    echo
    echo "failures: $failures"
} > "$folder/summary.md"
cat "$folder/summary.md"
[[ $failures == 0 ]]
