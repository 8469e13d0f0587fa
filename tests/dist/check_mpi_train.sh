#!/usr/bin/env bash
# check_mpi_train.sh TAPEFLOW SRC MPIRUN...: `mpirun -np 2 tapeflow train` end to end, each
# rank in a folder of its own (rank_dir.sh) with its own copy of the config and its data:
#  - a run trains and writes from rank 0 only (a relative --run-dir: rank 1's stays absent),
#    one progress report, metrics.csv with one line per epoch;
#  - resume: a 1-process run's middle checkpoint resumed by 2 ranks, and a 2-rank run's by
#    1 process, end with the weights of a straight 1-process run (tapeflow diff); a
#    mid-epoch checkpoint resumed by 2 ranks ends with its weights and epoch figures;
#  - eval: sharded over the ranks, rank 0 prints the figures of 1 process; predict: rank 0
#    alone, the output of 1 process; an explicit GPU:0 for 2 ranks of a host: refused;
#  - the non-finite guard: rank 1 alone has a non-finite loss; every rank skips (or halts);
#  - failure: rank 1 alone has a bad data file: the job ends non-zero (MPI_Abort), rank 1
#    named in the message, rank 0 ended while waiting for it (mpirun returns; the timeout
#    only guards against a hang, and a hang fails the check).
TAPEFLOW=$1 SRC=$2
shift 2
MPIRUN=("$@")
. "$SRC/tests/cli/cli_lib.sh"
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMP_NUM_THREADS=1
for r in 0 1 common; do
  mkdir -p rank$r/data
  cp "$SRC/configs/xor.yaml" rank$r/config.yaml
  cp "$SRC/configs/data/xor.csv" rank$r/data/
done
cp "$SRC/tests/dist/rank_dir.sh" .
# A host with a GPU but fewer than the 2 ranks started here (one GPU: a GPU machine, or the
# suite's fake GPU): automatic placement refuses (one rank drives one GPU), so the runs below
# ask for the CPU in the config, as a user would; the refusal itself is checked after mpi().
gpus=$("$TAPEFLOW" version | grep -c '^  GPU:' || true)
if [ "$gpus" = 1 ]; then
  for r in 0 1 common; do
    sed -i 's/^training:$/training:\n  device: CPU:0/' rank$r/config.yaml
    grep -q '^  device: CPU:0$' rank$r/config.yaml || { echo "FAIL: no device in the config"; exit 1; }
  done
fi
# mpi EXPECTED ARGS...: tapeflow under mpirun -np 2 in the rank folders (WRAP=) or, with
# WRAP=shared, all in rankcommon
mpi() {
  local want=$1; shift
  set +e
  if [ "${WRAP:-}" = shared ]; then
    (cd rankcommon && timeout 120 "${MPIRUN[@]}" -np 2 "$TAPEFLOW" "$@") > out.txt 2> err.txt
  else
    timeout 120 "${MPIRUN[@]}" -np 2 ./rank_dir.sh "$TAPEFLOW" "$@" > out.txt 2> err.txt
  fi
  local got=$?
  set -e
  if [ "$want" = fail ]; then [ "$got" != 0 ] && [ "$got" != 124 ] && return 0; else [ "$got" = "$want" ] && return 0; fi
  fail "mpirun -np 2 tapeflow $* exited $got, expected $want"
  sed 's/^/  stderr: /' err.txt | head -20 >&2
  return 1
}
if [ "$gpus" = 1 ]; then
  mpi fail train config.yaml --set training.device=auto --set training.epochs=1 --run-dir auto
  grep -q "training.device: 2 ranks run on this host, which has 1 GPU; one rank drives one GPU" \
    err.txt || fail "auto with 2 ranks and 1 GPU was not refused: $(cat err.txt)"
  [ -e rank0/auto ] && fail "a refused device wrote a run directory"
fi
# 1. a plain run: rank 0 alone writes (rank1/run never appears), one report
mpi 0 train config.yaml --set training.epochs=20 --run-dir run
[ -f rank0/run/config.yaml ] && [ -f rank0/run/checkpoints/ckpt-00000020.safetensors ] ||
  fail "rank 0 did not write its run directory"
