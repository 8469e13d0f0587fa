#!/usr/bin/env bash
# check_basics.sh TAPEFLOW SRC: help texts, usage errors (exit 2), version, `config` and its
# round trip, `config --reference`, --set (good and bad), a short training run and its run
# directory, a run directory of another config refused.
TAPEFLOW=$1 SRC=$2
. "$SRC/tests/cli/cli_lib.sh"
xor="$SRC/configs/xor.yaml"

# help and usage
run 0 --help && has out.txt "usage: tapeflow <command>"
for c in train eval predict config version; do
  run 0 "$c" --help && has out.txt "usage: tapeflow $c"
done
run 2 && has err.txt "usage: tapeflow <command>"
run 2 frobnicate && has err.txt "unknown command 'frobnicate'"
run 2 train && has err.txt "no CONFIG given"
run 2 train "$xor" --bogus && has err.txt "unknown option '--bogus'"
run 2 train "$xor" --set && has err.txt "option '--set' needs a value"
run 2 train "$xor" "$xor" && has err.txt "one config only"
run 2 predict "$xor" && has err.txt "--input FILE is required"
run 0 version && has out.txt "tapeflow 0." && has out.txt "CUDA backend:"
run 2 train missing.yaml && has err.txt "missing.yaml"
[ ! -e runs ] || fail "a usage error made a run directory"

# config: every default explicit, and it loads back to the same resolved config
run 0 config "$xor" && cp out.txt a.yaml
has a.yaml "batch_size: 4"
has a.yaml "on_nonfinite: halt"
has a.yaml "beta_1: 0.9"
run 0 config a.yaml && cp out.txt b.yaml
# the same but for the first line, a comment naming the file it was resolved from
cmp -s <(tail -n +2 a.yaml) <(tail -n +2 b.yaml) ||
  fail "config output does not load back to the same config"
# overrides: merged first, validated once; located as --set[N]
run 0 config "$xor" --set training.epochs=3 --set optimizer.learning_rate=3e-4 &&
  has out.txt "epochs: 3" && has out.txt "learning_rate: 0.0003"
run 0 config "$xor" --set 'model.layers[0].dense.units=8' && has out.txt "units: 8"
# config --reference: the schema's reference, exactly configs/README.md's; one of it or CONFIG
run 0 config --reference && sed -n '/^## Reference (generated from the schema)/,$p' \
  "$SRC/configs/README.md" | cmp -s - out.txt || fail "config --reference is not configs/README.md's"
run 2 config && has err.txt "no CONFIG given"
run 2 config "$xor" --reference && has err.txt "--reference takes no CONFIG"
run 2 config "$xor" --set training.epochs=3 --set training.epoch=3 &&
  has err.txt "--set[2]" && has err.txt "did you mean 'epochs'"
run 2 config "$xor" --set training.epochs=0 && has err.txt "training.epochs" &&
  has err.txt "out of range"
run 2 config "$xor" --set 'training.epochs="3"' && has err.txt "quoted"
run 2 config "$xor" --set optimizer.momentum=0.9 && has err.txt "momentum"
run 2 config "$xor" --set nonsense && has err.txt "--set[1]"

# train: a short run writes the run directory
run 0 train "$xor" --set training.epochs=150 --run-dir r1 && has out.txt "accuracy: 1.0000"
[ -f r1/config.yaml ] || fail "no r1/config.yaml"
[ "$(wc -l < r1/metrics.csv)" = 151 ] || fail "r1/metrics.csv has not 150 epochs"
has r1/metrics.csv "epoch,loss,accuracy"
cmp -s <(tail -n +2 r1/config.yaml) <("$TAPEFLOW" config "$xor" --set training.epochs=150 | tail -n +2) ||
  fail "r1/config.yaml is not the resolved config"
# training.device, deterministic and sync_every: accepted, and on the CPU the same figures as
# a plain run on the CPU (r1 ran where automatic placement put it: GPU:0 on a GPU machine)
run 0 train "$xor" --set training.epochs=150 --set training.device=CPU:0 --run-dir rcpu --quiet
run 0 train "$xor" --set training.epochs=150 --set training.device=CPU:0 \
  --set training.deterministic=true --set training.sync_every=3 --run-dir rdev &&
  has out.txt "accuracy: 1.0000" && has rdev/config.yaml "deterministic: true" &&
  has rdev/config.yaml "sync_every: 3"
cmp -s <(cut -d, -f1-5 rcpu/metrics.csv) <(cut -d, -f1-5 rdev/metrics.csv) ||
  fail "training.device CPU:0, deterministic and sync_every changed the CPU's figures"
run 0 train "$xor" --set training.epochs=150 --run-dir r1 --quiet
[ ! -s out.txt ] || fail "--quiet printed: $(head -2 out.txt)"
# eval and predict restore the newest checkpoint of the run directory
run 0 eval "$xor" --set training.epochs=150 --run-dir r1 &&
  has out.txt "train_accuracy 1.0000 - 4 examples"
