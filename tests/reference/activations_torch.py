"""activations_torch.py: writes fixtures/activations_torch.json, PyTorch's values for the
activations tapeflow has beside PyTorch's own (torch.nn.functional), in float32 and float64:
for fixed inputs x, weights w and u, the value y = f(x), the gradient g = d sum(w y) / dx
and the second-order term gg = d sum(u g) / dx (autograd with create_graph=True).
Read by tests/framework/test_activations_torch.c.

Run: python3 tests/reference/activations_torch.py [--out PATH]   (torch, CPU; about 2 s)
"""
import argparse
import warnings
import json
import os
import platform

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# (name, PyTorch's function, the options tapeflow passes, a note on the semantics)
ACTIVATIONS = [
    ("softplus", lambda x: F.softplus(x), {},
     "F.softplus, beta 1, threshold 20 (x > 20 gives x: the inputs stay below)"),
    ("silu", lambda x: F.silu(x), {}, "F.silu"),
    ("elu", lambda x: F.elu(x), {"alpha": 1.0}, "F.elu, alpha 1"),
    ("elu", lambda x: F.elu(x, alpha=0.5), {"alpha": 0.5}, "F.elu, alpha 0.5"),
    ("hard_sigmoid", lambda x: F.hardsigmoid(x), {}, "F.hardsigmoid, relu6(x + 3) / 6; gg: torch has no double backward here, f'' = 0"),
]

# kinks and the ranges where the formulas switch, then a spread of values; all below 20 in
# magnitude (PyTorch's softplus threshold)
X = [-19.5, -8.0, -6.0, -3.5, -3.0, -2.999, -2.5, -1.0, -0.5, -1e-3, 0.0, 1e-3, 0.25, 0.5,
     1.0, 1.5, 2.5, 2.999, 3.0, 3.5, 6.0, 12.0, 19.5]
X += [round(-4.0 + 0.37 * i, 6) for i in range(25)]
W = [round(0.5 + 0.13 * ((7 * i) % 11) - 0.6 * (i % 2), 6) for i in range(len(X))]
U = [round(-0.8 + 0.21 * ((5 * i) % 9), 6) for i in range(len(X))]


def run(fn, dtype):
    x = torch.tensor(X, dtype=dtype, requires_grad=True)
    w = torch.tensor(W, dtype=dtype)
    u = torch.tensor(U, dtype=dtype)
    y = fn(x)
    (g,) = torch.autograd.grad((y * w).sum(), x, create_graph=True)
    try:
        (gg,) = torch.autograd.grad((g * u).sum(), x, allow_unused=True)
    except RuntimeError:  # no double backward (hardsigmoid): f is piecewise linear, f'' = 0
        gg = None
    if gg is None:  # g does not depend on x
        gg = torch.zeros_like(x)
    # float32 values written as the doubles they widen to
    return {k: [float(v) for v in t.detach().double().tolist()]
            for k, t in (("y", y), ("g", g), ("gg", gg))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "fixtures", "activations_torch.json"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    cases = []
    for name, fn, opts, note in ACTIVATIONS:
        for dtype in (torch.float32, torch.float64):
            c = {"name": name, "dtype": str(dtype).replace("torch.", ""), "options": opts,
                 "source": note}
            c.update(run(fn, dtype))
            cases.append(c)
    doc = {"torch_version": torch.__version__, "python_version": platform.python_version(),
           "x": X, "w": W, "u": U, "cases": cases}
    with open(args.out, "w") as f:  # one line per case, for reviewable diffs
        f.write("{\n")
        for k in ("torch_version", "python_version", "x", "w", "u"):
            f.write(" %s: %s,\n" % (json.dumps(k), json.dumps(doc[k])))
        f.write(' "cases": [\n')
        f.write(",\n".join("  " + json.dumps(c) for c in cases))
        f.write("\n ]\n}\n")
    print("wrote", args.out, len(cases), "cases")


if __name__ == "__main__":
    main()
