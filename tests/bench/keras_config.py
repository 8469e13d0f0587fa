#!/usr/bin/env python3
"""keras_config.py: bench_config's Keras twin for the ResNet of configs/fashion_mnist_resnet.yaml,
written with Keras's functional API as the config writes it (the same layer names): Reshape ->
Conv2D 32 3x3 same (no bias) -> BatchNormalization -> ReLU -> MaxPooling2D -> block 1 (identity
shortcut) -> block 2 (stride 2, 1x1 projection shortcut) -> GlobalAveragePooling2D -> Dense 10;
Adam 1e-3, sparse categorical cross-entropy from logits, batches of 128 of random data (so
data loading costs Keras nothing), TensorFlow 2 on the CPU with 2 intra-op threads, a compiled
train step (model.fit's, through train_on_batch). Prints
  bench tf_config_resnet_samples_per_s <v> samples/s
  bench tf_config_resnet_peak_rss <MiB> MiB
Usage: python3 tests/bench/keras_config.py [--threads 2] [--warmup 5] [--steps 30] [--quick]
"""
import argparse
import os
import resource
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    if a.quick:
        a.warmup, a.steps = 1, 2
    import numpy as np
    import tensorflow as tf
    import keras
    from keras import layers as L

    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)

    def conv(x, name, filters, k, strides=1):
        return L.Conv2D(filters, k, strides=strides, padding="same", use_bias=False, name=name)(x)

    x_in = keras.Input((28, 28))
    x = L.Reshape((28, 28, 1))(x_in)
    x = L.Activation("relu")(L.BatchNormalization(name="stem_bn")(conv(x, "stem_conv", 32, 3)))
    p0 = L.MaxPooling2D(name="stem_pool")(x)
    y = L.Activation("relu")(L.BatchNormalization(name="b1_bn1")(conv(p0, "b1_conv1", 32, 3)))
    y = L.BatchNormalization(name="b1_bn2")(conv(y, "b1_conv2", 32, 3))
    b1 = L.Activation("relu")(L.Add(name="b1_add")([y, p0]))
    y = L.Activation("relu")(L.BatchNormalization(name="b2_bn1")(conv(b1, "b2_conv1", 64, 3, 2)))
    y = L.BatchNormalization(name="b2_bn2")(conv(y, "b2_conv2", 64, 3))
    s = L.BatchNormalization(name="b2_proj_bn")(conv(b1, "b2_proj", 64, 1, 2))
    y = L.Activation("relu")(L.Add(name="b2_add")([y, s]))
    out = L.Dense(10, name="logits")(L.GlobalAveragePooling2D(name="pool")(y))
    model = keras.Model(x_in, out, name="resnet")
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(1)
    xs = rng.random((8, 128, 28, 28), dtype=np.float32)
    ys = rng.integers(0, 10, (8, 128)).astype(np.int32)
    for i in range(a.warmup):
        model.train_on_batch(xs[i % 8], ys[i % 8])
    t0 = time.perf_counter()
    for i in range(a.steps):
        loss = model.train_on_batch(xs[i % 8], ys[i % 8])
    float(np.asarray(loss).ravel()[0])  # the last step finished
    wall = time.perf_counter() - t0
    print("bench tf_config_resnet_samples_per_s %.1f samples/s" % (a.steps * 128 / wall))
    print("bench tf_config_resnet_peak_rss %.1f MiB" % (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


if __name__ == "__main__":
    main()
