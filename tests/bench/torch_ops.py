#!/usr/bin/env python3
"""torch_ops.py: the figures of bench_ops measured with PyTorch on the CPU, for comparison.

Prints one line per figure, `bench torch_<name> <value> <unit>`: the per-op overhead of
torch.add on float32 [4] and torch.matmul on float32 4x4 (best of 5, ns/op); the variable
figures on a torch.nn.Parameter, updated under torch.no_grad() (entered once around each
block of calls, as an optimizer's step does): `p.add_(x)` on float32 [4] (ns/op) and on
float32 [1<<20] (GB/s, 3 * 4 * n bytes a call: read p, read x, write p), and the snapshot
`p.detach()` on float32 [4] (ns/op); a linear layer's product with its bias,
torch.addmm, on a transformer's shapes (GFLOP/s); and square float32 matmul throughput (best
of a few reps after a warm-up, GFLOP/s).
Usage: python3 tests/bench/torch_ops.py [--threads N] [--quick]
"""
import argparse
import time
import warnings

# torch warns on import when NumPy is absent; nothing here needs NumPy.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402

OPS_PER_FRAME = 1000
OVERHEAD_REPS = 5
VAR_BIG_N = 1 << 20
VAR_BIG_REPS = 5


def bench_overhead(fn, a, b, iters):
    """Best-of-5 nanoseconds per call of fn(a, b), in blocks of OPS_PER_FRAME calls."""
    frames = max(1, iters // OPS_PER_FRAME)
    best = float("inf")
    for _ in range(OVERHEAD_REPS):
        t0 = time.perf_counter_ns()
        for _ in range(frames):
            for _ in range(OPS_PER_FRAME):
                fn(a, b)
        t = (time.perf_counter_ns() - t0) / (frames * OPS_PER_FRAME)
        best = min(best, t)
    return best


def best_ns_per_call(block, calls, reps):
    """Best-of-reps nanoseconds per call of block(), which makes `calls` calls."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        block()
        best = min(best, (time.perf_counter_ns() - t0) / calls)
    return best


def bench_variable_small(iters):
    """ns/op of p.add_(x) and of p.detach() on a float32 [4] Parameter (x made once)."""
    frames = max(1, iters // OPS_PER_FRAME)
    p = torch.nn.Parameter(torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float32))
    x = torch.tensor([1.0, 0.0, 2.0, 1.0], dtype=torch.float32)

    def assign_add_block():
        with torch.no_grad():
            for _ in range(frames):
                for _ in range(OPS_PER_FRAME):
                    p.add_(x)

    def read_block():
        for _ in range(frames):
            for _ in range(OPS_PER_FRAME):
                p.detach()

    calls = frames * OPS_PER_FRAME
    return (best_ns_per_call(assign_add_block, calls, OVERHEAD_REPS),
            best_ns_per_call(read_block, calls, OVERHEAD_REPS))


def bench_variable_big(iters):
    """GB/s of p.add_(x) on a float32 [VAR_BIG_N] Parameter, after a warm-up call."""
    p = torch.nn.Parameter(torch.zeros(VAR_BIG_N, dtype=torch.float32))
    x = torch.rand(VAR_BIG_N, dtype=torch.float32, generator=torch.Generator().manual_seed(1))

    def block():
        with torch.no_grad():
            for _ in range(iters):
                p.add_(x)

    with torch.no_grad():
        p.add_(x)  # warm-up
    best = best_ns_per_call(block, iters, VAR_BIG_REPS)
    return 3.0 * 4 * VAR_BIG_N / best  # bytes per ns = GB/s


def gemm_reps(n, quick):
    if quick:
        return 2
    if n <= 256:
        return 20
    if n <= 512:
        return 10
    if n <= 1024:
        return 5
    return 3


def bench_sgemm(n, quick):
    """GFLOP/s of C = A @ B for square float32 n x n (a new C each time, as tapeflow)."""
    gen = torch.Generator().manual_seed(n)
    a = torch.rand((n, n), dtype=torch.float32, generator=gen) * 2 - 1
    b = torch.rand((n, n), dtype=torch.float32, generator=gen) * 2 - 1
    torch.matmul(a, b)  # warm-up
    best = float("inf")
    for _ in range(gemm_reps(n, quick)):
        t0 = time.perf_counter_ns()
        c = torch.matmul(a, b)
        t = time.perf_counter_ns() - t0
        del c
        best = min(best, t)
    return 2.0 * n * n * n / best  # flop per ns = GFLOP/s


def bench_linear(m, k, n, quick):
    """GFLOP/s of x @ w + bias as one op (torch.addmm, nn.Linear's), best of a few."""
    gen = torch.Generator().manual_seed(21)
    x = torch.rand((m, k), dtype=torch.float32, generator=gen) * 2 - 1
    w = torch.rand((k, n), dtype=torch.float32, generator=gen) * 2 - 1
    bias = torch.rand((n,), dtype=torch.float32, generator=gen) * 2 - 1
    torch.addmm(bias, x, w)  # warm-up
    best = float("inf")
    for _ in range(2 if quick else 30):
        t0 = time.perf_counter_ns()
        y = torch.addmm(bias, x, w)
        t = time.perf_counter_ns() - t0
        del y
        best = min(best, t)
    return 2.0 * m * k * n / best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    parser.add_argument("--quick", action="store_true", help="fewer iterations, sizes 256 and 512")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    iters = 20000 if args.quick else 200000
    var_big_iters = 10 if args.quick else 100
    sizes = (256, 512) if args.quick else (256, 512, 1024, 2048)

    print(f"bench torch_version {torch.__version__} version", flush=True)
    print(f"bench torch_threads {torch.get_num_threads()} count", flush=True)

    # Plain eager mode on tensors that do not require grad, as tapeflow's ops outside a tape.
    x4 = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float32)
    ns = bench_overhead(torch.add, x4, x4, iters)
    print(f"bench torch_add_f32_4_overhead {ns:.1f} ns/op", flush=True)

    m = torch.rand((4, 4), dtype=torch.float32, generator=torch.Generator().manual_seed(7))
    ns = bench_overhead(torch.matmul, m, m, iters)
    print(f"bench torch_matmul_f32_4_overhead {ns:.1f} ns/op", flush=True)

    ns_add, ns_read = bench_variable_small(iters)
    print(f"bench torch_variable_assign_add_4 {ns_add:.1f} ns/op", flush=True)
    print(f"bench torch_variable_read_4 {ns_read:.1f} ns/op", flush=True)
    gbs = bench_variable_big(var_big_iters)
    print(f"bench torch_variable_assign_add_1m {gbs:.2f} GB/s", flush=True)

    for m, k, n in ((2048, 128, 128), (2048, 128, 512), (2048, 512, 128))[: 1 if args.quick else 3]:
        gfs = bench_linear(m, k, n, args.quick)
        print(f"bench torch_linear_{m}x{k}x{n} {gfs:.2f} GFLOP/s", flush=True)

    for n in sizes:
        print(f"bench torch_sgemm_{n} {bench_sgemm(n, args.quick):.2f} GFLOP/s", flush=True)


if __name__ == "__main__":
    main()
