#!/usr/bin/env python3
"""keras_train.py: training on Fashion-MNIST with Keras (TensorFlow backend) on the CPU,
bench_train's twin.

Models (--model), the same in torch_train.py and bench_train, each with Keras's default
initializers (glorot-uniform kernels, zero biases):
  - mlp: Flatten -> Dense 256 relu -> Dense 256 relu -> Dense 10 (logits);
  - cnn: 28x28x1 -> Conv2D 3x3 32 valid relu -> MaxPooling2D 2 -> Conv2D 3x3 64 valid relu
    -> MaxPooling2D 2 -> Flatten (1600) -> Dense 128 relu -> Dense 10 (logits).
Recipe: Adam lr 1e-3 (Keras's defaults otherwise: beta_1 0.9, beta_2 0.999, epsilon 1e-7),
SparseCategoricalCrossentropy(from_logits=True) (the batch mean), batches of 128 drawn from
a permutation of the 60000 training images made anew every epoch by numpy's
default_rng(seed) (the same order as torch_train.py), the last partial batch of an epoch
kept (96 images; 469 steps an epoch), as model.fit does.
The step (--step): train_on_batch (the default) runs the model's compiled train function,
the tf.function model.fit runs every step (compile(jit_compile=False): no XLA, which Keras's
"auto" also picks on a CPU; steps_per_execution 1, no metrics but the loss), fed numpy
batches; tf_function is the hand-written loop of Keras's guide, a tf.function
(jit_compile=False) of forward, GradientTape, optimizer.apply_gradients, fed the same
batches as tensors. On a 2-core AMD EPYC (Zen 5), TensorFlow 2.21, Keras 3.15, 2 threads,
the two run within the noise of each other (mlp 2 to 3 ms, cnn ~12 ms a step).
Data: Debian's dataset-fashion-mnist (gzipped IDX, /usr/share/datasets/fashion-mnist), read
straight into uint8 arrays (47 MB of training images); each batch is gathered as bytes and
becomes float32 / 255 (inputs in [0, 1]), as tapeflow does. --data-dtype float32 converts
the whole set up front instead (188 MB; the peak RSS shows the difference). The test set is
loaded in accuracy mode only, as bench_train loads only the training set.
Threads: OMP_NUM_THREADS is set to --threads before TensorFlow is imported, and
tf.config.threading's intra- and inter-op pools are set to it before any op.

Timing mode (the default): 20 warm-up steps, then 200 timed steps (mlp) or 60 (cnn)
(--quick: 5 and 50 / 15); prints
  bench tf_train_<model>_samples_per_s <value> samples/s   (timed samples / wall time)
  bench tf_train_<model>_peak_rss <MiB> MiB   (ru_maxrss of the process after the timed
        steps: the interpreter, TensorFlow, the data set and the training)
  bench tf_train_<model>_cpu_util <cpu/wall> ratio   (process CPU time, all threads, over
        wall time in the timed steps: about --threads when the threads are busy)
Accuracy mode (--epochs N): trains N epochs and prints per epoch
  epoch <k> loss <mean training loss> test_accuracy <on the 10000 test images> epoch_s <s>
  elapsed_s <s since training began>
Usage: python3 tests/bench/keras_train.py [--model mlp|cnn] [--threads N] [--seed S]
       [--quick | --epochs N] [--warmup N] [--steps N] [--step train_on_batch|tf_function]
       [--data-dtype uint8|float32] [--data DIR]
"""
import argparse
import gzip
import os
import resource
import statistics
import sys
import time

import numpy as np

DATA_DIR = "/usr/share/datasets/fashion-mnist"
BATCH = 128
LR = 1e-3
EVAL_BATCH = 1000


def note(msg):
    print(f"keras_train note: {msg}", file=sys.stderr, flush=True)


def die(msg):
    sys.exit(f"keras_train: {msg}")


