"""norm_tf.py: writes tests/reference/fixtures/norm_tf.json, TensorFlow's values for
tapeflow's batch normalization and moments (framework/include/tapeflow/ops.h), read by
tests/framework/test_norm_dropout.c and tests/tape/test_norm_gradients.c:

- batch_norm/<case>: tf.nn.batch_normalization(x, mean, variance, offset, scale, epsilon)
  with [C] parameters (C = x's last dimension), and the gradients of
  L = sum(w * y) for all five inputs (tf.GradientTape); cases with offset and scale None;
- moments/<case>: tf.nn.moments(x, axes, keepdims) and the gradient of
  L = sum(wm * mean) + sum(wv * variance) for x;
- training/<case>: the training-mode chain, mean, variance = tf.nn.moments(x, all axes but the
  last); y = tf.nn.batch_normalization(x, mean, variance, beta, gamma, 1e-3), with the
  gradients of L = sum(w * y) for x, gamma and beta, and the same from
  keras.layers.BatchNormalization(epsilon=1e-3)(x, training=True) (Keras's default epsilon;
  the layer built with the case's dtype so float64 is not computed in float32).

float32 and float64, rank 2 and rank 4 inputs. Values are flattened row-major; float32
numbers are the exact doubles they widen to. Deterministic (fixed NumPy seed, oneDNN off, no
GPU): two runs write identical files.

Run from the repository root:  python3 tests/reference/norm_tf.py [--out PATH]
"""
import argparse
import json
import os
import platform

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ["TF_DETERMINISTIC_OPS"] = "1"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

DTYPES = {"float32": np.float32, "float64": np.float64}
SHAPES = {"rank2": (4, 3), "rank4": (2, 3, 2, 4)}
rng = np.random.RandomState(20261122)


def flat(a):
    return [float(v) for v in np.asarray(a).ravel()]