[ -e rank1/run ] && fail "rank 1 wrote a run directory"
[ -s rank0/run/curves.svg ] || fail "rank 0 drew no curves.svg"
grep -q "warning" err.txt && fail "a rank warned: $(cat err.txt)"
[ "$(grep -c '^trained 20 epochs' out.txt)" = 1 ] || fail "not one final report: $(cat out.txt)"
[ "$(wc -l < rank0/run/metrics.csv)" = 21 ] || fail "metrics.csv has not 20 epochs"
grep -q "accuracy: 1.0000" out.txt || fail "xor not learned: $(tail -3 out.txt)"

# 2. resume across rank counts: 1 process to the end as the reference, then its checkpoint of
# epoch 100 resumed by 2 ranks (and 2 ranks' resumed by 1 process); one config file for all
full=$PWD/full one=$PWD/one two=$PWD/two
WRAP=shared
( cd rankcommon && "$TAPEFLOW" train config.yaml --quiet --run-dir "$full" ) || fail "reference run"
# keep_until DIR: drop the checkpoints after epoch 100 (the run then resumes from epoch 101)
keep_until() {
  rm -f "$1"/checkpoints/ckpt-00000200.safetensors
  printf 'model_checkpoint_path: "ckpt-00000100.safetensors"\nall_model_checkpoint_paths: "ckpt-00000100.safetensors"\n' \
    > "$1"/checkpoints/checkpoint
}
cp -r "$full" "$one" && keep_until "$one"
mpi 0 train config.yaml --run-dir "$one" && has out.txt "resuming from $one/checkpoints/ckpt-00000100"
mpi 0 train config.yaml --run-dir "$two"
cp -r "$two" two_b && keep_until two_b
( cd rankcommon && "$TAPEFLOW" train config.yaml --run-dir "$PWD/../two_b" > ../out1.txt 2>&1 ) ||
  fail "1 process resuming 2 ranks' checkpoint: $(tail -3 out1.txt)"
has out1.txt "resuming from"
# the weights: 2 ranks on 2 rows each equal 1 process on the 4 rows up to rounding
for pair in "$full $one" "$full $two" "$two two_b"; do
  set -- $pair
  # diff exits 1: the history's seconds always differ (the weights are checked below)
  run 1 diff "$1/checkpoints/ckpt-00000200.safetensors" "$2/checkpoints/ckpt-00000200.safetensors"
  python3 - out.txt <<'PY' || fail "$1 vs $2: weights differ by more than 1e-4: $(cat out.txt)"
import re, sys
# the variables' differences (the history's seconds differ from run to run)
lines = [l for l in open(sys.argv[1]) if "max abs" in l and "_tapeflow/" not in l]
vals = [float(re.search(r"max abs ([0-9.eE+-]+)", l).group(1)) for l in lines]
sys.exit(0 if all(v <= 1e-4 for v in vals) else 1)
PY
done

# the epoch figures are global: 2 ranks' metrics.csv matches 1 process's, epoch by epoch
python3 - "$full/metrics.csv" "$two/metrics.csv" <<'PY' || fail "metrics.csv of 2 ranks differs from 1 process's"
import csv, sys
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[1:3])
assert len(a) == len(b) == 200, (len(a), len(b))
for x, y in zip(a, b):
    assert abs(float(x["loss"]) - float(y["loss"])) <= 1e-4 * max(1.0, abs(float(x["loss"]))), (x, y)
    assert x["accuracy"] == y["accuracy"], (x, y)
PY

# 3. mid-epoch: 64 rows in batches of 16, shuffled, a checkpoint every 6 steps (in epoch 2);
# 2 ranks resume 1 process's step-6 checkpoint and end with the straight run's weights and
# epoch figures (the checkpoint's epoch sums are global, the data position in global batches)
mkdir -p mid/data
cp rankcommon/config.yaml mid/
{ head -1 rankcommon/data/xor.csv; for _ in $(seq 16); do tail -n +2 rankcommon/data/xor.csv; done; } \
  > mid/data/xor.csv
