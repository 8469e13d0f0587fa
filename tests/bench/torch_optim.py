#!/usr/bin/env python3
"""torch_optim.py: the figures of bench_optim measured with torch.optim on the CPU.

Prints one line per figure, `bench torch_<name> <value> <unit>`, with bench_optim's names:
  - copy_gbps: the machine's copy bandwidth in this run, `dst.copy_(src)` of 1e7 float32
    (40 MB) into another buffer, 8 bytes an element (read + write), GB/s: the best block of
    5 copies, of 5 blocks before the optimizers and one in every round of each layout's
    blocks (printed after the layouts); the optimizers read every array they write, while
    copy_'s destination is written unread, so their effective figures can exceed this one;
  - for Adam (lr 1e-3, otherwise torch's defaults: betas (0.9, 0.999), eps 1e-8) and SGD
    with momentum 0.9 (lr 1e-3, no dampening, no nesterov), on two layouts of fixed random
    float32 gradients set once as p.grad, one tensor of 1e7 parameters (1x1e7) and 100
    tensors of 1e5 (100x1e5), the time of one optimizer.step() (<opt>_<layout>_ms) and its
    effective bandwidth (<opt>_<layout>_gbps): Adam moves 28 bytes a parameter (reads p, g,
    m, v; writes p, m, v), SGD with momentum 20 (reads p, g, b; writes p, b).
torch.optim runs on the CPU as a for-loop over the tensors (the default there), as foreach
(multi-tensor) kernels (foreach=True) or as one fused kernel a tensor (fused=True, CPU
support since torch 2.4). Both foreach and fused are measured and printed with their
variant in the name (adam_fused_1x1e7_gbps, adam_foreach_1x1e7_gbps, ...); the unsuffixed
figure, the one run_side_by_side.sh pairs with tapeflow's, is the fastest variant of that
run (a note on stderr names it). On a 2-core AMD EPYC (Zen 5) with torch 2.15, 2 threads:
fused is the fastest for both: Adam ~5 ms for 1e7 parameters fused against ~28 ms foreach
(foreach Adam makes several passes over the state, fused makes one), SGD-momentum ~4 ms
fused against ~6 ms foreach.
Each figure is the best of 7 blocks of 5 steps (--quick: 3 of 3) after a warm-up (the first
step makes the state), the copy and the variants of a layout taking turns block by block, as
bench_tape does; the notes on stderr add the median and fastest single steps. Every variant
is checked first on a small tensor: after two steps with the same gradient g, Adam has moved
p by -2·lr·g/(|g| + eps) and SGD-momentum by -2.9·lr·g (b = g, then 1.9·g).
Usage: python3 tests/bench/torch_optim.py [--threads N] [--quick | --smoke]
  --quick  fewer blocks (run_side_by_side.sh passes it on)
  --smoke  tiny layouts (1x1e4, 10x1e3), one block of one step: a check that it runs
"""
import argparse
import statistics
import sys
import time
import warnings

# torch warns on import when NumPy is absent; nothing here needs NumPy.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402

LR = 1e-3
MOMENTUM = 0.9
ADAM_EPS = 1e-8
COPY_N = 10**7

# (name, bytes moved a parameter, factory(params, **variant))
OPTIMIZERS = (
    ("adam", 28, lambda ps, **kw: torch.optim.Adam(ps, lr=LR, **kw)),
    ("sgd_momentum", 20, lambda ps, **kw: torch.optim.SGD(ps, lr=LR, momentum=MOMENTUM, **kw)),
)
VARIANTS = (("fused", {"fused": True}), ("foreach", {"foreach": True}))


def note(msg):
    print(f"torch_optim note: {msg}", file=sys.stderr, flush=True)


def die(msg):
    sys.exit(f"torch_optim: {msg}")


def layout_name(count, size):
    """"1x1e7" for one tensor of 10**7, "100x1e5" for 100 of 10**5."""
    exp = len(str(size)) - 1
    return f"{count}x1e{exp}" if size == 10**exp else f"{count}x{size}"


def verify(opt_name, factory, variant, kw):
    """Two steps with the same gradient on a small tensor, against the host formula."""
    gen = torch.Generator().manual_seed(99)
    p0 = torch.rand(1000, generator=gen, dtype=torch.float64) * 2 - 1
    g = (torch.rand(1000, generator=gen, dtype=torch.float64) * 2 - 1).to(torch.float32)
    p = torch.nn.Parameter(p0.to(torch.float32))
    p.grad = g.clone()
    opt = factory([p], **kw)
    opt.step()
    opt.step()
    g64 = g.to(torch.float64)
    if opt_name == "adam":
        want = p0.to(torch.float32).to(torch.float64) - 2 * LR * g64 / (g64.abs() + ADAM_EPS)
    else:
        want = p0.to(torch.float32).to(torch.float64) - (2 + MOMENTUM) * LR * g64
    err = (p.detach().to(torch.float64) - want).abs().max().item()
    if not err <= 1e-6:
        die(f"{opt_name} {variant} check: after two steps the parameters differ from the "
            f"formula by up to {err:g}")


