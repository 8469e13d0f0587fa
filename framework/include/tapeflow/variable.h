/*
 * tapeflow/variable.h: variables, the shared, persistent, mutable state of a program
 * (TensorFlow's tf.Variable). A variable IS a tensor (`tfl_tensor *`) whose storage the
 * assign functions mutate in place, so every op accepts a variable wherever it accepts a
 * tensor. Also here: name scopes and TensorFlow 1's get_variable, collections, and
 * deferred initialization. Initializers are in <tapeflow/initializer.h>.
 *
 * Ownership. A new variable is owned by the caller (never by a frame, whatever frame is
 * open) and lives until tfl_tensor_release drops its last reference; a model owns its
 * layers' variables. Collections, the get_variable store and the tape never keep a variable
 * alive: a released variable leaves all of them.
 *
 * Snapshots. tfl_variable_read and views of a variable (reshape, transpose, slice) share
 * its memory; an assign while such a snapshot is alive moves the variable to new memory
 * (copy-on-write), so the snapshot keeps the value it had. With no snapshot alive, assign,
 * assign_add and assign_sub write into the variable's own memory: no allocation.
 *
 * Placement logging names TensorFlow's ops: creation logs "op VarHandleOp on CPU:0", the
 * first write "op AssignVariableOp on CPU:0", reads "op ReadVariableOp on CPU:0".
 */
#ifndef TAPEFLOW_VARIABLE_H
#define TAPEFLOW_VARIABLE_H

#include <tapeflow/base.h>
#include <tapeflow/initializer.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The built-in collections, with TensorFlow's GraphKeys strings. */
#define TFL_GLOBAL_VARIABLES "variables"
#define TFL_TRAINABLE_VARIABLES "trainable_variables"
#define TFL_LOCAL_VARIABLES "local_variables"

/** tfl_variable_opts.flags */
enum {
    TFL_VAR_NOT_TRAINABLE = 1u << 0, /* keep it out of TFL_TRAINABLE_VARIABLES and the tape */
    TFL_VAR_DEFERRED = 1u << 1,      /* create it uninitialized: run its initializer later */
};

/**
 * Options for creating a variable. All-zero (or NULL) means defaults:
 * `&(tfl_variable_opts){ .name = "step", .flags = TFL_VAR_NOT_TRAINABLE }` reads well.
 */
typedef struct tfl_variable_opts {
    const char *name;      /* NULL: "Variable"; prefixed with the open name scopes */
    const char *device;    /* NULL: the current device scope (CPU:0 when there is none) */
    tfl_dtype dtype;       /* TFL_DTYPE_INVALID (0): inferred from the initial value */
    unsigned flags;        /* TFL_VAR_* */
    /* The collections it joins instead of TFL_GLOBAL_VARIABLES (e.g. TFL_LOCAL_VARIABLES),
     * as TensorFlow 1's `collections=`. A trainable variable joins TFL_TRAINABLE_VARIABLES
     * as well, whatever this says. NULL / 0: TFL_GLOBAL_VARIABLES. */
    const char *const *collections;
    int n_collections;
} tfl_variable_opts;

/**
 * Creates a variable holding a copy of `initial` (its dtype and shape unless opts->dtype
 * asks for another dtype: a real value converts to any real or complex dtype, as
 * tfl_variable_assign does). The variable never shares memory with `initial`, even when
 * `initial` is itself a variable. With TFL_VAR_DEFERRED the variable keeps a reference to
 * `initial` and takes its value when initialized. Conversions: int/float to int, float or
 * complex; complex to complex; bool only to bool.
 * @param initial a tensor or variable (an uninitialized variable is an error).
 * @param opts    NULL: defaults.
 * Returns: the variable, owned by the caller, or NULL.
 * Errors: INVALID_ARGUMENT (NULL initial keeps the earlier error; bad name, dtype that
 * `initial` cannot convert to, unknown device name), FAILED_PRECONDITION (initial is an
 * uninitialized variable), RESOURCE_EXHAUSTED; with soft placement off, a device scope
 * or opts->device naming a missing device is "Could not satisfy device specification".
 */
TFL_API tfl_tensor *tfl_variable_new(tfl_ctx *ctx, const tfl_tensor *initial,
                                     const tfl_variable_opts *opts);

/**
 * Creates a variable of `dtype` and `shape` whose value comes from `init` (see
 * <tapeflow/initializer.h>); with TFL_VAR_DEFERRED the value comes later, from
 * tfl_variable_initialize, tfl_variables_initialize or a checkpoint.
 * @param dtype the variable's dtype (opts->dtype is ignored); TFL_DTYPE_INVALID: float32.
 * @param init  NULL: glorot_uniform with seed 0 (TensorFlow 1's get_variable default).
 * Returns: the variable, owned by the caller, or NULL. Errors: as tfl_variable_new, and the
 * initializer's (INVALID_ARGUMENT for a random initializer of an integer dtype, ...).
 */
