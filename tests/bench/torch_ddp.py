#!/usr/bin/env python3
"""torch_ddp.py: data-parallel Fashion-MNIST training, PyTorch DDP on gloo (CPU); bench_ddp's twin.

The models and the recipe of torch_train.py (and bench_train): --model mlp (784-256-256-10,
ReLU) or cnn (conv 3x3 32, max-pool 2, conv 3x3 64, max-pool 2, dense 128, dense 10), torch's
default initializers, Adam lr 1e-3 (torch's default implementation), mean sparse softmax
cross-entropy from logits, global batches of 128 from train_common.py's seeded permutation
(the same order on every rank, a fresh permutation every epoch, the last partial batch
dropped). The cnn runs channels_last as torch_train.py does (--memory-format nchw to change).

Two modes, picked by the environment:
  - one process (WORLD_SIZE unset or 1), by default on 2 threads (torch.set_num_threads and
    set_num_interop_threads): the plain model on the whole batch of 128, as torch_train.py;
    prints
      bench torch_ddp_<model>_single_samples_per_s <value> samples/s
  - N processes under torchrun (WORLD_SIZE > 1), by default on 1 thread each: the model in
    DistributedDataParallel, gloo initialized from the environment (env://), rank r training
    on rows [r*128/N, (r+1)*128/N) of every global batch (64 rows each for N = 2; 128 must
    divide by N); DDP broadcasts rank 0's initial weights and averages the gradients (its
    buckets, bucket_cap_mb 25: one bucket each for these models' ~1 MB of gradients, as
    DDP's logging data says after the first step). Rank 0 prints
      bench torch_ddp_<model>_samples_per_s <value> samples/s   (global: steps * 128 / wall)
      bench torch_ddp_<model>_allreduce_ms <value> ms
      bench torch_ddp_<model>_allreduce_gbps <value> GB/s
    The all-reduce figures come after the training: dist.all_reduce (SUM) of one flat
    float32 buffer of the model's gradient size (mlp 269322, cnn 225034 values, ~1 MB),
    timed over --allreduce-iters calls after 5 untimed ones, every rank starting after a
    barrier; _ms is rank 0's mean time per call (one step's gradient all-reduce without the
    overlap with the backward pass) and _gbps the gradient bytes / that time (algorithm
    bandwidth; for 2 ranks the ring's bus bandwidth 2(N-1)/N * bytes / time is the same).
    --hook-timing also times DDP's own all-reduce in the training loop, through a comm hook
    wrapping DDP's default allreduce_hook (launch to completion of each bucket's future,
    summed per step; it overlaps the backward pass), printed as a note.
    --sweep notes the mean all-reduce time of flat buffers from 4 KiB to 16 MiB (the
    per-call latency and per-byte cost for the README's scaling estimate).
    After the timed steps the ranks compare a hash of their parameters (a note says whether
    they are identical, as DDP promises).
On a 2-core machine the figures need both cores idle: one other busy process makes the
1-process, 2-thread mode collapse (torch's OpenMP threads wait on each other at every op:
the mlp from ~40000-60000 down to ~1000-10000 samples/s) far more than the 2 single-threaded
ranks (~15000-20000 samples/s either way), so compare runs taken in the same conditions.
Measured on a 2-core AMD EPYC, torch 2.15, both cores idle at the start (medians of 3):
mlp 58000 samples/s alone on 2 threads against 21900 on 2 ranks (0.38x; all-reduce of its
1.08 MB 1.0-2.3 ms, 0.5-1.1 GB/s); cnn 3980 against 4100 (1.03x; 0.90 MB in 1.6-2.2 ms).
gloo's all-reduce costs ~1-2 ms even for 4 KiB here, ~11 ms for 16 MiB (~1.5 GB/s).
Both modes time --steps steps (default 200 mlp, 60 cnn; --quick 50, 15) after --warmup
steps (default 20, --quick 5), and note on stderr the wall time, the last loss, the process's
cpu_util and the median, fastest and slowest single step (rank 0's).

Usage:
  1 process, 2 threads:
    python3 tests/bench/torch_ddp.py --model mlp|cnn [--quick] [--steps N]
  2 processes, 1 thread each (OMP_NUM_THREADS=1, which torchrun also sets when it is unset):
    OMP_NUM_THREADS=1 torchrun --standalone --nproc_per_node 2 tests/bench/torch_ddp.py \\
        --model mlp|cnn [--quick] [--steps N]
  Other options: [--threads N] [--seed S] [--warmup N] [--allreduce-iters K] [--hook-timing]
    [--sweep] [--memory-format nchw|channels_last] [--data DIR]
Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist), read by
train_common.py, each rank loading the training set.
"""
import argparse
import hashlib
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_common  # noqa: E402  (after the path)
from train_common import BATCH, DATA_DIR, LR, Batches, load_fashion_mnist, to_float  # noqa: E402

