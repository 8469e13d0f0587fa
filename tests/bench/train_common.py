"""train_common.py: what torch_train.py and keras_train.py, bench_train's twins, share: the
data, the command line, the batch order, the two modes' loops, their timing and what they
print. Each script keeps its framework's part: the thread setup, the model, the train step,
the test evaluation and its own notes.

Data: Debian's dataset-fashion-mnist (gzipped IDX, /usr/share/datasets/fashion-mnist), read
straight into uint8 arrays (47 MB of training images); each batch is gathered as bytes and
becomes float32 / 255 (inputs in [0, 1]), as tapeflow does. --data-dtype float32 converts
the whole set up front instead (188 MB; the peak RSS shows the difference). The test set is
loaded in accuracy mode only, as bench_train loads only the training set.
Batches: 128 images (big_cnn: 256) drawn from a permutation of the 60000 training images
made anew every epoch by numpy's default_rng(seed) (the same order in both scripts), the last
partial batch of an epoch kept (96 images; 469 steps an epoch); the timing mode's endless
stream of batches drops it. Adam's learning rate is 1e-3 in both.

Timing mode (the default): 20 warm-up steps, then 200 timed steps (mlp) or 60 (cnn)
(--quick: 5 and 50 / 15), big_cnn 3 warm-up and 20 timed steps (--quick: 1 and 2); prints,
with <name> torch_train (torch_train.py) or tf_train (keras_train.py),
  bench <name>_<model>_samples_per_s <value> samples/s   (timed samples / wall time)
  bench <name>_<model>_peak_rss <MiB> MiB   (ru_maxrss of the process after the timed
        steps: the interpreter, the framework, the data set and the training)
  bench <name>_<model>_cpu_util <cpu/wall> ratio   (process CPU time, all threads, over
        wall time in the timed steps: about --threads when the threads are busy)
and notes on stderr (the timed steps' wall time and last loss, the busiest threads, the
median, fastest and slowest single step).
Accuracy mode (--epochs N): trains N epochs and prints per epoch
  epoch <k> loss <mean training loss> test_accuracy <on the 10000 test images> epoch_s <s>
  elapsed_s <s since training began>
and notes on stderr (each epoch's samples/s and cpu_util, the peak RSS at the end).
The notes are prefixed "<script> note:" and the errors "<script>:", <script> torch_train or
keras_train.
The shared options: [--model mlp|cnn|big_cnn] [--threads N] [--seed S] [--quick | --epochs N]
[--warmup N] [--steps N] [--data-dtype uint8|float32] [--data DIR].
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
BIG_BATCH = 256  # big_cnn's batches
LR = 1e-3
EVAL_BATCH = 1000

_prog = "train_common"  # the script's name in notes and errors; parse_args sets it


def note(msg):
    print(f"{_prog} note: {msg}", file=sys.stderr, flush=True)


def die(msg):
    sys.exit(f"{_prog}: {msg}")


def parse_args(prog, doc, threads_help, add_options=None, add_options_after_dtype=None):
    """The command line of script `prog` (its notes' and errors' prefix from here on): the
    shared options with `threads_help` for --threads and the first line of `doc` as the
    description; add_options(parser) adds the script's own options after --epochs,
    add_options_after_dtype(parser) after --data-dtype (the order of --help)."""
    global _prog
    _prog = prog
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--model", choices=("mlp", "cnn", "big_cnn"), default="mlp")
    parser.add_argument("--threads", type=int, default=2, help=threads_help)
    parser.add_argument("--seed", type=int, default=1)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="fewer warm-up and timed steps")
    mode.add_argument("--epochs", type=int, help="accuracy mode: train N epochs")
    if add_options:
        add_options(parser)
    parser.add_argument("--data-dtype", choices=("uint8", "float32"), default="uint8",
                        help="keep the images as bytes (default) or as float32 / 255")
    if add_options_after_dtype:
        add_options_after_dtype(parser)
    parser.add_argument("--warmup", type=int,
                        help="warm-up steps (default 20, --quick 5; big_cnn 3, 1)")
    parser.add_argument("--steps", type=int,
                        help="timed steps (default 200 mlp, 60 cnn, 20 big_cnn; --quick 50, 15, "
                             "2)")
    parser.add_argument("--data", default=DATA_DIR, metavar="DIR",
                        help=f"the gzipped IDX files (default {DATA_DIR})")
    args = parser.parse_args()
    if args.threads < 1:
        die("--threads wants a positive count")
    if args.epochs is not None and args.epochs < 1:
        die("--epochs wants a positive count")
    return args


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


def load_fashion_mnist(data_dir, with_test, label_dtype):
    """(train images, train labels, test images, test labels), the labels as label_dtype;
    the test set only when with_test, else None, None."""
    t0 = time.perf_counter()
    sets = [None] * 4
    for k, (part, n) in enumerate((("train", 60000), ("t10k", 10000))[:2 if with_test else 1]):
        x = read_idx(os.path.join(data_dir, f"{part}-images-idx3-ubyte.gz"), (n, 28, 28))
        y = read_idx(os.path.join(data_dir, f"{part}-labels-idx1-ubyte.gz"), (n,))
        if x.shape[0] != y.shape[0] or y.max() > 9:
            die(f"{part}: {x.shape[0]} images against {y.shape[0]} labels, or a label above 9")
        sets[2 * k:2 * k + 2] = [x, y.astype(label_dtype)]
    note(f"Fashion-MNIST loaded in {time.perf_counter() - t0:.2f} s "
         f"({sets[0].nbytes / 2**20:.1f} MiB of training images as uint8)")
    return sets


def load_data(args, label_dtype):
    """load_fashion_mnist for the command line: the test set in accuracy mode only, the
    images converted up front with --data-dtype float32."""
    train_x, train_y, test_x, test_y = load_fashion_mnist(args.data, args.epochs is not None,
                                                          label_dtype)
    if args.data_dtype == "float32":
        train_x = to_float(train_x)  # the whole set, up front
        test_x = None if test_x is None else to_float(test_x)
    return train_x, train_y, test_x, test_y


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

    def __init__(self, n, seed, batch=BATCH):
        self.n, self.rng, self.batch = n, np.random.default_rng(seed), batch

    def epoch(self, drop_last=False):
        order = self.rng.permutation(self.n)
        stop = self.n - self.n % self.batch if drop_last else self.n
        for i in range(0, stop, self.batch):
            yield order[i:i + self.batch]

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


def batch_size(model):
    """The batch of a model: BIG_BATCH for big_cnn, BATCH otherwise."""
    return BIG_BATCH if model == "big_cnn" else BATCH


def run(args, name, step, test_accuracy, n_train, loss_value=float, tag=None):
    """Trains in the mode of args and prints its lines (see the module's docstring): step(idx)
    trains on the training images of index batch idx and returns the loss, made a float by
    loss_value (in timing mode only after the timed steps, on the last one); test_accuracy()
    is the accuracy on the test set (accuracy mode only); n_train the number of training
    images; name the figures' prefix (bench <name>_<tag>_..., tag the model by default)."""
    batch = batch_size(args.model)
    tag = tag or args.model
    batches = Batches(n_train, args.seed, batch)
    if args.epochs is not None:
        t_start = time.perf_counter()
        for k in range(1, args.epochs + 1):
            t0, c0 = time.perf_counter(), time.process_time()
            total, seen = 0.0, 0
            for idx in batches.epoch():
                total += loss_value(step(idx)) * len(idx)
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

    warmup, steps = {"mlp": ((5, 50), (20, 200)), "cnn": ((5, 15), (20, 60)),
                     "big_cnn": ((1, 2), (3, 20))}[args.model][0 if args.quick else 1]
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
        loss = step(next(it))
        step_s.append(time.perf_counter() - s0)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    busy = busy_threads(ticks0, thread_cpu_ticks(), wall)
    loss = loss_value(loss)
    if not np.isfinite(loss):
        die(f"the loss is not finite after the timed steps ({loss})")
    note(f"{steps} timed steps in {wall:.3f} s ({wall / steps * 1e3:.2f} ms a step) after "
         f"{warmup} warm-up steps; last loss {loss:.4f}")
    note(f"cpu_util {cpu / wall:.2f}: {len(busy)} threads ran at least a tenth of the timed "
         f"steps' wall time (CPU s: {', '.join(f'{n} {b:.2f}' for b, n in busy)}; "
         f"{len(thread_cpu_ticks())} threads in the process)")
    note(f"single steps: median {statistics.median(step_s) * 1e3:.2f} ms, fastest "
         f"{min(step_s) * 1e3:.2f} ms, slowest {max(step_s) * 1e3:.2f} ms")
    print(f"bench {name}_{tag}_samples_per_s {steps * batch / wall:.1f} samples/s")
    print(f"bench {name}_{tag}_peak_rss {peak_rss_mib():.1f} MiB")
    print(f"bench {name}_{tag}_cpu_util {cpu / wall:.2f} ratio", flush=True)
