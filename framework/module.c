/*
 * framework/module.c: the GPU backend as a module loaded on demand. libtapeflow links no GPU
 * library; the backend list (backends.c) holds tfl__gpu_module_backend, a lazy backend whose
 * first device_count loads the module (backend_module.h) and forwards to it. device.c asks a
 * lazy backend only when a context first needs to know its GPUs (automatic placement, a GPU
 * scope or device name, tfl_device_count), so a program that never asks maps no CUDA library.
 *
 * Which module: the file named by the environment variable TFL_GPU_MODULE when it is set and
 * not empty (the test suite's fake GPU:0 is such a module); else, in a build with the CUDA
 * backend, libtapeflow_cuda.so from libtapeflow's own folder (build tree or install), then
 * from the install's library folder, then by name through the loader's search path. Before
 * that the CUDA driver is probed (libcuda.so.1): without one the module, and cuBLAS and cuDNN
 * with it, are never loaded.
 *
 * The library keeps no global state for it: each context that looks for GPUs opens the module
 * (the dynamic loader maps it once per process and counts the opens) and keeps the backend
 * record and, when none loaded, the reason (tfl_device_note), which it logs once. The module
 * is never closed: the CUDA runtime must not be unloaded under live contexts or its exit
 * handlers.
 */
#define _GNU_SOURCE /* dladdr */
#include "backend_module.h"

#include <tapeflow/version.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

extern const tfl__backend tfl__cpu_backend;

#define TFL__MODULE_HOST_INIT(ret, name, params, args) .name = name,
#define TFL__MODULE_HOST_INIT_V(name, params, args) .name = name,
static const tfl__module_host host_table = {
    .abi = TFL_BACKEND_MODULE_ABI,
    .device_ops_version = TFL_DEVICE_OPS_VERSION,
    .size = sizeof(tfl__module_host),
    .ctx_size = sizeof(tfl_ctx),
    .device_size = sizeof(tfl__device),
    .tensor_size = sizeof(tfl_tensor),
    .allocator_size = sizeof(tfl__allocator),
    .version = TFL_VERSION_STRING,
    .cpu = &tfl__cpu_backend,
    TFL__MODULE_HOST_FUNCS(TFL__MODULE_HOST_INIT, TFL__MODULE_HOST_INIT_V)};
#undef TFL__MODULE_HOST_INIT
#undef TFL__MODULE_HOST_INIT_V

/* What a load attempt says when it finds no module: a line and its log level. */
typedef struct load_note {
    tfl_log_level level; /* INFO (no driver), WARNING (a broken install) */
    char text[TFL_DEVICE_NOTE_SIZE];
} load_note;

static void note(load_note *n, tfl_log_level level, const char *what, const char *err)
{
    n->level = level;
    snprintf(n->text, sizeof n->text, "%s: %s", what, err ? err : "unknown error");
}

#ifdef TFL_CUDA_MODULE_NAME
/* dlopen of `name` from the folder of the object holding this code (libtapeflow.so, or the
 * program a static libtapeflow is linked into); NULL when there is none. */
static void *open_beside_library(const char *name)
{
    Dl_info info;
    if (!dladdr((void *)(uintptr_t)&tfl__gpu_module_backend, &info) || !info.dli_fname)
        return NULL;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return NULL;
    char path[4096];
    int n = snprintf(path, sizeof path, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
                     name);
    return n > 0 && (size_t)n < sizeof path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
}
#endif

static void *open_default_module(load_note *n)
{
#ifdef TFL_CUDA_MODULE_NAME
    /* the driver first: without it nothing of CUDA is loaded */
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!driver) {
        note(n, TFL_LOG_INFO, "no CUDA driver", dlerror());
        return NULL;
    }
    void *h = open_beside_library(TFL_CUDA_MODULE_NAME);
#ifdef TFL_CUDA_MODULE_INSTALL_PATH
    if (!h) h = dlopen(TFL_CUDA_MODULE_INSTALL_PATH, RTLD_NOW | RTLD_LOCAL);
#endif
    if (!h) h = dlopen(TFL_CUDA_MODULE_NAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) note(n, TFL_LOG_WARNING, "cannot load the CUDA backend " TFL_CUDA_MODULE_NAME, dlerror());
    return h;
#else
    (void)n;
    return NULL; /* a build without a GPU backend: nothing to load, nothing to say */
#endif
}

/* Loads the module (the dynamic loader keeps one copy per process and counts the opens)
 * and calls its entry; NULL with a note when there is none. */
static const tfl__backend *load(load_note *n)
{
    n->text[0] = '\0';
    const char *path = getenv("TFL_GPU_MODULE");
    void *h;
    if (path && path[0]) {
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            note(n, TFL_LOG_WARNING, "cannot load the GPU module named by TFL_GPU_MODULE",
                 dlerror());
            return NULL;
        }
    } else {
        h = open_default_module(n);
        if (!h) return NULL;
    }
    tfl__module_entry_fn entry;
    void *sym = dlsym(h, TFL_BACKEND_MODULE_ENTRY);
    memcpy(&entry, &sym, sizeof entry); /* ISO C has no object-to-function pointer cast */
    if (!sym) {
        note(n, TFL_LOG_WARNING, "the GPU module has no entry " TFL_BACKEND_MODULE_ENTRY,
             dlerror());
        return NULL;
    }
    char why[256] = "";
    const tfl__backend *b = entry(&host_table, why, sizeof why);
    if (!b) {
        note(n, TFL_LOG_WARNING, "the GPU module refused to start", why);
        return NULL;
    }
    if (b->version != TFL_DEVICE_OPS_VERSION || !b->type_name ||
        strcmp(b->type_name, "GPU") != 0 || !b->device_count || !b->device_new) {
        note(n, TFL_LOG_WARNING, "the GPU module", "its backend record is not a GPU backend of "
             "this device table version");
        return NULL;
    }
    return b; /* the module stays loaded for the life of the process (see the top) */
}

static int module_device_count(tfl_ctx *ctx)
{
    load_note n;
    ctx->gpu_module = load(&n);
    ctx->device_note_level = n.text[0] ? (int)n.level : -1;
    memcpy(ctx->device_note, n.text, sizeof ctx->device_note);
    return ctx->gpu_module ? ctx->gpu_module->device_count(ctx) : 0;
}

static tfl__device *module_device_new(tfl_ctx *ctx, int index)
{
    return ctx->gpu_module->device_new(ctx, index);
}

static void module_device_free(tfl__device *dev)
{
    const tfl__backend *b = dev->ctx->gpu_module;
    if (b->device_free)
        b->device_free(dev);
    else
        tfl__host_free(dev->ctx, dev);
}

static int module_note(tfl_ctx *ctx, char *buf, size_t size)
{
    if (ctx->device_note_level < 0) return -1;
    snprintf(buf, size, "%s", ctx->device_note);
    return ctx->device_note_level;
}

const tfl__backend tfl__gpu_module_backend = {
    .version = TFL_DEVICE_OPS_VERSION,
    .type_name = "GPU",
    .device_count = module_device_count,
    .device_new = module_device_new,
    .device_free = module_device_free,
    .lazy = true,
    .note = module_note,
};