printf 'x1,x2\n0,0\n0,1\n1,0\n1,1\n' > in.csv
run 0 predict "$xor" --set training.epochs=150 --run-dir r1 --input in.csv --output pred.csv
[ "$(cut -d, -f1 pred.csv | tr '\n' ' ')" = "class 0 1 1 0 " ] ||
  fail "predictions: $(cat pred.csv)"
run 0 predict "$xor" --set training.epochs=150 --run-dir r1 --input in.csv &&
  has out.txt "class,p0,p1"
# the training file itself, its label column included: predicted all the same (the label is
# not an input), and scored on those labels
run 0 predict "$xor" --set training.epochs=150 --run-dir r1 --input "$SRC/configs/data/xor.csv" \
  --output pred2.csv
cmp -s pred.csv pred2.csv || fail "the labelled file's predictions differ: $(cat pred2.csv)"
has err.txt "xor.csv has the training data's label column: not an input; on its labels loss "
has err.txt ", accuracy 1.0000 (4 examples)"
grep -q "warning" err.txt && fail "predict warned: $(cat err.txt)"
run 1 predict "$xor" --set training.epochs=150 --run-dir r1 --input nope.csv && has err.txt "nope.csv"
printf 'x1\n0\n' > narrow.csv
run 1 predict "$xor" --set training.epochs=150 --run-dir r1 --input narrow.csv &&
  has err.txt "model.input_shape is [2]"
run 1 eval "$xor" --run-dir never-trained && has err.txt "no usable checkpoint in 'never-trained/checkpoints': train first"
# training again with the same config resumes (here: finds it complete)
run 0 train "$xor" --set training.epochs=150 --run-dir r1 && has out.txt "trained already: 150 epochs"
[ "$(wc -l < r1/metrics.csv)" = 151 ] || fail "a finished run's resume changed metrics.csv"
# the same run directory with a config that trains otherwise is refused, and left alone
# (check_resume_config.sh tests the changes a run may take)
cp r1/metrics.csv before.csv
run 2 train "$xor" --set training.epochs=150 --set training.batch_size=2 --run-dir r1 &&
  has err.txt "training.batch_size: 4 -> 2" && has err.txt "refusing to continue this run"
cmp -s before.csv r1/metrics.csv || fail "a refused run changed metrics.csv"
# default run directory: runs/<config name>
run 0 train "$xor" --set training.epochs=2 --quiet
[ -f runs/xor/config.yaml ] || fail "no runs/xor/config.yaml"
# training.device: CPU:0, or GPU:0 falling back to the CPU where there is none (soft placement)
run 0 train "$xor" --set training.epochs=2 --set training.device=CPU:0 --quiet --run-dir rd1
run 0 train "$xor" --set training.epochs=2 --set training.device=GPU:0 --quiet --run-dir rd2
# ... and says so, with why, on stderr and in run.log when there is no GPU:0
if "$TAPEFLOW" version | grep -q '^  GPU:0'; then
  ! grep -q "training.device GPU:0 is not available" err.txt rd2/run.log ||
    fail "a warning that GPU:0 is not available on a machine that has it"
else
  has err.txt "tapeflow: warning: training.device GPU:0 is not available" &&
    has err.txt "training on CPU:0" &&
    has rd2/run.log "warning: training.device GPU:0 is not available"
  [ "$(grep -c 'is not available' err.txt)" = 1 ] || fail "the warning is not one line"
  # a type alone, in TensorFlow's spelling too, is its first device
  for d in gpu /gpu; do
    run 0 train "$xor" --set training.epochs=2 --set "training.device=$d" --quiet --run-dir "rd2$d" &&
      has err.txt "training.device GPU:0 is not available"
  done
fi
# logging.metrics_csv puts the metrics elsewhere (a relative path would be the config's folder)
run 0 train "$xor" --set training.epochs=3 --set "logging.metrics_csv=$tmp/elsewhere.csv" \
  --quiet --run-dir rd3
[ "$(wc -l < "$tmp/elsewhere.csv")" = 4 ] || fail "logging.metrics_csv was not written"
[ ! -e rd3/metrics.csv ] || fail "metrics.csv written in the run directory too"
# progress lines every logging.log_interval steps off a terminal
run 0 train "$xor" --set training.epochs=6 --set logging.log_interval=2 --run-dir r2 &&
  has out.txt "epoch 6 - batch 1/1 - step 6 - loss:"
# the non-finite guard: a learning rate that blows up halts with a message naming the step,
# or (skip) the bad steps are left out and counted
blowup=(--set optimizer.kind=sgd --set optimizer.learning_rate=1e38
        --set 'model.layers[0].dense.activation=relu' --set training.epochs=20)
run 1 train "$xor" "${blowup[@]}" --run-dir r3 &&
  has err.txt "the loss is NaN at step 2 (epoch 2, batch 1)" &&
  has err.txt "training.on_nonfinite: halt"
run 0 train "$xor" "${blowup[@]}" --set training.on_nonfinite=skip --run-dir r4 &&
  has out.txt "skipped steps: 1" && has out.txt "(non-finite steps skipped)"
finish
