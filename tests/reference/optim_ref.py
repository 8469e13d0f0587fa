#!/usr/bin/env python3
"""optim_ref.py: reference optimizer trajectories for tapeflow, recorded from torch.optim and
from TensorFlow itself (Keras 3 optimizers and tf.raw_ops.ResourceApply*).

Two float32 variables (shapes [3, 4] and [5]) start from fixed values and take 100 optimizer
steps on 100 fixed float32 gradients that do not depend on the variables (so every framework
sees exactly the same inputs). For every case the script records the variables after each
step, the final slots (named as in optim/include/tapeflow/optim.h: momentum, m, v, vhat,
rms, mg, accumulator) and the learning rate the framework used at each step. It writes
tests/reference/fixtures/optim_ref.json with:

  - "defaults": the constructor defaults of torch.optim.X and keras.optimizers.X for SGD,
    Adam, AdamW, RMSprop, Adagrad, NAdam (Keras: Nadam) and Adamax, read with inspect.signature and
    mapped to the C option names of tfl_optimizer_opts (Keras's weight_decay=None is 0; an
    option Keras does not have but fixes in its formula, NAdam's momentum_decay 1, is
    written with that value and a note);
  - "cases": one entry per (optimizer, options, formula, source), the source being
    "torch.optim.X" (formula "pytorch"), "keras.optimizers.X" (formula "tensorflow") or
    "tf.raw_ops.ResourceApplyX" (filed under the formula of optim.h it implements);
  - "schedules": the learning rates of Keras's schedules and torch's schedulers at steps
    0..120, each with the tfl_schedule it corresponds to.

It also checks what it records, and prints the checks (nothing of them goes into the file):
every learning rate against optim.h's schedule (`tfl_factor`); every case against a float64
NumPy reimplementation of optim.h's formulas (`ref_run`), both as recorded (float32) and
rerun with float64 variables and gradients, where the frameworks' rounding no longer hides
a formula that differs; torch against Keras where optim.h says the two formulas agree, and
where it says they differ, that the difference is the one optim.h's formulas predict.

Numbers: float32 quantities (init, grads, values, slots, Keras's learning rates and
schedule values) are written as the shortest decimal that reads back to the same float32
(read them with strtof); Python doubles (torch's learning rates, options) as the shortest
decimal that reads back to the same double (repr).

torch runs its single-tensor (foreach=False) CPU code, Keras the TensorFlow backend, eagerly.
Seeds are fixed, oneDNN is off and GPUs are hidden, so two runs with the same versions write
identical files.

Usage (from the repository root):  python3 tests/reference/optim_ref.py [--out PATH]
Needs torch and TensorFlow 2 (`pip install torch tensorflow-cpu`). CI never runs this
script: the tests read only the committed JSON.
"""
import argparse
import inspect
import json
import math
import os
import platform
import sys
import warnings

# Before TensorFlow/Keras are imported: quiet logs, oneDNN off, no GPU, TF backend.
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ["TF_DETERMINISTIC_OPS"] = "1"
os.environ["PYTHONHASHSEED"] = "0"
os.environ["KERAS_BACKEND"] = "tensorflow"

import numpy as np  # noqa: E402
import torch  # noqa: E402
# torch.optim imports torch._dynamo, which loads triton; triton's LLVM and TensorFlow's
# register the same LLVM options, and whichever loads second aborts the process ("LLVM
# ERROR: inconsistency in registered CommandLine options") unless triton comes first.
import torch._dynamo  # noqa: E402,F401
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

warnings.filterwarnings("ignore")

SEED = 20260521
STEPS = 100
SCHEDULE_STEPS = 121  # steps 0..120 for the "schedules" section
SHAPES = [[3, 4], [5]]
SIZES = [12, 5]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_OUT = os.path.join(REPO, "tests", "reference", "fixtures", "optim_ref.json")

OPTIMIZERS = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "Adamax"]
# Keras's class where its name differs from tapeflow's (and torch's)
KERAS_CLASS = {"NAdam": "Nadam"}
# Options Keras has no argument for but fixes in its formula: the value optim.h gives them
KERAS_IMPLIED = {"NAdam": {"momentum_decay": (1.0, "Keras's Nadam has no momentum_decay; its "
                                                   "schedule 0.96^t is psi = 1")}}
FORMULAS = ["pytorch", "tensorflow"]
CLIPS = ["clip_value", "clip_norm", "global_clip_norm"]
# The options of tfl_optimizer_opts each kind has (all kinds also have the three clips).
OPTION_NAMES = {
    "SGD": ["learning_rate", "weight_decay", "momentum", "dampening", "nesterov"],
    "Adam": ["learning_rate", "weight_decay", "beta1", "beta2", "epsilon", "amsgrad"],
    "AdamW": ["learning_rate", "weight_decay", "beta1", "beta2", "epsilon", "amsgrad"],
    "RMSprop": ["learning_rate", "weight_decay", "rho", "momentum", "epsilon", "centered"],
    "Adagrad": ["learning_rate", "weight_decay", "initial_accumulator", "epsilon"],
    "NAdam": ["learning_rate", "weight_decay", "beta1", "beta2", "epsilon", "momentum_decay"],
    "Adamax": ["learning_rate", "weight_decay", "beta1", "beta2", "epsilon"],
}


# ---------------------------------------------------------------------------------------
# Numbers in the file


class F32(float):
    """A float32 value: written as the shortest decimal that reads back to it."""


def f32list(a):
    return [F32(x) for x in np.asarray(a, dtype=np.float32).reshape(-1).tolist()]


def split(flat17):
    """The 17 values of both variables as [[12], [5]]."""
    a = np.asarray(flat17).reshape(-1)
    return [f32list(a[:SIZES[0]]), f32list(a[SIZES[0]:])]


