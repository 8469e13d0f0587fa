"""layers_torch.py: writes fixtures/layers_torch.json, PyTorch's values for two layers that
tapeflow has as Keras layers, in float64:
 - LayerNormalization: torch.nn.functional.layer_norm over the last axis with eps 1e-3
   (Keras's default; torch's own default is 1e-5), random gamma and beta, rank 2 and rank 3;
 - GlobalAveragePooling2D: x.mean(dim=(1, 2)) on an NHWC x.
For each case: the inputs, the output y and the gradients of sum(w * y) (w random) for x and,
for layer norm, gamma and beta (autograd). Read by tests/layers/test_norm_pool_layers.c.

Run: python3 tests/reference/layers_torch.py [--out PATH]   (torch, CPU; about 1 s)
"""
import argparse
import json
import os
import platform
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EPS = 1e-3


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def layer_norm_case(gen, shape):
    f = shape[-1]
    # a shift and a spread per row, so that the mean and variance matter
    x = (torch.randn(shape, generator=gen, dtype=torch.float64) * 2.5 + 0.75).requires_grad_()
    gamma = (1.0 + 0.5 * torch.randn(f, generator=gen, dtype=torch.float64)).requires_grad_()
    beta = (0.3 * torch.randn(f, generator=gen, dtype=torch.float64)).requires_grad_()
    w = torch.randn(shape, generator=gen, dtype=torch.float64)
    y = F.layer_norm(x, (f,), gamma, beta, eps=EPS)
    gx, gg, gb = torch.autograd.grad((w * y).sum(), (x, gamma, beta))
    return {"kind": "layer_normalization", "source": "F.layer_norm(x, (f,), gamma, beta, eps=1e-3)",
            "shape": list(shape), "epsilon": EPS, "x": flat(x), "gamma": flat(gamma),
            "beta": flat(beta), "w": flat(w), "y": flat(y),
            "grads": {"x": flat(gx), "gamma": flat(gg), "beta": flat(gb)}}


def gap_case(gen, shape):
    x = torch.randn(shape, generator=gen, dtype=torch.float64).requires_grad_()
    y = x.mean(dim=(1, 2))
    w = torch.randn(y.shape, generator=gen, dtype=torch.float64)
    (gx,) = torch.autograd.grad((w * y).sum(), (x,))
    return {"kind": "global_average_pooling2d", "source": "x.mean(dim=(1, 2)), x NHWC",
            "shape": list(shape), "out_shape": list(y.shape), "x": flat(x), "w": flat(w),
            "y": flat(y), "grads": {"x": flat(gx)}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "fixtures", "layers_torch.json"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(20261127)
    cases = {"ln_rank2": layer_norm_case(gen, (4, 6)),
             "ln_rank3": layer_norm_case(gen, (2, 3, 5)),
             "gap": gap_case(gen, (2, 3, 4, 5))}
    doc = {"torch_version": torch.__version__, "python_version": platform.python_version(),
           "cases": cases}
    with open(args.out, "w") as f:  # one line per case, for reviewable diffs
        f.write("{\n")
        for k in ("torch_version", "python_version"):
            f.write(" %s: %s,\n" % (json.dumps(k), json.dumps(doc[k])))
        f.write(' "cases": {\n')
        f.write(",\n".join("  %s: %s" % (json.dumps(k), json.dumps(c)) for k, c in cases.items()))
        f.write("\n }\n}\n")
    print("wrote", args.out, len(cases), "cases")


if __name__ == "__main__":
    main()
