/* tape_helpers.h: helpers shared by the tape behaviour tests (test_tape_*.c). */
#ifndef TFL_TAPE_HELPERS_H
#define TFL_TAPE_HELPERS_H

#include "test_fixture.h"
#include "variable_helpers.h"

#define F64 TFL_DTYPE_FLOAT64
#define EXPECT_F64(t, want, n, tol) expect_vals_((t), F64, (want), (n), (tol), __LINE__)

static inline tfl_tensor *sum_all(tfl_ctx *ctx, const tfl_tensor *t)
{
    return tfl_reduce_sum(ctx, t, 0, NULL, false);
}

/* The gradient of y with respect to x, asserting the call succeeds (NULL when unconnected);
 * a failure prints the kept error. */
static inline tfl_tensor *grad1_(tfl_tape *tape, const tfl_tensor *y, const tfl_tensor *x,
                                 unsigned flags, int line)
{
    tfl_tensor *g = (tfl_tensor *)&g; /* a sentinel the call must overwrite */
    tfl_status st = tfl_tape_gradient(tape, y, 1, &x, &g, flags);
    if (st != TFL_OK) {
        tfl_error e = tfl_ctx_error(tfl_tensor_ctx(x));
        print_error("line %d: tfl_tape_gradient: %s (%s)\n", line, tfl_status_name(st),
                    e.message ? e.message : "");
        fail();
    }
    assert_true(g != (tfl_tensor *)&g);
    return g;
}
#define grad1(tape, y, x, flags) grad1_((tape), (y), (x), (flags), __LINE__)

#endif /* TFL_TAPE_HELPERS_H */
