#!/usr/bin/env bash
# check_fallback.sh TAPEFLOW SRC: a damaged newest checkpoint. train, eval and export fall back
# to the newest usable one, and say so: a warning on stderr (and in run.log for train) naming
# the file skipped and why; eval and predict name the checkpoint they used. A damaged
# checkpoint given with --checkpoint is an error, never a fallback.
TAPEFLOW=$1 SRC=$2
. "$SRC/tests/cli/cli_lib.sh"
xor="$SRC/configs/xor.yaml"
run 0 train "$xor" --quiet --run-dir r
c100=r/checkpoints/ckpt-00000100.safetensors c200=r/checkpoints/ckpt-00000200.safetensors
run 0 eval "$xor" --run-dir r && has out.txt "checkpoint $c200 (step 200)"
[ -s err.txt ] && fail "eval of a sound run warned: $(cat err.txt)"
# the newest checkpoint truncated
truncate -s 300 $c200
run 0 eval "$xor" --run-dir r
has err.txt "tapeflow: warning: Checkpoint: skipping '$c200', an older checkpoint is used if there is one: "
has err.txt "goes past the end of the file (300 bytes) (DATA_LOSS)"
[ "$(grep -c "skipping" err.txt)" = 1 ] || fail "the skipped checkpoint is not named once: $(cat err.txt)"
has out.txt "checkpoint $c100 (step 100)"
printf 'x1,x2\n0,1\n' > in.csv
run 0 predict "$xor" --run-dir r --input in.csv
has err.txt "skipping '$c200'"
has err.txt "tapeflow: checkpoint $c100 (step 100)"
grep -q "checkpoint" out.txt && fail "predict wrote the checkpoint line into its CSV"
# --checkpoint: that file or an error
run 1 eval "$xor" --run-dir r --checkpoint $c200 && has err.txt "$c200"
grep -q "$c100" out.txt err.txt && fail "eval --checkpoint fell back to $c100"
run 1 predict "$xor" --run-dir r --input in.csv --checkpoint $c200 && has err.txt "$c200"
run 0 eval "$xor" --run-dir r --checkpoint $c100 && has out.txt "checkpoint $c100"
# train resumes from the older one, with the warning on stderr and in run.log
run 0 train "$xor" --quiet --run-dir r --set training.epochs=201
has err.txt "warning: Checkpoint: skipping '$c200'"
has r/run.log "resumed from $c100 at step 100"
has r/run.log "  warning: Checkpoint: skipping '$c200'"
has r/run.log "(DATA_LOSS)"
finish
