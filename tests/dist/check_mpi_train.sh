#!/usr/bin/env bash
# check_mpi_train.sh TAPEFLOW SRC MPIRUN...: `mpirun -np 2 tapeflow train` end to end, each
# rank in a folder of its own (rank_dir.sh) with its own copy of the config and its data:
#  - a run trains and writes from rank 0 only (a relative --run-dir: rank 1's stays absent),
#    one progress report, metrics.csv with one line per epoch;
#  - resume: a 1-process run's middle checkpoint resumed by 2 ranks, and a 2-rank run's by
#    1 process, end with the weights of a straight 1-process run (tapeflow diff);
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
  run 0 diff "$1/checkpoints/ckpt-00000200.safetensors" "$2/checkpoints/ckpt-00000200.safetensors"
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

# 3. rank 1 fails on its bad data file: the whole job ends, rank 1 named
WRAP=
echo "1,zzz,0" >> rank1/data/xor.csv
mpi fail train config.yaml --run-dir bad
has err.txt "tapeflow: rank 1 of 2: error:"
has err.txt "'zzz' is not a number"
# rank 0 was waiting for rank 1 (the barrier before it writes): ended, nothing written
[ -e rank0/bad ] && fail "rank 0 went on and wrote its run directory"
grep -q "^trained" out.txt && fail "a rank finished training"
finish