def read_idx(path, want_dims):
    """A gzipped IDX file of unsigned bytes as a uint8 array, decompressed straight into it
    (no second copy of the data on the way)."""
    try:
        f = gzip.open(path, "rb")
        head = f.read(4)
    except OSError as e:
        die(f"{path}: {e}")
    with f:
        if len(head) != 4 or head[0] != 0 or head[1] != 0 or head[2] != 0x08:
            die(f"{path}: not an IDX file of unsigned bytes")
        ndim = head[3]
        raw = f.read(4 * ndim)
        dims = tuple(int.from_bytes(raw[4 * i:4 * i + 4], "big") for i in range(ndim))
        if len(dims) != len(want_dims) or dims[1:] != want_dims[1:]:
            die(f"{path}: dimensions {dims}, expected (n,) + {want_dims[1:]}")
        arr = np.empty(dims, dtype=np.uint8)
        view, got = memoryview(arr.reshape(-1)), 0
        while got < arr.size:
            n = f.readinto(view[got:])
            if not n:
                die(f"{path}: truncated ({got} of {arr.size} bytes)")
            got += n
        if f.read(1):
            die(f"{path}: data after the last image")
    return arr


def load_fashion_mnist(data_dir, with_test):
    """(train images, train labels, test images, test labels); the test set only when
    with_test, else None, None."""
    t0 = time.perf_counter()
    sets = [None] * 4
    for k, (part, n) in enumerate((("train", 60000), ("t10k", 10000))[:2 if with_test else 1]):
        x = read_idx(os.path.join(data_dir, f"{part}-images-idx3-ubyte.gz"), (n, 28, 28))
        y = read_idx(os.path.join(data_dir, f"{part}-labels-idx1-ubyte.gz"), (n,))
        if x.shape[0] != y.shape[0] or y.max() > 9:
            die(f"{part}: {x.shape[0]} images against {y.shape[0]} labels, or a label above 9")
        sets[2 * k:2 * k + 2] = [x, y.astype(np.int32)]
    note(f"Fashion-MNIST loaded in {time.perf_counter() - t0:.2f} s "
         f"({sets[0].nbytes / 2**20:.1f} MiB of training images as uint8)")
    return sets


def to_float(xb):
    """A batch of images to float32 / 255, in place of a fresh float32 copy; float32 input
    (--data float32) is already scaled."""
    if xb.dtype == np.float32:
        return xb
    out = xb.astype(np.float32)
    np.divide(out, np.float32(255.0), out=out)
    return out


class Batches:
    """Index batches of a fresh permutation every epoch, by default_rng(seed)."""

    def __init__(self, n, seed):
        self.n, self.rng = n, np.random.default_rng(seed)

    def epoch(self, drop_last=False):
        order = self.rng.permutation(self.n)
        stop = self.n - self.n % BATCH if drop_last else self.n
        for i in range(0, stop, BATCH):
            yield order[i:i + BATCH]

    def forever(self):
        while True:
            yield from self.epoch(drop_last=True)


def thread_cpu_ticks():
    """CPU time (user + system, in clock ticks) and name of each thread of this process,
    by thread id."""
    ticks = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                name, rest = f.read().split(" (", 1)[1].rsplit(")", 1)
        except OSError:  # the thread ended
            continue
        fields = rest.split()
        ticks[tid] = (int(fields[11]) + int(fields[12]), name)  # utime, stime (fields 14, 15)
    return ticks


