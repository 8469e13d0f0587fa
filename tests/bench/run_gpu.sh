#!/usr/bin/env bash
# run_gpu.sh: the GPU benchmarks beside their PyTorch twins on the same GPU, one after the
# other: bench_gpu with torch_gpu.py (sgemm, Add, copy, small-op dispatch) and bench_gpu_train
# with torch_gpu_train.py (MLP and CNN training samples/s, Adam's update against a
# device-to-device copy and torch's fused Adam, the conv layers against cuDNN channels-last);
# prints their outputs, then a table of tapeflow against torch per figure (ratio: tapeflow /
# torch; for us/op, lower is better) and the two aims of the README's GPU table: training
# samples/s >= torch's (the MLP, the CNN, and big_cnn under float32, tf32 and bfloat16 against
# torch's bf16 autocast), and Adam's update
# >= 80% of the copy bandwidth.
# Builds nothing: needs a CUDA build (-DTFL_CUDA=ON) with the bench_gpu and bench_gpu_train
# targets, and python3 with a CUDA torch. Without a GPU every program prints
# "skipped: no GPU" and the table says so.
# Usage: tests/bench/run_gpu.sh [BUILD_DIR] [--quick]   (BUILD_DIR defaults to build-cuda)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-build-cuda}"
[[ $# -gt 0 ]] && shift
case "$build" in /*) ;; *) build="$root/$build" ;; esac

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/out.txt"

for exe in bench_gpu bench_gpu_train; do
  if [[ ! -x "$build/tests/bench/$exe" ]]; then
    echo "run_gpu: $build/tests/bench/$exe not found; configure with -DTFL_CUDA=ON and build" \
      "the $exe target" >&2
    exit 1
  fi
done

run() {
  echo "== $*"
  "$@" | tee -a "$tmp/out.txt"
  echo
}

run "$build/tests/bench/bench_gpu" "$@"
run python3 "$here/torch_gpu.py" "$@"
run "$build/tests/bench/bench_gpu_train" "$@"
run python3 "$here/torch_gpu_train.py" "$@"

if grep -q "^skipped: no GPU" "$tmp/out.txt"; then
  echo "run_gpu: no GPU on this machine (or torch without CUDA): no table"
  exit 0
fi

awk '
  $1 != "bench" { next }
  $2 ~ /^torch_/ { torch[substr($2, 7)] = $3; next }
  { name = $2; sub(/_tapeflow$/, "", name)            # gpu_sgemm_N_tapeflow pairs torch_gpu_sgemm_N
    if (name ~ /_cublas$/) next
    rows[++n] = name; v[name] = $3; u[name] = $4 }
  END {
    printf "%-34s %-10s %12s %12s %8s\n", "figure", "unit", "tapeflow", "torch", "ratio"
    for (i = 1; i <= n; i++) {
      k = rows[i]
      if (!(k in torch)) { printf "%-34s %-10s %12.2f %12s %8s\n", k, u[k], v[k], "-", "-"; continue }
      r = torch[k] > 0 ? v[k] / torch[k] : 0
      printf "%-34s %-10s %12.2f %12.2f %8.3f\n", k, u[k], v[k], torch[k], r
    }
    print ""
    for (m = 0; m < 2; m++) {
      k = m ? "gpu_train_cnn_samples_per_s" : "gpu_train_mlp_samples_per_s"
      if ((k in v) && (k in torch))
        printf("aim: %s >= torch: %s (%.3f)\n", k, (v[k] >= torch[k]) ? "met" : "NOT met", v[k] / torch[k])
    }
    split("gpu_train_big_cnn_samples_per_s gpu_train_big_cnn_tf32_samples_per_s gpu_train_big_cnn_bf16_samples_per_s", big, " ")
    for (m = 1; m <= 3; m++) {
      k = big[m]
      if ((k in v) && (k in torch))
        printf("aim: %s >= torch: %s (%.3f)\n", k, (v[k] >= torch[k]) ? "met" : "NOT met", v[k] / torch[k])
    }
    split("mlp cnn big_cnn", gm, " ")
    for (m = 1; m <= 3; m++) {
      k = "gpu_train_" gm[m] "_graphs_samples_per_s"; p = "gpu_train_" gm[m] "_samples_per_s"
      if ((k in v) && (p in v))
        printf("step graphs, %s: %.0f samples/s, %.3fx the plain steps%s\n", gm[m], v[k], v[k] / v[p],
               (p in torch) ? sprintf(", %.3fx torch", v[k] / torch[p]) : "")
    }
    k = "gpu_train_big_cnn_fp16_samples_per_s"
    if ((k in v) && ("gpu_train_big_cnn_bf16_samples_per_s" in torch))
      printf("float16 with loss scaling, big_cnn: %.0f samples/s (torch bf16 autocast: %.0f)\n", v[k], torch["gpu_train_big_cnn_bf16_samples_per_s"])
    k = "gpu_adam_copy_ratio_1e8"
    if (k in v) printf("aim: Adam update >= 0.8 of the copy bandwidth: %s (%.3f)\n", (v[k] >= 0.8) ? "met" : "NOT met", v[k])
  }
' "$tmp/out.txt"
