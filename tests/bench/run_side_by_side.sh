#!/usr/bin/env bash
# run_side_by_side.sh: runs tapeflow's bench_ops, the PyTorch equivalent (torch_ops.py) and,
# when TensorFlow imports, the TensorFlow equivalent of the variable figures (tf_ops.py),
# one after the other, all on 2 threads, prints their outputs and a table of tapeflow
# against torch and TensorFlow per figure. Builds nothing.
# Usage: tests/bench/run_side_by_side.sh [BUILD_DIR] [extra args for all, e.g. --quick]
#        (BUILD_DIR defaults to build, relative to the repository root)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-build}"
[[ $# -gt 0 ]] && shift
case "$build" in /*) ;; *) build="$root/$build" ;; esac
bench="$build/tests/bench/bench_ops"
threads=2

if [[ ! -x "$bench" ]]; then
  echo "run_side_by_side: $bench not found; build the bench_ops target first" >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "== tapeflow: OMP_NUM_THREADS=$threads $bench $*"
OMP_NUM_THREADS=$threads "$bench" "$@" | tee "$tmp/tapeflow.txt"
echo
echo "== torch: python3 $here/torch_ops.py --threads $threads $*"
python3 "$here/torch_ops.py" --threads "$threads" "$@" | tee "$tmp/torch.txt"
echo
: >"$tmp/tf.txt"
if python3 -c "import tensorflow" >/dev/null 2>&1; then
  echo "== tf: python3 $here/tf_ops.py --threads $threads $*"
  OMP_NUM_THREADS=$threads python3 "$here/tf_ops.py" --threads "$threads" "$@" | tee "$tmp/tf.txt"
else
  echo "== tf: skipped (python3 cannot import tensorflow); the tf columns stay empty"
fi
echo

# Figures are paired by name: X with torch_X and tf_X, and sgemm_{tapeflow,blis}_N with
# torch_sgemm_N. "value" is the bench_ops figure, "ratio" is value/torch and "ratio_tf"
# value/tf, and "faster"/"faster_tf" name the winner and by how much (ns/op: lower is
# better; GFLOP/s and GB/s: higher is better). "-": no such twin (or TensorFlow skipped).
awk '
  $1 != "bench" { next }
  $2 ~ /^torch_/ { torch[$2] = $3; next }
  $2 ~ /^tf_/    { tf[$2] = $3; next }
  { rows[++nrows] = $2; v[nrows] = $3; u[nrows] = $4 }
  # "other ratio faster" for a twin; the faster column padded to w (0: not padded).
  function cmp(val, other, unit, ours, theirs, w,    r, better, by) {
    r = (other > 0) ? val / other : 0
    if (unit == "ns/op") better = (r > 0 && r <= 1) ? ours : theirs
    else                 better = (r >= 1) ? ours : theirs
    by = (r > 0) ? ((r >= 1) ? r : 1 / r) : 0
    return sprintf("%12.2f %9.3f  %-" w "s", other, r, better " x" sprintf("%.2f", by))
  }
  END {
    n = 0
    for (i = 1; i <= nrows; i++) {
      name = rows[i]; unit = u[i]
      if (unit != "ns/op" && unit != "GFLOP/s" && unit != "GB/s") continue
      key = name
      if (name ~ /^sgemm_(tapeflow|blis)_[0-9]+$/) { key = name; sub(/^sgemm_[a-z]+_/, "", key); key = "sgemm_" key }
      if (!(("torch_" key) in torch) && !(("tf_" key) in tf)) continue
      ours = (name ~ /blis/) ? "blis" : "tapeflow"
      line[++n] = sprintf("%-28s %-8s %12.2f %s %s", name, unit, v[i],
        (("torch_" key) in torch) ? cmp(v[i], torch["torch_" key], unit, ours, "torch", 16) \
                                  : sprintf("%12s %9s  %-16s", "-", "-", "-"),
        (("tf_" key) in tf) ? cmp(v[i], tf["tf_" key], unit, ours, "tf", 0) \
                            : sprintf("%12s %9s  %s", "-", "-", "-"))
    }
    if (n == 0) { print "no figures to compare"; exit }
    printf "%-28s %-8s %12s %12s %9s  %-16s %12s %9s  %s\n", "figure", "unit", "value",
      "torch", "ratio", "faster", "tf", "ratio_tf", "faster_tf"
    for (i = 1; i <= n; i++) print line[i]
  }
' "$tmp/torch.txt" "$tmp/tf.txt" "$tmp/tapeflow.txt"
