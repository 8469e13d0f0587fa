#!/usr/bin/env python3
"""torch_conv.py: the figures of bench_conv measured with PyTorch on the CPU.

The small CNN's layers on a batch of 128 float32 images, as bench_conv runs them:
  l1: conv 3x3, 1 -> 32 channels, VALID, on 28x28 (out 26x26), then max-pool 2x2 (13x13);
  l2: conv 3x3, 32 -> 64 channels, VALID, on 13x13 (out 11x11), then max-pool 2x2 (5x5);
or, with --model big_cnn, big_cnn's layers b1..b6 on a batch of 256 (3x3, SAME: b1 1 -> 64
and b2 64 -> 64 on 28x28, b3 64 -> 128 and b4 128 -> 128 on 14x14, b5 128 -> 256 and b6
256 -> 256 on 7x7), each followed by a max-pool 2x2.
Prints `bench torch_<name> <value> <unit>` with bench_conv's names:
  conv_<l1|l2>_fwd, conv_<l1|l2>_bwd_input, conv_<l1|l2>_bwd_filter in GFLOP/s (2·N·OH·OW·
  KH·KW·Cin·Cout flops each; the backward passes are aten.convolution_backward with one
  output asked for), maxpool_<l1|l2>_fwd and maxpool_<l1|l2>_bwd in GB/s (forward: input +
  output bytes; backward: x + dy + dx bytes, bench_conv's count, whatever torch reads).
torch keeps NCHW (contiguous) and NHWC (torch.channels_last) tensors; both layouts are
measured and printed with their layout in the name (conv_l1_fwd_nchw, ..._nhwc); the
unsuffixed figure, the one run_side_by_side.sh pairs with tapeflow's, is the faster layout
of that run (a note on stderr names it). Each figure is the best of 7 blocks after a
warm-up. Usage: python3 tests/bench/torch_conv.py [--threads N] [--quick]
[--model cnn|big_cnn]
"""
import argparse
import sys
import time
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

REPS = 7
# name, (H, W, Cin), Cout, kernel, padding
LAYERS = (("l1", (28, 28, 1), 32, 3, 0), ("l2", (13, 13, 32), 64, 3, 0))
BIG_LAYERS = (("b1", (28, 28, 1), 64, 3, 1), ("b2", (28, 28, 64), 64, 3, 1),
              ("b3", (14, 14, 64), 128, 3, 1), ("b4", (14, 14, 128), 128, 3, 1),
              ("b5", (7, 7, 128), 256, 3, 1), ("b6", (7, 7, 256), 256, 3, 1))


def note(msg):
    print(f"torch_conv note: {msg}", file=sys.stderr, flush=True)


def best_time(fn, iters):
    """Seconds per call: best of REPS blocks of `iters` calls after a warm-up block."""
    for _ in range(max(1, iters // 2)):
        fn()
    best = float("inf")
    for _ in range(REPS):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        best = min(best, (time.perf_counter() - t0) / iters)
    return best


def layer_figures(name, hwc, cout, k, pad, batch, fmt, iters):
    h, w, cin = hwc
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(batch, cin, h, w, generator=gen).to(memory_format=fmt)
    wt = (torch.randn(cout, cin, k, k, generator=gen) * 0.1).to(memory_format=fmt)
    y = F.conv2d(x, wt, padding=pad)
    dy = torch.randn(y.shape, generator=gen).to(memory_format=fmt)
    oh, ow = y.shape[2], y.shape[3]
    flops = 2.0 * batch * oh * ow * k * k * cin * cout
    cb = torch.ops.aten.convolution_backward
    args = (dy, x, wt, None, [1, 1], [pad, pad], [1, 1], False, [0, 0], 1)
    out = {}
    with torch.no_grad():
        out[f"conv_{name}_fwd"] = flops / best_time(lambda: F.conv2d(x, wt, padding=pad),
                                                    iters) / 1e9
        out[f"conv_{name}_bwd_input"] = flops / best_time(
            lambda: cb(*args, [True, False, False]), iters) / 1e9
        out[f"conv_{name}_bwd_filter"] = flops / best_time(
            lambda: cb(*args, [False, True, False]), iters) / 1e9
        # max-pool 2x2 on the conv's output
        p, idx = F.max_pool2d_with_indices(y, 2)
        dp = torch.randn(p.shape, generator=gen).to(memory_format=fmt)
        fwd_bytes = 4.0 * (y.numel() + p.numel())
        bwd_bytes = 4.0 * (y.numel() + p.numel() + y.numel())
        out[f"maxpool_{name}_fwd"] = fwd_bytes / best_time(
            lambda: F.max_pool2d(y, 2), iters) / 1e9
        mb = torch.ops.aten.max_pool2d_with_indices_backward
        out[f"maxpool_{name}_bwd"] = bwd_bytes / best_time(
            lambda: mb(dp, y, [2, 2], [2, 2], [0, 0], [1, 1], False, idx), iters) / 1e9
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    parser.add_argument("--quick", action="store_true", help="fewer calls a block")
    parser.add_argument("--model", choices=("cnn", "big_cnn"), default="cnn",
                        help="the layers of cnn (l1, l2; the default) or big_cnn (b1..b6)")
    args = parser.parse_args()
    layers, batch = (BIG_LAYERS, 256) if args.model == "big_cnn" else (LAYERS, 128)
    torch.set_num_threads(args.threads)
    note(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
         f"oneDNN {torch.backends.mkldnn.is_available()}")
    iters = 3 if args.quick else 20 if args.model == "cnn" else 5
    layouts = (("nchw", torch.contiguous_format), ("nhwc", torch.channels_last))
    res = {}
    for lname, fmt in layouts:
        for name, hwc, cout, k, pad in layers:
            for fig, v in layer_figures(name, hwc, cout, k, pad, batch, fmt, iters).items():
                res.setdefault(fig, {})[lname] = v
    for fig, by in res.items():
        unit = "GB/s" if fig.startswith("maxpool") else "GFLOP/s"
        for lname, v in by.items():
            print(f"bench torch_{fig}_{lname} {v:.2f} {unit}")
        win = max(by, key=by.get)
        note(f"{fig}: {win} is faster ({by[win]:.2f} against "
             f"{min(by.values()):.2f} {unit})")
        print(f"bench torch_{fig} {by[win]:.2f} {unit}", flush=True)


if __name__ == "__main__":
    main()