sets=(--set training.batch_size=16 --set training.epochs=3 --set checkpoint.every_steps=6
      --set data.shuffle=true --quiet)
( cd mid && "$TAPEFLOW" train config.yaml "${sets[@]}" --run-dir "$PWD/straight" ) || fail "straight run"
ls mid/straight/checkpoints/ckpt-00000006.safetensors > /dev/null || fail "no step-6 checkpoint"
# trim RUN_DIR: keep the step-6 checkpoint and epoch 1's metrics (the run resumes there)
trim6() {
  rm -f "$1"/checkpoints/ckpt-000000{07,08,09,10,11,12}.safetensors
  printf 'model_checkpoint_path: "ckpt-00000006.safetensors"\nall_model_checkpoint_paths: "ckpt-00000006.safetensors"\n' \
    > "$1"/checkpoints/checkpoint
  head -2 "$1"/metrics.csv > "$1"/metrics.tmp && mv "$1"/metrics.tmp "$1"/metrics.csv
}
# same_as_straight RUN_DIR: its final weights and epoch figures are the straight run's
same_as_straight() {
  has "$1"/run.log "resumed from $1/checkpoints/ckpt-00000006.safetensors at step 6"
  run 1 diff mid/straight/checkpoints/ckpt-00000012.safetensors "$1"/checkpoints/ckpt-00000012.safetensors
  python3 - out.txt mid/straight/metrics.csv "$1"/metrics.csv <<'PY' || fail "$1 differs from the straight run: $(cat out.txt)"
import csv, re, sys
lines = [l for l in open(sys.argv[1]) if "max abs" in l and "_tapeflow/" not in l]
assert all(float(re.search(r"max abs ([0-9.eE+-]+)", l).group(1)) <= 1e-4 for l in lines), lines
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[2:4])
assert len(a) == len(b) == 3, (len(a), len(b))
for x, y in zip(a, b):
    assert abs(float(x["loss"]) - float(y["loss"])) <= 1e-4 * max(1.0, abs(float(x["loss"]))), (x, y)
    assert x["accuracy"] == y["accuracy"], (x, y)
PY
}
# 1 process's step-6 checkpoint resumed by 2 ranks
cp -r mid/straight mid/resumed && trim6 "$PWD/mid/resumed"
( cd mid && timeout 120 "${MPIRUN[@]}" -np 2 "$TAPEFLOW" train config.yaml "${sets[@]}" \
    --run-dir "$PWD/resumed" ) > out.txt 2> err.txt || fail "2 ranks resuming mid-epoch: $(tail -3 err.txt)"
same_as_straight "$PWD/mid/resumed"
# 2 ranks' step-6 checkpoint (its epoch sums reduced across the ranks) resumed by 1 process
( cd mid && timeout 120 "${MPIRUN[@]}" -np 2 "$TAPEFLOW" train config.yaml "${sets[@]}" \
    --run-dir "$PWD/two" ) > out.txt 2> err.txt || fail "2 ranks mid-epoch: $(tail -3 err.txt)"
trim6 "$PWD/mid/two"
( cd mid && "$TAPEFLOW" train config.yaml "${sets[@]}" --run-dir "$PWD/two" ) ||
  fail "1 process resuming 2 ranks' mid-epoch checkpoint"
same_as_straight "$PWD/mid/two"

# 4. eval under mpirun: every rank its shard of every batch, rank 0 alone prints the figures
# of the whole data, those of 1 process; every rank logged its device
WRAP=shared
( cd rankcommon && "$TAPEFLOW" eval config.yaml --run-dir "$full" ) > eval1.txt || fail "1-process eval"
mpi 0 eval config.yaml --run-dir "$full"
[ "$(grep -c '_loss' out.txt)" = 1 ] || fail "not one eval report: $(cat out.txt)"
has out.txt " - 4 examples on 2 ranks"
[ "$(sed 's/ on 2 ranks$//' out.txt)" = "$(cat eval1.txt)" ] ||
  fail "2 ranks' eval '$(cat out.txt)' differs from 1 process's '$(cat eval1.txt)'"
