#!/usr/bin/env bash
# GPU check of the embedding path (issue 11): throughput on ViT-B-32 at fp16, bf16 and fp32
# on the GPU and fp32 on the CPU; GPU fp32 against CPU fp32 within a tolerance; how many pair
# and set decisions fp16 / bf16 change; the workflow's evaluation stage on cuda against a CPU
# run. Installs nothing: uses .venv/bin/python (or $PYTHON). The logic is in Python
# (vlcomp_dev.bench.evaluate, vlcomp_dev.precision_check); this script only orchestrates.
# See tools/README.md.
#
#   tools/gpu_check.sh [--out DIR] [--dry-run] [--budget SECONDS] [--skip-workflow]
#                      [--cpu-run] [--workflow-precision fp32|bf16|fp16|auto]
#
# --dry-run (automatic without a CUDA device): runs every part that needs no GPU (the CPU
# benchmark, the comparison code on CPU fp32 against CPU fp32 with other workers, the metric
# comparison of an existing run with itself) and writes what it would run on the GPU to
# plan.txt. Output: DIR/report.md and DIR/report.json (default DIR: results/gpu_check).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$REPO/results/gpu_check"
DRY=0
BUDGET=${BUDGET:-460}   # seconds for everything; each step gets what is left
SKIP_WORKFLOW=0
CPU_RUN=0
WF_PRECISION=fp32
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --dry-run|--cpu) DRY=1; shift ;;
    --budget) BUDGET=$2; shift 2 ;;
    --skip-workflow) SKIP_WORKFLOW=1; shift ;;
    --cpu-run) CPU_RUN=1; shift ;;
    --workflow-precision) WF_PRECISION=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

if [[ -n "${PYTHON:-}" ]]; then PY=$PYTHON
elif [[ -x "$REPO/.venv/bin/python" ]]; then PY="$REPO/.venv/bin/python"
else PY=$(command -v python3 || command -v python); fi
SNAKEMAKE="$(dirname "$PY")/snakemake"
export HF_HUB_OFFLINE=1 NLTK_DATA="${NLTK_DATA:-$REPO/resources/nltk_data}"
export PYTHONPATH="$REPO/src${PYTHONPATH:+:$PYTHONPATH}"

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/bench_*.json "$OUT"/precision.json "$OUT"/metrics_compare.json \
  "$OUT"/workflow.json "$OUT"/plan.txt
DATA="$OUT/data"   # generated JPEGs and random weights, shared by every step
START=$SECONDS
CORES=$(nproc)

left() { echo $(( BUDGET - (SECONDS - START) )); }
step() {  # step NAME SECONDS_CAP COMMAND...: run with a timeout, log, never abort the script
  local name=$1 cap=$2; shift 2
  local limit; limit=$(left); (( limit > cap )) && limit=$cap
  if (( limit < 20 )); then
    echo "SKIPPED (time budget spent): $*" | tee -a "$OUT/plan.txt"; return 0
  fi
  echo "== $name (<= ${limit}s): $*"
  if timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; then
    tail -n 12 "$OUT/$name.log"
  else
    local rc=$?
    echo "FAILED or timed out (exit $rc): $name; see $OUT/$name.log" | tee -a "$OUT/plan.txt"
    tail -n 20 "$OUT/$name.log"
  fi
}
plan() { echo "would run: $*" | tee -a "$OUT/plan.txt"; }

if [[ $DRY -eq 0 ]] && ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  echo "no CUDA device: running the dry run"; DRY=1
fi

BENCH=("$PY" -m vlcomp_dev.bench.evaluate --model ViT-B-32 --data "$DATA")
if [[ $DRY -eq 1 ]]; then
  CPU_THREADS=$(( CORES < 2 ? 1 : 2 )); CPU_WORKERS=2
  CPU_ITEMS=24; CPU_LOOP=6; CHECK_ITEMS=24
else
  CPU_THREADS=$(( CORES / 2 )); CPU_WORKERS=$(( CORES / 4 > 1 ? CORES / 4 : 1 ))
  CPU_ITEMS=48; CPU_LOOP=12; CHECK_ITEMS=300
fi
GPU_WORKERS=$(( CORES > 3 ? CORES - 2 : 1 ))
GPU_ITEMS=1500; GPU_LOOP=150

# (i) Throughput: CPU fp32, then each precision on the GPU.
step bench_cpu_fp32 200 "${BENCH[@]}" --device cpu --precision fp32 --items "$CPU_ITEMS" \
  --loop-items "$CPU_LOOP" --threads "$CPU_THREADS" --workers "$CPU_WORKERS" --repeats 1 \
  --batch-size 256 --out "$OUT/bench_cpu_fp32.json"
for precision in fp16 bf16 fp32; do
  cmd=("${BENCH[@]}" --device cuda --precision "$precision" --items "$GPU_ITEMS"
       --loop-items "$GPU_LOOP" --threads 4 --workers "$GPU_WORKERS" --repeats 3
       --batch-size 256 --out "$OUT/bench_cuda_$precision.json")
  if [[ $DRY -eq 1 ]]; then plan "${cmd[@]}"; else step "bench_cuda_$precision" 90 "${cmd[@]}"; fi
done

# (ii, iii) Agreement of GPU fp32 with CPU fp32, and decision changes of fp16 / bf16.
CHECK=("$PY" -m vlcomp_dev.precision_check runs --model ViT-B-32 --data "$DATA"
       --threads "$CPU_THREADS" --out "$OUT/precision.json")