TFL_API tfl_tensor *tfl_variable_new_init(tfl_ctx *ctx, tfl_dtype dtype, int rank,
                                          const int64_t *shape, const tfl_initializer *init,
                                          const tfl_variable_opts *opts);

/** True when t is a variable (not a snapshot of one, not a plain tensor). NULL: false. */
TFL_API bool tfl_tensor_is_variable(const tfl_tensor *t);
/** The variable's full name without TensorFlow's ":0" ("conv1/weights"); NULL when t is
 * not a variable. Valid while the variable lives. */
TFL_API const char *tfl_variable_name(const tfl_tensor *v);
/** Whether the tape watches it and it is in TFL_TRAINABLE_VARIABLES. False for non-variables. */
TFL_API bool tfl_variable_trainable(const tfl_tensor *v);
/** False until a deferred variable is initialized, assigned or restored. */
TFL_API bool tfl_variable_is_initialized(const tfl_tensor *v);

/**
 * A snapshot of the variable's value: a tensor later assigns do not change (it shares the
 * memory until the next assign copies the variable away; no copy is made here).
 * Returns: a new tensor (frame-owned, or the caller's when no frame is open), or NULL.
 * Errors: INVALID_ARGUMENT (v is not a variable), FAILED_PRECONDITION (uninitialized:
 * "ReadVariableOp: Attempting to use uninitialized value v").
 */
TFL_API tfl_tensor *tfl_variable_read(const tfl_tensor *v);

/**
 * Writes `value` into the variable: v = value, v += value, v -= value. The value must have
 * the variable's shape exactly (no broadcasting) and is converted to the variable's dtype
 * when both are real (int, float), or the variable is complex and the value real or complex
 * (never to or from bool, never complex to real); a value on another device is copied over. The variable's memory is reused unless a snapshot shares it. On any error
 * the variable is unchanged.
 * assign initializes a deferred variable; assign_add and assign_sub need an initialized one.
 * Returns: TFL_OK, or the error (also kept in the ctx):
 *   INVALID_ARGUMENT  v is not a variable ("Cannot assign to a tensor that is not a
 *                     variable"), a shape mismatch ("Cannot assign value to variable
 *                     'Variable:0': Shape mismatch. The variable shape (2,), and the
 *                     assigned value shape (3,) are incompatible."), a dtype that does not
 *                     convert, assign_add/assign_sub on bool;
 *   FAILED_PRECONDITION  assign_add/assign_sub on an uninitialized variable;
 *   a NULL value returns the error already kept (or INVALID_ARGUMENT).
 */
TFL_API tfl_status tfl_variable_assign(tfl_tensor *v, const tfl_tensor *value);
TFL_API tfl_status tfl_variable_assign_add(tfl_tensor *v, const tfl_tensor *value);
TFL_API tfl_status tfl_variable_assign_sub(tfl_tensor *v, const tfl_tensor *value);

/* ---- initialization ------------------------------------------------------------------------ */

/**
 * Runs the variable's initializer (again, if it ran before: a seeded one gives the same
 * values, seed 0 draws the ctx's next stream). A variable made from a plain initial value
 * without TFL_VAR_DEFERRED has no initializer to re-run and keeps its value.
 * Returns: TFL_OK or the error. Errors: INVALID_ARGUMENT (not a variable).
 */
TFL_API tfl_status tfl_variable_initialize(tfl_tensor *v);

/** tfl_variables_initialize flags */
enum {
    TFL_INIT_ONLY_UNINITIALIZED = 1u << 0, /* leave initialized variables alone */
};

/**
 * Initializes every variable of a collection, in creation order (TensorFlow 1's
 * global_variables_initializer for TFL_GLOBAL_VARIABLES). With TFL_INIT_ONLY_UNINITIALIZED
 * only the uninitialized ones (say, after restoring part of a checkpoint).
 * @param collection a collection name; NULL: every live variable of the context.
 * Returns: TFL_OK or the first error (the variables before it are initialized).
 */
TFL_API tfl_status tfl_variables_initialize(tfl_ctx *ctx, const char *collection,
                                            unsigned flags);

/**
 * The names of the uninitialized variables of a collection (NULL: every live variable), in
 * creation order, TensorFlow's report_uninitialized_variables. Writes up to `cap` name
 * pointers (valid while their variables live) to `names` (which may be NULL when cap is 0).
 * Returns: how many there are (may exceed cap), or -1 for a NULL ctx.
 */
TFL_API int64_t tfl_report_uninitialized(tfl_ctx *ctx, const char *collection,
                                         const char **names, int64_t cap);

/* ---- name scopes and get_variable ----------------------------------------------------------- */