has err.txt "tapeflow: rank 0 of 2 (local rank 0 of 2 on this host): CPU:0"
has err.txt "tapeflow: rank 1 of 2 (local rank 1 of 2 on this host): CPU:0"
# predict: rank 0 alone writes, the output of 1 process
printf 'x1,x2\n0,0\n0,1\n1,0\n1,1\n' > rankcommon/in.csv
( cd rankcommon && "$TAPEFLOW" predict config.yaml --run-dir "$full" --input in.csv ) > pred1.txt ||
  fail "1-process predict"
mpi 0 predict config.yaml --run-dir "$full" --input in.csv
cmp -s out.txt pred1.txt || fail "2 ranks' predictions differ from 1 process's: $(cat out.txt)"
# an explicit GPU:0 for the 2 ranks of one host: refused on every rank, nothing written
mpi fail train config.yaml --set training.device=GPU:0 --run-dir "$PWD/gpu0"
# (the first rank to abort ends the other, maybe before it printed)
grep -qE "rank [01] of 2: error: config.yaml: training.device: GPU:0 names one GPU for the 2 ranks on this host \(this is local rank [01]\)" err.txt ||
  fail "no rank refused GPU:0: $(cat err.txt)"
has err.txt "write GPU or auto"
[ -e gpu0 ] && fail "a refused device wrote a run directory"

# 3. rank 1 fails on its bad data file: the whole job ends, rank 1 named
WRAP=
echo "1,zzz,0" >> rank1/data/xor.csv
mpi fail train config.yaml --run-dir bad
has err.txt "tapeflow: rank 1 of 2: error:"
has err.txt "'zzz' is not a number"
# rank 0 was waiting for rank 1 (the barrier before it writes): ended, nothing written
[ -e rank0/bad ] && fail "rank 0 went on and wrote its run directory"
grep -q "^trained" out.txt && fail "a rank finished training"

# 5. the non-finite guard decides on every rank's loss: rank 1 alone has a label of 1e30 (its
# loss overflows, its gradient and the reduced one do not); with skip every rank skips that
# step of each epoch and the run ends well, with halt every rank stops there
nf_device=""
[ "$gpus" = 1 ] && nf_device=", device: CPU:0" # (see the top)
for r in 0 1; do
  mkdir -p nf/rank$r/data
  printf '%s\n' "data:" \
    "  train: {format: csv, path: data/line.csv, header: true, label_name: y, label_kind: value}" \
    "  shuffle: false" "model:" "  input_shape: [1]" "  layers:" "    - dense: {units: 1}" \
    "loss: mean_squared_error" "optimizer: {kind: sgd, learning_rate: 0.001}" \
    "training: {epochs: 2, batch_size: 4, seed: 1, on_nonfinite: skip$nf_device}" \
    > nf/rank$r/config.yaml
  # 2 global batches of 4 rows: rank 1 has rows 2 and 3 of each, the first of batch 2 bad
  bad=0.5; [ $r = 1 ] && bad=1e30
  { echo x,y; for _ in 1 2 3 4 5 6; do echo 1,0.5; done; echo "1,$bad"; echo 1,0.5; } \
    > nf/rank$r/data/line.csv
done
cp rank_dir.sh nf/
cd nf
mpi 0 train config.yaml --run-dir run
has out.txt "skipped steps: 1"
has out.txt "(non-finite steps skipped)"
[ "$(wc -l < rank0/run/metrics.csv)" = 3 ] || fail "metrics.csv has not 2 epochs"
mpi fail train config.yaml --set training.on_nonfinite=halt --run-dir halted
grep -qE "rank [01] of 2: error: training: .* on replica 1 of 2 at step 2 \(epoch 1, batch 2\); training halted before the step's update on every replica" err.txt ||
  fail "no rank halted naming rank 1: $(cat err.txt)"
grep -q "^trained" out.txt && fail "a rank finished training"
cd ..
finish
