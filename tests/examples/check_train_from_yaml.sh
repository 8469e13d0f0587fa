#!/usr/bin/env bash
# check_train_from_yaml.sh TAPEFLOW TRAIN_FROM_YAML EVENTS_DUMP SRC: the library's run and the
# program train alike. examples/train_from_yaml and `tapeflow train` train the same config
# with the same seed into two run directories, which must hold equal checkpoints (every
# tensor but the history's wall-clock seconds), metrics.csv (but its seconds column) and
# event-file scalars (but samples per second), and the same config.yaml.
set -euo pipefail
TAPEFLOW=$1 EXAMPLE=$2 DUMP=$3 SRC=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
sed -e 's/^  epochs: 200/  epochs: 30/' -e 's/^  every: 100.*/  every: 10/' "$SRC/configs/xor.yaml" > xor.yaml
printf 'logging: {every_steps: 5}\n' >> xor.yaml
sed -i "s#path: data/xor.csv#path: $SRC/configs/data/xor.csv#" xor.yaml
"$TAPEFLOW" train xor.yaml --run-dir prog --quiet || fail "tapeflow train failed"
"$EXAMPLE" xor.yaml lib > lib.out 2> lib.err || fail "train_from_yaml failed: $(cat lib.err)"
grep -q "^\[30/30\] loss " lib.out || fail "train_from_yaml printed no progress: $(cat lib.out)"
grep -q "^30 epochs, 30 steps; final loss " lib.out || fail "train_from_yaml: $(tail -1 lib.out)"
cmp prog/config.yaml lib/config.yaml || fail "config.yaml differs"
[ "$(ls prog/checkpoints)" = "$(ls lib/checkpoints)" ] ||
  fail "checkpoints differ: $(ls prog/checkpoints) / $(ls lib/checkpoints)"
n=0
for c in prog/checkpoints/*.safetensors; do
  b=lib/checkpoints/$(basename "$c")
  set +e; "$TAPEFLOW" diff "$c" "$b" > diff.txt; rc=$?; set -e
  # 0: equal; 1: the history alone (its seconds)
  if [ "$rc" = 1 ]; then
    grep -q "^1 tensor differs" diff.txt && grep -q "_tapeflow/history" diff.txt ||
      fail "$(basename "$c"): tensors differ: $(cat diff.txt)"
  elif [ "$rc" != 0 ]; then fail "diff $c: $(cat diff.txt)"; fi
  n=$((n + 1))
done
[ "$n" -ge 3 ] || fail "only $n checkpoints"
cmp <(cut -d, -f1-5 prog/metrics.csv) <(cut -d, -f1-5 lib/metrics.csv) ||
  fail "metrics.csv differs: $(diff prog/metrics.csv lib/metrics.csv)"
[ "$(wc -l < lib/metrics.csv)" = 31 ] || fail "lib/metrics.csv: $(wc -l < lib/metrics.csv) lines"
scalars() { "$DUMP" "$1"/train/events.out.tfevents.* | awk '$1 == "scalar" && $3 != "step/samples_per_second"'; }
scalars prog > prog.sc
scalars lib > lib.sc
[ "$(wc -l < prog.sc)" -gt 30 ] || fail "few scalars: $(wc -l < prog.sc)"
cmp prog.sc lib.sc || fail "event scalars differ: $(diff prog.sc lib.sc | head)"
echo "ok: $n checkpoints, $(wc -l < prog.sc) scalars equal"
