/* consumer.c: an embedding application: one include, one library, a checked result. It
 * prints the devices it has and where its matmul ran (check_install.sh gives it a GPU module
 * through TFL_GPU_MODULE). */
#include <tapeflow/tapeflow.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    int64_t shape[2] = {2, 2};
    tfl_tensor *a = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 2, shape, (float[]){1, 2, 3, 4});
    tfl_tensor *c = tfl_matmul(ctx, a, a, 0); /* [[7, 10], [15, 22]] */
    double v = 0;
    int ok = c && tfl_tensor_get(c, 3, &v) == TFL_OK && v == 22.0;
    char devices[128] = "";
    for (int i = 0; i < tfl_device_count(ctx); i++) {
        strncat(devices, " ", sizeof devices - strlen(devices) - 1);
        strncat(devices, tfl_device_name(ctx, i), sizeof devices - strlen(devices) - 1);
    }
    printf("consumer: tapeflow %s (CUDA %d): %s; devices:%s; matmul on %s\n", TFL_VERSION_STRING,
           TFL_HAVE_CUDA, ok ? "ok" : tfl_ctx_error(ctx).message, devices,
           c ? tfl_tensor_device(c) : "-");
    tfl_tensor_release(c);
    tfl_tensor_release(a);
    tfl_ctx_free(ctx);
    return ok ? 0 : 1;
}
