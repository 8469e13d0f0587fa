#!/usr/bin/env bash
# check_generate.sh TAPEFLOW SRC: `tapeflow generate` on a small causal-attention model trained
# on "abcd" repeated: greedy text continues the pattern, a seed prints the same text twice, the
# checkpoint is named on stderr; a prompt longer than the context, a character outside the
# vocabulary, a config that is not `format: text` and bad options exit 2 naming the problem;
# the run directory is left as it was.
TAPEFLOW=$1 SRC=$2
. "$SRC/tests/cli/cli_lib.sh"

printf 'abcd%.0s' $(seq 200) > abcd.txt
cat > text.yaml <<'YAML'
data:
  train: {format: text, path: abcd.txt, context_length: 8, tokens: chars, stride: 1}
model:
  input_shape: [8]
  layers:
    - embedding: {input_dim: 4, output_dim: 16}
    - position_embedding: {sequence_length: 8}
    - multi_head_attention: {num_heads: 2, key_dim: 8, use_causal_mask: true}
    - dense: {units: 4}
loss: sparse_categorical_crossentropy
optimizer: {kind: adam, learning_rate: 0.01}
training: {epochs: 8, batch_size: 32, seed: 1}
YAML

run 0 generate --help && has out.txt "usage: tapeflow generate CONFIG --prompt TEXT"
run 0 help && has out.txt "generate CONFIG --prompt TEXT"
run 1 generate text.yaml --prompt ab --run-dir r && has err.txt "no usable checkpoint"
[ ! -e r ] || fail "generate without a checkpoint made the run directory"
run 0 train text.yaml --run-dir r --quiet
listing() { find r -printf '%p %s %T@\n' | sort; }
listing > before.txt

run 0 generate text.yaml --run-dir r --prompt ab --tokens 14 --temperature 0 &&
  [ "$(cat out.txt)" = "abcdabcdabcdabcd" ] || fail "greedy text: $(cat out.txt)"
has err.txt "tapeflow: checkpoint r/checkpoints/ckpt-00000200.safetensors (step 200)"
run 0 generate text.yaml --run-dir r --prompt=c --tokens=10 --temperature=0 &&
  [ "$(cat out.txt)" = "cdabcdabcda" ] || fail "greedy text from c: $(cat out.txt)"
run 0 generate text.yaml --run-dir r --prompt b --tokens 60 --temperature 3 --seed 11 &&
  cp out.txt seed1.txt
run 0 generate text.yaml --run-dir r --prompt b --tokens 60 --temperature 3 --seed 11 &&
  cmp -s out.txt seed1.txt || fail "the same seed printed another text"
[ "$(head -c 61 seed1.txt | tr -d 'abcd' | wc -c)" = 0 ] || fail "not the vocabulary: $(cat seed1.txt)"
run 0 generate text.yaml --run-dir r --prompt b --tokens 5 \
  --checkpoint r/checkpoints/ckpt-00000200.safetensors --top-k 1 && [ "$(cat out.txt)" = "bcdabc" ] ||
  fail "top-k 1 from an explicit checkpoint: $(cat out.txt)"

# errors: exit 2, the problem named, nothing written
run 2 generate text.yaml --run-dir r --prompt abcdabcda &&
  has err.txt "the prompt has 9 tokens, longer than the context of 8 (data.train.context_length)"
run 2 generate text.yaml --run-dir r --prompt abz &&
  has err.txt "the prompt's character 'z' at position 2 is not in the training text's vocabulary (4 tokens: 'a' 'b' 'c' 'd')"
[ ! -s out.txt ] || fail "an error printed text: $(cat out.txt)"
run 2 generate text.yaml --run-dir r && has err.txt "--prompt TEXT is required"
run 2 generate text.yaml --run-dir r --prompt a --temperature -1 &&
  has err.txt "--temperature needs a number >= 0, got '-1'"
run 2 generate text.yaml --run-dir r --prompt a --top-k x && has err.txt "--top-k needs an integer >= 0, got 'x'"
run 2 generate text.yaml --run-dir r --prompt a --bogus && has err.txt "unknown option '--bogus'"
run 2 generate "$SRC/configs/xor.yaml" --run-dir r --prompt a &&
  has err.txt "generation needs a text model: data.train of " && has err.txt "is 'format: csv', not 'format: text'"
listing > after.txt
cmp -s before.txt after.txt || { fail "generate changed the run directory"; diff before.txt after.txt >&2; }
finish
