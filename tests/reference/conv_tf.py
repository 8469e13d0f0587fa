"""conv_tf.py: writes tests/reference/fixtures/conv_tf.json, TensorFlow's values for
tapeflow's convolution and pooling ops (tests/framework/test_conv_pool.c reads it).

Every case runs in float64 on the CPU with fixed inputs (a seeded NumPy generator, rounded
to 3 decimals so the file stays small; the tie case uses small integers):
  conv: tf.raw_ops.Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter (NHWC, HWIO) on x, w
        and an output gradient dy; the CPU backprops refuse dilations > 1 ("Current CPU
        implementations do not yet support dilation rates larger than 1"), so for those the
        backprops run on the filter spread out by zeros, whose plain conv is the dilated
        one (checked), and dw is that filter's gradient at the taps ("via" says which);
  pool: tf.nn.max_pool2d / tf.nn.avg_pool2d, their gradient dx for dy by tf.GradientTape
        (MaxPoolGrad, AvgPoolGrad), and for max pooling tf.raw_ops.MaxPoolGradGrad of a
        gradient g of x's shape ("gg").
Arrays are flattened row-major; shapes beside them.
Run from the repository root: python3 tests/reference/conv_tf.py [--out PATH]
(tensorflow-cpu 2.21.0; about 10 s; deterministic: two runs write identical files).
"""
import argparse
import json
import os
import platform
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
os.environ["CUDA_VISIBLE_DEVICES"] = ""
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

RNG = np.random.default_rng(20240521)


def arr(shape, ints=False):
    if ints:
        return RNG.integers(0, 4, size=shape).astype(np.float64)
    return np.round(RNG.uniform(-2, 2, size=shape), 3)


def flat(t):
    return [float("%.15g" % v) for v in np.asarray(t, dtype=np.float64).ravel()]


# name, x shape, w shape, strides, dilations, padding
CONV = [
    ("valid_cin3_cout4_n2", (2, 5, 5, 3), (3, 3, 3, 4), (1, 1), (1, 1), "VALID"),
    ("same_cin3_cout4_n2", (2, 5, 5, 3), (3, 3, 3, 4), (1, 1), (1, 1), "SAME"),
    ("same_stride2_nonsquare_odd", (1, 7, 6, 2), (3, 2, 2, 3), (2, 2), (1, 1), "SAME"),
    ("valid_stride_2x1", (2, 7, 6, 2), (3, 2, 2, 3), (2, 1), (1, 1), "VALID"),
    ("valid_stride3_even_window", (1, 8, 9, 2), (2, 4, 2, 2), (3, 3), (1, 1), "VALID"),
    ("same_stride3", (1, 5, 7, 1), (3, 3, 1, 2), (3, 3), (1, 1), "SAME"),
    ("valid_dilation2", (2, 6, 7, 2), (2, 3, 2, 2), (1, 1), (2, 2), "VALID"),
    ("same_dilation_2x1", (1, 6, 7, 2), (3, 3, 2, 2), (1, 1), (2, 1), "SAME"),
    ("pointwise_1x1", (2, 3, 4, 5), (1, 1, 5, 3), (1, 1), (1, 1), "VALID"),
    ("pointwise_1x1_stride2", (1, 5, 5, 2), (1, 1, 2, 2), (2, 2), (1, 1), "VALID"),
    ("same_even_window", (2, 4, 5, 2), (2, 2, 2, 3), (1, 1), (1, 1), "SAME"),
]

# name, kind, x shape, ksize, strides, padding, integer inputs (ties)
POOL = [
    ("max_valid_2x2", "max", (2, 4, 6, 3), (2, 2), (2, 2), "VALID", False),
    ("max_same_3x3_stride2", "max", (1, 5, 7, 2), (3, 3), (2, 2), "SAME", False),
    ("max_valid_2x3_stride_1x2", "max", (1, 5, 6, 2), (2, 3), (1, 2), "VALID", False),
    ("max_same_2x2_stride3", "max", (1, 7, 7, 1), (2, 2), (3, 3), "SAME", False),
    ("max_valid_odd_remainder", "max", (1, 5, 5, 2), (2, 2), (2, 2), "VALID", False),
    ("max_same_ties", "max", (2, 5, 5, 3), (3, 3), (1, 1), "SAME", True),
    ("avg_valid_2x2", "avg", (2, 4, 6, 3), (2, 2), (2, 2), "VALID", False),
    ("avg_same_3x3_stride2", "avg", (1, 5, 7, 2), (3, 3), (2, 2), "SAME", False),
    ("avg_valid_2x3_stride_1x2", "avg", (1, 5, 6, 2), (2, 3), (1, 2), "VALID", False),
    ("avg_same_2x2_stride3", "avg", (1, 7, 7, 1), (2, 2), (3, 3), "SAME", False),
    ("avg_same_even_window", "avg", (1, 4, 5, 2), (2, 2), (1, 1), "SAME", False),
]


