#!/usr/bin/env bash
# check_resume_epoch_end.sh TAPEFLOW SRC EVENTS_DUMP: a run resumed from a checkpoint saved at
# an epoch's end (checkpoint.every) goes on with the next epoch: the resume line has the one
# form "(epoch E, batch 0, step S)", metrics.csv and the event files get no point twice.
TAPEFLOW=$1 SRC=$2 DUMP=$3
. "$SRC/tests/cli/cli_lib.sh"
xor="$SRC/configs/xor.yaml"
run 0 train "$xor" --quiet --run-dir r --set training.epochs=3 --set checkpoint.every=2
c2=r/checkpoints/ckpt-00000002.safetensors c3=r/checkpoints/ckpt-00000003.safetensors
cp r/metrics.csv metrics_once.csv
# the last checkpoint lost: the run resumes from the one of epoch 2's end
rm $c3
run 0 train "$xor" --run-dir r --set training.epochs=3 --set checkpoint.every=2
has out.txt "resuming from $c2 (epoch 3, batch 0, step 2)"
# the same form as a resume from the final checkpoint
run 0 train "$xor" --run-dir r --set training.epochs=4 --set checkpoint.every=2
has out.txt "resuming from $c3 (epoch 4, batch 0, step 3)"
# metrics.csv: epochs 0, 1, 2, 3, each once
[ "$(cut -d, -f1 r/metrics.csv | tr '\n' ' ')" = "epoch 0 1 2 3 " ] ||
  fail "metrics.csv repeats or misses an epoch: $(cat r/metrics.csv)"
cmp -s <(head -3 metrics_once.csv) <(head -3 r/metrics.csv) || fail "metrics.csv's first epochs changed"
# the event files: TensorBoard shows each epoch's point once (a later file's SessionLog START
# at step S drops the earlier files' points from step S on; none may repeat below S)
for f in $(ls -tr r/train/events.out.tfevents.*); do "$DUMP" "$f"; done > events.txt
awk '$1 == "session" { for (k in seen) if (k + 0 >= $2) delete seen[k] }
     $1 == "scalar" && $3 == "epoch/loss" { if ($2 in seen) { print "repeated step " $2; bad = 1 }
                                           seen[$2] = 1 }
     END { n = 0; for (k in seen) n++; print "points " n; exit bad }' events.txt > repeats.txt ||
  fail "an epoch's point is logged twice: $(cat repeats.txt)"
grep -qx "points 4" repeats.txt || fail "expected 4 epoch points: $(cat repeats.txt; grep epoch/loss events.txt)"
finish
