#!/usr/bin/env bash
# check_shipped_configs.sh TAPEFLOW SRC: every config in configs/ loads and resolves; the
# small ones train through the program to their documented result.
TAPEFLOW=$1 SRC=$2
. "$SRC/tests/cli/cli_lib.sh"
for cfg in "$SRC"/configs/*.yaml; do
  run 0 config "$cfg" || continue
  has out.txt "model:"
  run 0 inspect "$cfg" && has out.txt "Total params: "
done
# the graphs: every layer with what it is connected to, the parameters of each model
run 0 inspect "$SRC/configs/fashion_mnist_resnet.yaml" && {
  has out.txt "b2_add (Add)                             (None, 7, 7, 64)                0  b2_bn2, b2_proj_bn"
  has out.txt "b2_proj (Conv2D)                         (None, 7, 7, 64)             2048  b1_out"
  has out.txt "Total params: 77866"
}
run 0 inspect "$SRC/configs/char_transformer.yaml" && {
  has out.txt "b0_attn (MultiHeadAttention)             (None, 64, 128)             66048  b0_ln1"
  has out.txt "b3_res2 (Add)                            (None, 64, 128)                 0  b3_mlp2, b3_res1"
  has out.txt "Total params: 867328"
}
# xor: 100% accuracy
run 0 train "$SRC/configs/xor.yaml" --run-dir xor && has out.txt "accuracy: 1.0000"
# the regression: mean squared error 0.0040 after 300 epochs (a bound of 0.01: the last
# epoch's line shows "loss: 0.00" and the run's summary a final loss under 0.01)
if run 0 train "$SRC/configs/quadratic_regression.yaml" --run-dir quad; then
  has out.txt "epoch 300/300 - "
  last=$(grep "^epoch 300/300" out.txt || true)
  case "$last" in
    *" - loss: 0.00"*" - val_loss: 0.0"*) ;;
    *) fail "quadratic_regression: the last epoch is '$last', expected loss < 0.01 and val_loss < 0.1" ;;
  esac
  [ -f quad/metrics.csv ] || fail "quadratic_regression: no quad/metrics.csv"
fi
# the Fashion-MNIST MLP, one epoch on its data (Debian's dataset-fashion-mnist)
if [ -d /usr/share/datasets/fashion-mnist ]; then
  run 0 train "$SRC/configs/fashion_mnist_mlp.yaml" --set training.epochs=1 --run-dir mlp &&
    has out.txt "val_accuracy: 0.8"
  # the ResNet, one epoch on the 10,000 test images (its graph trains, evaluates, resumes)
  fm=/usr/share/datasets/fashion-mnist
  small=(--set "data.train.images=$fm/t10k-images-idx3-ubyte.gz"
         --set "data.train.labels=$fm/t10k-labels-idx1-ubyte.gz")
  run 0 train "$SRC/configs/fashion_mnist_resnet.yaml" "${small[@]}" --set training.epochs=1 \
    --run-dir resnet && has out.txt "trained 1 epoch, 79 steps"
else
  echo "skipped the Fashion-MNIST runs: /usr/share/datasets/fashion-mnist is missing"
fi
# the transformer on one small file of the corpus (Debian's fortunes): two epochs straight
# equal one and a resumed second bit for bit; generation repeats with a seed
fort=/usr/share/games/fortunes/fortunes.u8
if [ -f "$fort" ]; then
  tiny=(--set "data.train.path=$fort" --set optimizer.schedule.decay_steps=24)
  run 0 train "$SRC/configs/char_transformer.yaml" "${tiny[@]}" --set training.epochs=2 \
    --run-dir ct2 && has out.txt "trained 2 epochs, 24 steps"
  run 0 train "$SRC/configs/char_transformer.yaml" "${tiny[@]}" --run-dir ct11 &&
  run 0 train "$SRC/configs/char_transformer.yaml" "${tiny[@]}" --set training.epochs=2 \
    --run-dir ct11 && has out.txt "resuming from ct11/checkpoints/ckpt-00000012.safetensors"
  # diff(1)'s status: 1, the two differ in the history's seconds alone
  run 1 diff ct2/checkpoints/ckpt-00000024.safetensors ct11/checkpoints/ckpt-00000024.safetensors &&
    has out.txt "1 tensor differs" && has out.txt "_tapeflow/history"
  gen=(generate "$SRC/configs/char_transformer.yaml" "${tiny[@]}" --run-dir ct2 --prompt "The "
       --tokens 40 --top-k 10 --seed 5)
  run 0 "${gen[@]}" && cp out.txt gen1.txt && run 0 "${gen[@]}" &&
    { cmp -s gen1.txt out.txt || fail "generate with one seed printed different texts"; }
  has out.txt "The "
  long=$(printf 'x%.0s' $(seq 70))
  run 2 generate "$SRC/configs/char_transformer.yaml" "${tiny[@]}" --run-dir ct2 --prompt "$long" \
    && has err.txt "longer than the context of 64"
else
  echo "skipped the transformer run: $fort is missing (fortunes)"
fi
finish
