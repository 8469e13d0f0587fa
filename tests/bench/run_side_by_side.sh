#!/usr/bin/env bash
# run_side_by_side.sh: runs tapeflow's bench_ops and the PyTorch equivalent (torch_ops.py)
# one after the other, both on 2 threads, prints both outputs and a table of tapeflow
# against torch per figure. Builds nothing.
# Usage: tests/bench/run_side_by_side.sh [BUILD_DIR] [extra args for both, e.g. --quick]
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

# Figures are paired by name: X with torch_X, and sgemm_{tapeflow,blis}_N with
# torch_sgemm_N. "value" is the bench_ops figure, "ratio" is value/torch, and "faster"
# names the winner and by how much (ns/op: lower is better; GFLOP/s: higher is better).
awk '
  FNR == NR { if ($1 == "bench") torch[$2] = $3; next }
  $1 != "bench" { next }
  {
    name = $2; val = $3; unit = $4; key = "torch_" name
    if (name ~ /^sgemm_(tapeflow|blis)_[0-9]+$/) { n = name; sub(/^sgemm_[a-z]+_/, "", n); key = "torch_sgemm_" n }
    if (!(key in torch) || (unit != "ns/op" && unit != "GFLOP/s")) next
    rows[++nrows] = name; v[nrows] = val; t[nrows] = torch[key]; u[nrows] = unit
  }
  END {
    if (nrows == 0) { print "no figures to compare"; exit }
    printf "%-26s %-8s %12s %12s %9s  %s\n", "figure", "unit", "value", "torch", "ratio", "faster"
    for (i = 1; i <= nrows; i++) {
      r = (t[i] > 0) ? v[i] / t[i] : 0
      ours = (rows[i] ~ /blis/) ? "blis" : "tapeflow"
      if (u[i] == "ns/op") better = (r > 0 && r <= 1) ? ours : "torch"
      else                 better = (r >= 1) ? ours : "torch"
      by = (r > 0) ? ((r >= 1) ? r : 1 / r) : 0
      printf "%-26s %-8s %12.2f %12.2f %9.3f  %s x%.2f\n", rows[i], u[i], v[i], t[i], r, better, by
    }
  }
' "$tmp/torch.txt" "$tmp/tapeflow.txt"
