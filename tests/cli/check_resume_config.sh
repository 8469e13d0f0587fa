#!/usr/bin/env bash
# check_resume_config.sh: resuming a run with another config. The config stored in the newest
# checkpoint is compared key by key with the one given; every changed key is shown; the run
# continues only when training.epochs, logging.* or checkpoint.* changed, or with
# --allow-config-change; the changes go to the run's run.log; a refused run writes nothing.
# Usage: check_resume_config.sh TAPEFLOW SOURCE_DIR
TAPEFLOW=$1
SRC=$2
source "$SRC/tests/cli/cli_lib.sh"
xor="$SRC/configs/xor.yaml"
ckpts() { ls r/checkpoints/*.safetensors | wc -l; }

run 0 train "$xor" --set training.epochs=2 --quiet --run-dir r
has r/run.log "started from $xor"
n0=$(ckpts)
cp r/config.yaml config0.yaml
cp r/metrics.csv metrics0.csv

# changes of what is trained are refused, each key shown with both values; nothing is written
run 2 train "$xor" --set training.epochs=4 --set optimizer.learning_rate=0.5 \
  --set 'model.layers[0].dense.units=9' --quiet --run-dir r
has err.txt "differs from the one of 'r/checkpoints/ckpt-00000002.safetensors' in 3 keys"
has err.txt "  model.layers[0].dense.units: 16 -> 9   [changes the training]"
has err.txt "  optimizer.learning_rate: 0.05 -> 0.5   [changes the training]"
has err.txt "  training.epochs: 2 -> 4"
grep -q "training.epochs: 2 -> 4   \[" err.txt && fail "training.epochs marked as changing the training"
has err.txt "refusing to continue this run: 2 changed keys change what is trained"
has err.txt "Pass --allow-config-change"
cmp -s config0.yaml r/config.yaml || fail "a refused run rewrote config.yaml"
cmp -s metrics0.csv r/metrics.csv || fail "a refused run changed metrics.csv"
[ "$(ckpts)" = "$n0" ] || fail "a refused run wrote a checkpoint"
[ "$(grep -c . r/run.log)" = 1 ] || fail "a refused run wrote to run.log"

# more epochs and other logging: the run resumes and goes on; the changes are recorded
run 0 train "$xor" --set training.epochs=4 --set logging.log_interval=1 --run-dir r
has out.txt "resuming from r/checkpoints/ckpt-00000002.safetensors (epoch 3, batch 0, step 2)"
has err.txt "  training.epochs: 2 -> 4"
has err.txt "  logging.log_interval: 0 -> 1"
has out.txt "epoch 4/4"
has r/run.log "resumed from r/checkpoints/ckpt-00000002.safetensors at step 2"
has r/run.log "config changes since r/checkpoints/ckpt-00000002.safetensors:"
has r/run.log "    training.epochs: 2 -> 4"
[ "$(wc -l < r/metrics.csv)" = 5 ] || fail "metrics.csv does not hold 4 epochs: $(cat r/metrics.csv)"
grep -q "^  epochs: 4$" r/config.yaml || fail "config.yaml is not the config in use"

# the same config again: nothing to compare, nothing to do
run 0 train "$xor" --set training.epochs=4 --set logging.log_interval=1 --quiet --run-dir r
[ -s err.txt ] && fail "an unchanged config printed: $(cat err.txt)"

# --allow-config-change: a new learning rate for the last epoch, recorded as forced
run 0 train "$xor" --set training.epochs=5 --set optimizer.learning_rate=0.5 \
  --allow-config-change --quiet --run-dir r
has err.txt "  optimizer.learning_rate: 0.05 -> 0.5   [changes the training]"
has err.txt "  logging.log_interval: 1 -> 0"
has r/run.log "config changes since r/checkpoints/ckpt-00000004.safetensors (changes of the training allowed):"
has r/run.log "    optimizer.learning_rate: 0.05 -> 0.5"
[ "$(wc -l < r/metrics.csv)" = 6 ] || fail "metrics.csv does not hold 5 epochs"

# a model that no longer fits the checkpoint: allowed, but restoring names the mismatch, and
# nothing of the run changes (config.yaml, run.log, metrics.csv, the checkpoints)
cp r/config.yaml config5.yaml
cp r/run.log runlog5.txt
ls r/checkpoints > ckpts5.txt
run 1 train "$xor" --set training.epochs=6 --set optimizer.learning_rate=0.5 \
  --set 'model.layers[0].dense.units=9' --allow-config-change --quiet --run-dir r
has err.txt "shape"
has err.txt "nothing was written"
[ "$(wc -l < r/metrics.csv)" = 6 ] || fail "a failed resume changed metrics.csv"
cmp -s config5.yaml r/config.yaml || fail "a failed resume wrote its rejected config to config.yaml"
cmp -s runlog5.txt r/run.log || fail "a failed resume wrote to run.log"
ls r/checkpoints | cmp -s ckpts5.txt - || fail "a failed resume changed the checkpoints"
finish
