/*
 * examples/fashion_mnist_models.h: the two Fashion-MNIST models of the recipe, shared
 * by examples/fashion_mnist.c and tests/bench/bench_train.c so that what is trained and what
 * is timed are the same model:
 *
 *   mlp  Flatten, Dense 256 relu, Dense 256 relu, Dense 10
 *   cnn  Reshape (28, 28, 1), Conv2D 32 3x3 relu, MaxPool 2, Conv2D 64 3x3 relu, MaxPool 2,
 *        Flatten, Dense 128 relu, Dense 10
 *
 * and the VGG-style model that tests/bench/bench_train.c times as big_cnn (batches of 256):
 *
 *   big_cnn  Reshape (28, 28, 1), 2 x Conv2D 64 3x3 same relu, MaxPool 2, 2 x Conv2D 128,
 *            MaxPool 2, 2 x Conv2D 256, MaxPool 2, Flatten, Dense 512 relu, Dense 10
 *
 * The last layer gives logits (the losses take logits). A failing add keeps its error in the
 * model's context, which the caller checks once.
 */
#ifndef FASHION_MNIST_MODELS_H
#define FASHION_MNIST_MODELS_H

#include <tapeflow/tapeflow.h>

static inline void fashion_mnist_add_layers(tfl_model *m, bool cnn)
{
    if (cnn) {
        tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_RESHAPE, .target_rank = 3,
                                           .target_shape = {28, 28, 1}});
        tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_CONV2D, .units = 32,
                                           .kernel_size = {3, 3}, .activation = TFL_ACT_RELU});
        tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_MAX_POOL2D});
        tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_CONV2D, .units = 64,
                                           .kernel_size = {3, 3}, .activation = TFL_ACT_RELU});
        tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_MAX_POOL2D});
        tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_FLATTEN});
        tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 128,
                                           .activation = TFL_ACT_RELU});
    } else {
        tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_FLATTEN});
        for (int i = 0; i < 2; i++)
            tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 256,
                                               .activation = TFL_ACT_RELU});
    }
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 10});
}

static inline void fashion_mnist_add_big_cnn_layers(tfl_model *m)
{
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_RESHAPE, .target_rank = 3,
                                       .target_shape = {28, 28, 1}});
    for (int block = 0; block < 3; block++) {
        for (int i = 0; i < 2; i++)
            tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_CONV2D, .units = 64 << block,
                                               .kernel_size = {3, 3},
                                               .padding = TFL_PADDING_SAME,
                                               .activation = TFL_ACT_RELU});
        tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_MAX_POOL2D});
    }
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_FLATTEN});
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 512,
                                       .activation = TFL_ACT_RELU});
    tfl_model_add(m, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 10});
}

#endif /* FASHION_MNIST_MODELS_H */