def draw(shape, dt, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(dt)


def batch_norm_case(shape, dt, with_params):
    c = shape[-1]
    # per-channel shifts and spreads, so the normalisation is not near the identity
    x = (draw(shape, dt) * draw((c,), dt, 0.5, 3.0) + draw((c,), dt, -3, 3)).astype(dt)
    mean = draw((c,), dt, -1, 1)
    variance = draw((c,), dt, 0.2, 4.0)
    offset = draw((c,), dt) if with_params else None
    scale = draw((c,), dt, 0.5, 2.0) if with_params else None
    w = draw(shape, dt)
    eps = 1e-3
    ins = [tf.constant(v) for v in (x, mean, variance)]
    if with_params:
        ins += [tf.constant(offset), tf.constant(scale)]
    with tf.GradientTape() as tape:
        tape.watch(ins)
        y = tf.nn.batch_normalization(ins[0], ins[1], ins[2], ins[3] if with_params else None,
                                      ins[4] if with_params else None, eps)
        loss = tf.reduce_sum(tf.constant(w) * y)
    grads = tape.gradient(loss, ins)
    names = ["x", "mean", "variance", "offset", "scale"]
    out = {"dtype": np.dtype(dt).name, "shape": list(shape), "epsilon": eps,
           "x": flat(x), "mean": flat(mean), "variance": flat(variance),
           "offset": flat(offset) if with_params else None,
           "scale": flat(scale) if with_params else None,
           "w": flat(w), "y": flat(y), "grads": {}}
    for n, g in zip(names, grads):
        out["grads"][n] = flat(g)
    return out


def moments_case(shape, dt, axes, keepdims):
    x = (draw(shape, dt) * 1.5 + 0.75).astype(dt)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        mean, var = tf.nn.moments(xt, axes=axes, keepdims=keepdims)
        wm = draw(mean.shape, dt)
        wv = draw(var.shape, dt)
        loss = tf.reduce_sum(wm * mean) + tf.reduce_sum(wv * var)
    dx = tape.gradient(loss, xt)
    return {"dtype": np.dtype(dt).name, "shape": list(shape), "axes": list(axes),
            "keepdims": keepdims, "x": flat(x), "mean_shape": list(mean.shape),
            "mean": flat(mean), "variance": flat(var), "wm": flat(wm), "wv": flat(wv),
            "dx": flat(dx)}


def training_case(shape, dt):
    c = shape[-1]
    eps = 1e-3
    x = (draw(shape, dt) * draw((c,), dt, 0.5, 3.0) + draw((c,), dt, -3, 3)).astype(dt)
    gamma = draw((c,), dt, 0.5, 2.0)
    beta = draw((c,), dt)
    w = draw(shape, dt)
    axes = list(range(len(shape) - 1))
    xt, gt, bt, wt = (tf.constant(v) for v in (x, gamma, beta, w))
    with tf.GradientTape() as tape:
        tape.watch([xt, gt, bt])
        mean, var = tf.nn.moments(xt, axes=axes)
        y = tf.nn.batch_normalization(xt, mean, var, bt, gt, eps)
        loss = tf.reduce_sum(wt * y)
    dx, dg, db = tape.gradient(loss, [xt, gt, bt])
    layer = keras.layers.BatchNormalization(epsilon=eps, dtype=np.dtype(dt).name)
    layer.build(shape)
    layer.gamma.assign(gamma)
    layer.beta.assign(beta)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        ky = layer(xt, training=True)
        kloss = tf.reduce_sum(wt * ky)
    kdx, kdg, kdb = tape.gradient(kloss, [xt, layer.gamma, layer.beta])
    return {"dtype": np.dtype(dt).name, "shape": list(shape), "epsilon": eps, "axes": axes,
            "x": flat(x), "gamma": flat(gamma), "beta": flat(beta), "w": flat(w),
            "tf": {"y": flat(y), "dx": flat(dx), "dgamma": flat(dg), "dbeta": flat(db)},
            "keras": {"y": flat(ky), "dx": flat(kdx), "dgamma": flat(kdg),
                      "dbeta": flat(kdb)}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "fixtures", "norm_tf.json"))
    args = ap.parse_args()
    doc = {"tf_version": tf.__version__, "keras_version": keras.__version__,
           "numpy_version": np.__version__, "python_version": platform.python_version(),
           "batch_norm": {}, "moments": {}, "training": {}}
    for dname, dt in DTYPES.items():
        for sname, shape in SHAPES.items():
            doc["batch_norm"][f"{sname}_{dname}"] = batch_norm_case(shape, dt, True)
            doc["batch_norm"][f"{sname}_{dname}_no_params"] = batch_norm_case(shape, dt, False)
            doc["training"][f"{sname}_{dname}"] = training_case(shape, dt)
        doc["moments"][f"rank2_axis0_{dname}"] = moments_case((5, 3), dt, [0], False)
        doc["moments"][f"rank4_nhw_{dname}"] = moments_case((2, 3, 2, 4), dt, [0, 1, 2], False)
        doc["moments"][f"rank4_nhw_keepdims_{dname}"] = moments_case((2, 3, 2, 4), dt,
                                                                     [0, 1, 2], True)
        doc["moments"][f"rank3_middle_{dname}"] = moments_case((2, 4, 3), dt, [1], False)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    # the checks behind tests/reference/README.md's notes (printed, not in the file)
    for k, c in doc["training"].items():
        d = np.max(np.abs(np.array(c["tf"]["dx"]) - np.array(c["keras"]["dx"])))
        dy = np.max(np.abs(np.array(c["tf"]["y"]) - np.array(c["keras"]["y"])))
        print(f"training/{k}: |tf - keras| y {dy:.3g}, dx {d:.3g}, "
              f"sum(dx) per channel {np.abs(np.array(c['tf']['dx']).reshape(-1, c['shape'][-1]).sum(0)).max():.3g}")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
