"""attention_torch.py: writes fixtures/attention_torch.json, PyTorch's values for tapeflow's
MultiHeadAttention layer (self-attention in Keras's layout), in float64: with x (b, s, f),
the projections as einsums over Keras's kernels (f, h, k) and biases (h, k), the attention
itself by torch.nn.functional.scaled_dot_product_attention (scale 1/sqrt(k); is_causal for the
causal case), and the output projection (h, k, f) + (f,). For each case: x, every variable,
w, y and the gradients of sum(w * y) for x and each variable (autograd). Read by
tests/layers/test_attention.c.

Run: python3 tests/reference/attention_torch.py [--out PATH]   (torch, CPU; about 1 s)
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
NAMES = ["query/kernel", "query/bias", "key/kernel", "key/bias", "value/kernel", "value/bias",
         "attention_output/kernel", "attention_output/bias"]


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def case(gen, b, s, f, h, k, causal):
    def rnd(*shape, scale=1.0):
        return (torch.randn(shape, generator=gen, dtype=torch.float64) * scale).requires_grad_()
    x = rnd(b, s, f)
    ws = [rnd(f, h, k, scale=0.5), rnd(h, k, scale=0.2), rnd(f, h, k, scale=0.5),
          rnd(h, k, scale=0.2), rnd(f, h, k, scale=0.5), rnd(h, k, scale=0.2),
          rnd(h, k, f, scale=0.5), rnd(f, scale=0.2)]
    q = torch.einsum("bsf,fhk->bhsk", x, ws[0]) + ws[1][None, :, None, :]
    kk = torch.einsum("bsf,fhk->bhsk", x, ws[2]) + ws[3][None, :, None, :]
    v = torch.einsum("bsf,fhk->bhsk", x, ws[4]) + ws[5][None, :, None, :]
    a = F.scaled_dot_product_attention(q, kk, v, is_causal=causal)  # (b, h, s, k)
    y = torch.einsum("bhsk,hkf->bsf", a, ws[6]) + ws[7]
    w = torch.randn(y.shape, generator=gen, dtype=torch.float64)
    grads = torch.autograd.grad((w * y).sum(), [x] + ws)
    return {"b": b, "s": s, "f": f, "heads": h, "key_dim": k, "causal": causal,
            "x": flat(x), "vars": {n: flat(t) for n, t in zip(NAMES, ws)}, "w": flat(w),
            "y": flat(y), "grads": dict([("x", flat(grads[0]))] +
                                        [(n, flat(g)) for n, g in zip(NAMES, grads[1:])])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "fixtures", "attention_torch.json"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(20261128)
    cases = {"mha": case(gen, 2, 4, 6, 2, 3, False), "mha_causal": case(gen, 2, 5, 4, 3, 2, True)}
    doc = {"torch_version": torch.__version__, "python_version": platform.python_version(),
           "cases": cases}
    with open(args.out, "w") as fh:  # one line per case, for reviewable diffs
        fh.write("{\n")
        for key in ("torch_version", "python_version"):
            fh.write(" %s: %s,\n" % (json.dumps(key), json.dumps(doc[key])))
        fh.write(' "cases": {\n')
        fh.write(",\n".join("  %s: %s" % (json.dumps(n), json.dumps(c)) for n, c in cases.items()))
        fh.write("\n }\n}\n")
    print("wrote", args.out, len(cases), "cases")


if __name__ == "__main__":
    main()