PROG = "torch_ddp"
train_common._prog = PROG  # train_common's notes and errors carry this script's name


def note(msg):
    print(f"{PROG} note: {msg}", file=sys.stderr, flush=True)


def die(msg):
    sys.exit(f"{PROG}: {msg}")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    parser.add_argument("--threads", type=int,
                        help="torch threads per process (default 2 alone, 1 under torchrun)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="fewer warm-up and timed steps")
    parser.add_argument("--warmup", type=int, help="warm-up steps (default 20, --quick 5)")
    parser.add_argument("--steps", type=int,
                        help="timed steps (default 200 mlp, 60 cnn; --quick 50, 15)")
    parser.add_argument("--allreduce-iters", type=int,
                        help="timed all-reduce calls of the flat buffer (default 100, "
                             "--quick 30)")
    parser.add_argument("--hook-timing", action="store_true",
                        help="also time DDP's all-reduce in training, through a comm hook")
    parser.add_argument("--sweep", action="store_true",
                        help="note all-reduce times of buffers from 4 KiB to 16 MiB")
    parser.add_argument("--memory-format", choices=("nchw", "channels_last"),
                        default="channels_last",
                        help="cnn: torch's memory format (default channels_last)")
    parser.add_argument("--data", default=DATA_DIR, metavar="DIR",
                        help=f"the gzipped IDX files (default {DATA_DIR})")
    args = parser.parse_args()
    if args.threads is not None and args.threads < 1:
        die("--threads wants a positive count")
    args.warmup = (5 if args.quick else 20) if args.warmup is None else args.warmup
    if args.steps is None:
        args.steps = (50 if args.model == "mlp" else 15) if args.quick else \
            (200 if args.model == "mlp" else 60)
    if args.allreduce_iters is None:
        args.allreduce_iters = 30 if args.quick else 100
    if args.warmup < 0 or args.steps < 1 or args.allreduce_iters < 1:
        die("--warmup wants a count of at least 0, --steps and --allreduce-iters of at least 1")
    return args


def build_model(nn, name):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                             nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)), (-1, 28, 28)
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(64 * 5 * 5, 128), nn.ReLU(),
                         nn.Linear(128, 10)), (-1, 1, 28, 28)


def time_allreduce(torch, dist, nvalues, iters):
    """Mean seconds of dist.all_reduce (SUM) of a float32 buffer of nvalues on this rank,
    over iters calls after 5 untimed ones, all ranks starting after a barrier."""
    buf = torch.ones(nvalues, dtype=torch.float32)
    for _ in range(5):
        dist.all_reduce(buf)
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(buf)
    return (time.perf_counter() - t0) / iters


