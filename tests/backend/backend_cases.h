/*
 * tests/backend/backend_cases.h: the case table of the cross-backend harness
 * (test_backend_ops.c). A case builds one op (or a short chain ending in it) from inputs the
 * harness makes on the CPU from a fixed generator; the harness runs it on the CPU and on the
 * device under test, forward and backward (a tape over the floating inputs, target
 * sum(y * w) for a fixed w), and compares. Which ops a case covers is not declared: the
 * harness records the placement log and requires every op of tfl_op_name to have run on the
 * device under test.
 */
#ifndef TFL_TESTS_BACKEND_CASES_H
#define TFL_TESTS_BACKEND_CASES_H

#include <tapeflow/tapeflow.h>

#define BC_MAX_IN 4

typedef enum bc_gen {
    BC_UNIFORM, /* uniform in (-2, 2) */
    BC_POS,     /* uniform in (0.5, 2.5): log, sqrt, pow's base */
    BC_INDEX,   /* integers in [0, hi) */
    BC_BOOL,    /* 0 or 1 */
    BC_PROB,    /* rows summing to about 1 (labels of the cross entropy) */
} bc_gen;

typedef struct bc_input {
    tfl_dtype dtype;
    int rank;
    int64_t shape[4];
    bc_gen gen;
    int64_t hi; /* BC_INDEX: the bound */
    int view;   /* 1: the input is passed as a transposed view of the last two axes (a
                   strided input; the shape given is the view's shape) */
} bc_input;

typedef tfl_tensor *(*bc_build_fn)(tfl_ctx *ctx, tfl_tensor *const *in);

typedef struct bc_case {
    const char *name;   /* "Add/f32/broadcast" */
    int n_in;
    bc_input in[BC_MAX_IN];
    bc_build_fn build;
} bc_case;

extern const bc_case bc_cases[];
extern const int bc_n_cases;

#endif /* TFL_TESTS_BACKEND_CASES_H */
