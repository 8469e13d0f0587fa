#!/usr/bin/env python3
"""torch_train.py: training on Fashion-MNIST with PyTorch on the CPU, bench_train's twin.

Models (--model), the same in keras_train.py and bench_train, each with torch's default
initializers:
  - mlp: Flatten -> Linear 784x256 + ReLU -> Linear 256x256 + ReLU -> Linear 256x10 (logits);
  - cnn: 1x28x28 -> Conv 3x3 32 (valid) + ReLU -> MaxPool 2 -> Conv 3x3 64 (valid) + ReLU ->
    MaxPool 2 -> Flatten (1600) -> Linear 128 + ReLU -> Linear 10 (logits);
  - big_cnn (batches of 256): 1x28x28 -> 2 x (Conv 3x3 64, padding 1, + ReLU) -> MaxPool 2
    -> 2 x Conv 128 -> MaxPool 2 -> 2 x Conv 256 -> MaxPool 2 -> Flatten (2304) -> Linear
    512 + ReLU -> Linear 10 (logits).
Recipe: Adam lr 1e-3 (torch's defaults otherwise: betas (0.9, 0.999), eps 1e-8, the default
implementation, a for-loop over the parameters on the CPU), mean sparse softmax
cross-entropy from logits (F.cross_entropy), the batches of train_common.py (128, in the
same seeded order as keras_train.py, 469 steps an epoch). A plain eager loop:
zero_grad(set_to_none), forward, backward, step; no torch.compile.
Data, timing mode and accuracy mode (--epochs N) as train_common.py describes (the data,
the command line, the loops and the printing it shares with keras_train.py); the timing
mode prints
  bench torch_train_<model>_samples_per_s <value> samples/s
  bench torch_train_<model>_peak_rss <MiB> MiB   (the interpreter, torch, the data set and
        the training)
  bench torch_train_<model>_cpu_util <cpu/wall> ratio
The cnn and big_cnn run channels_last by default; --memory-format nchw names their figures
torch_train_<model>_nchw_* (so a side-by-side run reports both).
The cnn runs channels_last by default (the model and each batch converted), the faster of
the two on a 2-core AMD EPYC (Zen 5), torch 2.15, 2 threads: ~4800 samples/s against ~3900
NCHW (--memory-format nchw), medians of 3 runs.
torch's CPU tensors come from glibc's malloc, which here serves the cnn's activations (4 to
11 MB a tensor) with fresh mmap()s and page faults every step: ~1.3 s more system time in
the 80 steps of a cnn run, and single steps that vary from ~15 to ~30 ms. With glibc's
mmap and trim thresholds fixed above them, e.g. MALLOC_MMAP_THRESHOLD_=134217728
MALLOC_TRIM_THRESHOLD_=268435456 in the environment (the same state the process reaches by
chance after the first evaluation of --epochs), the cnn runs ~8200 samples/s channels_last
(~6300 NCHW) and the mlp ~10% faster. This script leaves the allocator as it is.
Usage: python3 tests/bench/torch_train.py [--model mlp|cnn] [--threads N] [--seed S]
       [--quick | --epochs N] [--warmup N] [--steps N] [--memory-format nchw|channels_last]
       [--data-dtype uint8|float32] [--data DIR] [--adam default|foreach|fused]
"""
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_common import (  # noqa: E402  (after the path)
    EVAL_BATCH, LR, load_data, note, parse_args, run, to_float)


def torch_options(parser):
    parser.add_argument("--memory-format", choices=("nchw", "channels_last"),
                        default="channels_last",
                        help="cnn: torch's memory format (default channels_last, the faster)")


def torch_options_after_dtype(parser):
    parser.add_argument("--adam", choices=("default", "foreach", "fused"), default="default",
                        help="torch.optim.Adam's implementation (default: torch's default)")


def main():
    args = parse_args("torch_train", __doc__,
                      "torch.set_num_threads and set_num_interop_threads (default 2)",
                      torch_options, torch_options_after_dtype)

    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch  # noqa: E402  (after OMP_NUM_THREADS)
    import torch.nn as nn  # noqa: E402
    import torch.nn.functional as F  # noqa: E402

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(args.threads)
    torch.manual_seed(args.seed)

    train_x, train_y, test_x, test_y = load_data(args, np.int64)
    train_y_t = torch.from_numpy(train_y)
    test_y_t = None if test_y is None else torch.from_numpy(test_y)

    if args.model == "mlp":
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                              nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
        shape = (-1, 28, 28)
    elif args.model == "big_cnn":
        layers, cin = [], 1
        for cout in (64, 64, None, 128, 128, None, 256, 256, None):
            if cout is None:
                layers.append(nn.MaxPool2d(2))
            else:
                layers += [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU()]
                cin = cout
        model = nn.Sequential(*layers, nn.Flatten(), nn.Linear(256 * 3 * 3, 512), nn.ReLU(),
                              nn.Linear(512, 10))
        shape = (-1, 1, 28, 28)
    else:
        model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(64 * 5 * 5, 128), nn.ReLU(), nn.Linear(128, 10))
        shape = (-1, 1, 28, 28)
    conv = args.model in ("cnn", "big_cnn")
    channels_last = conv and args.memory_format == "channels_last"
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    adam_kw = {"default": {}, "foreach": {"foreach": True}, "fused": {"fused": True}}[args.adam]
    opt = torch.optim.Adam(model.parameters(), lr=LR, **adam_kw)
    nparams = sum(p.numel() for p in model.parameters())
    note(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
         f"{torch.get_num_interop_threads()} interop threads, model {args.model} "
         f"({nparams} parameters), memory format "
         f"{('channels_last' if channels_last else 'NCHW') if conv else '-'}, "
         f"data {args.data_dtype}, Adam {args.adam}")

    def batch(images, idx):
        x = torch.from_numpy(to_float(images[idx])).view(shape)
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        return x

    def step(idx):
        x = batch(train_x, idx)
        y = train_y_t[torch.from_numpy(idx)]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss  # a tensor: timing mode takes .item() after the timed steps only

    def test_accuracy():
        model.eval()
        right = 0
        with torch.inference_mode():
            for i in range(0, test_x.shape[0], EVAL_BATCH):
                idx = np.arange(i, min(i + EVAL_BATCH, test_x.shape[0]))
                pred = model(batch(test_x, idx)).argmax(dim=1)
                right += int((pred == test_y_t[i:i + len(idx)]).sum())
        model.train()
        return right / test_x.shape[0]

    tag = args.model + ("_nchw" if conv and not channels_last else "")
    run(args, "torch_train", step, test_accuracy, train_x.shape[0],
        loss_value=torch.Tensor.item, tag=tag)


if __name__ == "__main__":
    main()
