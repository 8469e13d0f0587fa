#!/usr/bin/env python3
"""torch_tape.py: the figures of bench_tape measured with PyTorch autograd on the CPU.

Prints one line per figure, `bench torch_<name> <value> <unit>`, with bench_tape's names:
  - a chain of 100 tiny ops on a float32 [4] leaf with requires_grad (mul by a constant,
    add a constant, tanh, sigmoid, in turn; the constant is a tensor made once), per op of
    the chain: run under torch.no_grad() (tape_chain_forward_plain, ns), run with autograd
    recording the graph and dropping it without a backward (tape_chain_record, ns;
    tape_chain_overhead is record - plain), and run with autograd followed by
    torch.autograd.grad of the chain (a vector-Jacobian product with ones, as
    tfl_tape_gradient of a non-scalar target) with respect to the leaf (tape_chain_fwd_bwd,
    us);
  - an MLP 784-256-256-10 (ReLU) on a batch of 128 random float32 inputs with integer
    labels, parameters as nn.Parameter (glorot-uniform weights, zero biases), loss the mean
    softmax cross-entropy written with the same ops as bench_tape (log_softmax, one_hot, mul,
    sum, neg, mean): the forward pass under torch.no_grad() (mlp_fwd_ms) and a training step,
    grads zeroed by set_to_none, forward and loss.backward() (mlp_fwd_bwd_ms), in ms.
Each time is the best of 7 blocks (chains, or MLP steps) after a warm-up, the kinds of a
workload taking turns block by block, as bench_tape does. The torch version, thread count
and BLAS backends go to stderr, with the median and fastest single MLP steps.
Usage: python3 tests/bench/torch_tape.py [--threads N] [--quick] [--only chain|mlp]
"""
import argparse
import math
import statistics
import sys
import time
import warnings

# torch warns on import when NumPy is absent; nothing here needs NumPy.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CHAIN_LEN = 100
REPS = 7
MLP_BATCH = 128
MLP_WIDTH = (784, 256, 256, 10)

CHAIN_X0 = (0.3, -1.2, 0.8, 2.0)
CHAIN_C = (0.5, -0.25, 0.75, 1.5)


def run_chain(x, c):
    h = x
    for i in range(CHAIN_LEN):
        k = i & 3
        if k == 0:
            h = torch.mul(h, c)
        elif k == 1:
            h = torch.add(h, c)
        elif k == 2:
            h = torch.tanh(h)
        else:
            h = torch.sigmoid(h)
    return h


def chain_block(mode, x, c, chains):
    """Nanoseconds per op of `chains` chains of mode 'plain', 'record' or 'fwd_bwd'."""
    t0 = time.perf_counter_ns()
    if mode == "plain":
        with torch.no_grad():
            for _ in range(chains):
                run_chain(x, c)
    elif mode == "record":
        for _ in range(chains):
            run_chain(x, c)  # the graph goes with h
    else:
        for _ in range(chains):
            h = run_chain(x, c)
            torch.autograd.grad(h, (x,), grad_outputs=(torch.ones_like(h),))
    return (time.perf_counter_ns() - t0) / (chains * CHAIN_LEN)


