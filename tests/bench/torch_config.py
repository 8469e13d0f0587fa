#!/usr/bin/env python3
"""torch_config.py: bench_config's PyTorch twin: the shipped graph configs' models trained on
the CPU with torch's defaults, on random data of the configs' shapes (so data loading, which
bench_config includes, costs torch nothing):
  - fashion_mnist_resnet: NCHW 1x28x28 -> Conv 3x3 32 (no bias) + BatchNorm + ReLU -> MaxPool 2
    -> block 1 (two Conv 3x3 32 + BatchNorm, ReLU between, identity shortcut, ReLU) -> block 2
    (Conv 3x3 64 stride 2, Conv 3x3 64, each + BatchNorm; shortcut Conv 1x1 64 stride 2 +
    BatchNorm; add, ReLU) -> global average pool -> Linear 10; Adam 1e-3; batches of 128;
  - char_transformer: Embedding 256x128 + learned positions (64) -> 4 pre-LayerNorm blocks
    (causal self-attention, 4 heads of 32, F.scaled_dot_product_attention; GELU MLP 512) ->
    LayerNorm -> Linear 256; AdamW 2e-3, weight decay 0.01; batches of 32 windows of 64.
A plain eager loop (zero_grad(set_to_none), forward, backward, step), no torch.compile.
Prints, with <m> the model:
  bench torch_config_<m>_samples_per_s <v> samples/s
  bench torch_config_<m>_tokens_per_s <v> tokens/s   (the transformer)
  bench torch_config_<m>_peak_rss <MiB> MiB
Usage: python3 tests/bench/torch_config.py --model fashion_mnist_resnet|char_transformer
       [--threads 2] [--warmup 5] [--steps 30] [--quick] [--channels-last]
"""
import argparse
import resource
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn(cin, cout, k, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, padding=k // 2, bias=False),
                         nn.BatchNorm2d(cout, eps=1e-3, momentum=0.01))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(1, 32, 3)
        self.b1a, self.b1b = conv_bn(32, 32, 3), conv_bn(32, 32, 3)
        self.b2a, self.b2b = conv_bn(32, 64, 3, 2), conv_bn(64, 64, 3)
        self.proj = conv_bn(32, 64, 1, 2)
        self.out = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.stem(x)), 2)
        x = F.relu(self.b1b(F.relu(self.b1a(x))) + x)
        x = F.relu(self.b2b(F.relu(self.b2a(x))) + self.proj(x))
        return self.out(x.mean(dim=(2, 3)))


class Block(nn.Module):
    def __init__(self, d=128, heads=4, key=32, ff=512):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-3), nn.LayerNorm(d, eps=1e-3)
        self.qkv = nn.Linear(d, 3 * heads * key)
        self.o = nn.Linear(heads * key, d)
        self.f1, self.f2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.heads, self.key = heads, key

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, self.key).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, -1))
        return x + self.f2(F.gelu(self.f1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(256, 128)
        self.pos = nn.Parameter(torch.zeros(64, 128))
        self.blocks = nn.Sequential(*[Block() for _ in range(4)])
        self.ln, self.out = nn.LayerNorm(128, eps=1e-3), nn.Linear(128, 256)

    def forward(self, x):
        return self.out(self.ln(self.blocks(self.tok(x) + self.pos[: x.shape[1]])))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True, choices=["fashion_mnist_resnet", "char_transformer"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--channels-last", action="store_true")
    a = p.parse_args()
    if a.quick:
        a.warmup, a.steps = 1, 2
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    gpt = a.model == "char_transformer"
    if gpt:
        model, batch = GPT(), 32
        opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
        xs = torch.randint(0, 256, (8, batch, 64))
        ys = torch.randint(0, 256, (8, batch, 64))
    else:
        model, batch = ResNet(), 128
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        xs = torch.rand(8, batch, 1, 28, 28)
        ys = torch.randint(0, 10, (8, batch))
        if a.channels_last:
            model = model.to(memory_format=torch.channels_last)
    model.train()

    def step(i):
        x, y = xs[i % 8], ys[i % 8]
        if not gpt and a.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()

    for i in range(a.warmup):
        step(i)
    t0 = time.perf_counter()
    for i in range(a.steps):
        step(i)
    wall = time.perf_counter() - t0
    name = "torch_config_" + a.model + ("_channels_last" if a.channels_last else "")
    print("bench %s_samples_per_s %.1f samples/s" % (name, a.steps * batch / wall))
    if gpt:
        print("bench %s_tokens_per_s %.0f tokens/s" % (name, a.steps * batch * 64 / wall))
    print("bench %s_peak_rss %.1f MiB" % (name, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


if __name__ == "__main__":
    main()
