"""shipped_twins_torch.py: the PyTorch twins of the shipped layer-graph configs
(configs/fashion_mnist_resnet.yaml, configs/char_transformer.yaml); writes
fixtures/shipped_twins.json, read by tests/configs/test_shipped_twins.c.

For each model, tapeflow's test program (run with TFL_TWIN_OUT=DIR) writes the model's initial
variables as a safetensors checkpoint, before the first step, and its own 50 losses. This
script then
  - resolves the config with the same overrides (`tapeflow config CONFIG --set ...`, every
    default explicit) and builds the same layer graph in PyTorch (CPU) from it: each
    layer of model.layers with its options and inputs, its variables taken by name from the
    checkpoint ("<layer>/kernel", "<layer>/query/kernel", ...) in tapeflow's layouts (Dense
    kernels (in, out), Conv2D kernels HWIO on NHWC activations, MultiHeadAttention Keras's
    (f, h, k) and (h, k, f)); a layer kind or option it does not know is an error;
  - reads the same batches: data.shuffle=false makes them the data in order (the first
    50 x 128 Fashion-MNIST training images scaled by 1/255; the first 50 x 32 windows of 64
    bytes of the sorted, concatenated fortunes files, targets shifted by one byte);
  - trains 50 steps with torch.optim's Adam or AdamW (tapeflow's `pytorch` formula) and the
    config's learning-rate schedule (optim.h: linear warmup from warmup_start_factor, then
    the decay on s - warmup_steps), BatchNormalization in training mode (batch statistics),
    once in float32 and once in float64 (the same initial values widened): the float64 run is
    the reference the test compares tapeflow with, the float32 run shows how far float32
    arithmetic alone strays from it;
  - writes both runs' losses (the batch's mean; over batch and positions for the transformer)
    and, per initial variable, its shape, sum, sum of squares and first values, then prints
    each step's float64 loss and the relative differences from it of the float32 twin and of
    tapeflow (which the test program wrote).

Run from the repository root, after building (cmake --build build):
    python3 tests/reference/shipped_twins_torch.py [--build build] [--models resnet,transformer]
    [--out PATH] [--from DIR]
--from DIR reuses a directory the test program wrote (TFL_TWIN_OUT=DIR) instead of running it;
--models resnet remakes one model's entry (the others' entries in --out stay).
Needs torch, safetensors, PyYAML and NumPy. About 10 minutes on 2 cores: tapeflow's run of both
models, then each twin in float32 and in float64.
"""
import argparse
import glob
import gzip
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import yaml  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TEST = "tests/configs/configs_test_shipped_twins"
N_FIRST = 4


class Unsupported(Exception):
    pass


def num(v):
    """A number of the resolved YAML (PyYAML reads 1e-08 as a string)."""
    return float(v)


def pair(v):
    return (int(v[0]), int(v[1])) if isinstance(v, list) else (int(v), int(v))


def activation(name, x):
    acts = {"linear": lambda t: t, "relu": F.relu, "gelu": lambda t: F.gelu(t, approximate="none"),
            "tanh": torch.tanh, "sigmoid": torch.sigmoid}
    if name not in acts:
        raise Unsupported("activation '%s'" % name)
    return acts[name](x)


def same_pads(size, k, s, d):
    """TensorFlow's SAME padding of one axis: (before, after), the odd element after."""
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