def num(x):
    if isinstance(x, F32):
        v = np.float32(x)
        if not np.isfinite(v):
            raise ValueError("non-finite value %r" % v)
        s = str(v)  # NumPy 2: shortest round-trip repr of a float32
        assert np.float32(s) == v, (s, v)
        return s
    if isinstance(x, bool) or x is None or isinstance(x, (int, str)):
        return json.dumps(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError("non-finite value %r" % x)
        return repr(float(x))  # float(): a NumPy float64's repr is "np.float64(...)"
    raise TypeError(type(x))


def to_json(obj, indent=0):
    """JSON with one key per line; lists of numbers (or of lists of numbers) on one line."""
    pad = " " * (indent + 1)

    def flat_list(x):
        return isinstance(x, list) and all(
            not isinstance(y, (dict, list)) or
            (isinstance(y, list) and all(not isinstance(z, (dict, list)) for z in y))
            for y in x)

    def inline(x):
        if isinstance(x, list):
            return "[" + ",".join(inline(y) for y in x) + "]"
        if isinstance(x, dict):
            return "{" + ", ".join("%s: %s" % (json.dumps(k), inline(v))
                                   for k, v in x.items()) + "}"
        return num(x)

    if isinstance(obj, dict):
        if not obj:
            return "{}"
        small = all(not isinstance(v, (dict, list)) for v in obj.values())
        if small and len(obj) <= 16:
            return inline(obj)
        items = ["%s%s: %s" % (pad, json.dumps(k), to_json(v, indent + 1))
                 for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(obj, list) and not flat_list(obj):
        items = [pad + to_json(v, indent + 1) for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"
    return inline(obj)


# ---------------------------------------------------------------------------------------
# Inputs


def make_inputs():
    """Initial values and 100 steps of gradients, float32, [step][element] (17 elements).

    Every element has its own magnitude, log-spaced from 3e-4 to 3 (the two largest in
    different variables); each step scales all of them by a factor in [0.2, 2] (so norms
    vary and clipping acts on some steps only) and each by a factor in [0.5, 1.5] of its
    own: |g| runs from about 4e-5 to 9. Signs flip at random (more often for some elements
    than others); about 3% of the entries are exact zeros, and element 3 is zero on the
    first five steps (a first apply with a zero gradient).
    """
    rng = np.random.default_rng(SEED)
    n = sum(SIZES)
    # From 2 to 5, away from zero and positive: the values then keep their 8 or 9
    # significant digits in fewer characters (the file's size is mostly these values).
    init = rng.uniform(2.0, 5.0, n).astype(np.float32)
    scale = 10.0 ** np.linspace(-3.5, 0.5, n)
    rng.shuffle(scale)
    # The two largest magnitudes in different variables, so both norms vary widely.
    big = np.argsort(scale)[-2:]
    if (big < SIZES[0]).all() or (big >= SIZES[0]).all():
        j = big[0]
        k = SIZES[0] if j < SIZES[0] else 0
        scale[[j, k]] = scale[[k, j]]
    step_factor = 10.0 ** rng.uniform(np.log10(0.2), np.log10(2.0), STEPS)
    flip_p = rng.uniform(0.05, 0.5, n)
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    g = np.empty((STEPS, n))
    for k in range(STEPS):
        flips = rng.random(n) < flip_p
        sign = np.where(flips, -sign, sign)
        g[k] = sign * scale * step_factor[k] * rng.uniform(0.5, 1.5, n)
    g[rng.random((STEPS, n)) < 0.03] = 0.0
    g[:5, 3] = 0.0
    return init, g.astype(np.float32)


INIT, GRADS = make_inputs()


def var_parts(flat):
    return [flat[:SIZES[0]].reshape(SHAPES[0]), flat[SIZES[0]:].reshape(SHAPES[1])]


# ---------------------------------------------------------------------------------------
# Defaults, read from the frameworks


def _sig(cls):
    return {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()
            if p.default is not inspect.Parameter.empty}


TORCH_NAMES = {"lr": "learning_rate", "weight_decay": "weight_decay", "momentum": "momentum",
               "dampening": "dampening", "nesterov": "nesterov", "eps": "epsilon",
               "amsgrad": "amsgrad", "alpha": "rho", "centered": "centered",
               "initial_accumulator_value": "initial_accumulator",
               "momentum_decay": "momentum_decay"}
KERAS_NAMES = {"learning_rate": "learning_rate", "weight_decay": "weight_decay",
               "momentum": "momentum", "nesterov": "nesterov", "beta_1": "beta1",
               "beta_2": "beta2", "epsilon": "epsilon", "amsgrad": "amsgrad", "rho": "rho",
               "centered": "centered", "initial_accumulator_value": "initial_accumulator",
               "clipnorm": "clip_norm", "clipvalue": "clip_value",
               "global_clipnorm": "global_clip_norm"}


def read_defaults():
    """defaults["Adam/pytorch"] = {C option: default}, and notes on what has no counterpart."""
    defaults, notes = {}, {}
    for name in OPTIMIZERS:
        for formula in FORMULAS:
            key = "%s/%s" % (name, formula)
            if formula == "pytorch":
                sig = _sig(getattr(torch.optim, name))
                names = TORCH_NAMES
            else:
                sig = _sig(getattr(keras.optimizers, KERAS_CLASS.get(name, name)))
                names = KERAS_NAMES
            got, unmapped = {}, []
            for k, v in sig.items():
                if k == "betas":
                    got["beta1"], got["beta2"] = float(v[0]), float(v[1])
                elif k in names:
                    got[names[k]] = v
                else:
                    unmapped.append(k)
            d = {}
            for opt in OPTION_NAMES[name] + CLIPS:
                v = got.get(opt)
                if v is None:
                    v = False if opt in ("nesterov", "amsgrad", "centered") else 0.0
                d[opt] = v if isinstance(v, bool) else float(v)
            implied = KERAS_IMPLIED.get(name, {}) if formula == "tensorflow" else {}
            for opt, (v, _) in implied.items():
                d[opt] = v
            missing = [o for o in OPTION_NAMES[name] if o not in got and o not in implied]
            if formula == "pytorch":
                missing += CLIPS  # torch clips with torch.nn.utils, not in the optimizer
            defaults[key] = d
            notes[key] = {"not_in_framework": missing,
                          "framework_only": sorted(unmapped)}
            if formula == "tensorflow" and sig.get("weight_decay", 0) is None:
                notes[key]["weight_decay"] = "None in Keras (no decay), written as 0"
            for opt, (_, note) in implied.items():
                notes[key][opt] = note
    return defaults, notes


DEFAULTS, DEFAULT_NOTES = read_defaults()


# ---------------------------------------------------------------------------------------
# optim.h's schedule, in double


def tfl_factor(sched, s):
    """tfl_schedule_value / learning_rate at step s (0-based), as optim.h defines it."""
    if not sched:
        return 1.0
    w = sched.get("warmup_steps", 0)
    f = sched.get("warmup_start_factor", 0.0)
    if s < w:
        return f + (1.0 - f) * s / w
    s -= w
    kind = sched["kind"]
    if kind == "constant":
        return 1.0
    d = sched["decay_steps"]
    if kind == "exponential":
        return sched["decay_rate"] ** (s / d)
    if kind == "step":
        return sched["decay_rate"] ** math.floor(s / d)
    if kind == "cosine":
        a = sched["alpha"]
        return a + (1.0 - a) * (1.0 + math.cos(math.pi * min(s, d) / d)) / 2.0
    raise ValueError(kind)


def full_schedule(kind, decay_steps=0, decay_rate=0.0, alpha=0.0, warmup_steps=0,
                  warmup_start_factor=0.0):
    return {"kind": kind, "decay_steps": decay_steps, "decay_rate": decay_rate,
            "alpha": alpha, "warmup_steps": warmup_steps,
            "warmup_start_factor": warmup_start_factor}


# ---------------------------------------------------------------------------------------
# Framework schedules


def keras_schedule(lr, sched):
    """The Keras LearningRateSchedule for a tfl schedule (None: a constant float)."""
    S = keras.optimizers.schedules
    if not sched:
        return lr, None
    kind, w = sched["kind"], sched["warmup_steps"]
    if kind == "exponential" and not w:
        return (S.ExponentialDecay(lr, sched["decay_steps"], sched["decay_rate"]),
                "ExponentialDecay(lr, decay_steps, decay_rate, staircase=False)")
    if kind == "step" and not w:
        return (S.ExponentialDecay(lr, sched["decay_steps"], sched["decay_rate"],
                                   staircase=True),
                "ExponentialDecay(lr, decay_steps, decay_rate, staircase=True)")
    if kind == "cosine" and not w:
        return (S.CosineDecay(lr, sched["decay_steps"], alpha=sched["alpha"]),
                "CosineDecay(lr, decay_steps, alpha)")
    if kind == "cosine":
        f = sched["warmup_start_factor"]
        return (S.CosineDecay(f * lr, sched["decay_steps"], alpha=sched["alpha"],
                              warmup_target=lr, warmup_steps=w),
                "CosineDecay(warmup_start_factor*lr, decay_steps, alpha, warmup_target=lr, "
                "warmup_steps)")
    if kind == "constant" and w:
        f = sched["warmup_start_factor"]
        # alpha = 1: the cosine part is constant at warmup_target.
        return (S.CosineDecay(f * lr, 1, alpha=1.0, warmup_target=lr, warmup_steps=w),
                "CosineDecay(warmup_start_factor*lr, 1, alpha=1.0, warmup_target=lr, "
                "warmup_steps) (alpha 1: constant after the warmup)")
    raise ValueError(sched)


def torch_scheduler(opt, lr, sched):
    """The torch scheduler for a tfl schedule, stepped once after each optimizer.step()."""
    L = torch.optim.lr_scheduler
    if not sched:
        return None, None
    kind, w = sched["kind"], sched["warmup_steps"]
    d, r = sched["decay_steps"], sched["decay_rate"]
    if kind == "exponential" and not w:
        return (L.LambdaLR(opt, lambda s: r ** (s / d)),
                "LambdaLR(lambda s: decay_rate ** (s / decay_steps))")
    if kind == "step" and not w:
        return L.StepLR(opt, step_size=d, gamma=r), "StepLR(step_size=decay_steps, gamma)"
    if kind == "cosine" and not w:
        return (L.CosineAnnealingLR(opt, T_max=d, eta_min=sched["alpha"] * lr),
                "CosineAnnealingLR(T_max=decay_steps, eta_min=alpha*lr)")
    if kind == "cosine":
        f = sched["warmup_start_factor"]
        warm = L.LinearLR(opt, start_factor=f, end_factor=1.0, total_iters=w)
        cos = L.CosineAnnealingLR(opt, T_max=d, eta_min=sched["alpha"] * lr)
        return (L.SequentialLR(opt, [warm, cos], milestones=[w]),
                "SequentialLR([LinearLR(start_factor=warmup_start_factor, end_factor=1, "
                "total_iters=warmup_steps), CosineAnnealingLR(T_max=decay_steps, "
                "eta_min=alpha*lr)], milestones=[warmup_steps])")
    if kind == "constant" and w:
        f = sched["warmup_start_factor"]
        return (L.LinearLR(opt, start_factor=f, end_factor=1.0, total_iters=w),
                "LinearLR(start_factor=warmup_start_factor, end_factor=1, "
                "total_iters=warmup_steps)")
    raise ValueError(sched)


# ---------------------------------------------------------------------------------------
# Runners. Each returns (values [100][17] float32, {slot: [17] float32}, lr [100]).


def run_torch(optimizer, o, sched, dtype="float32"):
    tdt = getattr(torch, dtype)
    params = [torch.tensor(p.copy(), dtype=tdt, requires_grad=True) for p in var_parts(INIT)]
    lr = o["learning_rate"]
    if optimizer == "SGD":
        opt = torch.optim.SGD(params, lr=lr, momentum=o["momentum"],
                              dampening=o["dampening"], weight_decay=o["weight_decay"],
                              nesterov=o["nesterov"], foreach=False)
    elif optimizer in ("Adam", "AdamW"):
        opt = getattr(torch.optim, optimizer)(
            params, lr=lr, betas=(o["beta1"], o["beta2"]), eps=o["epsilon"],
            weight_decay=o["weight_decay"], amsgrad=o["amsgrad"], foreach=False)
    elif optimizer == "RMSprop":
        opt = torch.optim.RMSprop(params, lr=lr, alpha=o["rho"], eps=o["epsilon"],
                                  weight_decay=o["weight_decay"], momentum=o["momentum"],
                                  centered=o["centered"], foreach=False)
    elif optimizer == "Adamax":
        opt = torch.optim.Adamax(params, lr=lr, betas=(o["beta1"], o["beta2"]), eps=o["epsilon"],
                                 weight_decay=o["weight_decay"], foreach=False)
    elif optimizer == "NAdam":
        opt = torch.optim.NAdam(params, lr=lr, betas=(o["beta1"], o["beta2"]), eps=o["epsilon"],
                                weight_decay=o["weight_decay"],
                                momentum_decay=o["momentum_decay"], foreach=False)
    elif optimizer == "Adagrad":
        opt = torch.optim.Adagrad(params, lr=lr, lr_decay=0.0,
                                  weight_decay=o["weight_decay"],
                                  initial_accumulator_value=o["initial_accumulator"],
                                  eps=o["epsilon"], foreach=False)
    sch, how = torch_scheduler(opt, lr, sched)
    values, lrs = [], []
    for k in range(STEPS):
        lrs.append(float(opt.param_groups[0]["lr"]))
        for p, g in zip(params, var_parts(GRADS[k])):
            p.grad = torch.tensor(g.copy(), dtype=tdt)
        if o["clip_norm"]:
            for p in params:
                torch.nn.utils.clip_grad_norm_([p], o["clip_norm"])
        elif o["global_clip_norm"]:
            torch.nn.utils.clip_grad_norm_(params, o["global_clip_norm"])
        elif o["clip_value"]:
            torch.nn.utils.clip_grad_value_(params, o["clip_value"])
        opt.step()
        if sch is not None:
            sch.step()
        values.append(np.concatenate([p.detach().numpy().reshape(-1) for p in params]))
    names = {"momentum_buffer": "momentum", "exp_avg": "m", "exp_avg_sq": "v",
             "max_exp_avg_sq": "vhat", "square_avg": "rms", "grad_avg": "mg",
             "sum": "accumulator", "exp_inf": "u"}
    slots = {}
    for tname, cname in names.items():
        if tname == "momentum_buffer" and optimizer == "RMSprop" and not o["momentum"]:
            continue
        parts = [opt.state[p].get(tname) for p in params]
        if any(x is None for x in parts):
            continue
        if tname == "max_exp_avg_sq" and not o["amsgrad"]:
            continue
        slots[cname] = np.concatenate([x.detach().numpy().reshape(-1) for x in parts])
    how_clip = None
    if o["clip_norm"]:
        how_clip = "torch.nn.utils.clip_grad_norm_([p], clip_norm) for each parameter p"
    elif o["global_clip_norm"]:
        how_clip = "torch.nn.utils.clip_grad_norm_(params, global_clip_norm)"
    elif o["clip_value"]:
        how_clip = "torch.nn.utils.clip_grad_value_(params, clip_value)"
    return np.array(values), slots, lrs, how, how_clip


def run_keras(optimizer, o, sched, dtype="float32"):
    """dtype float64 (for the checks only): float64 variables, and floatx float64 so that
    the learning-rate variable is float64 too; a schedule's initial learning rate is then
    given as np.float64, or Keras would compute the schedule in float32."""
    K = keras.optimizers
    keras.config.set_floatx(dtype)
    try:
        return _run_keras(K, optimizer, o, sched, dtype)
    finally:
        keras.config.set_floatx("float32")


def _run_keras(K, optimizer, o, sched, dtype):
    variables = [keras.Variable(p.copy(), dtype=dtype, name="var%d" % i)
                 for i, p in enumerate(var_parts(INIT))]
    lr0 = o["learning_rate"] if dtype == "float32" else np.float64(o["learning_rate"])
    lr, how = keras_schedule(lr0, sched)
    common = dict(learning_rate=lr,
                  weight_decay=o["weight_decay"] or None,
                  clipnorm=o["clip_norm"] or None, clipvalue=o["clip_value"] or None,
                  global_clipnorm=o["global_clip_norm"] or None)
    if optimizer == "SGD":
        opt = K.SGD(momentum=float(o["momentum"]), nesterov=o["nesterov"], **common)
    elif optimizer in ("Adam", "AdamW"):
        opt = getattr(K, optimizer)(beta_1=o["beta1"], beta_2=o["beta2"],
                                    epsilon=o["epsilon"], amsgrad=o["amsgrad"], **common)
    elif optimizer == "RMSprop":
        opt = K.RMSprop(rho=o["rho"], momentum=o["momentum"], epsilon=o["epsilon"],
                        centered=o["centered"], **common)
    elif optimizer == "Adagrad":
        opt = K.Adagrad(initial_accumulator_value=o["initial_accumulator"],
                        epsilon=o["epsilon"], **common)
    elif optimizer == "Adamax":
        opt = K.Adamax(beta_1=o["beta1"], beta_2=o["beta2"], epsilon=o["epsilon"], **common)
    elif optimizer == "NAdam":
        assert o["momentum_decay"] == 1.0, "Keras's Nadam has psi = 1 only"
        opt = K.Nadam(beta_1=o["beta1"], beta_2=o["beta2"], epsilon=o["epsilon"], **common)
    values, lrs = [], []
    for k in range(STEPS):
        lr_k = np.asarray(opt.learning_rate)
        lrs.append(F32(lr_k) if dtype == "float32" else float(lr_k))
        grads = [tf.constant(g.astype(dtype)) for g in var_parts(GRADS[k])]
        opt.apply(grads, variables)
        values.append(np.concatenate([np.asarray(v.numpy()).reshape(-1)
                                      for v in variables]))
    assert int(opt.iterations.numpy()) == STEPS
    lists = {"SGD": {"momentum": "momentums"},
             "Adam": {"m": "_momentums", "v": "_velocities", "vhat": "_velocity_hats"},
             "RMSprop": {"rms": "_velocities", "mg": "_average_gradients",
                         "momentum": "_momentums"},
             "Adagrad": {"accumulator": "_accumulators"},
             "NAdam": {"m": "_momentums", "v": "_velocities"},
             "Adamax": {"m": "_m", "u": "_u"}}
    lists["AdamW"] = lists["Adam"]
    slots = {}
    for cname, attr in lists[optimizer].items():
        lst = getattr(opt, attr, None) or []
        if len(lst) == 2:
            slots[cname] = np.concatenate([np.asarray(x.numpy()).reshape(-1) for x in lst])
    how_clip = None
    for c, kname in (("clip_norm", "clipnorm"), ("global_clip_norm", "global_clipnorm"),
                     ("clip_value", "clipvalue")):
        if o[c]:
            how_clip = "%s=%r" % (kname, o[c])
    return np.array(values), slots, lrs, how, how_clip


RAW = tf.raw_ops


def run_raw(op, o, lrs, dtype="float32"):
    """Runs tf.raw_ops.<op> over the 100 steps with the learning rates lrs."""
    f32 = getattr(tf, dtype)
    c = lambda x: tf.constant(x, f32)  # noqa: E731
    variables = [tf.Variable(p.astype(dtype), dtype=f32) for p in var_parts(INIT)]

    def slot(fill=0.0):
        return [tf.Variable(tf.fill(tf.shape(v), c(fill))) for v in variables]

    slots = {}
    if op in ("ResourceApplyKerasMomentum", "ResourceApplyMomentum"):
        slots["momentum"] = slot()
    elif op in ("ResourceApplyAdam", "ResourceApplyAdamWithAmsgrad"):
        slots["m"], slots["v"] = slot(), slot()
        if op == "ResourceApplyAdamWithAmsgrad":
            slots["vhat"] = slot()
    elif op == "ResourceApplyRMSProp":
        slots["rms"], slots["momentum"] = slot(), slot()
    elif op == "ResourceApplyCenteredRMSProp":
        slots["mg"], slots["rms"], slots["momentum"] = slot(), slot(), slot()
    elif op == "ResourceApplyAdagradV2":
        slots["accumulator"] = slot(o["initial_accumulator"])
    values = []
    for k in range(STEPS):
        lr = c(lrs[k])
        for i, g in enumerate(var_parts(GRADS[k])):
            g = c(g.astype(dtype))
            v = variables[i].handle
            if op == "ResourceApplyGradientDescent":
                RAW.ResourceApplyGradientDescent(var=v, alpha=lr, delta=g)
            elif op == "ResourceApplyKerasMomentum":
                RAW.ResourceApplyKerasMomentum(var=v, accum=slots["momentum"][i].handle, lr=lr,
                                               grad=g, momentum=c(o["momentum"]),
                                               use_nesterov=o["nesterov"])
            elif op == "ResourceApplyMomentum":
                RAW.ResourceApplyMomentum(var=v, accum=slots["momentum"][i].handle, lr=lr,
                                          grad=g, momentum=c(o["momentum"]),
                                          use_nesterov=o["nesterov"])
            elif op in ("ResourceApplyAdam", "ResourceApplyAdamWithAmsgrad"):
                # Keras's beta powers: beta to the power iterations + 1, both in the
                # variable's dtype.
                t = tf.cast(k + 1, f32)
                b1p, b2p = tf.pow(c(o["beta1"]), t), tf.pow(c(o["beta2"]), t)
                args = dict(var=v, m=slots["m"][i].handle, v=slots["v"][i].handle,
                            beta1_power=b1p, beta2_power=b2p, lr=lr, beta1=c(o["beta1"]),
                            beta2=c(o["beta2"]), epsilon=c(o["epsilon"]), grad=g)
                if op == "ResourceApplyAdam":
                    RAW.ResourceApplyAdam(use_nesterov=False, **args)
                else:
                    RAW.ResourceApplyAdamWithAmsgrad(vhat=slots["vhat"][i].handle, **args)
            elif op == "ResourceApplyRMSProp":
                RAW.ResourceApplyRMSProp(var=v, ms=slots["rms"][i].handle,
                                         mom=slots["momentum"][i].handle, lr=lr,
                                         rho=c(o["rho"]), momentum=c(o["momentum"]),
                                         epsilon=c(o["epsilon"]), grad=g)
            elif op == "ResourceApplyCenteredRMSProp":
                RAW.ResourceApplyCenteredRMSProp(var=v, mg=slots["mg"][i].handle,
                                                 ms=slots["rms"][i].handle,
                                                 mom=slots["momentum"][i].handle, lr=lr,
                                                 rho=c(o["rho"]), momentum=c(o["momentum"]),
                                                 epsilon=c(o["epsilon"]), grad=g)
            elif op == "ResourceApplyAdagradV2":
                RAW.ResourceApplyAdagradV2(var=v, accum=slots["accumulator"][i].handle, lr=lr,
                                           epsilon=c(o["epsilon"]), grad=g, update_slots=True)
            else:
                raise ValueError(op)
        values.append(np.concatenate([v.numpy().reshape(-1) for v in variables]))
    if "momentum" in slots and not o.get("momentum"):
        del slots["momentum"]  # RMSProp with momentum 0: mom is the last increment
    out = {k: np.concatenate([x.numpy().reshape(-1) for x in lst]) for k, lst in slots.items()}
    return np.array(values), out, [F32(x) if dtype == "float32" else float(x) for x in lrs]


# ---------------------------------------------------------------------------------------
# optim.h's formulas in float64 NumPy


def ref_run(optimizer, formula, o, sched, keras_casts=False, f32_decay_factor=False):
    """The trajectory optim.h's equations give, in float64, from the same init and grads.

    For diagnosis only:
    keras_casts: what Keras does to some Python-float hyperparameters even for float64
      variables: keras.ops.cast(x, "float64") of a Python float goes through a float32
      tensor, so β (in β^t only; NAdam's everywhere), SGD's momentum, weight_decay and
      Adagrad's initial accumulator are float32-rounded; 1 − β, ε, ρ and RMSprop's momentum
      stay exact.
    f32_decay_factor: torch AdamW's factor (1 − lr·wd) rounded to float32 (param.mul_ of a
      float32 tensor by a Python float).
    """
    o = dict(o)
    r32 = lambda x: float(np.float32(x))  # noqa: E731
    if keras_casts:
        if optimizer == "SGD":
            o["momentum"] = r32(o["momentum"])
        o["weight_decay"] = r32(o["weight_decay"])
        if optimizer == "Adagrad":
            o["initial_accumulator"] = r32(o["initial_accumulator"])
    p = [x.astype(np.float64) for x in var_parts(INIT)]
    st = [dict() for _ in p]
    values = []
    pt = formula == "pytorch"
    for k in range(STEPS):
        lr = o["learning_rate"] * tfl_factor(sched, k)
        t = k + 1
        g = [x.astype(np.float64) for x in var_parts(GRADS[k])]
        if o["clip_value"]:
            c = o["clip_value"]
            g = [np.minimum(np.maximum(x, -c), c) for x in g]
        elif o["clip_norm"] or o["global_clip_norm"]:
            c = o["clip_norm"] or o["global_clip_norm"]
            if o["clip_norm"]:
                norms = [np.sqrt(np.sum(x * x)) for x in g]
            else:
                norms = [np.sqrt(sum(np.sum(x * x) for x in g))] * len(g)
            g = [x * (min(1.0, c / (n + 1e-6)) if pt else c / max(n, c))
                 for x, n in zip(g, norms)]
        for i in range(len(p)):
            gi, pi, s = g[i], p[i], st[i]
            wd = o["weight_decay"]
            if wd:
                if pt and optimizer != "AdamW":
                    gi = gi + wd * pi
                elif pt and f32_decay_factor:
                    pi = pi * float(np.float32(1.0 - lr * wd))
                elif pt:
                    pi = pi * (1.0 - lr * wd)
                else:
                    pi = pi - pi * wd * lr
            if optimizer == "SGD":
                mu = o["momentum"]
                if not mu:
                    pi = pi - lr * gi
                elif pt:
                    b = gi.copy() if "momentum" not in s else \
                        mu * s["momentum"] + (1.0 - o["dampening"]) * gi
                    s["momentum"] = b
                    pi = pi - lr * (gi + mu * b) if o["nesterov"] else pi - lr * b
                else:
                    m = mu * s.get("momentum", 0.0) - lr * gi
                    s["momentum"] = m
                    pi = pi + mu * m - lr * gi if o["nesterov"] else pi + m
            elif optimizer in ("Adam", "AdamW"):
                b1, b2, eps = o["beta1"], o["beta2"], o["epsilon"]
                m = s.get("m", 0.0)
                v = s.get("v", 0.0)
                m = m + (1.0 - b1) * (gi - m)
                v = v + (1.0 - b2) * (gi * gi - v)
                s["m"], s["v"] = m, v
                if o["amsgrad"]:
                    v = np.maximum(s.get("vhat", 0.0), v)
                    s["vhat"] = v
                if keras_casts:
                    b1t, b2t = r32(b1) ** t, r32(b2) ** t
                else:
                    b1t, b2t = b1 ** t, b2 ** t
                if pt:
                    pi = pi - lr / (1.0 - b1t) * m / (np.sqrt(v) / math.sqrt(1.0 - b2t) + eps)
                else:
                    pi = pi - lr * math.sqrt(1.0 - b2t) / (1.0 - b1t) * m / (np.sqrt(v) + eps)
            elif optimizer == "RMSprop":
                rho, mu, eps = o["rho"], o["momentum"], o["epsilon"]
                v = rho * s.get("rms", 0.0) + (1.0 - rho) * gi * gi
                s["rms"] = v
                d = v
                if o["centered"]:
                    a = rho * s.get("mg", 0.0) + (1.0 - rho) * gi
                    s["mg"] = a
                    d = v - a * a
                if pt:
                    r = gi / (np.sqrt(d) + eps)
                    if mu > 0:
                        s["momentum"] = mu * s.get("momentum", 0.0) + r
                        pi = pi - lr * s["momentum"]
                    else:
                        pi = pi - lr * r
                else:
                    r = lr * gi / np.sqrt(d + eps)
                    if mu > 0:
                        s["momentum"] = mu * s.get("momentum", 0.0) + r
                        pi = pi - s["momentum"]
                    else:
                        pi = pi - r
            elif optimizer == "NAdam":
                b1, b2, eps, psi = o["beta1"], o["beta2"], o["epsilon"], o["momentum_decay"]
                if keras_casts:  # Keras's Nadam casts both betas to the variable's dtype
                    b1, b2 = r32(b1), r32(b2)
                mu_of = lambda tau: b1 * (1.0 - 0.5 * 0.96 ** (tau * psi))  # noqa: E731
                prod = math.prod(mu_of(tau) for tau in range(1, t + 1))
                mu, mu_next = mu_of(t), mu_of(t + 1)
                m = s.get("m", 0.0)
                v = s.get("v", 0.0)
                m = m + (1.0 - b1) * (gi - m)
                v = v + (1.0 - b2) * (gi * gi - v)
                s["m"], s["v"] = m, v
                pi = pi - lr * ((1.0 - mu) / (1.0 - prod) * gi +
                                mu_next / (1.0 - prod * mu_next) * m) / \
                    (np.sqrt(v) / math.sqrt(1.0 - b2 ** t) + eps)
            elif optimizer == "Adamax":
                b1, b2, eps = o["beta1"], o["beta2"], o["epsilon"]
                b1t = (r32(b1) if keras_casts else b1) ** t
                m = s.get("m", 0.0)
                m = m + (1.0 - b1) * (gi - m)
                if pt:  # ε inside the max
                    u = np.maximum(b2 * s.get("u", 0.0), np.abs(gi) + eps)
                    pi = pi - lr / (1.0 - b1t) * m / u
                else:  # ε added to u
                    u = np.maximum(b2 * s.get("u", 0.0), np.abs(gi))
                    pi = pi - lr / (1.0 - b1t) * m / (u + eps)
                s["m"], s["u"] = m, u
            elif optimizer == "Adagrad":
                eps = o["epsilon"]
                acc = s.get("accumulator", o["initial_accumulator"]) + gi * gi
                s["accumulator"] = acc
                if pt:
                    pi = pi - lr * gi / (np.sqrt(acc) + eps)
                else:
                    pi = pi - lr * gi / np.sqrt(acc + eps)
            p[i] = pi
        values.append(np.concatenate([x.reshape(-1) for x in p]))
    slots = {}
    for name in st[0]:
        slots[name] = np.concatenate([np.broadcast_to(s[name], x.shape).reshape(-1)
                                      for s, x in zip(st, p)])
    return np.array(values), slots


# ---------------------------------------------------------------------------------------
# Cases

EXP = full_schedule("exponential", decay_steps=20, decay_rate=0.5)
STEP = full_schedule("step", decay_steps=25, decay_rate=0.5)
COS_WARM = full_schedule("cosine", decay_steps=90, alpha=0.1, warmup_steps=10,
                         warmup_start_factor=0.1)
BOTH = ("pytorch", "tensorflow")

# (name, optimizer, formulas, options over the formula's defaults, schedule,
#  raw ops: {formula: op} run with the same options (the Keras case's learning rates)).
# To keep the file small, a raw op that gives bit for bit the Keras case's values
# (ResourceApplyKerasMomentum) is recorded for sgd_momentum, sgd_nesterov and
# sgd_momentum_step only, and ResourceApplyMomentum (torch's SGD formula) for sgd_nesterov
# and sgd_momentum_step.
# Cases in CHECK_ONLY run for the printed checks but are not written to the file.
CASE_SPECS = [
    ("sgd", "SGD", BOTH, {"learning_rate": 0.05}, None,
     {"tensorflow": "ResourceApplyGradientDescent"}),
    ("sgd_momentum", "SGD", BOTH, {"learning_rate": 0.02, "momentum": 0.9}, None,
     {"tensorflow": "ResourceApplyKerasMomentum"}),
    ("sgd_nesterov", "SGD", BOTH, {"learning_rate": 0.02, "momentum": 0.9, "nesterov": True},
     None, {"tensorflow": "ResourceApplyKerasMomentum", "pytorch": "ResourceApplyMomentum"}),
    ("sgd_dampening", "SGD", ("pytorch",),
     {"learning_rate": 0.02, "momentum": 0.9, "dampening": 0.3}, None, {}),
    ("sgd_momentum_weight_decay", "SGD", BOTH,
     {"learning_rate": 0.02, "momentum": 0.9, "weight_decay": 0.1}, None, {}),
    ("sgd_momentum_exponential", "SGD", BOTH, {"learning_rate": 0.02, "momentum": 0.9}, EXP,
     {}),
    ("sgd_momentum_step", "SGD", BOTH, {"learning_rate": 0.02, "momentum": 0.9}, STEP,
     {"tensorflow": "ResourceApplyKerasMomentum", "pytorch": "ResourceApplyMomentum"}),
    ("adam", "Adam", BOTH, {"learning_rate": 0.01}, None,
     {"tensorflow": "ResourceApplyAdam"}),
    ("adam_epsilon_tiny", "Adam", BOTH, {"learning_rate": 0.01, "epsilon": 1e-12}, None, {}),
    ("adam_epsilon_1e-3", "Adam", BOTH, {"learning_rate": 0.01, "epsilon": 1e-3}, None,
     {"tensorflow": "ResourceApplyAdam"}),
    ("adam_amsgrad", "Adam", BOTH, {"learning_rate": 0.01, "amsgrad": True}, None,
     {"tensorflow": "ResourceApplyAdamWithAmsgrad"}),
    ("adam_weight_decay", "Adam", BOTH, {"learning_rate": 0.01, "weight_decay": 0.05}, None,
     {}),
    ("adam_clip_norm", "Adam", BOTH, {"learning_rate": 0.01, "clip_norm": 1.5}, None, {}),
    ("adam_clip_value", "Adam", BOTH, {"learning_rate": 0.01, "clip_value": 1.0}, None, {}),
    ("adam_global_clip_norm", "Adam", BOTH, {"learning_rate": 0.01, "global_clip_norm": 2.0},
     None, {}),
    ("adam_cosine_warmup", "Adam", BOTH, {"learning_rate": 0.01}, COS_WARM,
     {"tensorflow": "ResourceApplyAdam"}),
    ("adamw", "AdamW", BOTH, {"learning_rate": 0.01}, None, {}),
    ("adamw_amsgrad", "AdamW", BOTH, {"learning_rate": 0.01, "amsgrad": True}, None, {}),
    ("rmsprop", "RMSprop", BOTH, {"learning_rate": 0.01}, None,
     {"tensorflow": "ResourceApplyRMSProp"}),
    ("rmsprop_momentum", "RMSprop", BOTH, {"learning_rate": 0.01, "momentum": 0.9}, None,
     {"tensorflow": "ResourceApplyRMSProp"}),
    ("rmsprop_centered", "RMSprop", BOTH, {"learning_rate": 0.01, "centered": True}, None,
     {"tensorflow": "ResourceApplyCenteredRMSProp"}),
    ("rmsprop_centered_momentum", "RMSprop", BOTH,
     {"learning_rate": 0.01, "centered": True, "momentum": 0.9}, None,
     {"tensorflow": "ResourceApplyCenteredRMSProp"}),
    ("rmsprop_weight_decay", "RMSprop", BOTH, {"learning_rate": 0.01, "weight_decay": 0.05},
     None, {}),
    ("adagrad", "Adagrad", BOTH, {"learning_rate": 0.1}, None,
     {"pytorch": "ResourceApplyAdagradV2"}),
    ("adagrad_initial_accumulator", "Adagrad", BOTH,
     {"learning_rate": 0.1, "initial_accumulator": 0.5}, None,
     {"pytorch": "ResourceApplyAdagradV2"}),
    ("adagrad_weight_decay", "Adagrad", BOTH, {"learning_rate": 0.1, "weight_decay": 0.05},
     None, {}),
    ("nadam", "NAdam", BOTH, {"learning_rate": 0.01}, None, {}),
    ("nadam_weight_decay", "NAdam", BOTH, {"learning_rate": 0.01, "weight_decay": 0.05}, None,
     {}),
    ("nadam_exponential", "NAdam", BOTH, {"learning_rate": 0.01}, EXP, {}),
    ("adamax", "Adamax", BOTH, {"learning_rate": 0.01}, None, {}),
    ("adamax_weight_decay", "Adamax", BOTH, {"learning_rate": 0.01, "weight_decay": 0.05}, None,
     {}),
    ("adamax_epsilon_1e-3", "Adamax", BOTH, {"learning_rate": 0.01, "epsilon": 1e-3}, None, {}),
    ("adamax_clip_norm", "Adamax", BOTH, {"learning_rate": 0.01, "clip_norm": 1.5}, None, {}),
    # torch with Keras's schedule (psi 1) and epsilon: the same formula as Keras's nadam case
    ("nadam_psi_1", "NAdam", ("pytorch",),
     {"learning_rate": 0.01, "momentum_decay": 1.0, "epsilon": 1e-7}, None, {}),
]


CHECK_ONLY = {"adam_epsilon_tiny"}  # the same ε for both formulas: they must agree


def options_for(optimizer, formula, over):
    o = dict(DEFAULTS["%s/%s" % (optimizer, formula)])
    for k, v in over.items():
        assert k in o, (optimizer, k)
        o[k] = v
    return o


def case_entry(name, source, optimizer, formula, o, sched, values, slots, lrs, how, how_clip):
    e = {"name": name, "source": source, "optimizer": optimizer, "formula": formula,
         "options": o}
    if sched:
        e["schedule"] = sched
    if how:
        e["scheduler"] = how
    if how_clip:
        e["clipping"] = how_clip
    e["values"] = [split(v) for v in values]
    e["slots"] = {k: split(v) for k, v in sorted(slots.items())}
    e["lr"] = lrs
    return e


def run_cases():
    """The fixture's cases, and for the checks {name: dict of what each was made from}."""
    cases, arrays = [], {}
    for name, optimizer, formulas, over, sched, raw in CASE_SPECS:
        keras_lrs = None
        for formula in formulas:
            o = options_for(optimizer, formula, over)
            cname = "%s/%s" % (name, formula)
            if formula == "pytorch":
                vals, slots, lrs, how, hc = run_torch(optimizer, o, sched)
                src = "torch.optim." + optimizer
            else:
                vals, slots, lrs, how, hc = run_keras(optimizer, o, sched)
                src = "keras.optimizers." + KERAS_CLASS.get(optimizer, optimizer)
                keras_lrs = lrs
            if name not in CHECK_ONLY:
                cases.append(case_entry(cname, src, optimizer, formula, o, sched, vals,
                                        slots, lrs, how, hc))
            arrays[cname] = dict(optimizer=optimizer, formula=formula, o=o, sched=sched,
                                 values=vals, slots=slots, lrs=lrs, source=src)
        for formula, op in sorted(raw.items()):
            o = options_for(optimizer, formula, over)
            if keras_lrs is None:
                raise SystemExit("a raw op takes the Keras case's learning rates: " + name)
            # The raw op gets the learning rates Keras used (float32) for these options.
            vals, slots, lrs = run_raw(op, o, [np.float32(x) for x in keras_lrs])
            cname = "%s/%s/%s" % (name, formula, op)
            how = None
            if sched:
                how = "the Keras schedule's float32 values, as the lr input of each apply"
            cases.append(case_entry(cname, "tf.raw_ops." + op, optimizer, formula, o, sched,
                                    vals, slots, lrs, how, None))
            arrays[cname] = dict(optimizer=optimizer, formula=formula, o=o, sched=sched,
                                 values=vals, slots=slots, lrs=lrs, source="tf.raw_ops." + op,
                                 op=op)
    return cases, arrays


def rerun_float64(a):
    """A case again with float64 variables and gradients (for the checks only)."""
    if a["source"].startswith("torch."):
        return run_torch(a["optimizer"], a["o"], a["sched"], "float64")[:2]
    if a["source"].startswith("keras."):
        return run_keras(a["optimizer"], a["o"], a["sched"], "float64")[:2]
    lrs = [a["o"]["learning_rate"] * tfl_factor(a["sched"], k) for k in range(STEPS)]
    return run_raw(a["op"], a["o"], lrs, "float64")[:2]


# ---------------------------------------------------------------------------------------
# The "schedules" section


def schedule_entries():
    lr = 0.1
    specs = [
        ("exponential", EXP, True),
        ("step", STEP, True),
        ("cosine", full_schedule("cosine", decay_steps=100, alpha=0.1), True),
        ("cosine_warmup", full_schedule("cosine", decay_steps=90, alpha=0.1, warmup_steps=10,
                                        warmup_start_factor=0.1), True),
        ("linear_warmup", full_schedule("constant", warmup_steps=10,
                                        warmup_start_factor=0.1), True),
    ]
    out = []
    for name, sched, _ in specs:
        ks, how = keras_schedule(lr, sched)
        vals = [F32(np.asarray(ks(s), dtype=np.float32)) for s in range(SCHEDULE_STEPS)]
        out.append({"name": name + "/keras", "source": "keras.optimizers.schedules." + how,
                    "learning_rate": lr, "schedule": sched,
                    "steps": list(range(SCHEDULE_STEPS)), "values": vals})
        # torch: the lr in param_groups before each optimizer.step(), scheduler.step() after
        # it. A cosine is recorded up to the end of its decay only: past T_max torch's
        # CosineAnnealingLR rises again (period 2·T_max; printed by the checks), where
        # optim.h's cosine and Keras's stay at alpha.
        last = SCHEDULE_STEPS - 1
        if sched["kind"] == "cosine":
            last = sched["warmup_steps"] + sched["decay_steps"]
        vals, how = torch_schedule_values(lr, sched, last + 1)
        out.append({"name": name + "/torch", "source": "torch.optim.lr_scheduler." + how,
                    "learning_rate": lr, "schedule": sched, "steps": list(range(last + 1)),
                    "values": vals})
    # ExponentialLR with gamma = rate^(1/decay_steps): the usual stand-in for a continuous
    # exponential decay; its product of gammas drifts from rate^(s/decay_steps).
    vals, how = torch_schedule_values(lr, EXP, SCHEDULE_STEPS, exponential_lr=True)
    out.append({"name": "exponential_via_ExponentialLR/torch",
                "source": "torch.optim.lr_scheduler." + how, "learning_rate": lr,
                "schedule": EXP, "steps": list(range(SCHEDULE_STEPS)), "values": vals,
                "note": "each step multiplies the previous lr by gamma: equal to "
                        "decay_rate^(s/decay_steps) up to rounding that grows with s"})
    return out


def torch_schedule_values(lr, sched, n, exponential_lr=False):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=lr)
    if exponential_lr:
        sch = torch.optim.lr_scheduler.ExponentialLR(
            opt, gamma=sched["decay_rate"] ** (1.0 / sched["decay_steps"]))
        how = "ExponentialLR(gamma=decay_rate ** (1 / decay_steps))"
    else:
        sch, how = torch_scheduler(opt, lr, sched)
    vals = []
    for _ in range(n):
        vals.append(float(opt.param_groups[0]["lr"]))
        p.grad = torch.zeros(1)
        opt.step()
        sch.step()
    return vals, how


# ---------------------------------------------------------------------------------------
# Checks (printed)


def maxabs(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def rel_to_motion(vals, ref):
    motion = float(np.max(np.abs(np.asarray(ref) - INIT.astype(np.float64))))
    return maxabs(vals, ref) / motion


def slot_rel(slots, ref_slots):
    out = 0.0
    for k, s in slots.items():
        scale = max(float(np.max(np.abs(ref_slots[k]))), 1e-300)
        out = max(out, maxabs(s, ref_slots[k]) / scale)
    return out


def checks(arrays, schedules):
    print("== learning rates against optim.h's schedule: max |lr_k - lr0*factor(k)| / lr0")
    for name, a in arrays.items():
        if not a["sched"]:
            continue
        lr0 = a["o"]["learning_rate"]
        d = max(abs(float(x) - lr0 * tfl_factor(a["sched"], k))
                for k, x in enumerate(a["lrs"])) / lr0
        print("  %-60s %.3g" % (name, d))
    for e in schedules:
        lr0 = e["learning_rate"]
        d = max(abs(float(x) - lr0 * tfl_factor(e["schedule"], s))
                for s, x in zip(e["steps"], e["values"])) / lr0
        print("  schedule %-51s %.3g" % (e["name"], d))
    sched = full_schedule("cosine", decay_steps=100, alpha=0.1)
    vals, _ = torch_schedule_values(0.1, sched, SCHEDULE_STEPS)
    print("  torch CosineAnnealingLR(T_max=100, eta_min=0.01), lr 0.1, past T_max: steps "
          "100, 110, 120 give %.6g, %.6g, %.6g (optim.h and Keras: 0.01)"
          % (vals[100], vals[110], vals[120]))

    print("== each case against ref_run, the float64 NumPy reimplementation of optim.h:")
    print("   max|dp| over 100 steps, that over the motion max|p_ref - p0|, the slots' largest")
    print("   error relative to the slot's largest value; then the same case rerun with")
    print("   float64 variables and gradients (torch, Keras with floatx float64, raw ops); for")
    print("   Keras, also against ref_run(keras_casts=True) (its float32-rounded constants)")
    print("  %-60s %8s %8s %8s | %8s %8s | %8s %8s" % ("case", "max|dp|", "/motion", "slots",
                                                     "f64/mot", "f64 slot", "kc/mot",
                                                     "kc slot"))
    worst32, worst64 = {}, {}
    for name, a in arrays.items():
        rv, rs = ref_run(a["optimizer"], a["formula"], a["o"], a["sched"])
        missing = sorted(set(rs) ^ set(a["slots"]))
        v64, s64 = rerun_float64(a)
        worst32[name] = rel_to_motion(a["values"], rv)
        kc = ""
        if a["source"].startswith("keras."):
            kv, ks = ref_run(a["optimizer"], a["formula"], a["o"], a["sched"],
                             keras_casts=True)
            worst64[name] = rel_to_motion(v64, kv)
            kc = " | %8.2g %8.2g" % (worst64[name], slot_rel(s64, ks))
        else:
            worst64[name] = rel_to_motion(v64, rv)
        print("  %-60s %8.2g %8.2g %8.2g | %8.2g %8.2g%s%s"
              % (name, maxabs(a["values"], rv), worst32[name], slot_rel(a["slots"], rs),
                 rel_to_motion(v64, rv), slot_rel(s64, rs), kc,
                 "  SLOTS DIFFER %s" % missing if missing else ""))
    for label, w in (("float32", worst32), ("float64 (Keras: keras_casts)", worst64)):
        k = max(w, key=w.get)
        print("  largest error / motion, %s: %.3g (%s)" % (label, w[k], k))

    print("== rounding details the header does not spell out")
    b1, b2 = 0.9, 0.999
    r = max(abs((math.sqrt(1 - float(np.float32(b2) ** np.float32(t))) /
                 (1 - float(np.float32(b1) ** np.float32(t)))) /
                (math.sqrt(1 - b2 ** t) / (1 - b1 ** t)) - 1) for t in range(1, STEPS + 1))
    print("  Keras Adam step size sqrt(1-b2^t)/(1-b1^t) with float32 b^t: max relative "
          "departure from double over t=1..100: %.3g" % r)
    print("  Keras: keras.ops.cast(0.999, 'float64') = %r (a Python float goes through a "
          "float32 tensor)" % float(keras.ops.cast(0.999, "float64")))
    print("  Keras: the learning-rate variable of an optimizer made with a float lr has "
          "dtype %s (floatx), whatever the variables' dtype"
          % keras.optimizers.SGD(0.01).learning_rate.dtype)
    for name, a in arrays.items():
        if a["optimizer"] == "AdamW" and a["formula"] == "pytorch":
            rv64, _ = ref_run(a["optimizer"], a["formula"], a["o"], a["sched"])
            rv32, _ = ref_run(a["optimizer"], a["formula"], a["o"], a["sched"],
                              f32_decay_factor=True)
            lw = a["o"]["learning_rate"] * a["o"]["weight_decay"]
            print("  %-60s ref with 1-lr*wd double: %.3g   float32: %.3g (the decay lr*wd = "
                  "%g is applied as %.6g)" % (name, maxabs(a["values"], rv64),
                                              maxabs(a["values"], rv32), lw,
                                              1 - float(np.float32(1 - lw))))
    print("  1 - float32(b2) = %.10g vs float32(1 - b2) = %.10g (relative %.3g): the raw "
          "Adam ops use the first as the coefficient of v, Keras the second"
          % (1 - float(np.float32(b2)), float(np.float32(1 - b2)),
             (1 - float(np.float32(b2))) / float(np.float32(1 - b2)) - 1))

    print("== torch against Keras: max |p_torch - p_keras| over the 100 steps, that over the")
    print("   motion, and the residual max |(p_torch - p_keras) - (ref_pytorch - ref_tensorflow)|")
    print("   (the part optim.h's formulas do not explain)")
    agree = ["sgd", "sgd_momentum", "sgd_nesterov", "adam_epsilon_tiny"]
    near = ["adam", "adam_amsgrad", "adam_clip_norm", "adam_clip_value",
            "adam_global_clip_norm", "adam_cosine_warmup", "adagrad_initial_accumulator",
            "adamax", "adamax_clip_norm"]
    differ = ["sgd_momentum_weight_decay", "sgd_momentum_exponential", "sgd_momentum_step",
              "adam_epsilon_1e-3", "adam_weight_decay", "adamw", "adamw_amsgrad", "rmsprop",
              "rmsprop_momentum", "rmsprop_centered", "rmsprop_centered_momentum",
              "rmsprop_weight_decay", "adagrad", "adagrad_weight_decay", "nadam",
              "nadam_weight_decay", "nadam_exponential", "adamax_weight_decay",
              "adamax_epsilon_1e-3"]
    for label, names in (("should agree (same options, equal formulas)", agree),
                         ("close: only the default epsilon differs (1e-8 vs 1e-7); Adagrad "
                          "a0 0.5 >> epsilon", near),
                         ("should differ", differ)):
        print("  -- %s" % label)
        for n in names:
            a, b = arrays[n + "/pytorch"], arrays[n + "/tensorflow"]
            ra, _ = ref_run(a["optimizer"], a["formula"], a["o"], a["sched"])
            rb, _ = ref_run(b["optimizer"], b["formula"], b["o"], b["sched"])
            motion = float(np.max(np.abs(a["values"] - INIT)))
            d = maxabs(a["values"], b["values"])
            res = maxabs(a["values"] - b["values"].astype(np.float64), ra - rb)
            print("  %-32s %10.3g  rel %9.3g  residual %9.3g" % (n, d, d / motion, res))

    a, b = arrays["nadam_psi_1/pytorch"], arrays["nadam/tensorflow"]
    d = maxabs(a["values"], b["values"])
    print("  -- torch NAdam with psi 1 and epsilon 1e-7 against Keras's Nadam (the same "
          "formula): %.3g, rel %.3g" % (d, d / float(np.max(np.abs(b["values"] - INIT)))))

    print("== raw ops against the Keras / torch case with the same options")
    for name, a in arrays.items():
        parts = name.split("/")
        if len(parts) != 3:
            continue
        base = "/".join(parts[:2])
        print("  %-60s vs %-34s %.3g" % (name, base, maxabs(a["values"], arrays[base]["values"])))

    print("== clipping: steps (of 100) on which the clip acts")
    n0 = np.sqrt(np.sum(GRADS[:, :SIZES[0]].astype(np.float64) ** 2, axis=1))
    n1 = np.sqrt(np.sum(GRADS[:, SIZES[0]:].astype(np.float64) ** 2, axis=1))
    for spec in CASE_SPECS:
        over = spec[3]
        if "clip_norm" in over:
            c = over["clip_norm"]
            print("  clip_norm %g: var0 %d, var1 %d" % (c, np.sum(n0 > c), np.sum(n1 > c)))
        if "global_clip_norm" in over:
            c = over["global_clip_norm"]
            print("  global_clip_norm %g: %d" % (c, np.sum(np.hypot(n0, n1) > c)))
        if "clip_value" in over:
            c = over["clip_value"]
            print("  clip_value %g: steps with a clipped element %d, elements clipped %d of %d"
                  % (c, np.sum(np.any(np.abs(GRADS) > c, axis=1)), np.sum(np.abs(GRADS) > c),
                     GRADS.size))
    a = np.abs(GRADS[GRADS != 0])
    print("  gradients: |g| from %.3g to %.3g, %d exact zeros, %d sign changes between steps"
          % (a.min(), a.max(), int(np.sum(GRADS == 0)),
             int(np.sum(np.sign(GRADS[1:]) * np.sign(GRADS[:-1]) < 0))))


# ---------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--quiet", action="store_true", help="do not print the checks")
    args = ap.parse_args()

    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    tf.random.set_seed(SEED)
    tf.config.experimental.enable_op_determinism()

    cases, arrays = run_cases()
    schedules = schedule_entries()
    if not args.quiet:
        checks(arrays, schedules)

    doc = {
        "torch_version": torch.__version__,
        "tf_version": tf.__version__,
        "keras_version": keras.__version__,
        "python_version": platform.python_version(),
        "numpy_version": np.__version__,
        "generated_by": "tests/reference/optim_ref.py",
        "platform": "CPU only (CUDA_VISIBLE_DEVICES='', TF_ENABLE_ONEDNN_OPTS=0); torch "
                    "single-tensor code (foreach=False); Keras 3 TensorFlow backend, eager",
        "random_seed": SEED,
        "conventions": {
            "numbers": "float32 quantities (init, grads, values, slots, Keras/raw-op lr, Keras "
                       "schedule values) are the shortest decimal that reads back to the "
                       "same float32 (strtof); doubles (options, torch lr) are Python repr",
            "values": "values[k] = [[12 floats (shape [3, 4], row-major)], [5 floats]] "
                      "after step k+1",
            "lr": "lr[k] = the learning rate the framework used at step k (0-based): torch "
                  "param_groups[0]['lr'] before optimizer.step(); Keras optimizer."
                  "learning_rate before apply (the schedule at iterations k)",
            "slots": "final slots after step 100, named as in optim.h (momentum, m, v, vhat, "
                     "rms, mg, accumulator, u)",
            "schedule": "tfl_schedule fields; absent for a constant learning rate",
        },
        "defaults_notes": DEFAULT_NOTES,
        "steps": STEPS,
        "shapes": SHAPES,
        "init": split(INIT),
        "grads": [split(g) for g in GRADS],
        "defaults": DEFAULTS,
        "case_count": len(cases),
        "cases": cases,
        "schedules": schedules,
    }
    text = to_json(doc)
    json.loads(text)  # valid JSON, or fail here
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print("wrote %s: %d cases, %d schedules, %d bytes (torch %s, TensorFlow %s, Keras %s)"
          % (args.out, len(cases), len(schedules), len(text) + 1, torch.__version__,
             tf.__version__, keras.__version__))


if __name__ == "__main__":
    sys.exit(main())