if [[ $DRY -eq 1 ]]; then
  plan "${CHECK[@]}" --items 300 --runs "cpu:fp32:$CPU_WORKERS,cuda:fp32:$GPU_WORKERS,cuda:fp16:$GPU_WORKERS,cuda:bf16:$GPU_WORKERS"
  # The same code on what a CPU has: fp32 in-process decoding against fp32 with workers.
  step precision 150 "${CHECK[@]}" --items "$CHECK_ITEMS" --runs "cpu:fp32:0,cpu:fp32:$CPU_WORKERS"
else
  step precision 150 "${CHECK[@]}" --items "$CHECK_ITEMS" \
    --runs "cpu:fp32:$CPU_WORKERS,cuda:fp32:$GPU_WORKERS,cuda:fp16:$GPU_WORKERS,cuda:bf16:$GPU_WORKERS"
fi

# (iv) The workflow's evaluation stage with evaluate.device cuda, against a CPU run.
EVAL_RULES=(evaluate_benchmark evaluate_bindsplit evaluate_retrieval evaluate_two_positives
            evaluate_two_image)
REFERENCE=""
[[ -d "$REPO/results/metrics" ]] && REFERENCE="$REPO/results"
workflow_config() {  # workflow_config DIR DEVICE PRECISION: config/config.yaml, evaluate changed
  "$PY" - "$1" "$2" "$3" "$REPO/config/config.yaml" <<'EOF'
import sys, yaml
folder, device, precision, source = sys.argv[1:]
config = yaml.safe_load(open(source))
config["evaluate"].update(device=device, precision=precision)
open(f"{folder}/config.yaml", "w").write(yaml.safe_dump(config, sort_keys=False))
EOF
}
workflow() {  # workflow DIR: the snakemake command line for a run in DIR (in WORKFLOW)
  WORKFLOW=(env -C "$REPO" "$SNAKEMAKE" -s "$REPO/Snakefile" -d "$1" --configfile "$1/config.yaml"
            --profile "$REPO/profiles/default" --cores "$CORES")
}
if [[ $SKIP_WORKFLOW -eq 1 ]]; then
  echo "workflow step skipped (--skip-workflow)" | tee -a "$OUT/plan.txt"
elif [[ $DRY -eq 1 ]]; then
  plan "workflow_config $OUT/workflow_cuda cuda $WF_PRECISION  (config/config.yaml, evaluate.device cuda)"
  if [[ -n "$REFERENCE" ]]; then
    plan "cp -a $REFERENCE/. $OUT/workflow_cuda/results/ (less results/cache/embeddings)"
    plan "snakemake -s Snakefile -d $OUT/workflow_cuda --configfile $OUT/workflow_cuda/config.yaml --cores $CORES --forcerun ${EVAL_RULES[*]}"
    plan "$PY -m vlcomp_dev.precision_check metrics $REFERENCE/metrics $OUT/workflow_cuda/results/metrics"
    # The comparison code itself, on the CPU run against itself.
    step metrics_compare 60 "$PY" -m vlcomp_dev.precision_check metrics \
      "$REFERENCE/metrics" "$REFERENCE/metrics" --out "$OUT/metrics_compare.json"
  else
    plan "snakemake -s Snakefile -d $OUT/workflow_cuda --configfile $OUT/workflow_cuda/config.yaml --cores $CORES  (no CPU run in results/ to compare with; --cpu-run makes one first)"
  fi
else
  WD="$OUT/workflow_cuda"; rm -rf "$WD"; mkdir -p "$WD"
  if [[ -z "$REFERENCE" && $CPU_RUN -eq 1 ]]; then
    mkdir -p "$OUT/workflow_cpu"
    workflow_config "$OUT/workflow_cpu" cpu fp32
    workflow "$OUT/workflow_cpu"
    step workflow_cpu 600 "${WORKFLOW[@]}"
    [[ -d "$OUT/workflow_cpu/results/metrics" ]] && REFERENCE="$OUT/workflow_cpu/results"
  fi
  workflow_config "$WD" cuda "$WF_PRECISION"
  wf_start=$SECONDS
  if [[ -n "$REFERENCE" ]]; then
    mkdir -p "$WD/results"
    (cd "$REFERENCE" && tar --exclude=./cache/embeddings --exclude=./gpu_check -cf - .) \
      | (cd "$WD/results" && tar -xf -)
    workflow "$WD"
    step workflow_cuda 600 "${WORKFLOW[@]}" --forcerun "${EVAL_RULES[@]}"
  else
    workflow "$WD"
    step workflow_cuda 600 "${WORKFLOW[@]}"
  fi
  status=$([[ -d "$WD/results/metrics" ]] && echo "metrics written" || echo "no metrics")
  printf '{"device": "cuda", "precision": "%s", "reference": "%s", "status": "%s", "seconds": %d, "log": "%s"}\n' \
    "$WF_PRECISION" "${REFERENCE:-none}" "$status" $(( SECONDS - wf_start )) \
    "$OUT/workflow_cuda.log" > "$OUT/workflow.json"
  if [[ -n "$REFERENCE" && -d "$WD/results/metrics" ]]; then
    step metrics_compare 60 "$PY" -m vlcomp_dev.precision_check metrics \
      "$REFERENCE/metrics" "$WD/results/metrics" --out "$OUT/metrics_compare.json"
  fi
fi

"$PY" -m vlcomp_dev.precision_check report "$OUT" > /dev/null
echo
cat "$OUT/report.md"
echo
echo "report: $OUT/report.md, $OUT/report.json ($(( SECONDS - START )) s)"
