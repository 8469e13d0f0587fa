#!/usr/bin/env bash
# check_tensorboard.sh TAPEFLOW SRC EVENTS_DUMP: what `tapeflow train` leaves to look at and
# `tapeflow plot`: the event files (tags, steps and values, read back by the library's reader
# through EVENTS_DUMP), none with logging.tensorboard=false, histograms, a flushed file after
# SIGINT holding the last step's scalars, SessionLog START on resume, curves.svg, and plots of
# two runs rendered with rsvg-convert.
TAPEFLOW=$1 SRC=$2 DUMP=$3
. "$SRC/tests/cli/cli_lib.sh"
quad="$SRC/configs/quadratic_regression.yaml"
xor="$SRC/configs/xor.yaml"
# the quadratic config: 160 training rows, batch 32: 5 steps an epoch, validation
short=(--set training.epochs=20 --set checkpoint.every=1000 --set logging.every_steps=10)

# dump DIR: the records of the only event file in DIR, into dump.txt
dump() {
  local files=("$1"/events.out.tfevents.*)
  [ "${#files[@]}" = 1 ] && [ -f "${files[0]}" ] || { fail "$1: ${#files[@]} event files"; : > dump.txt; return; }
  "$DUMP" "${files[0]}" > dump.txt || fail "$1: the event file does not read back"
}
# count TAG: scalars TAG in dump.txt
count() { grep -c "^scalar [0-9]* $1 " dump.txt || true; }
# value STEP TAG: the scalar TAG at STEP in dump.txt
value() { awk -v s="$1" -v t="$2" '$1 == "scalar" && $2 == s && $3 == t { print $4 }' dump.txt; }
# close A B: |A - B| <= 1e-6 (1 + |B|) (event files hold float32)
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b;
                                          exit !(a != "" && d <= 1e-6 * (1 + m)) }'; }

# ---- a run: event files in train/ and validation/, their tags, steps and values
run 0 train "$quad" "${short[@]}" --run-dir r1
has out.txt "trained 20 epochs, 100 steps in "
has out.txt "event file: r1/train/events.out.tfevents."
has out.txt "(tensorboard --logdir r1)"
has out.txt "curves: r1/curves.svg"
dump r1/train
head -1 dump.txt | grep -qx "version 0 brain.Event:2" || fail "the first record: $(head -1 dump.txt)"
sed -n 2p dump.txt | grep -qx "session 1 1" || fail "no SessionLog START at step 1: $(sed -n 2p dump.txt)"
grep -qx "text 1 config" dump.txt || fail "no resolved config as text"
tail -1 dump.txt | grep -qx "end [0-9]* truncated 0" || fail "the file's end: $(tail -1 dump.txt)"
for tag in step/loss step/learning_rate step/grad_norm step/samples_per_second; do
  [ "$(count $tag)" = 10 ] || fail "$tag: $(count $tag) scalars, expected 10 (every 10 of 100 steps)"
  for s in 10 50 100; do [ -n "$(value $s $tag)" ] || fail "$tag: none at step $s"; done
done
[ "$(count epoch/loss)" = 20 ] || fail "epoch/loss: $(count epoch/loss) scalars, expected 20"
[ "$(count epoch/accuracy)" = 0 ] || fail "epoch/accuracy written for a regression"
# the learning rate of the cosine schedule (decay_steps 1500): 0.01 (1 + cos(pi s / 1500)) / 2
# for the apply of step k (s = k - 1); the epoch losses are metrics.csv's
lr=$(value 50 step/learning_rate)
close "$lr" "$(awk 'BEGIN { printf "%.9g", 0.005 * (1 + cos(3.141592653589793 * 49 / 1500)) }')" ||
  fail "step/learning_rate at 50 is $lr"
for e in 1 10 20; do
  csv=$(awk -F, -v r=$((e + 1)) 'NR == r { print $2 }' r1/metrics.csv)
  close "$(value $((5 * e)) epoch/loss)" "$csv" || fail "epoch/loss at $((5 * e)): $(value $((5 * e)) epoch/loss), metrics.csv $csv"
done
awk '$3 == "step/grad_norm" && !($4 > 0) { exit 1 }' dump.txt || fail "a gradient norm <= 0"
dump r1/validation
[ "$(count epoch/loss)" = 20 ] || fail "validation epoch/loss: $(count epoch/loss) scalars"
[ "$(count step/loss)" = 0 ] || fail "step scalars in validation/"
vcsv=$(awk -F, 'END { print $4 }' r1/metrics.csv)
close "$(value 100 epoch/loss)" "$vcsv" || fail "validation epoch/loss at 100: $(value 100 epoch/loss), val_loss $vcsv"
# curves.svg: the loss of training and validation
[ -s r1/curves.svg ] || fail "no r1/curves.svg"
[ "$(grep -c '<g class="series"' r1/curves.svg)" = 2 ] || fail "r1/curves.svg: not 2 series"
has r1/curves.svg 'data-label="r1: validation"'

