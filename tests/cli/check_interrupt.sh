#!/usr/bin/env bash
# check_interrupt.sh TAPEFLOW SRC: SIGINT (and SIGTERM) in the middle of an epoch: the step
# finishes, the program says where it stopped and exits 130; the run directory keeps its
# resolved config and the complete epochs' metrics.
TAPEFLOW=$1 SRC=$2
. "$SRC/tests/cli/cli_lib.sh"
[ -d /usr/share/datasets/fashion-mnist ] || { echo "skipped: no Fashion-MNIST"; exit 0; }
for sig in INT TERM; do
  dir=run_$sig
  rm -f out.txt err.txt # the last run's "step 10" must not be read as this one's
  "$TAPEFLOW" train "$SRC/configs/fashion_mnist_mlp.yaml" --set training.epochs=3 \
    --set logging.log_interval=5 --run-dir $dir > out.txt 2> err.txt &
  pid=$!
  for _ in $(seq 600); do grep -q "step 10 " out.txt 2>/dev/null && break; sleep 0.05; done
  kill -$sig $pid
  set +e; wait $pid; status=$?; set -e
  [ "$status" = 130 ] || fail "SIG$sig: exit status $status, expected 130"
  has err.txt "interrupted (SIG$sig) in epoch 1"
  [ -f $dir/config.yaml ] || fail "SIG$sig: no config.yaml"
  [ "$(wc -l < $dir/metrics.csv)" = 1 ] || fail "SIG$sig: metrics.csv has more than its header"
  has err.txt "a checkpoint of that step was saved"
  ls $dir/checkpoints/ckpt-*.safetensors > /dev/null || fail "SIG$sig: no checkpoint"
done
# the interrupted run resumes from its checkpoint and ends as a straight run would
run 0 train "$SRC/configs/fashion_mnist_mlp.yaml" --set training.epochs=3 \
  --set logging.log_interval=5 --run-dir run_INT && has out.txt "resuming from run_INT/checkpoints/"
[ "$(wc -l < run_INT/metrics.csv)" = 4 ] || fail "the resumed run's metrics.csv has not 3 epochs"
has out.txt "test_accuracy"
# predict from an IDX images file with the trained run: a class and 10 probabilities each
run 0 predict "$SRC/configs/fashion_mnist_mlp.yaml" --set training.epochs=3 \
  --set logging.log_interval=5 --run-dir run_INT \
  --input /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz --output p.csv
[ "$(wc -l < p.csv)" = 10001 ] || fail "predict wrote $(wc -l < p.csv) lines, not 10001"
head -1 p.csv | grep -q "^class,p0,p1,p2,p3,p4,p5,p6,p7,p8,p9$" || fail "predict header: $(head -1 p.csv)"
# examples/embed: the exported weights classify test images with no training code
EMBED="$(dirname "$TAPEFLOW")/embed"
run 0 export run_INT --weights-only mlp.safetensors
right=0
for i in 0 1 2 3 4 5 6 7 8 9; do
  "$EMBED" "$SRC/configs/fashion_mnist_mlp.yaml" mlp.safetensors $i > e.txt 2> e.err ||
    { fail "embed $i: $(cat e.err)"; continue; }
  grep -q "^image $i: class [0-9] (probability [01]\.[0-9]*), label [0-9]$" e.txt ||
    fail "embed $i printed: $(cat e.txt)"
  c=$(sed 's/.*class \([0-9]\).*label \([0-9]\)/\1 \2/' e.txt)
  [ "${c% *}" = "${c#* }" ] && right=$((right + 1))
done
[ "$right" -ge 7 ] || fail "embed classified only $right of 10 test images right"
"$EMBED" "$SRC/configs/fashion_mnist_mlp.yaml" missing.safetensors > e.txt 2> e.err &&
  fail "embed with missing weights succeeded"
grep -q "missing.safetensors" e.err || fail "embed's error lacks the file: $(cat e.err)"
finish
