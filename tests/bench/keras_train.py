#!/usr/bin/env python3
"""keras_train.py: training on Fashion-MNIST with Keras (TensorFlow backend) on the CPU,
bench_train's twin.

Models (--model), the same in torch_train.py and bench_train, each with Keras's default
initializers (glorot-uniform kernels, zero biases):
  - mlp: Flatten -> Dense 256 relu -> Dense 256 relu -> Dense 10 (logits);
  - cnn: 28x28x1 -> Conv2D 3x3 32 valid relu -> MaxPooling2D 2 -> Conv2D 3x3 64 valid relu
    -> MaxPooling2D 2 -> Flatten (1600) -> Dense 128 relu -> Dense 10 (logits);
  - big_cnn (batches of 256): 28x28x1 -> 2 x Conv2D 3x3 64 same relu -> MaxPooling2D 2 ->
    2 x Conv2D 128 -> MaxPooling2D 2 -> 2 x Conv2D 256 -> MaxPooling2D 2 -> Flatten (2304)
    -> Dense 512 relu -> Dense 10 (logits).
Recipe: Adam lr 1e-3 (Keras's defaults otherwise: beta_1 0.9, beta_2 0.999, epsilon 1e-7),
SparseCategoricalCrossentropy(from_logits=True) (the batch mean), the batches of
train_common.py (128, in the same seeded order as torch_train.py, 469 steps an epoch, the
last partial batch kept as model.fit does).
The step (--step): train_on_batch (the default) runs the model's compiled train function,
the tf.function model.fit runs every step (compile(jit_compile=False): no XLA, which Keras's
"auto" also picks on a CPU; steps_per_execution 1, no metrics but the loss), fed numpy
batches; tf_function is the hand-written loop of Keras's guide, a tf.function
(jit_compile=False) of forward, GradientTape, optimizer.apply_gradients, fed the same
batches as tensors. On a 2-core AMD EPYC (Zen 5), TensorFlow 2.21, Keras 3.15, 2 threads,
the two run within the noise of each other (mlp 2 to 3 ms, cnn ~12 ms a step).
Threads: OMP_NUM_THREADS is set to --threads before TensorFlow is imported, and
tf.config.threading's intra- and inter-op pools are set to it before any op.
Data, timing mode and accuracy mode (--epochs N) as train_common.py describes (the data,
the command line, the loops and the printing it shares with torch_train.py); the timing
mode prints
  bench tf_train_<model>_samples_per_s <value> samples/s
  bench tf_train_<model>_peak_rss <MiB> MiB   (the interpreter, TensorFlow, the data set
        and the training)
  bench tf_train_<model>_cpu_util <cpu/wall> ratio
Usage: python3 tests/bench/keras_train.py [--model mlp|cnn] [--threads N] [--seed S]
       [--quick | --epochs N] [--warmup N] [--steps N] [--step train_on_batch|tf_function]
       [--data-dtype uint8|float32] [--data DIR]
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_common import (  # noqa: E402  (after the path)
    EVAL_BATCH, LR, load_data, note, parse_args, run, to_float)


def keras_options(parser):
    parser.add_argument("--step", choices=("train_on_batch", "tf_function"),
                        default="train_on_batch",
                        help="model.train_on_batch (model.fit's compiled train function; the "
                             "default) or a hand-written tf.function train step")


def main():
    args = parse_args("keras_train", __doc__,
                      "OMP_NUM_THREADS and TensorFlow's intra- and inter-op threads "
                      "(default 2)", keras_options)

    # Before TensorFlow is imported: OpenMP (if any kernel uses it) and the logs.
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ["KERAS_BACKEND"] = "tensorflow"
    import tensorflow as tf  # noqa: E402
    import keras  # noqa: E402
    from keras import layers  # noqa: E402

    # Before any op: TensorFlow fixes its thread pools when the eager context starts.
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    keras.utils.set_random_seed(args.seed)

    train_x, train_y, test_x, test_y = load_data(args, np.int32)

    if args.model == "mlp":
        model = keras.Sequential([
            keras.Input((28, 28)), layers.Flatten(),
            layers.Dense(256, activation="relu"), layers.Dense(256, activation="relu"),
            layers.Dense(10)])
        shape = (-1, 28, 28)
    elif args.model == "big_cnn":
        convs = []
        for filters in (64, 128, 256):
            convs += [layers.Conv2D(filters, 3, padding="same", activation="relu"),
                      layers.Conv2D(filters, 3, padding="same", activation="relu"),
                      layers.MaxPooling2D(2)]
        model = keras.Sequential([
            keras.Input((28, 28, 1)), *convs, layers.Flatten(),
            layers.Dense(512, activation="relu"), layers.Dense(10)])
        shape = (-1, 28, 28, 1)
    else:
        model = keras.Sequential([
            keras.Input((28, 28, 1)),
            layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(2),
            layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(2),
            layers.Flatten(), layers.Dense(128, activation="relu"), layers.Dense(10)])
        shape = (-1, 28, 28, 1)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = keras.optimizers.Adam(learning_rate=LR)
    model.compile(optimizer=optimizer, loss=loss_fn, jit_compile=False)
    note(f"tensorflow {tf.__version__}, keras {keras.__version__}, intra-op "
         f"{tf.config.threading.get_intra_op_parallelism_threads()} inter-op "
         f"{tf.config.threading.get_inter_op_parallelism_threads()} threads, model "
         f"{args.model} ({model.count_params()} parameters), step {args.step}, "
         f"data {args.data_dtype}")

    def batch(images, idx):
        return to_float(images[idx]).reshape(shape)

    # Each step returns the loss as a float: the conversion is part of the timed step.
    if args.step == "train_on_batch":
        def step(idx):
            return float(model.train_on_batch(batch(train_x, idx), train_y[idx]))
    else:
        @tf.function(jit_compile=False, reduce_retracing=True)
        def train_step(x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        def step(idx):
            return float(train_step(tf.convert_to_tensor(batch(train_x, idx)),
                                    tf.convert_to_tensor(train_y[idx])))

    def test_accuracy():
        right = 0
        for i in range(0, test_x.shape[0], EVAL_BATCH):
            idx = np.arange(i, min(i + EVAL_BATCH, test_x.shape[0]))
            pred = np.argmax(model.predict_on_batch(batch(test_x, idx)), axis=1)
            right += int(np.sum(pred == test_y[idx]))
        return right / test_x.shape[0]

    run(args, "tf_train", step, test_accuracy, train_x.shape[0])


if __name__ == "__main__":
    main()
