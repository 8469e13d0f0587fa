#!/usr/bin/env python3
"""tf_ops.py: the variable figures of bench_ops measured with TensorFlow (eager) on the CPU.

Prints one line per figure, `bench tf_<name> <value> <unit>`: on a tf.Variable, the update
`v.assign_add(x)` on float32 [4] (best of 5, ns/op) and on float32 [1<<20] (GB/s, 3 * 4 * n
bytes a call: read v, read x, write v), and the snapshot `v.read_value()` on float32 [4]
(best of 5, ns/op). The value x is made once, outside the timed loops; assign_add is
called as user code calls it, with its default read_value=True.
Usage: python3 tests/bench/tf_ops.py [--threads N] [--quick]
"""
import argparse
import os
import time

# TensorFlow logs its CPU-feature and oneDNN notes on import; errors still show.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

OPS_PER_FRAME = 1000
OVERHEAD_REPS = 5
VAR_BIG_N = 1 << 20
VAR_BIG_REPS = 5


def best_ns_per_call(block, calls, reps):
    """Best-of-reps nanoseconds per call of block(), which makes `calls` calls."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        block()
        best = min(best, (time.perf_counter_ns() - t0) / calls)
    return best


def bench_variable_small(iters):
    """ns/op of v.assign_add(x) and of v.read_value() on a float32 [4] tf.Variable."""
    frames = max(1, iters // OPS_PER_FRAME)
    v = tf.Variable(tf.constant([1.0, 2.0, 3.0, 4.0], dtype=tf.float32))
    x = tf.constant([1.0, 0.0, 2.0, 1.0], dtype=tf.float32)

    def assign_add_block():
        for _ in range(frames):
            for _ in range(OPS_PER_FRAME):
                v.assign_add(x)

    def read_block():
        for _ in range(frames):
            for _ in range(OPS_PER_FRAME):
                v.read_value()

    v.assign_add(x)  # warm-up (the first call of an op builds its kernel)
    v.read_value()
    calls = frames * OPS_PER_FRAME
    return (best_ns_per_call(assign_add_block, calls, OVERHEAD_REPS),
            best_ns_per_call(read_block, calls, OVERHEAD_REPS))


def bench_variable_big(iters):
    """GB/s of v.assign_add(x) on a float32 [VAR_BIG_N] tf.Variable, after a warm-up call."""
    v = tf.Variable(tf.zeros([VAR_BIG_N], dtype=tf.float32))
    x = tf.random.stateless_uniform([VAR_BIG_N], seed=(1, 0), dtype=tf.float32)

    def block():
        for _ in range(iters):
            v.assign_add(x)

    v.assign_add(x)  # warm-up
    best = best_ns_per_call(block, iters, VAR_BIG_REPS)
    return 3.0 * 4 * VAR_BIG_N / best  # bytes per ns = GB/s


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2,
                        help="intra- and inter-op threads (default 2)")
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    args = parser.parse_args()

    # Before any op: TensorFlow fixes its thread pools when the eager context starts.
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    iters = 20000 if args.quick else 200000
    var_big_iters = 10 if args.quick else 100

    print(f"bench tf_version {tf.__version__} version", flush=True)
    print(f"bench tf_threads {tf.config.threading.get_intra_op_parallelism_threads()} count",
          flush=True)

    ns_add, ns_read = bench_variable_small(iters)
    print(f"bench tf_variable_assign_add_4 {ns_add:.1f} ns/op", flush=True)
    print(f"bench tf_variable_read_4 {ns_read:.1f} ns/op", flush=True)
    gbs = bench_variable_big(var_big_iters)
    print(f"bench tf_variable_assign_add_1m {gbs:.2f} GB/s", flush=True)


if __name__ == "__main__":
    main()
