#!/usr/bin/env bash
# check_exact_resume.sh TAPEFLOW SRC: exact resume through the program. A model with
# BatchNormalization and Dropout trains 3 epochs straight; the same run is SIGKILLed in the
# middle (after a checkpoint of checkpoint.every_steps, in epoch 2 or later), then
# `tapeflow train` again resumes from the newest checkpoint. Both runs must end with
# bit-identical variables, optimizer slots and counters, RNG stream and data position
# (`tapeflow diff`: only the history differs, by its seconds) and the same per-epoch metrics.
TAPEFLOW=$1 SRC=$2
. "$SRC/tests/cli/cli_lib.sh"
# 2000 examples of 32 features in 4 classes, made here (deterministic)
awk 'BEGIN { srand(7); for (i = 0; i < 2000; i++) { c = i % 4; s = "";
  for (j = 0; j < 32; j++) s = s sprintf("%.4f,", rand() + (j % 4 == c ? 0.5 : 0));
  print s c } }' > data.csv
cat > cfg.yaml <<'YAML'
data:
  train: {format: csv, path: data.csv, label_column: -1}
  validation_split: 0.1
model:
  input_shape: [32]
  layers:
    - dense: {units: 384, activation: relu}
    - batch_normalization
    - dropout: {rate: 0.3}
    - dense: {units: 384, activation: relu}
    - dropout: {rate: 0.2}
    - dense: {units: 4}
loss: sparse_categorical_crossentropy
metrics: [accuracy]
optimizer: {kind: adam, learning_rate: 1e-3}
training: {epochs: 3, batch_size: 16, seed: 5}
checkpoint: {every_steps: 10, keep: 3}
YAML
steps_per_epoch=113 # 1800 training examples in batches of 16
run 0 train cfg.yaml --quiet --run-dir straight
"$TAPEFLOW" train cfg.yaml --quiet --run-dir cut > cut.out 2> cut.err &
pid=$!
# SIGKILL right after a checkpoint past the middle of epoch 2 is complete
newest() { ls cut/checkpoints/ckpt-*.safetensors 2>/dev/null | sed 's/.*ckpt-0*//; s/\..*//' | sort -n | tail -1 || true; }
for _ in $(seq 3000); do
  s=$(newest); [ -n "$s" ] && [ "$s" -ge $((steps_per_epoch + 40)) ] && break; sleep 0.01
done
kill -KILL $pid
set +e; wait $pid; status=$?; set -e
[ "$status" = 137 ] || fail "the cut run was not killed (exit $status): it ended before the kill"
cut_at=$(newest)
[ "$cut_at" -lt $((3 * steps_per_epoch)) ] || fail "the cut run finished before the kill"
[ $((cut_at % steps_per_epoch)) != 0 ] || echo "note: cut at an epoch's end (step $cut_at)"
echo "killed after the checkpoint of step $cut_at"
run 0 train cfg.yaml --run-dir cut && has out.txt "resuming from cut/checkpoints/ckpt-"
a=straight/checkpoints/ckpt-$(printf %08d $((3 * steps_per_epoch))).safetensors
b=cut/checkpoints/ckpt-$(printf %08d $((3 * steps_per_epoch))).safetensors
run 1 diff "$a" "$b"   # 1: different (diff(1)'s status), in the history alone
has out.txt "1 tensor differs"
has out.txt "_tapeflow/history"
# every tensor but the history is identical (names from inspect)
"$TAPEFLOW" inspect "$a" | awk 'NR > 1 && NF > 3 { print $1 }' > names.txt
[ "$(wc -l < names.txt)" -gt 20 ] || fail "inspect listed $(wc -l < names.txt) tensors"
for n in _tapeflow/rng _tapeflow/position Adam/iterations batch_normalization/moving_mean; do
  grep -q "^$n" names.txt || fail "the checkpoint lacks $n"
done
cut -d, -f1-5 straight/metrics.csv > m1.csv
cut -d, -f1-5 cut/metrics.csv > m2.csv
[ "$(wc -l < m1.csv)" = 4 ] || fail "the straight run's metrics.csv: $(cat m1.csv)"
cmp -s m1.csv m2.csv || fail "per-epoch metrics differ: $(diff m1.csv m2.csv)"
finish
