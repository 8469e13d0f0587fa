/*
 * framework/backend_module_shim.c: compiled into every backend module, never into
 * libtapeflow. It defines each framework function of the host table (backend_module.h) as a
 * call through the table the library hands the module's entry, so the module's sources call
 * tfl__host_alloc, tfl__set_error, ... as the framework's own code does, and the module links
 * no part of libtapeflow. The module's link keeps every symbol but its entry local.
 *
 * The table pointer is the module's one global: stored by tfl__module_accept from the entry,
 * which the library calls each time a context loads the module, always with the same table
 * (libtapeflow's one constant table), so every store writes the value already there.
 */
#include "backend_module.h"

#include <tapeflow/version.h>

#include <stdio.h>
#include <string.h>

static const tfl__module_host *host;

static inline const tfl__module_host *table(void)
{
    return __atomic_load_n(&host, __ATOMIC_ACQUIRE);
}

#define TFL__MODULE_SHIM_DEF(ret, name, params, args) \
    ret name params { return table()->name args; }
#define TFL__MODULE_SHIM_DEF_V(name, params, args) \
    void name params { table()->name args; }
TFL__MODULE_HOST_FUNCS(TFL__MODULE_SHIM_DEF, TFL__MODULE_SHIM_DEF_V)
#undef TFL__MODULE_SHIM_DEF
#undef TFL__MODULE_SHIM_DEF_V

tfl_status tfl__set_error(tfl_ctx *ctx, tfl_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tfl_status st = table()->tfl__set_errorv(ctx, code, fmt, ap);
    va_end(ap);
    return st;
}

void tfl__log(tfl_ctx *ctx, tfl_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    table()->tfl__logv(ctx, level, fmt, ap);
    va_end(ap);
}

bool tfl__module_accept(const tfl__module_host *h, char *why, size_t size)
{
    if (h->abi != TFL_BACKEND_MODULE_ABI) {
        snprintf(why, size, "the module speaks module ABI %d, the library %d: rebuild them "
                 "together", TFL_BACKEND_MODULE_ABI, h->abi);
        return false;
    }
    const size_t want[] = {TFL__MODULE_STRUCT_SIZES};
    const size_t got[] = {h->size, h->ctx_size, h->device_size, h->tensor_size,
                          h->allocator_size};
    if (h->device_ops_version != TFL_DEVICE_OPS_VERSION || memcmp(want, got, sizeof want) != 0 ||
        strcmp(h->version, TFL_VERSION_STRING) != 0) {
        snprintf(why, size, "the module was built for tapeflow %s, the library is %s or differs "
                 "in its private structs: rebuild them together", TFL_VERSION_STRING,
                 h->version);
        return false;
    }
    __atomic_store_n(&host, h, __ATOMIC_RELEASE); /* every context's load stores the same */
    return true;
}