def make_layout(count, size, seed):
    """`count` parameters of `size` float32 elements in [-1, 1) with fixed gradients."""
    gen = torch.Generator().manual_seed(seed)
    params = []
    for _ in range(count):
        p = torch.nn.Parameter(torch.rand(size, generator=gen) * 2 - 1)
        p.grad = torch.rand(size, generator=gen) * 2 - 1
        params.append(p)
    return params


class CopyBench:
    """dst.copy_(src) on COPY_N float32: the best time of a copy over every block so far."""

    def __init__(self, per_block):
        self.src = torch.rand(COPY_N, generator=torch.Generator().manual_seed(1))
        self.dst = torch.empty_like(self.src)
        self.dst.copy_(self.src)  # the warm-up touches dst's pages
        self.per_block = per_block
        self.blocks = 0
        self.best = float("inf")

    def block(self):
        t0 = time.perf_counter()
        for _ in range(self.per_block):
            self.dst.copy_(self.src)
        self.best = min(self.best, (time.perf_counter() - t0) / self.per_block)
        self.blocks += 1

    def finish(self):
        """Checks the copy and prints copy_gbps, 8 bytes an element."""
        if not torch.equal(self.dst, self.src):
            die("copy check: dst differs from src")
        note(f"copy_gbps: {COPY_N} float32 in {self.best * 1e3:.3f} ms, best of {self.blocks} "
             f"blocks of {self.per_block} copies")
        print(f"bench torch_copy_gbps {8.0 * COPY_N / self.best / 1e9:.2f} GB/s", flush=True)


def bench_layout(count, size, reps, steps, warmup, copy):
    """Times every (optimizer, variant) that works on one layout; prints the figures."""
    lay = layout_name(count, size)
    params = make_layout(count, size, seed=1000 + count)
    numel = count * size
    runs = []  # (opt_name, bytes_per_param, variant, optimizer)
    for opt_name, nbytes, factory in OPTIMIZERS:
        for variant, kw in VARIANTS:
            try:
                verify(opt_name, factory, variant, kw)
                opt = factory(params, **kw)
                for _ in range(warmup):  # the first step makes the state
                    opt.step()
            except (RuntimeError, ValueError, TypeError) as e:
                note(f"{opt_name} {variant}: not available here ({e}); skipped")
                continue
            runs.append((opt_name, nbytes, variant, opt))
    best = [float("inf")] * len(runs)
    times = [[] for _ in runs]
    for _ in range(reps):
        copy.block()  # the copy takes its turn too
        for k, (_, _, _, opt) in enumerate(runs):
            b0 = time.perf_counter()
            for _ in range(steps):
                t0 = time.perf_counter()
                opt.step()
                times[k].append(time.perf_counter() - t0)
            best[k] = min(best[k], (time.perf_counter() - b0) / steps)
    for p in params:
        if not torch.isfinite(p).all():
            die(f"{lay}: a parameter is not finite after the timed steps")

    for opt_name, nbytes, _ in OPTIMIZERS:
        mine = [k for k, r in enumerate(runs) if r[0] == opt_name]
        if not mine:
            die(f"{opt_name} {lay}: no variant of torch.optim ran")
        for k in mine:
            variant = runs[k][2]
            note(f"{opt_name}_{variant}_{lay}: best block {best[k] * 1e3:.3f} ms a step; over "
                 f"{len(times[k])} steps median {statistics.median(times[k]) * 1e3:.3f} ms, "
                 f"fastest {min(times[k]) * 1e3:.3f} ms")
            print(f"bench torch_{opt_name}_{variant}_{lay}_ms {best[k] * 1e3:.3f} ms")
            print(f"bench torch_{opt_name}_{variant}_{lay}_gbps "
                  f"{nbytes * numel / best[k] / 1e9:.2f} GB/s")
        fastest = min(mine, key=lambda k: best[k])
        note(f"{opt_name}_{lay}: the fastest variant is {runs[fastest][2]}")
        print(f"bench torch_{opt_name}_{lay}_ms {best[fastest] * 1e3:.3f} ms")
        print(f"bench torch_{opt_name}_{lay}_gbps "
              f"{nbytes * numel / best[fastest] / 1e9:.2f} GB/s", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="fewer blocks")
    mode.add_argument("--smoke", action="store_true", help="tiny layouts, one step")
    args = parser.parse_args()
    if args.threads < 1:
        die("--threads wants a positive count")

    torch.set_num_threads(args.threads)
    note(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    if args.smoke:
        layouts, reps, steps, warmup, copy_reps = ((1, 10**4), (10, 10**3)), 1, 1, 1, 0
    elif args.quick:
        layouts, reps, steps, warmup, copy_reps = ((1, 10**7), (100, 10**5)), 3, 3, 2, 3
    else:
        layouts, reps, steps, warmup, copy_reps = ((1, 10**7), (100, 10**5)), 7, 5, 3, 5
    copy = CopyBench(1 if args.smoke else 5)
    for _ in range(copy_reps):
        copy.block()
    for count, size in layouts:
        bench_layout(count, size, reps, steps, warmup, copy)
    copy.finish()


if __name__ == "__main__":
    main()