class Graph:
    """The layer graph of a resolved config, run in PyTorch on tapeflow's variables."""

    def __init__(self, layers, params):
        self.layers = []  # (name, kind, opts, inputs)
        self.params = params
        self.used = set()
        for item in layers:
            (kind, opts), = item.items()
            opts = opts or {}
            self.layers.append((opts["name"], kind, opts, list(opts.get("inputs", []))))
        self.trainable = []
        for name, kind, opts, _ in self.layers:  # the variables each layer reads, checked now
            self.trainable += self.variables(name, kind, opts)
        left = set(params) - self.used
        if left:
            raise Unsupported("checkpoint variables no layer reads: %s" % sorted(left))

    def var(self, layer, what, train=True):
        name = "%s/%s" % (layer, what)
        if name not in self.params:
            raise Unsupported("the checkpoint has no variable '%s'" % name)
        self.used.add(name)
        return [self.params[name]] if train else []

    def variables(self, name, kind, o):
        v = []
        if kind in ("dense", "conv2d"):
            v += self.var(name, "kernel")
            if o["use_bias"]:
                v += self.var(name, "bias")
        elif kind in ("embedding", "position_embedding"):
            v += self.var(name, "embeddings")
        elif kind in ("batch_normalization", "layer_normalization"):
            if o["scale"]:
                v += self.var(name, "gamma")
            if o["center"]:
                v += self.var(name, "beta")
            if kind == "batch_normalization":
                self.var(name, "moving_mean", False)
                self.var(name, "moving_variance", False)
        elif kind == "multi_head_attention":
            for p in ("query", "key", "value", "attention_output"):
                v += self.var(name, p + "/kernel")
                if o["use_bias"]:
                    v += self.var(name, p + "/bias")
        return v

    def p(self, layer, what):
        return self.params["%s/%s" % (layer, what)]

    def forward(self, x):
        out = {"input": x}
        last = None
        for name, kind, o, inputs in self.layers:
            xs = [out[i] for i in inputs]
            out[name] = last = self.layer(name, kind, o, xs)
        return last

    def layer(self, name, kind, o, xs):
        x = xs[0]
        known = {"name", "inputs"}
        if kind == "reshape":
            known |= {"target_shape"}
            y = x.reshape((x.shape[0],) + tuple(int(d) for d in o["target_shape"]))
        elif kind == "activation":
            known |= {"activation"}
            y = activation(o["activation"], x)
        elif kind == "add":
            y = xs[0]
            for t in xs[1:]:
                y = y + t
        elif kind == "dense":
            known |= {"units", "activation", "use_bias", "kernel_initializer", "bias_initializer"}
            y = torch.matmul(x, self.p(name, "kernel"))
            if o["use_bias"]:
                y = y + self.p(name, "bias")
            y = activation(o["activation"], y)
        elif kind == "conv2d":
            known |= {"filters", "kernel_size", "strides", "padding", "dilation_rate", "activation",
                      "use_bias", "kernel_initializer", "bias_initializer"}
            w = self.p(name, "kernel").permute(3, 2, 0, 1)  # HWIO -> OIHW
            (kh, kw), (sh, sw) = pair(o["kernel_size"]), pair(o["strides"])
            dh, dw = pair(o["dilation_rate"])
            xc = x.permute(0, 3, 1, 2)  # NHWC -> NCHW
            if o["padding"] == "same":
                t, b = same_pads(xc.shape[2], kh, sh, dh)
                lft, r = same_pads(xc.shape[3], kw, sw, dw)
                xc = F.pad(xc, (lft, r, t, b))
            elif o["padding"] != "valid":
                raise Unsupported("conv2d padding '%s'" % o["padding"])
            yc = F.conv2d(xc, w, None, (sh, sw), 0, (dh, dw))
            y = yc.permute(0, 2, 3, 1)
            if o["use_bias"]:
                y = y + self.p(name, "bias")
            y = activation(o["activation"], y)
        elif kind == "batch_normalization":
            known |= {"momentum", "epsilon", "center", "scale"}
            c = x.shape[-1]
            g = self.p(name, "gamma") if o["scale"] else None
            b = self.p(name, "beta") if o["center"] else None
            # training mode: the batch's mean and biased variance over all axes but the last
            xc = x.reshape(-1, c) if x.dim() == 2 else x.permute(0, 3, 1, 2)
            yc = F.batch_norm(xc, None, None, g, b, training=True, eps=num(o["epsilon"]))
            y = yc if x.dim() == 2 else yc.permute(0, 2, 3, 1)
        elif kind == "layer_normalization":
            known |= {"epsilon", "center", "scale"}
            f = x.shape[-1]
            g = self.p(name, "gamma") if o["scale"] else None
            b = self.p(name, "beta") if o["center"] else None
            y = F.layer_norm(x, (f,), g, b, eps=num(o["epsilon"]))
        elif kind == "max_pooling2d":
            known |= {"pool_size", "strides", "padding"}
            k = pair(o["pool_size"])
            s = pair(o["strides"]) if o["strides"] is not None else k
            if o["padding"] != "valid":
                raise Unsupported("max_pooling2d padding '%s'" % o["padding"])
            y = F.max_pool2d(x.permute(0, 3, 1, 2), k, s).permute(0, 2, 3, 1)
        elif kind == "global_average_pooling2d":
            y = x.mean(dim=(1, 2))
        elif kind == "embedding":
            known |= {"input_dim", "output_dim", "embeddings_initializer"}
            y = self.p(name, "embeddings")[x.long()]
        elif kind == "position_embedding":
            known |= {"sequence_length", "embeddings_initializer"}
            y = x + self.p(name, "embeddings")[: x.shape[1]]
        elif kind == "multi_head_attention":
            known |= {"use_bias", "kernel_initializer", "bias_initializer", "num_heads", "key_dim",
                      "dropout", "use_causal_mask", "seed"}
            if num(o["dropout"]) != 0:
                raise Unsupported("multi_head_attention dropout %s" % o["dropout"])

            def proj(p):
                t = torch.einsum("bsf,fhk->bhsk", x, self.p(name, p + "/kernel"))
                return t + self.p(name, p + "/bias")[None, :, None, :] if o["use_bias"] else t
            a = F.scaled_dot_product_attention(proj("query"), proj("key"), proj("value"),
                                               is_causal=bool(o["use_causal_mask"]))
            y = torch.einsum("bhsk,hkf->bsf", a, self.p(name, "attention_output/kernel"))
            if o["use_bias"]:
                y = y + self.p(name, "attention_output/bias")
        else:
            raise Unsupported("layer kind '%s' (%s)" % (kind, name))
        extra = set(o) - known
        if extra:
            raise Unsupported("%s (%s): options %s" % (name, kind, sorted(extra)))
        return y


