#!/usr/bin/env python3
"""torch_gpu.py: the twins of bench_gpu measured with PyTorch on the same GPU (cuda:0).

Prints `bench torch_<name> <value> <unit>`: torch.mm of float32 N x N (TFLOP/s; N 4096,
1024 with --quick), a + b on float32 [n] (GB/s over 12 n bytes) and b.copy_(a) (GB/s over
8 n bytes), and the small-op dispatch of torch.add on float32 [4] on the GPU (us/op, issued
back to back, synchronised at the end), each the best of several runs after a warm-up.
Usage: python3 tests/bench/torch_gpu.py [--quick]
"""
import argparse
import time

import torch


def timed(fn, reps):
    """Best seconds of fn() over reps runs after one warm-up, synchronised around each."""
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("skipped: no GPU")
        return
    dev = torch.device("cuda:0")
    torch.backends.cuda.matmul.allow_tf32 = False  # full float32, as tapeflow's cuBLAS call
    print("torch_gpu on", torch.cuda.get_device_name(0))
    n = 1024 if args.quick else 4096
    reps = 3 if args.quick else 10
    a = torch.rand(n, n, device=dev)
    b = torch.rand(n, n, device=dev)
    t = timed(lambda: torch.mm(a, b), reps)
    print(f"bench torch_gpu_sgemm_{n} {2 * n ** 3 / t / 1e12:.2f} TFLOP/s")
    m = (1 << 22) if args.quick else (1 << 26)
    x = torch.rand(m, device=dev)
    y = torch.rand(m, device=dev)
    t = timed(lambda: x + y, reps)
    print(f"bench torch_gpu_add_f32 {12 * m / t / 1e9:.1f} GB/s")
    z = torch.empty_like(x)
    t = timed(lambda: z.copy_(x), reps)
    print(f"bench torch_gpu_copy_d2d {8 * m / t / 1e9:.1f} GB/s")
    s = torch.rand(4, device=dev)
    ops = 2048 if args.quick else 20000

    def small():
        for _ in range(ops):
            torch.add(s, s)

    t = timed(small, 5)
    print(f"bench torch_gpu_small_add {t / ops * 1e6:.2f} us/op")


if __name__ == "__main__":
    main()
