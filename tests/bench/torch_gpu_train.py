#!/usr/bin/env python3
"""torch_gpu_train.py: the twins of bench_gpu_train measured with PyTorch on the same GPU.

Prints `bench torch_<name> <value> <unit>` with bench_gpu_train's names:
  gpu_train_<mlp|cnn>_samples_per_s  samples/s: the Fashion-MNIST models of torch_train.py
      (mlp 784-256-256-10 ReLU; cnn conv 3x3 32, maxpool 2, conv 3x3 64, maxpool 2, linear
      128, linear 10) on cuda:0, the cnn channels_last with cudnn.benchmark on; Adam lr 1e-3
      (fused=True), F.cross_entropy, accuracy counted on the device, batches of 128 in a
      shuffled order taken from float32 images (28x28, values in [0, 1)) and random labels
      in host memory, each batch copied to the GPU (as bench_gpu_train's tfl_model_fit);
      20 warm-up steps, then the timed ones (mlp 400, cnn 200; --quick 10);
  gpu_train_big_cnn[_tf32|_bf16]_samples_per_s  samples/s: the same for bench_gpu_train's
      VGG-style CNN (conv 3x3 padding 1 relu: 64, 64, maxpool, 128, 128, maxpool, 256, 256,
      maxpool, linear 512 relu, linear 10), batches of 256 (timed steps 100; --quick 5), in
      float32 (TF32 off), with TF32 on for matmuls and cuDNN, and under bf16 autocast;
  gpu_adam_<1e7|1e8>, gpu_adam_1e8_x64  GB/s: one step of torch.optim.Adam(fused=True) on n
      float32 parameters (one tensor, or 64 of n/64), counted as 28 n bytes (reads g, p, m, v,
      writes p, m, v), as bench_gpu_train counts;
  gpu_copy_d2d_<1e7|1e8>  GB/s: b.copy_(a) of n float32 on the device, 8 n bytes;
  gpu_adam_copy_ratio_1e8  ratio;
  gpu_conv_<l1|l2|l3>_<fwd|bwd_input|bwd_filter>  GFLOP/s: F.conv2d and
      aten.convolution_backward (one output asked for) on bench_gpu_train's layers, batch 128,
      channels_last, cuDNN with cudnn.benchmark on, TF32 off (full float32, as tapeflow);
  gpu_maxpool_<l1|l2>_fwd  GB/s: F.max_pool2d 2x2 on the conv's output (in + out bytes).
Each figure is the best of several blocks after a warm-up, synchronised around each block.
Without a GPU it prints "skipped: no GPU" and exits 0.
Usage: python3 tests/bench/torch_gpu_train.py [--quick]
"""
import argparse
import sys
import time
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

BATCH = 128
WARM = 20
LAYERS = (("l1", (28, 28, 1), 32, 3), ("l2", (13, 13, 32), 64, 3), ("l3", (14, 14, 64), 128, 3))


def note(msg):
    print(f"torch_gpu_train note: {msg}", file=sys.stderr, flush=True)


def best_block(fn, iters, reps):
    """Seconds per call: best of reps blocks of iters calls after a warm-up block."""
    for _ in range(iters):
        fn()
    best = float("inf")
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / iters)
    return best


def synthetic(n, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(n, 28, 28, generator=gen), torch.randint(0, 10, (n,), generator=gen)


def big_cnn():
    def block(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(),
                nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
    return nn.Sequential(*block(1, 64), *block(64, 128), *block(128, 256), nn.Flatten(),
                         nn.Linear(256 * 3 * 3, 512), nn.ReLU(), nn.Linear(512, 10))


def train_samples_per_s(model_name, steps, dev, mode="fp32"):
    torch.manual_seed(1)
    torch.backends.cudnn.allow_tf32 = mode == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    batch = 256 if model_name == "big_cnn" else BATCH
    if model_name == "big_cnn":
        model = big_cnn()
        shape = (-1, 1, 28, 28)
    elif model_name == "mlp":
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                              nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
        shape = (-1, 28, 28)
    else:
        model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(64 * 5 * 5, 128), nn.ReLU(), nn.Linear(128, 10))
        shape = (-1, 1, 28, 28)
    cl = model_name != "mlp"
    model = model.to(dev)
    if cl:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)

    def epoch(x_all, y_all, seed):
        order = torch.randperm(x_all.shape[0], generator=torch.Generator().manual_seed(seed))
        loss_sum = torch.zeros((), device=dev)
        correct = torch.zeros((), device=dev, dtype=torch.int64)
        for i in range(0, x_all.shape[0], batch):
            idx = order[i:i + batch]
            x = x_all[idx].view(shape).to(dev)
            y = y_all[idx].to(dev)
            if cl:
                x = x.contiguous(memory_format=torch.channels_last)
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=mode == "bf16"):
                logits = model(x)
                loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            loss_sum += loss.detach() * y.shape[0]
            correct += (logits.argmax(1) == y).sum()
        return (loss_sum / x_all.shape[0]).item()

    wx, wy = synthetic(WARM * batch, 11)
    tx, ty = synthetic(steps * batch, 12)
    epoch(wx, wy, 1)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    loss = epoch(tx, ty, 1)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    if not 0 < loss < 10:
        raise SystemExit(f"torch_gpu_train: the loss {loss} is not finite")
    return steps * batch / wall