# ---- logging.tensorboard=false: no event file (curves.svg from metrics.csv all the same)
run 0 train "$quad" "${short[@]}" --set logging.tensorboard=false --run-dir r2
[ ! -e r2/train ] && [ ! -e r2/validation ] || fail "logging.tensorboard=false made event files"
[ -z "$(find r2 -name 'events.out.tfevents.*')" ] || fail "an event file with tensorboard off"
grep -q "event file:" out.txt && fail "an event file printed with tensorboard off"
[ "$(grep -c '<g class="series"' r2/curves.svg)" = 2 ] || fail "r2/curves.svg: not 2 series"

# ---- histograms, and a classifier's curves.svg: a panel for loss and one for accuracy
run 0 train "$xor" --set training.epochs=3 --set logging.histograms=true --run-dir x1 --quiet
dump x1/train
for t in weights/dense/kernel weights/dense_1/bias gradients/dense/kernel; do
  [ "$(grep -c "^histogram [0-9]* $t " dump.txt)" = 3 ] || fail "$t: not 3 histograms (one an epoch)"
done
grep -q "^histogram 3 weights/dense/kernel 32$" dump.txt || fail "the 2x16 kernel's histogram at step 3"
[ "$(grep -c "^scalar [0-9]* epoch/accuracy " dump.txt)" = 3 ] || fail "xor: not 3 epoch/accuracy"
has x1/curves.svg ">Loss"
has x1/curves.svg ">Accuracy</text>"
[ "$(grep -c '<g class="series"' x1/curves.svg)" = 2 ] || fail "x1/curves.svg: not a series per metric"
grep -q "event file:\|curves:" out.txt && fail "--quiet printed the paths"

# ---- SIGINT: the event file is flushed and ends with the last step's scalars (the run is
# far from its end when the signal comes: it stops after the step in progress)
long=(--set training.epochs=100000 --set training.batch_size=8 --set checkpoint.every=1000
      --set logging.every_steps=1 --set logging.log_interval=50)
"$TAPEFLOW" train "$quad" "${long[@]}" --run-dir r3 > out.txt 2> err.txt &
pid=$!
for _ in $(seq 1500); do grep -q "step 100 " out.txt 2>/dev/null && break; sleep 0.02; done
kill -INT $pid
set +e; wait $pid; status=$?; set -e
[ "$status" = 130 ] || fail "SIGINT: exit status $status, expected 130"
has err.txt "event file (flushed): r3/train/events.out.tfevents."
n=$(sed -n 's/.* after \([0-9]*\) steps.*/\1/p' err.txt)
[ -n "$n" ] && [ "$n" -ge 100 ] || fail "no step count in: $(cat err.txt)"
dump r3/train
tail -1 dump.txt | grep -qx "end [0-9]* truncated 0" || fail "after SIGINT the file ends: $(tail -1 dump.txt)"
last=$(grep "^scalar" dump.txt | tail -1 | cut -d' ' -f2)
[ "$last" = "$n" ] || fail "the last scalar is at step $last, the run stopped after step $n"
[ -n "$(value "$n" step/loss)" ] && [ -n "$(value "$n" step/grad_norm)" ] ||
  fail "no step/loss or step/grad_norm of the last step $n"

# ---- resume: checkpoints at steps 20, 40 and 50 (the end); without the last (a crash before
# it was written) training resumes from step 40 and its new event file starts with
# SessionLog{START} at step 41; TensorBoard (and tapeflow plot) then drop the first file's
# points from step 41 on: one point per epoch remains
run 0 train "$quad" --set training.epochs=10 --set checkpoint.every=4 --set logging.every_steps=5 \
  --run-dir r5 --quiet
[ -f r5/checkpoints/ckpt-00000050.safetensors ] || fail "no checkpoint of step 50: $(ls r5/checkpoints)"
rm -f r5/checkpoints/ckpt-00000050.safetensors
first=$(ls r5/train)
run 0 train "$quad" --set training.epochs=10 --set checkpoint.every=4 --set logging.every_steps=5 \
  --run-dir r5 && has out.txt "resuming from r5/checkpoints/ckpt-00000040.safetensors"
