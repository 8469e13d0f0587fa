#!/usr/bin/env bash
# run_side_by_side.sh: runs tapeflow's bench_ops, the PyTorch equivalent (torch_ops.py) and,
# when TensorFlow imports, the TensorFlow equivalent of the variable figures (tf_ops.py);
# then tapeflow's bench_tape (the gradient tape) and its PyTorch twin (torch_tape.py),
# bench_optim (optimizer updates) with torch_optim.py, bench_conv (the small CNN's conv
# and max-pool layers) with torch_conv.py; on request (BENCHES=train), training on
# Fashion-MNIST, bench_train with torch_train.py and keras_train.py (Keras, the tf column); one
# after the other, all on 2 threads, prints their outputs and a table of tapeflow against
# torch and TensorFlow per figure. Builds nothing.
# Usage: tests/bench/run_side_by_side.sh [BUILD_DIR] [extra args for all, e.g. --quick]
#        (BUILD_DIR defaults to build, relative to the repository root)
# BENCHES="ops tape optim conv" (the default) picks the pairs to run (ckpt, the checkpoint
# saves and restores with torch_checkpoint.py, runs when asked for): ops (bench_ops,
# torch_ops.py, tf_ops.py), tape (bench_tape, torch_tape.py), optim (bench_optim,
# torch_optim.py) and conv (bench_conv, torch_conv.py). A program not built is an error when its
# pair was asked for explicitly, and skipped with a note otherwise.
# train (not in the default list: BENCHES=train, or e.g. BENCHES="ops train") runs, for the
# models mlp and cnn, bench_train --model M --threads 2 (skipped with a note when it is not
# built, even when asked for), torch_train.py and keras_train.py (skipped when TensorFlow does
# not import): samples/s and peak RSS (MiB) in the table; a figure of the twins without a
# tapeflow figure shows "-" for the value and the ratios.
# big_cnn (not in the default list: BENCHES=big_cnn), the VGG-style convnet of
# examples/fashion_mnist_models.h, batches of 256: bench_train --model big_cnn, torch_train.py
# channels_last and NCHW (torch_train_big_cnn_nchw_*, listed without a ratio), keras_train.py;
# samples/s and peak RSS in the table, as for train.
# ddp (not in the default list: BENCHES=ddp), data-parallel training, for the models mlp and
# cnn: bench_ddp --model M under $DDP_MPIRUN (default "mpirun --allow-run-as-root
# --oversubscribe -np 2", OMP_NUM_THREADS=1; skipped with a note when it is not built), which
# prints ddp_M_single_samples_per_s (1 process, 2 threads), ddp_M_samples_per_s (2 ranks, 1
# thread each), ddp_M_allreduce_ms and ddp_M_allreduce_gbps; then its twin torch_ddp.py
# twice, alone on 2 threads (torch_ddp_M_single_samples_per_s) and under "OMP_NUM_THREADS=1
# torchrun --standalone --nproc_per_node 2" (PyTorch DDP on gloo: the other three figures).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-build}"
[[ $# -gt 0 ]] && shift
case "$build" in /*) ;; *) build="$root/$build" ;; esac
threads=2
benches="${BENCHES:-ops tape optim conv}"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/tapeflow.txt"
: >"$tmp/torch.txt"
: >"$tmp/tf.txt"

# The program of a pair, or nothing (with a note) when it is not built and may be skipped.
program() {
  local exe="$build/tests/bench/$1"
  if [[ -x "$exe" ]]; then
    echo "$exe"
  elif [[ -n "${BENCHES:-}" ]]; then
    echo "run_side_by_side: $exe not found; build the $1 target first" >&2
    return 1
  else
    echo "== $1: skipped ($exe not found; build the $1 target first)" >&2
  fi
}

ran=0
for pair in $benches; do
  case "$pair" in
    ops)
      bench="$(program bench_ops)" || exit 1
      [[ -n "$bench" ]] || continue
      ran=$((ran + 1))
      echo "== tapeflow: OMP_NUM_THREADS=$threads $bench $*"
      OMP_NUM_THREADS=$threads "$bench" "$@" | tee -a "$tmp/tapeflow.txt"
      echo
      echo "== torch: python3 $here/torch_ops.py --threads $threads $*"
      python3 "$here/torch_ops.py" --threads "$threads" "$@" | tee -a "$tmp/torch.txt"
      echo
      if python3 -c "import tensorflow" >/dev/null 2>&1; then
        echo "== tf: python3 $here/tf_ops.py --threads $threads $*"
        OMP_NUM_THREADS=$threads python3 "$here/tf_ops.py" --threads "$threads" "$@" |
          tee -a "$tmp/tf.txt"
      else
        echo "== tf: skipped (python3 cannot import tensorflow); the tf columns stay empty"
      fi
      echo
      ;;
    tape)
      bench="$(program bench_tape)" || exit 1
      [[ -n "$bench" ]] || continue
      ran=$((ran + 1))
      echo "== tapeflow: OMP_NUM_THREADS=$threads $bench --threads $threads $*"
      OMP_NUM_THREADS=$threads "$bench" --threads "$threads" "$@" | tee -a "$tmp/tapeflow.txt"
      echo
      echo "== torch: python3 $here/torch_tape.py --threads $threads $*"
      python3 "$here/torch_tape.py" --threads "$threads" "$@" | tee -a "$tmp/torch.txt"
      echo
      ;;
    optim)
      bench="$(program bench_optim)" || exit 1
      [[ -n "$bench" ]] || continue
      ran=$((ran + 1))
      echo "== tapeflow: OMP_NUM_THREADS=$threads $bench --threads $threads $*"
      OMP_NUM_THREADS=$threads "$bench" --threads "$threads" "$@" | tee -a "$tmp/tapeflow.txt"
      echo
      echo "== torch: python3 $here/torch_optim.py --threads $threads $*"
      python3 "$here/torch_optim.py" --threads "$threads" "$@" | tee -a "$tmp/torch.txt"
      echo
      ;;
    conv)
      bench="$(program bench_conv)" || exit 1
      [[ -n "$bench" ]] || continue
      ran=$((ran + 1))
      echo "== tapeflow: OMP_NUM_THREADS=$threads $bench --threads $threads $*"
      OMP_NUM_THREADS=$threads "$bench" --threads "$threads" "$@" | tee -a "$tmp/tapeflow.txt"
      echo
      echo "== torch: python3 $here/torch_conv.py --threads $threads $*"
      python3 "$here/torch_conv.py" --threads "$threads" "$@" | tee -a "$tmp/torch.txt"
      echo
      ;;
    train | big_cnn)
      bench="$build/tests/bench/bench_train"
      have_tf=0
      python3 -c "import tensorflow" >/dev/null 2>&1 && have_tf=1
      ran=$((ran + 1))
      models="mlp cnn"
      [[ $pair == big_cnn ]] && models=big_cnn
      for model in $models; do
        if [[ -x "$bench" ]]; then
          echo "== tapeflow: OMP_NUM_THREADS=$threads $bench --model $model --threads $threads $*"
          OMP_NUM_THREADS=$threads "$bench" --model "$model" --threads "$threads" "$@" |
            tee -a "$tmp/tapeflow.txt"
        else
          echo "== tapeflow: skipped ($bench not found; build the bench_train target first)"
        fi
        echo
        echo "== torch: python3 $here/torch_train.py --model $model --threads $threads $*"
        python3 "$here/torch_train.py" --model "$model" --threads "$threads" "$@" |
          tee -a "$tmp/torch.txt"
        echo
        if [[ $model == big_cnn ]]; then
          echo "== torch: python3 $here/torch_train.py --model $model --threads $threads --memory-format nchw $*"
          python3 "$here/torch_train.py" --model "$model" --threads "$threads" \
            --memory-format nchw "$@" | tee -a "$tmp/torch.txt"
          echo
        fi
        if [[ $have_tf -eq 1 ]]; then
          echo "== keras: python3 $here/keras_train.py --model $model --threads $threads $*"
          OMP_NUM_THREADS=$threads python3 "$here/keras_train.py" --model "$model" \
            --threads "$threads" "$@" | tee -a "$tmp/tf.txt"
        else
          echo "== keras: skipped (python3 cannot import tensorflow); the tf columns stay empty"
        fi
        echo
      done
      ;;
    ddp)
      bench="$build/tests/bench/bench_ddp"
      mpirun_cmd="${DDP_MPIRUN:-mpirun --allow-run-as-root --oversubscribe -np 2}"
      ran=$((ran + 1))
      for model in mlp cnn; do
        if [[ -x "$bench" ]]; then
          echo "== tapeflow: OMP_NUM_THREADS=1 $mpirun_cmd $bench --model $model $*"
          # shellcheck disable=SC2086  # the launcher's words
          OMP_NUM_THREADS=1 $mpirun_cmd "$bench" --model "$model" "$@" |
            tee -a "$tmp/tapeflow.txt"
        else
          echo "== tapeflow: skipped ($bench not found; build the bench_ddp target first)"
        fi
        echo
        echo "== torch: python3 $here/torch_ddp.py --model $model --threads $threads $*"
        python3 "$here/torch_ddp.py" --model "$model" --threads "$threads" "$@" |
          tee -a "$tmp/torch.txt"
        echo
        echo "== torch: OMP_NUM_THREADS=1 torchrun --standalone --nproc_per_node 2 $here/torch_ddp.py --model $model $*"
        OMP_NUM_THREADS=1 torchrun --standalone --nproc_per_node 2 "$here/torch_ddp.py" \
          --model "$model" "$@" | tee -a "$tmp/torch.txt"
        echo
      done
      ;;
    ckpt)
      # checkpoints (not in the default list): bench_checkpoint and torch_checkpoint.py (raw,
      # torch.save/load, safetensors) write ~105 MB each into the build folder; their MB/s
      # figures are printed, not tabled (the twins name theirs ckpt_<client>_save/_load)
      bench="$(program bench_checkpoint)" || exit 1
      [[ -n "$bench" ]] || continue
      ran=$((ran + 1))
      echo "== tapeflow: $bench --dir $build $*"
      "$bench" --dir "$build" "$@"
      echo
      echo "== twins: python3 $here/torch_checkpoint.py --dir $build $*"
      python3 "$here/torch_checkpoint.py" --dir "$build" "$@"
      echo
      ;;
    *)
      echo "run_side_by_side: unknown pair '$pair' in BENCHES (expected ops, tape, optim, conv, train, big_cnn, ddp, ckpt)" >&2
      exit 2
      ;;
  esac
done
if [[ $ran -eq 0 ]]; then
  echo "run_side_by_side: no benchmark found in $build/tests/bench; build bench_ops or bench_tape" >&2
  exit 1
fi

# Figures are paired by name: X with torch_X and tf_X, and sgemm_{tapeflow,blis}_N with
# torch_sgemm_N. "value" is the tapeflow figure, "ratio" is value/torch and "ratio_tf"
# value/tf, and "faster"/"faster_tf" name the winner and by how much (times: ns/op, ns, us,
# ms, and memory, MiB: lower is better; GFLOP/s, GB/s and samples/s: higher is better). "-":
# no such twin (or TensorFlow skipped). A difference of times (tape_chain_overhead) compares
# like a time. The twins' train_* and ddp_* figures are listed even without a tapeflow figure
# (value "-"; bench_train or bench_ddp not built), after the others.
awk '
  $1 != "bench" { next }
  $2 ~ /^torch_/ { torch[$2] = $3; twin(substr($2, 7), $4); next }
  $2 ~ /^tf_/    { tf[$2] = $3; twin(substr($2, 4), $4); next }
  { rows[++nrows] = $2; v[nrows] = $3; u[nrows] = $4; mine[$2] = 1 }
  # the twins train_* and ddp_* figures in order of appearance, with their units
  function twin(key, unit) {
    if (key ~ /^(train|ddp)_/ && !(key in tunit)) { tunit[key] = unit; trains[++ntrains] = key }
  }
  # lower is better: times, and memory (MiB)
  function is_time(unit) {
    return unit == "ns/op" || unit == "ns" || unit == "us" || unit == "ms" || unit == "MiB"
  }
  function is_figure(unit) {
    return is_time(unit) || unit == "GFLOP/s" || unit == "GB/s" || unit == "samples/s"
  }
  # a value in 12 columns, with 3 decimals below 10 (sub-microsecond figures in us)
  function num(x) { return sprintf((x < 10 && x > -10) ? "%12.3f" : "%12.2f", x) }
  # "other ratio faster" for a twin; the faster column padded to w (0: not padded).
  function cmp(val, other, unit, ours, theirs, w,    r, better, by) {
    r = (other > 0) ? val / other : 0
    if (is_time(unit)) better = (r > 0 && r <= 1) ? ours : theirs
    else                 better = (r >= 1) ? ours : theirs
    by = (r > 0) ? ((r >= 1) ? r : 1 / r) : 0
    return sprintf("%s %9.3f  %-" w "s", num(other), r, better " x" sprintf("%.2f", by))
  }
  END {
    n = 0
    for (i = 1; i <= nrows; i++) {
      name = rows[i]; unit = u[i]
      if (!is_figure(unit)) continue
      key = name
      if (name ~ /^sgemm_(tapeflow|blis)_[0-9]+$/) { key = name; sub(/^sgemm_[a-z]+_/, "", key); key = "sgemm_" key }
      if (!(("torch_" key) in torch) && !(("tf_" key) in tf)) continue
      ours = (name ~ /blis/) ? "blis" : "tapeflow"
      line[++n] = sprintf("%-28s %-9s %s %s %s", name, unit, num(v[i]),
        (("torch_" key) in torch) ? cmp(v[i], torch["torch_" key], unit, ours, "torch", 16) \
                                  : sprintf("%12s %9s  %-16s", "-", "-", "-"),
        (("tf_" key) in tf) ? cmp(v[i], tf["tf_" key], unit, ours, "tf", 0) \
                            : sprintf("%12s %9s  %s", "-", "-", "-"))
    }
    for (i = 1; i <= ntrains; i++) {
      key = trains[i]; unit = tunit[key]
      if ((key in mine) || !is_figure(unit)) continue
      line[++n] = sprintf("%-28s %-9s %12s %s %s", key, unit, "-",
        (("torch_" key) in torch) ? sprintf("%s %9s  %-16s", num(torch["torch_" key]), "-", "-") \
                                  : sprintf("%12s %9s  %-16s", "-", "-", "-"),
        (("tf_" key) in tf) ? sprintf("%s %9s  %s", num(tf["tf_" key]), "-", "-") \
                            : sprintf("%12s %9s  %s", "-", "-", "-"))
    }
    if (n == 0) { print "no figures to compare"; exit }
    printf "%-28s %-9s %12s %12s %9s  %-16s %12s %9s  %s\n", "figure", "unit", "value",
      "torch", "ratio", "faster", "tf", "ratio_tf", "faster_tf"
    for (i = 1; i <= n; i++) print line[i]
  }
' "$tmp/torch.txt" "$tmp/tf.txt" "$tmp/tapeflow.txt"
