/*
 * test_native_api.c: a device's vendor handles as core_api/native_api.h gives them to
 * framework/dist (core_api.c): CPU:0 has none (ordinal -1, no stream handle, making it
 * current does nothing); a device whose table has the native slots answers through them; one
 * with an ordinal but no stream handle counts as having none (NCCL needs both); a failing
 * make_current slot's status comes back. A white-box test (static library, framework's
 * private headers): the tables are built here, the devices are records around them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "core_api/native_api.h"
#include "internal.h"

static int current_calls;
static tfl__stream *stream_asked;
static char native_handle; /* its address stands for a cudaStream_t */

static int ordinal_slot(const tfl__device *dev)
{
    return dev->index + 5;
}

static tfl_status current_slot(tfl__device *dev)
{
    current_calls++;
    return dev->index == 1 ? TFL_INTERNAL : TFL_OK;
}

static void *stream_slot(tfl__device *dev, tfl__stream *stream)
{
    (void)dev;
    stream_asked = stream;
    return &native_handle;
}

static void cpu_has_no_vendor_handles(void **state)
{
    (void)state;
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    tfl__device *cpu = tfl__cpu(ctx);
    assert_int_equal(tfl__dev_native_ordinal(cpu), -1);
    assert_null(tfl__dev_native_stream(cpu, NULL));
    assert_int_equal(tfl__dev_make_current(cpu), TFL_OK);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx);
}

static void native_slots_answer(void **state)
{
    (void)state;
    const tfl__device_ops ops = {
        .native_ordinal = ordinal_slot, .make_current = current_slot, .native_stream = stream_slot};
    tfl__device dev = {.ops = &ops, .index = 2};
    current_calls = 0;
    assert_int_equal(tfl__dev_native_ordinal(&dev), 7);
    tfl__stream *s = (tfl__stream *)(void *)&current_calls; /* any non-NULL stream */
    assert_ptr_equal(tfl__dev_native_stream(&dev, s), &native_handle);
    assert_ptr_equal(stream_asked, s);
    assert_ptr_equal(tfl__dev_native_stream(&dev, NULL), &native_handle);
    assert_null(stream_asked);
    assert_int_equal(tfl__dev_make_current(&dev), TFL_OK);
    assert_int_equal(current_calls, 1);
    dev.index = 1; /* the slot fails for this one */
    assert_int_equal(tfl__dev_make_current(&dev), TFL_INTERNAL);
    assert_int_equal(current_calls, 2);
}

static void an_ordinal_without_streams_is_none(void **state)
{
    (void)state;
    const tfl__device_ops ops = {.native_ordinal = ordinal_slot};
    tfl__device dev = {.ops = &ops, .index = 0};
    assert_int_equal(tfl__dev_native_ordinal(&dev), -1);
    assert_null(tfl__dev_native_stream(&dev, NULL));
    current_calls = 0;
    assert_int_equal(tfl__dev_make_current(&dev), TFL_OK);
    assert_int_equal(current_calls, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cpu_has_no_vendor_handles),
        cmocka_unit_test(native_slots_answer),
        cmocka_unit_test(an_ordinal_without_streams_is_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