def conv_case(name, xs, ws, strides, dil, padding):
    x, w = arr(xs), arr(ws)
    s4, d4 = [1, *strides, 1], [1, *dil, 1]
    y = tf.raw_ops.Conv2D(input=x, filter=w, strides=s4, padding=padding, dilations=d4)
    dy = arr(y.shape)
    via = "raw_ops"
    try:
        dx = tf.raw_ops.Conv2DBackpropInput(input_sizes=xs, filter=w, out_backprop=dy,
                                            strides=s4, padding=padding, dilations=d4)
        dw = tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=ws, out_backprop=dy,
                                             strides=s4, padding=padding, dilations=d4)
    except tf.errors.OpError:
        # the CPU backprops refuse dilations > 1: a dilated conv is the plain conv with the
        # filter spread out by zeros (wd), and its filter gradient is wd's at the taps
        via = "raw_ops on the zero-dilated filter"
        kh, kw = (ws[0] - 1) * dil[0] + 1, (ws[1] - 1) * dil[1] + 1
        wd = np.zeros((kh, kw, ws[2], ws[3]))
        wd[::dil[0], ::dil[1]] = w
        yd = tf.raw_ops.Conv2D(input=x, filter=wd, strides=s4, padding=padding)
        assert np.allclose(yd.numpy(), y.numpy(), rtol=1e-13, atol=1e-13)
        dx = tf.raw_ops.Conv2DBackpropInput(input_sizes=xs, filter=wd, out_backprop=dy,
                                            strides=s4, padding=padding)
        dwd = tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=wd.shape, out_backprop=dy,
                                              strides=s4, padding=padding)
        dw = dwd.numpy()[::dil[0], ::dil[1]]
    return {"name": name, "x_shape": list(xs), "x": flat(x), "w_shape": list(ws), "w": flat(w),
            "strides": list(strides), "dilations": list(dil), "padding": padding,
            "y_shape": list(y.shape), "y": flat(y), "dy": flat(dy), "dx": flat(dx),
            "dw": flat(dw), "via": via}


def pool_case(name, kind, xs, ksize, strides, padding, ints):
    x = arr(xs, ints)
    fn = tf.nn.max_pool2d if kind == "max" else tf.nn.avg_pool2d
    xv = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xv)
        y = fn(xv, ksize=list(ksize), strides=list(strides), padding=padding)
    dy = arr(y.shape)
    dx = tape.gradient(y, xv, output_gradients=tf.constant(dy))
    out = {"name": name, "kind": kind, "x_shape": list(xs), "x": flat(x), "ksize": list(ksize),
           "strides": list(strides), "padding": padding, "y_shape": list(y.shape),
           "y": flat(y), "dy": flat(dy), "dx": flat(dx)}
    if kind == "max":
        g = arr(xs)
        gg = tf.raw_ops.MaxPoolGradGrad(orig_input=x, orig_output=y, grad=g,
                                        ksize=[1, *ksize, 1], strides=[1, *strides, 1],
                                        padding=padding)
        out["g"] = flat(g)
        out["gg"] = flat(gg)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "fixtures",
                                                  "conv_tf.json"))
    args = ap.parse_args()
    doc = {"tf_version": tf.__version__, "numpy_version": np.__version__,
           "python_version": platform.python_version(),
           "conv": [conv_case(*c) for c in CONV], "pool": [pool_case(*c) for c in POOL]}
    with open(args.out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    for c in doc["conv"]:
        print(c["name"], c["via"], "y", c["y_shape"], file=sys.stderr)
    print(args.out, os.path.getsize(args.out), "bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