def chain_best(x, c, chains):
    """Best of REPS blocks of each mode, taking turns block by block, after a warm-up."""
    modes = ("plain", "record", "fwd_bwd")
    n = {"plain": chains, "record": chains, "fwd_bwd": max(1, chains // 5)}
    for m in modes:
        chain_block(m, x, c, max(1, n[m] // 10))
    best = {m: float("inf") for m in modes}
    for _ in range(REPS):
        for m in modes:
            best[m] = min(best[m], chain_block(m, x, c, n[m]))
    return best


def chain_verify(x, c):
    """The chain's gradient against forward-mode derivatives computed in double."""
    h = run_chain(x, c)
    (g,) = torch.autograd.grad(h, (x,), grad_outputs=(torch.ones_like(h),))
    for k in range(4):
        v, d, ck = CHAIN_X0[k], 1.0, CHAIN_C[k]
        for i in range(CHAIN_LEN):
            m = i & 3
            if m == 0:
                v, d = v * ck, d * ck
            elif m == 1:
                v += ck
            elif m == 2:
                v = math.tanh(v)
                d *= 1.0 - v * v
            else:
                v = 1.0 / (1.0 + math.exp(-v))
                d *= v * (1.0 - v)
        if abs(g[k].item() - d) > 1e-6 + 1e-3 * abs(d):
            sys.exit(f"torch_tape: chain check: element {k}: gradient {g[k].item()} (host {d})")


def bench_chain(chains):
    x = torch.tensor(CHAIN_X0, dtype=torch.float32, requires_grad=True)
    c = torch.tensor(CHAIN_C, dtype=torch.float32)
    chain_verify(x, c)
    best = chain_best(x, c, chains)
    print(f"bench torch_tape_chain_forward_plain {best['plain']:.1f} ns")
    print(f"bench torch_tape_chain_record {best['record']:.1f} ns")
    print(f"bench torch_tape_chain_overhead {best['record'] - best['plain']:.1f} ns")
    print(f"bench torch_tape_chain_fwd_bwd {best['fwd_bwd'] / 1e3:.3f} us", flush=True)


def make_mlp():
    gen = torch.Generator().manual_seed(1000)
    params = []
    for fan_in, fan_out in zip(MLP_WIDTH[:-1], MLP_WIDTH[1:]):
        limit = math.sqrt(6.0 / (fan_in + fan_out))
        w = (torch.rand((fan_in, fan_out), generator=gen) * 2 - 1) * limit
        params += [torch.nn.Parameter(w), torch.nn.Parameter(torch.zeros(fan_out))]
    x = torch.rand((MLP_BATCH, MLP_WIDTH[0]), generator=gen)
    labels = torch.randint(0, MLP_WIDTH[-1], (MLP_BATCH,), generator=gen, dtype=torch.int32)
    return params, x, labels


def mlp_loss(params, x, labels):
    h = x
    for layer in range(3):
        z = torch.matmul(h, params[2 * layer]) + params[2 * layer + 1]
        h = F.relu(z) if layer < 2 else z
    logp = F.log_softmax(h, dim=-1)
    onehot = F.one_hot(labels.long(), MLP_WIDTH[-1]).to(torch.float32)
    return torch.neg(torch.sum(onehot * logp, dim=1)).mean()


def mlp_step(params, x, labels, backward):
    if backward:
        for p in params:
            p.grad = None  # zero_grad(set_to_none=True)
        mlp_loss(params, x, labels).backward()
    else:
        with torch.no_grad():
            mlp_loss(params, x, labels)


def mlp_time(params, x, labels, warmup, steps):
    """ms per step, best of REPS blocks of `steps` steps, forward only and training steps
    taking turns block by block after `warmup` steps of each."""
    names = ("mlp_fwd_ms", "mlp_fwd_bwd_ms")
    times = ([], [])
    best = [float("inf"), float("inf")]
    for k in range(2):
        for _ in range(warmup):
            mlp_step(params, x, labels, k == 1)
    for _ in range(REPS):
        for k in range(2):
            b0 = time.perf_counter_ns()
            for _ in range(steps):
                t0 = time.perf_counter_ns()
                mlp_step(params, x, labels, k == 1)
                times[k].append((time.perf_counter_ns() - t0) / 1e6)
            best[k] = min(best[k], (time.perf_counter_ns() - b0) / 1e6 / steps)
    for k in range(2):
        print(f"torch_tape note: {names[k]}: best block {best[k]:.3f} ms a step; over "
              f"{len(times[k])} steps median {statistics.median(times[k]):.3f} ms, fastest "
              f"{min(times[k]):.3f} ms", file=sys.stderr)
    return best


def bench_mlp(warmup, steps):
    params, x, labels = make_mlp()
    mlp_step(params, x, labels, True)
    for p in params:
        if p.grad is None or not torch.isfinite(p.grad).all() or p.grad.abs().sum() == 0:
            sys.exit("torch_tape: mlp check: a gradient is missing, not finite or zero")
    fwd, fb = mlp_time(params, x, labels, warmup, steps)
    print(f"bench torch_mlp_fwd_ms {fwd:.3f} ms")
    print(f"bench torch_mlp_fwd_bwd_ms {fb:.3f} ms", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    parser.add_argument("--quick", action="store_true", help="fewer chains and steps")
    parser.add_argument("--only", choices=("chain", "mlp"), help="run one workload only")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    print(f"torch_tape note: torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"MKL {torch.backends.mkl.is_available()}, oneDNN {torch.backends.mkldnn.is_available()}",
          file=sys.stderr, flush=True)
    chains = 200 if args.quick else 2000
    warmup, steps = (2, 2) if args.quick else (5, 10)
    if args.only in (None, "chain"):
        bench_chain(chains)
    if args.only in (None, "mlp"):
        bench_mlp(warmup, steps)


if __name__ == "__main__":
    main()
