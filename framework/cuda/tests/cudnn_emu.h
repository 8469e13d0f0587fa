/*
 * framework/cuda/tests/cudnn_emu.h: what the two halves of backend_cudnn_emulated share:
 * test_cudnn_emulated.c (the convolutions' stand-ins and tests, the device record, set-up and
 * teardown) and cudnn_norm_emu.c (BatchNorm's and Softmax's stand-ins and tests).
 */
#ifndef TFL_CUDA_TESTS_CUDNN_EMU_H
#define TFL_CUDA_TESTS_CUDNN_EMU_H

#include "conv_emu.h"

#include <cudnn.h>

/* the stand-ins' handle and tensor descriptor */
struct cudnnContext {
    int stream_set;
};
struct cudnnTensorStruct {
    cudnnTensorFormat_t format;
    cudnnDataType_t dt;
    int n, c, h, w;
};

extern int dnn_creates, dnn_bad; /* descriptors and handles made; refusals of the stand-ins */
extern tfl__cuda_device cu;      /* the device record the kernels get (no CUDA behind it) */

/* the stand-ins refuse (CUDNN_STATUS_BAD_PARAM, counted) what does not fit together */
#define BAD(cond)                                                                                  \
    do {                                                                                           \
        if (cond) {                                                                                \
            print_error("cuDNN stand-in refuses: %s (line %d)\n", #cond, __LINE__);                \
            dnn_bad++;                                                                             \
            return CUDNN_STATUS_BAD_PARAM;                                                         \
        }                                                                                          \
    } while (0)

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

/* element i of a float or double array */
double at(cudnnDataType_t dt, const void *p, int64_t i);
void put(cudnnDataType_t dt, void *p, int64_t i, double v);

/* a fresh ctx and device record, every count zero; teardown frees the device's cuDNN state
 * and checks that everything went back and nothing was refused */
tfl_ctx *setup(void);
void teardown(tfl_ctx *ctx);

/* cudnn_norm_emu.c */
void norm_emu_reset(void);
void test_bn_shapes(void **state);
void test_bn_refused(void **state);
void test_bn_runtime_failure(void **state);
void test_bn_env_off(void **state);
void test_softmax(void **state);
void test_softmax_runtime_failure(void **state);
void test_softmax_no_host_memory(void **state);

#endif /* TFL_CUDA_TESTS_CUDNN_EMU_H */