new=$(ls r5/train | grep -vxF "$first" || true)
[ "$(echo "$new" | grep -c .)" = 1 ] || fail "resuming made not one new event file: $(ls r5/train)"
"$DUMP" "r5/train/$new" > dump.txt || fail "the resumed run's event file does not read back"
sed -n 2p dump.txt | grep -qx "session 41 1" || fail "the resumed run's START: $(sed -n 2p dump.txt)"
grep -qx "text 41 config" dump.txt || fail "the resumed run's config text is not at step 41"
# the checkpoint of step 40 was saved after that epoch's end: the resumed run logs steps 45
# and 50 and no point of step 40 a second time
[ "$(grep "^scalar" dump.txt | cut -d' ' -f2 | sort -n | uniq | tr '\n' ' ')" = "45 50 " ] ||
  fail "the resumed run's scalars are not at steps 45 and 50: $(grep "^scalar" dump.txt | head -3)"
"$DUMP" "r5/train/$first" > first.txt
grep -q "^scalar 40 epoch/loss " first.txt || fail "the first run has no epoch point at step 40"
close "$(value 50 epoch/loss)" "$(awk -F, 'END { print $2 }' r5/metrics.csv)" ||
  fail "the resumed run's last epoch/loss is not metrics.csv's"
run 0 plot r5/train -o resumed.svg
[ "$(grep -c '<circle' resumed.svg)" = 10 ] || fail "resumed.svg: $(grep -c '<circle' resumed.svg) points, expected 10"

# ---- tapeflow plot: two runs overlaid, a metric of the event files, errors
run 0 plot --help && has out.txt "usage: tapeflow plot RUN..."
run 0 plot r1 r2 -o two.svg && has out.txt "wrote two.svg: 4 curves of 2 runs"
for r in r1 r2; do
  has two.svg "data-run=\"$r\""
  has two.svg ">$r: training</text>"
  has two.svg ">$r: validation</text>"
done
[ "$(grep -c '<g class="series"' two.svg)" = 4 ] || fail "two.svg: not 4 series"
has two.svg '<g class="legend"'
has two.svg '<g class="x-axis"'
# the y axis: linear for values within a factor 100 (unless --log-y), log beyond (x1's loss)
grep -q "(log scale)" two.svg && fail "two.svg: a log axis for losses within a factor 100"
run 0 plot r1 r2 --log-y -o log.svg && has log.svg ">Loss (log scale)</text>"
run 0 train "$xor" --set training.epochs=60 --run-dir x2 --quiet
run 0 plot x2 -o auto.svg && has auto.svg "(log scale)"
run 0 plot x2 --linear-y -o lin.svg
grep -q "(log scale)" lin.svg && fail "--linear-y drew a log axis"
# from the event files (metrics.csv has no learning rate): 10 points, per step
run 0 plot r1 --metric learning_rate -o - && cp out.txt lr.svg
head -1 lr.svg | grep -q "^<?xml" || fail "plot -o - wrote no SVG to standard output"
[ "$(grep -c '<circle' lr.svg)" = 10 ] || fail "lr.svg: $(grep -c '<circle' lr.svg) points, expected 10"
has lr.svg ">step</text>"
has lr.svg ">Learning rate"
run 0 plot r1 x1 --metric loss --metric accuracy -o panels.svg
has panels.svg ">Accuracy"
[ "$(grep -c '<svg ' panels.svg)" = 3 ] || fail "panels.svg: not one document with 2 panels"
if command -v rsvg-convert > /dev/null; then
  for f in two panels r1/curves x1/curves; do
    rsvg-convert "$f.svg" -o "$f.png" 2> r.err || fail "rsvg-convert $f.svg: $(cat r.err)"
    [ "$(head -c 8 "$f.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$f.png is not a PNG"
  done
fi
run 2 plot && has err.txt "no RUN given"
run 2 plot nope && has err.txt "no run at 'nope'"
[ ! -e curves.svg ] || fail "a failed plot wrote curves.svg"
run 2 plot r1 --metric f1 && has err.txt "'f1'" &&
  has err.txt "have no scalar 'f1' (nor epoch/f1 or step/f1); their scalars: " &&
  has err.txt "epoch/loss" && has err.txt "step/learning_rate"
grep -q "tags tried" err.txt && fail "plot names the tags it tried, not the run's: $(cat err.txt)"
run 2 plot r2 --metric f1 && has err.txt "has no metric 'f1' (it has: loss, accuracy, val_loss"
# a regression's metrics.csv has an accuracy column without values
run 2 plot r2 --metric accuracy -o acc.svg && has err.txt "r2 has no values of 'accuracy'" &&
  has err.txt "no run has values of 'accuracy'; nothing was written"
[ ! -e acc.svg ] || fail "a plot without values wrote acc.svg"
run 2 plot r1 --metric && has err.txt "option '--metric' needs a value"
run 2 plot r1 --bogus && has err.txt "unknown option '--bogus'"
(cd r1 && "$TAPEFLOW" plot . > ../out.txt 2>&1) || fail "plot . failed: $(cat out.txt)"
[ -s r1/curves.svg ] || fail "plot with no -o wrote no curves.svg in the current directory"
finish