def schedule_factor(s, sch):
    """optim.h's tfl_schedule_value / learning_rate at step s (0-based)."""
    w = int(sch.get("warmup_steps", 0))
    if s < w:
        f0 = num(sch.get("warmup_start_factor", 0))
        return f0 + (1 - f0) * s / w
    s -= w
    kind = sch["kind"]
    if kind == "constant":
        return 1.0
    if kind == "cosine":
        d, a = int(sch["decay_steps"]), num(sch["alpha"])
        return a + (1 - a) * (1 + math.cos(math.pi * min(s, d) / d)) / 2
    if kind == "exponential":
        return num(sch["decay_rate"]) ** (s / int(sch["decay_steps"]))
    if kind == "step":
        return num(sch["decay_rate"]) ** (s // int(sch["decay_steps"]))
    raise Unsupported("schedule '%s'" % kind)


def make_optimizer(o, params):
    if o["formula"] != "pytorch":
        raise Unsupported("optimizer formula '%s'" % o["formula"])
    for k in ("clipvalue", "clipnorm", "global_clipnorm"):
        if o.get(k) is not None:
            raise Unsupported("optimizer %s" % k)
    args = dict(lr=num(o["learning_rate"]), betas=(num(o["beta_1"]), num(o["beta_2"])),
                eps=num(o["epsilon"]), weight_decay=num(o["weight_decay"]),
                amsgrad=bool(o["amsgrad"]), foreach=False)
    if o["kind"] == "adam":
        return torch.optim.Adam(params, **args)
    if o["kind"] == "adamw":
        return torch.optim.AdamW(params, **args)
    raise Unsupported("optimizer '%s'" % o["kind"])


def read_idx(path):
    with gzip.open(path, "rb") as fh:
        data = fh.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def batches(cfg, steps):
    """The first `steps` training batches, in order (data.shuffle is false)."""
    d, bs = cfg["data"], int(cfg["training"]["batch_size"])
    if d["shuffle"] or d["standardize"]:
        raise Unsupported("data.shuffle or data.standardize")
    tr = d["train"]
    if tr["format"] == "idx":
        x = read_idx(tr["images"])[: steps * bs]
        y = read_idx(tr["labels"])[: steps * bs]
        scale = np.float32(num(d["scale"]) if d["scale"] is not None else 1.0 / 255.0)
        xf = torch.from_numpy(x.astype(np.float32) * scale + np.float32(num(d["offset"])))
        yl = torch.from_numpy(y.astype(np.int64))
        return [(xf[i * bs:(i + 1) * bs], yl[i * bs:(i + 1) * bs]) for i in range(steps)]
    if tr["format"] == "text":
        if tr["tokens"] != "bytes":
            raise Unsupported("text tokens '%s'" % tr["tokens"])
        c = int(tr["context_length"])
        stride = int(tr["stride"]) if tr["stride"] is not None else c
        files = sorted(glob.glob(tr["path"]), key=lambda p: p.encode())
        corpus = b"".join(open(p, "rb").read() for p in files)
        need = (steps * bs - 1) * stride + c + 1
        if len(corpus) < need:
            raise Unsupported("the corpus has %d bytes, fewer than %d" % (len(corpus), need))
        t = torch.frombuffer(bytearray(corpus[:need]), dtype=torch.uint8).long()
        wins = torch.stack([t[i * stride: i * stride + c + 1] for i in range(steps * bs)])
        return [(wins[i * bs:(i + 1) * bs, :c], wins[i * bs:(i + 1) * bs, 1:])
                for i in range(steps)]
    raise Unsupported("data format '%s'" % tr["format"])


def train(cfg, params, steps, dtype=torch.float32):
    g = Graph(cfg["model"]["layers"], params)
    if cfg["loss"] != "sparse_categorical_crossentropy":
        raise Unsupported("loss '%s'" % cfg["loss"])
    opt = make_optimizer(cfg["optimizer"], g.trainable)
    sch, lr = cfg["optimizer"]["schedule"], num(cfg["optimizer"]["learning_rate"])
    losses = []
    for s, (x, y) in enumerate(batches(cfg, steps)):
        for group in opt.param_groups:
            group["lr"] = lr * schedule_factor(s, sch)
        opt.zero_grad()
        logits = g.forward(x.to(dtype) if x.is_floating_point() else x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def init_checks(params):
    out = {}
    for name in sorted(params):
        w = params[name].detach().double().reshape(-1)
        out[name] = {"shape": list(params[name].shape), "sum": float(w.sum()),
                     "sum_sq": float((w * w).sum()),
                     "first": [float(v) for v in params[name].detach().reshape(-1)[:N_FIRST]]}
    return out


def report(key, ref, t32, tfl):
    """Prints each step's float64 loss and the relative differences from it of the float32
    twin and of tapeflow, then their largest, mean and mean signed values."""
    print("%s: step, PyTorch float64 loss; relative difference from it of PyTorch float32, "
          "of tapeflow" % key)
    d32 = [(b - a) / abs(a) for a, b in zip(ref, t32)]
    dtf = [(b - a) / abs(a) for a, b in zip(ref, tfl)]
    for k, a in enumerate(ref):
        print("  %2d %.8f %+.2e %+.2e" % (k, a, d32[k], dtf[k]))
    for who, d in (("PyTorch float32", d32), ("tapeflow", dtf)):
        worst = max(range(len(d)), key=lambda k: abs(d[k]))
        print("%s, %s: largest |relative difference| %.3g (step %d), mean %.3g, mean signed "
              "%+.3g; step 0 %.3g" % (key, who, abs(d[worst]), worst,
                                      sum(abs(v) for v in d) / len(d), sum(d) / len(d), abs(d[0])))


def run_tapeflow(build, out_dir):
    exe = os.path.join(build, TEST)
    env = dict(os.environ, TFL_TWIN_OUT=out_dir, OMP_NUM_THREADS=os.environ.get(
        "OMP_NUM_THREADS", "2"))
    print("running", exe, "with TFL_TWIN_OUT=%s" % out_dir, flush=True)
    subprocess.run([exe], env=env, check=True, cwd=ROOT)


def resolve(build, config, overrides):
    cmd = [os.path.join(build, "examples", "tapeflow"), "config", os.path.join(ROOT, config)]
    for o in overrides:
        cmd += ["--set", o]
    return yaml.safe_load(subprocess.run(cmd, check=True, capture_output=True, text=True,
                                         cwd=ROOT).stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default="resnet,transformer")
    ap.add_argument("--out", default=os.path.join(HERE, "fixtures", "shipped_twins.json"))
    ap.add_argument("--from", dest="src", help="a directory TFL_TWIN_OUT wrote")
    args = ap.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(0)  # nothing random is drawn; set for safety
    tmp = None
    if args.src is None:
        tmp = tempfile.TemporaryDirectory()
        args.src = tmp.name
        run_tapeflow(args.build, args.src)
    models, steps = {}, None
    if os.path.exists(args.out):  # the models not run keep their entries
        with open(args.out) as fh:
            models = json.load(fh)["models"]
    for key in args.models.split(","):
        with open(os.path.join(args.src, key + ".json")) as fh:
            tf = json.load(fh)
        steps = tf["steps"]
        cfg = resolve(args.build, tf["config"], tf["overrides"])
        raw = load_file(os.path.join(args.src, key + ".safetensors"))
        losses = {}
        for dt in (torch.float32, torch.float64):
            params = {k: v.clone().to(dt).requires_grad_(
                not k.endswith(("moving_mean", "moving_variance"))) for k, v in raw.items()}
            losses[dt] = train(cfg, params, steps, dt)
        report(key, losses[torch.float64], losses[torch.float32], tf["losses"])
        models[key] = {"config": tf["config"], "overrides": tf["overrides"],
                       "losses_float32": losses[torch.float32],
                       "losses_float64": losses[torch.float64], "init": init_checks(raw)}
    doc = {"torch_version": torch.__version__, "python_version": platform.python_version(),
           "numpy_version": np.__version__, "steps": steps, "models": models}
    with open(args.out, "w") as fh:  # a line per model's losses and per variable
        fh.write("{\n")
        for k in ("torch_version", "python_version", "numpy_version", "steps"):
            fh.write(" %s: %s,\n" % (json.dumps(k), json.dumps(doc[k])))
        fh.write(' "models": {\n')
        parts = []
        for key, m in models.items():
            lines = ['  %s: {' % json.dumps(key),
                     '   "config": %s,' % json.dumps(m["config"]),
                     '   "overrides": %s,' % json.dumps(m["overrides"]),
                     '   "losses_float32": %s,' % json.dumps(m["losses_float32"]),
                     '   "losses_float64": %s,' % json.dumps(m["losses_float64"]),
                     '   "init": {']
            lines.append(",\n".join("    %s: %s" % (json.dumps(n), json.dumps(c))
                                    for n, c in m["init"].items()))
            lines.append("   }\n  }")
            parts.append("\n".join(lines))
        fh.write(",\n".join(parts))
        fh.write("\n }\n}\n")
    print("wrote", args.out)
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    try:
        main()
    except Unsupported as e:
        sys.exit("shipped_twins_torch.py: the twin cannot follow the config: %s" % e)
