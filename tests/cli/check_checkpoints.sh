#!/usr/bin/env bash
# check_checkpoints.sh TAPEFLOW SRC: the checkpoint subcommands on a trained xor run:
# inspect, verify (a damaged copy fails with exit 1), diff, export of the weights.
TAPEFLOW=$1 SRC=$2
. "$SRC/tests/cli/cli_lib.sh"
run 0 train "$SRC/configs/xor.yaml" --quiet --run-dir r
c100=r/checkpoints/ckpt-00000100.safetensors c200=r/checkpoints/ckpt-00000200.safetensors
run 0 inspect $c200 && has out.txt "21 tensors, step 200" && has out.txt "dense/kernel" &&
  has out.txt "float32   (2, 16)" && has out.txt "21 CRC-32C checksums verified"
run 0 verify $c100 $c200 && has out.txt "ckpt-00000100.safetensors: ok (21 tensors, 21 checksums)"
# a damaged copy: one byte of the last tensor's data changed
cp $c200 bad.safetensors
size=$(stat -c %s bad.safetensors)
printf '\xff' | dd of=bad.safetensors bs=1 seek=$((size - 1)) conv=notrunc status=none
run 1 verify $c100 bad.safetensors && has out.txt "bad.safetensors: DATA_LOSS" &&
  has out.txt "CRC"
run 1 inspect bad.safetensors && has err.txt "CRC"
run 1 inspect nothere.safetensors && has err.txt "nothere.safetensors"
# diff exits as diff(1) and cmp(1): 0 equal, 1 different, 2 trouble
run 1 diff $c100 $c200 && has out.txt "dense_1/kernel " && has out.txt "max abs" &&
  has out.txt "tensors differ"
run 0 diff $c200 $c200 && has out.txt "0 tensors differ"
run 0 export r --weights-only w.safetensors && has out.txt "step 200"
run 0 inspect w.safetensors && has out.txt "4 tensors" && has out.txt "4 CRC-32C checksums verified"
grep -q "Adam" out.txt && fail "the exported weights hold optimizer state"
run 2 export r w2.safetensors && has err.txt "--weights-only"
run 1 export nowhere --weights-only w3.safetensors && has err.txt "nowhere"
run 2 diff $c100 && has err.txt "tapeflow diff"
run 2 diff $c100 nothere.safetensors && has err.txt "nothere.safetensors"
run 0 diff --help && has out.txt "0 when the checkpoints hold equal" && has out.txt "1 when any tensor differs" &&
  has out.txt "2 on trouble"
finish