def busy_threads(before, after, wall):
    """(CPU seconds, name) of the threads that ran at least a tenth of `wall` between the
    two thread_cpu_ticks() snapshots, busiest first."""
    hz = os.sysconf("SC_CLK_TCK")
    secs = sorted((((t1 - before.get(tid, (0, ""))[0]) / hz, name)
                   for tid, (t1, name) in after.items()), reverse=True)
    return [s for s in secs if s[0] >= 0.1 * wall]


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    parser.add_argument("--threads", type=int, default=2,
                        help="OMP_NUM_THREADS and TensorFlow's intra- and inter-op threads "
                             "(default 2)")
    parser.add_argument("--seed", type=int, default=1)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="fewer warm-up and timed steps")
    mode.add_argument("--epochs", type=int, help="accuracy mode: train N epochs")
    parser.add_argument("--step", choices=("train_on_batch", "tf_function"),
                        default="train_on_batch",
                        help="model.train_on_batch (model.fit's compiled train function; the "
                             "default) or a hand-written tf.function train step")
    parser.add_argument("--data-dtype", choices=("uint8", "float32"), default="uint8",
                        help="keep the images as bytes (default) or as float32 / 255")
    parser.add_argument("--warmup", type=int, help="warm-up steps (default 20, --quick 5)")
    parser.add_argument("--steps", type=int,
                        help="timed steps (default 200 mlp, 60 cnn; --quick 50, 15)")
    parser.add_argument("--data", default=DATA_DIR, metavar="DIR",
                        help=f"the gzipped IDX files (default {DATA_DIR})")
    args = parser.parse_args()
    if args.threads < 1:
        die("--threads wants a positive count")
    if args.epochs is not None and args.epochs < 1:
        die("--epochs wants a positive count")

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

    train_x, train_y, test_x, test_y = load_fashion_mnist(args.data, args.epochs is not None)
    if args.data_dtype == "float32":
        train_x = to_float(train_x)  # the whole set, up front
        test_x = None if test_x is None else to_float(test_x)

    if args.model == "mlp":
        model = keras.Sequential([
            keras.Input((28, 28)), layers.Flatten(),
            layers.Dense(256, activation="relu"), layers.Dense(256, activation="relu"),
            layers.Dense(10)])
        shape = (-1, 28, 28)
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

    if args.step == "train_on_batch":
        def step(idx):
            return model.train_on_batch(batch(train_x, idx), train_y[idx])
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

    batches = Batches(train_x.shape[0], args.seed)
    if args.epochs is not None:
        t_start = time.perf_counter()
        for k in range(1, args.epochs + 1):
            t0, c0 = time.perf_counter(), time.process_time()
            total, seen = 0.0, 0
            for idx in batches.epoch():
                total += float(step(idx)) * len(idx)
                seen += len(idx)
            epoch_s = time.perf_counter() - t0
            util = (time.process_time() - c0) / epoch_s
            acc = test_accuracy()
            print(f"epoch {k} loss {total / seen:.4f} test_accuracy {acc:.4f} "
                  f"epoch_s {epoch_s:.2f} elapsed_s {time.perf_counter() - t_start:.2f}",
                  flush=True)
            note(f"epoch {k}: {seen / epoch_s:.0f} samples/s, cpu_util {util:.2f}")
        note(f"peak RSS {peak_rss_mib():.1f} MiB")
        return

    warmup, steps = (5, 50 if args.model == "mlp" else 15) if args.quick else \
        (20, 200 if args.model == "mlp" else 60)
    warmup = warmup if args.warmup is None else args.warmup
    steps = steps if args.steps is None else args.steps
    if warmup < 0 or steps < 1:
        die("--warmup wants a count of at least 0, --steps of at least 1")
    it = batches.forever()
    for _ in range(warmup):
        step(next(it))
    loss = None
    ticks0 = thread_cpu_ticks()
    t0, c0 = time.perf_counter(), time.process_time()
    step_s = []
    for _ in range(steps):
        s0 = time.perf_counter()
        loss = float(step(next(it)))
        step_s.append(time.perf_counter() - s0)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    busy = busy_threads(ticks0, thread_cpu_ticks(), wall)
    if not np.isfinite(loss):
        die(f"the loss is not finite after the timed steps ({loss})")
    note(f"{steps} timed steps in {wall:.3f} s ({wall / steps * 1e3:.2f} ms a step) after "
         f"{warmup} warm-up steps; last loss {loss:.4f}")
    note(f"cpu_util {cpu / wall:.2f}: {len(busy)} threads ran at least a tenth of the timed "
         f"steps' wall time (CPU s: {', '.join(f'{n} {b:.2f}' for b, n in busy)}; "
         f"{len(thread_cpu_ticks())} threads in the process)")
    note(f"single steps: median {statistics.median(step_s) * 1e3:.2f} ms, fastest "
         f"{min(step_s) * 1e3:.2f} ms, slowest {max(step_s) * 1e3:.2f} ms")
    print(f"bench tf_train_{args.model}_samples_per_s {steps * BATCH / wall:.1f} samples/s")
    print(f"bench tf_train_{args.model}_peak_rss {peak_rss_mib():.1f} MiB")
    print(f"bench tf_train_{args.model}_cpu_util {cpu / wall:.2f} ratio", flush=True)


if __name__ == "__main__":
    main()