def adam_gbs(n, parts, reps, dev):
    each = n // parts
    params = [torch.nn.Parameter(torch.rand(each, device=dev) * 2 - 1) for _ in range(parts)]
    for p in params:
        p.grad = (torch.rand(each, device=dev) * 2 - 1) * 1e-2
    opt = torch.optim.Adam(params, lr=1e-3, fused=True)
    for _ in range(2):
        opt.step()
    t = best_block(opt.step, 1, reps)
    return 28.0 * each * parts / t / 1e9


def copy_gbs(n, reps, dev):
    a = torch.zeros(n, device=dev)
    b = torch.empty_like(a)
    t = best_block(lambda: b.copy_(a), 1, reps)
    return 8.0 * n / t / 1e9


def conv_layer(name, hwc, cout, k, iters, reps, dev):
    h, w, cin = hwc
    fmt = torch.channels_last
    gen = torch.Generator(device=dev).manual_seed(7)
    x = torch.randn(BATCH, cin, h, w, generator=gen, device=dev).to(memory_format=fmt)
    wt = (torch.randn(cout, cin, k, k, generator=gen, device=dev) * 0.1).to(memory_format=fmt)
    y = F.conv2d(x, wt)
    dy = torch.randn(y.shape, generator=gen, device=dev).to(memory_format=fmt)
    oh, ow = y.shape[2], y.shape[3]
    flops = 2.0 * BATCH * oh * ow * k * k * cin * cout
    cb = torch.ops.aten.convolution_backward
    args = (dy, x, wt, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    with torch.no_grad():
        t = best_block(lambda: F.conv2d(x, wt), iters, reps)
        print(f"bench torch_gpu_conv_{name}_fwd {flops / t / 1e9:.1f} GFLOP/s")
        t = best_block(lambda: cb(*args, [True, False, False]), iters, reps)
        print(f"bench torch_gpu_conv_{name}_bwd_input {flops / t / 1e9:.1f} GFLOP/s")
        t = best_block(lambda: cb(*args, [False, True, False]), iters, reps)
        print(f"bench torch_gpu_conv_{name}_bwd_filter {flops / t / 1e9:.1f} GFLOP/s")
        t = best_block(lambda: F.max_pool2d(y, 2), iters, reps)
        print(f"bench torch_gpu_maxpool_{name}_fwd {4.0 * y.numel() * 1.25 / t / 1e9:.1f} GB/s",
              flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer steps")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("skipped: no GPU")
        return
    dev = torch.device("cuda:0")
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    note(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
         f"{torch.cuda.get_device_name(0)}")
    print("torch_gpu_train on", torch.cuda.get_device_name(0))
    reps = 3 if args.quick else 10
    for model in ("mlp", "cnn"):
        steps = 10 if args.quick else (200 if model == "cnn" else 400)
        print(f"bench torch_gpu_train_{model}_samples_per_s "
              f"{train_samples_per_s(model, steps, dev):.0f} samples/s", flush=True)
    for mode in ("fp32", "tf32", "bf16"):
        suffix = "" if mode == "fp32" else "_" + mode
        print(f"bench torch_gpu_train_big_cnn{suffix}_samples_per_s "
              f"{train_samples_per_s('big_cnn', 5 if args.quick else 100, dev, mode):.0f} "
              "samples/s", flush=True)
    if args.quick:
        print(f"bench torch_gpu_adam_1e6 {adam_gbs(10 ** 6, 1, reps, dev):.1f} GB/s")
        print(f"bench torch_gpu_copy_d2d_1e6 {copy_gbs(10 ** 6, reps, dev):.1f} GB/s")
    else:
        print(f"bench torch_gpu_adam_1e7 {adam_gbs(10 ** 7, 1, reps, dev):.1f} GB/s")
        print(f"bench torch_gpu_copy_d2d_1e7 {copy_gbs(10 ** 7, reps, dev):.1f} GB/s")
        adam = adam_gbs(10 ** 8, 1, reps, dev)
        copy = copy_gbs(10 ** 8, reps, dev)
        print(f"bench torch_gpu_adam_1e8 {adam:.1f} GB/s")
        print(f"bench torch_gpu_adam_1e8_x64 {adam_gbs(10 ** 8, 64, reps, dev):.1f} GB/s")
        print(f"bench torch_gpu_copy_d2d_1e8 {copy:.1f} GB/s")
        print(f"bench torch_gpu_adam_copy_ratio_1e8 {adam / copy:.3f} ratio", flush=True)
    for name, hwc, cout, k in LAYERS:
        conv_layer(name, hwc, cout, k, 3 if args.quick else 50, reps, dev)


if __name__ == "__main__":
    main()