/** Reuse modes of a scope, TensorFlow 1's variable_scope(reuse=...). */
typedef enum tfl_reuse {
    TFL_REUSE_INHERIT = 0, /* the enclosing scope's mode (the outermost: no reuse) */
    TFL_REUSE_TRUE,        /* get_variable returns existing variables, never creates */
    TFL_REUSE_AUTO,        /* get_variable returns an existing one or creates it */
} tfl_reuse;

/**
 * Opens a name scope: variables created inside are named "<scope>/<name>", nested scopes
 * join with "/" ("model/conv1/weights"). tfl_name_scope_push inherits the reuse mode;
 * tfl_name_scope_push_reuse sets it (TensorFlow 1's variable_scope(name, reuse=...);
 * TFL_REUSE_INHERIT there is the same as tfl_name_scope_push).
 * @param name non-empty, without ':' (it may contain '/' to open several levels at once).
 * Errors: INVALID_ARGUMENT (bad name or reuse value), RESOURCE_EXHAUSTED (64 levels, or
 * names longer than 255 bytes together).
 */
TFL_API tfl_status tfl_name_scope_push(tfl_ctx *ctx, const char *name);
TFL_API tfl_status tfl_name_scope_push_reuse(tfl_ctx *ctx, const char *name, tfl_reuse reuse);
/** Closes the innermost scope. Errors: MISUSE (none is open). */
TFL_API tfl_status tfl_name_scope_pop(tfl_ctx *ctx);
/** Switches the innermost scope to TFL_REUSE_TRUE (TensorFlow's scope.reuse_variables()).
 * Errors: MISUSE (no scope is open). */
TFL_API tfl_status tfl_name_scope_reuse_variables(tfl_ctx *ctx);
/** The current prefix ("model/conv1"; "" outside any scope). Valid until the next push/pop. */
TFL_API const char *tfl_name_scope(const tfl_ctx *ctx);

/**
 * TensorFlow 1's get_variable: the variable "<scope>/<name>", unique among the variables
 * get_variable made in this context (free-standing variables from tfl_variable_new may
 * share names; they are not in its store).
 *  - not found and the scope's reuse is not TRUE: creates it like tfl_variable_new_init
 *    (init NULL: glorot_uniform; dtype TFL_DTYPE_INVALID: float32, or the dtype of a
 *    TFL_INIT_TENSOR initializer, whose shape is used when rank is -1);
 *  - found and the scope's reuse is TRUE or AUTO: returns it (rank -1 skips the shape
 *    check, TFL_DTYPE_INVALID the dtype check).
 * @param rank  0..8, or -1 with a tensor initializer ("take its shape").
 * @param opts  device, flags and collections as for tfl_variable_new (opts->name and
 *              opts->dtype are ignored); used only when the variable is created.
 * Returns: a new reference (created or shared) owned by the caller, or NULL.
 * Errors: ALREADY_EXISTS ("Variable conv1/weights already exists, disallowed. Did you mean
 * to set reuse=TFL_REUSE_TRUE or reuse=TFL_REUSE_AUTO in its scope?"), NOT_FOUND ("Variable
 * model/foo does not exist, or was not created with tfl_get_variable(). Did you mean to set
 * reuse=TFL_REUSE_AUTO in its scope?"), INVALID_ARGUMENT ("Trying to share variable
 * model/weights, but specified shape (5, 5, 32, 16) and found shape (5, 5, 32, 32).", the
 * same for dtypes, "If initializer is a constant, do not specify shape." when a tensor
 * initializer's shape differs from the one given, rank -1 without a tensor initializer).
 */
TFL_API tfl_tensor *tfl_get_variable(tfl_ctx *ctx, const char *name, int rank,
                                     const int64_t *shape, tfl_dtype dtype,
                                     const tfl_initializer *init, const tfl_variable_opts *opts);

/* ---- collections ------------------------------------------------------------------------------ */

/**
 * Appends a variable to a named collection (any non-empty string; created on first use).
 * Like TensorFlow's add_to_collection, adding twice lists it twice. The collection does
 * not keep the variable alive: releasing the variable removes it.
 * Errors: INVALID_ARGUMENT (v is not a variable, empty name), MISUSE (other context).
 */
TFL_API tfl_status tfl_collection_add(tfl_ctx *ctx, const char *collection, tfl_tensor *v);

/**
 * The variables of a collection in the order they joined: writes up to `cap` borrowed
 * pointers to `out` (NULL when cap is 0). An unknown collection is empty.
 * Returns: how many there are (may exceed cap), or -1 for NULL ctx or name.
 */
TFL_API int64_t tfl_collection_get(tfl_ctx *ctx, const char *collection, tfl_tensor **out,
                                   int64_t cap);

#ifdef __cplusplus
}
#endif
#endif /* TAPEFLOW_VARIABLE_H */