def main():
    args = parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world < 1 or BATCH % world:
        die(f"WORLD_SIZE {world}: the global batch of {BATCH} must divide into equal shards")
    threads = args.threads or (2 if world == 1 else 1)
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch  # noqa: E402  (after OMP_NUM_THREADS)
    import torch.nn as nn  # noqa: E402
    import torch.nn.functional as F  # noqa: E402
    import torch.distributed as dist  # noqa: E402

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(threads)
    torch.manual_seed(args.seed)

    def note0(msg):
        if rank == 0:
            note(msg)

    if world > 1:
        if not dist.is_gloo_available():
            die("this torch has no gloo backend")
        dist.init_process_group("gloo", init_method="env://")
        if dist.get_world_size() != world or dist.get_rank() != rank:
            die(f"gloo says rank {dist.get_rank()} of {dist.get_world_size()}, the "
                f"environment rank {rank} of {world}")

    train_x, train_y, _, _ = load_fashion_mnist(args.data, False, np.int64) if rank == 0 \
        else _quiet_load(args.data)
    train_y_t = torch.from_numpy(train_y)

    model, shape = build_model(nn, args.model)
    channels_last = args.model == "cnn" and args.memory_format == "channels_last"
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    params = list(model.parameters())
    nparams = sum(p.numel() for p in params)
    hook_s = []  # per step: summed bucket all-reduce seconds (--hook-timing)
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model)
        if args.hook_timing:
            from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import \
                allreduce_hook
            acc = [0.0]

            def timed_hook(state, bucket):
                t0 = time.perf_counter()

                def done(fut):
                    acc[0] += time.perf_counter() - t0
                    return fut.value()

                return allreduce_hook(state, bucket).then(done)

            model.register_comm_hook(None, timed_hook)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    shard = BATCH // world
    lo, hi = rank * shard, (rank + 1) * shard
    note0(f"torch {torch.__version__}, {world} process(es), {torch.get_num_threads()} "
          f"thread(s) and {torch.get_num_interop_threads()} interop thread(s) each, model "
          f"{args.model} ({nparams} parameters, {nparams * 4} gradient bytes), memory format "
          f"{('channels_last' if channels_last else 'NCHW') if args.model == 'cnn' else '-'}, "
          f"global batch {BATCH}, {shard} rows a rank"
          + (f", backend {dist.get_backend()}" if world > 1 else ""))

    def step(idx):
        idx = idx[lo:hi]
        x = torch.from_numpy(to_float(train_x[idx])).view(shape)
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        y = train_y_t[torch.from_numpy(idx)]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    it = Batches(train_x.shape[0], args.seed).forever()
    for _ in range(args.warmup):
        step(next(it))
    if world > 1:
        dist.barrier()
    step_s = []
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(args.steps):
        s0 = time.perf_counter()
        if args.hook_timing and world > 1:
            acc[0] = 0.0
        loss = step(next(it))
        step_s.append(time.perf_counter() - s0)
        if args.hook_timing and world > 1:
            hook_s.append(acc[0])
    if world > 1:
        dist.barrier()  # the wall time covers every rank's steps
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    loss = loss.item()
    if not np.isfinite(loss):
        die(f"rank {rank}: the loss is not finite after the timed steps ({loss})")
    note0(f"{args.steps} timed steps in {wall:.3f} s ({wall / args.steps * 1e3:.2f} ms a "
          f"step) after {args.warmup} warm-up steps; rank 0's last loss {loss:.4f}; rank 0's "
          f"cpu_util {cpu / wall:.2f}")
    note0(f"single steps (rank 0): median {statistics.median(step_s) * 1e3:.2f} ms, fastest "
          f"{min(step_s) * 1e3:.2f} ms, slowest {max(step_s) * 1e3:.2f} ms")
    samples_per_s = args.steps * BATCH / wall

    if world == 1:
        print(f"bench torch_ddp_{args.model}_single_samples_per_s {samples_per_s:.1f} "
              f"samples/s", flush=True)
        return

    if hook_s:
        note0(f"DDP's all-reduce in training (comm hook, launch to completion, summed over "
              f"the buckets, overlapping the backward pass): median "
              f"{statistics.median(hook_s) * 1e3:.3f} ms a step, mean "
              f"{statistics.mean(hook_s) * 1e3:.3f} ms")
    # every rank's parameters, hashed and gathered: identical after DDP's averaged steps?
    h = hashlib.sha256()
    for p in params:
        h.update(p.detach().contiguous().numpy().tobytes())
    digests = [None] * world
    dist.all_gather_object(digests, h.hexdigest())
    same = "identical" if len(set(digests)) == 1 else "DIFFERENT"
    note0(f"parameters after the timed steps: {same} on the {world} ranks "
          f"(sha256 {digests[0][:16]}...)")

    ar_s = time_allreduce(torch, dist, nparams, args.allreduce_iters)
    gbps = nparams * 4 / ar_s / 1e9
    note0(f"all-reduce of {nparams * 4} bytes (flat float32, SUM, gloo): "
          f"{args.allreduce_iters} calls, {ar_s * 1e3:.3f} ms a call")
    if args.sweep:
        for kib in (4, 16, 64, 256, 1024, 4096, 16384):
            s = time_allreduce(torch, dist, kib * 256, max(5, args.allreduce_iters // 4))
            note0(f"sweep: all-reduce of {kib} KiB: {s * 1e6:.1f} us, "
                  f"{kib * 1024 / s / 1e9:.3f} GB/s")
    if rank == 0:
        print(f"bench torch_ddp_{args.model}_samples_per_s {samples_per_s:.1f} samples/s")
        print(f"bench torch_ddp_{args.model}_allreduce_ms {ar_s * 1e3:.3f} ms")
        print(f"bench torch_ddp_{args.model}_allreduce_gbps {gbps:.3f} GB/s", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def _quiet_load(data_dir):
    """load_fashion_mnist without its note (ranks other than 0)."""
    saved = train_common.note
    train_common.note = lambda msg: None
    try:
        return load_fashion_mnist(data_dir, False, np.int64)
    finally:
        train_common.note = saved


if __name__ == "__main__":
    main()
