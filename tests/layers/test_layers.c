/* test_layers.c: the layers of <tapeflow/layers.h>: output shapes per kind, variables after
 * build (names, shapes, trainable flags, collections, initial values), unique names, every
 * spec error of tfl_layer_new and the call-time errors with codes and messages, and Dense,
 * Activation, Embedding, Flatten and Reshape values against hand-computed numbers. Conv2D,
 * the pools, Dropout and BatchNormalization: shapes, variables and specs only (their forward
 * ops are merged later). */
#include "test_fixture.h"

#include <ctype.h>
#include <math.h>

#define F(...) ((const float[]){__VA_ARGS__})
/* a shape and its rank, as two arguments; RS: rank first (tfl_layer_build's order) */
#define NDIM(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define I64(...) (const int64_t[]){__VA_ARGS__}, NDIM(__VA_ARGS__)
#define RS(...) NDIM(__VA_ARGS__), (const int64_t[]){__VA_ARGS__}
#define LAYER(ctx, ...) new_layer((ctx), &(tfl_layer_spec){__VA_ARGS__})
#define FREE_ALL(...)                                                                          \
    do {                                                                                       \
        tfl_layer *all_[] = {__VA_ARGS__};                                                     \
        for (size_t i_ = 0; i_ < sizeof all_ / sizeof all_[0]; i_++) tfl_layer_free(all_[i_]); \
    } while (0)
#define f32(ctx, ...) tensor((ctx), TFL_DTYPE_FLOAT32, __VA_ARGS__)
#define i32(ctx, ...) tensor((ctx), TFL_DTYPE_INT32, __VA_ARGS__)
#define BUILT(name, want, got)                                                                 \
    name ": expected the input's last dimension " #want " (the layer was built for it), got " #got

static tfl_layer *new_layer(tfl_ctx *ctx, const tfl_layer_spec *spec)
{
    tfl_layer *l = tfl_layer_new(ctx, spec);
    if (!l) print_error("tfl_layer_new: %s\n", tfl_ctx_error(ctx).message);
    assert_non_null(l);
    return l;
}

static tfl_tensor *tensor(tfl_ctx *ctx, tfl_dtype dt, const void *data, const int64_t *shape,
                          int rank)
{
    tfl_tensor *t = tfl_tensor_new(ctx, dt, rank, shape, data);
    assert_non_null(t);
    return t;
}

static void expect_shape_of(const tfl_tensor *t, const int64_t *shape, int rank)
{
    assert_non_null(t);
    assert_int_equal(tfl_tensor_rank(t), rank);
    for (int d = 0; d < rank; d++) assert_int_equal(tfl_tensor_dim(t, d), shape[d]);
}

static void expect_shape_error(tfl_ctx *ctx, tfl_layer *l, const int64_t *in, int rank,
                               const char *message)
{
    int64_t out[TFL_MAX_RANK + 1];
    assert_int_equal(tfl_layer_output_shape(l, rank, in, out), -1);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, message);
}

/* the variable's name, dtype, shape and trainable flag */
static void expect_var(const tfl_tensor *v, const char *name, const int64_t *shape, int rank,
                       bool trainable)
{
    assert_true(tfl_tensor_is_variable(v));
    assert_string_equal(tfl_variable_name(v), name);
    assert_int_equal(tfl_tensor_dtype(v), TFL_DTYPE_FLOAT32);
    expect_shape_of(v, shape, rank);
    assert_int_equal(tfl_variable_trainable(v), trainable);
}

/* n values within [-bound, bound], not all equal (a random initializer ran) */
static void expect_spread(const tfl_tensor *v, int n, float bound)
{
    float *x = host_bytes(v, NULL);
    int inside = 0, differ = 0;
    for (int i = 0; i < n; i++) inside += fabsf(x[i]) <= bound, differ += x[i] != x[0];
    free(x);
    assert_int_equal(inside, n);
    assert_true(differ > 0);
}

static bool in_collection(tfl_ctx *ctx, const char *collection, const tfl_tensor *v)
{
    tfl_tensor *all[64];
    int64_t n = tfl_collection_get(ctx, collection, all, 64);
    assert_true(n >= 0 && n <= 64);
    for (int64_t i = 0; i < n; i++)
        if (all[i] == v) return true;
    return false;
}

/* ---- names, specs ---------------------------------------------------------------------- */

static void test_kind_and_activation_names(void **state)
{
    (void)state;
    const char *cls[] = {"?",       "Dense",   "Conv2D",  "MaxPooling2D",
                         "AveragePooling2D",   "Flatten", "Reshape",
                         "Dropout", "BatchNormalization", "Activation", "Embedding",
                         "LayerNormalization", "GlobalAveragePooling2D", "PositionEmbedding",
                         "MultiHeadAttention", "Add", "Concatenate", "Multiply", "?"};
    for (int k = 0; k <= TFL_LAYER_KIND_END; k++)
        assert_string_equal(tfl_layer_kind_name((tfl_layer_kind)k), cls[k]);
    assert_string_equal(tfl_layer_kind_name((tfl_layer_kind)-1), "?");
    const char *acts[] = {"linear",   "relu", "sigmoid", "tanh",         "softmax", "gelu",
                          "softplus", "silu", "elu",     "hard_sigmoid", "?"};
    for (int a = 0; a <= TFL_ACT_END; a++)
        assert_string_equal(tfl_activation_name((tfl_activation)a), acts[a]);
    assert_string_equal(tfl_activation_name((tfl_activation)-1), "?");
    assert_null(tfl_layer_name(NULL));
    assert_int_equal(tfl_layer_kind_of(NULL), 0);
    assert_int_equal(tfl_layer_variables(NULL, TFL_VARS_ALL, NULL, 0), 0);
    assert_int_equal(tfl_layer_param_count(NULL, TFL_VARS_ALL), 0);
    tfl_layer_free(NULL);
}

static void test_default_names(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
#define DENSE_NAMED(var, want)                                                                 \
    tfl_layer *var = LAYER(ctx, .kind = TFL_LAYER_DENSE, .units = 1);                          \
    assert_string_equal(tfl_layer_name(var), want)
    DENSE_NAMED(d0, "dense");
    DENSE_NAMED(d1, "dense_1");
    DENSE_NAMED(d2, "dense_2");
    tfl_layer_free(d1); /* its name is free again: the lowest free suffix is taken */
    DENSE_NAMED(again, "dense_1");
    DENSE_NAMED(d3, "dense_3");
    /* an explicit name takes a default one's place; the spec's string is copied */
    char own[16] = "dense_4";
    tfl_layer *named = LAYER(ctx, .kind = TFL_LAYER_DENSE, .units = 1, .name = own);
    strcpy(own, "zzz");
    assert_string_equal(tfl_layer_name(named), "dense_4");
    DENSE_NAMED(d5, "dense_5");
    /* a taken name is an error, and nothing is made */
    tfl_layer_spec taken = {.kind = TFL_LAYER_FLATTEN, .name = "dense_2"};
    assert_null(tfl_layer_new(ctx, &taken));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "tfl_layer_new: the name 'dense_2' is taken by "
                      "another layer of this context");
    /* each kind's base name */
    const char *bases[] = {NULL,          "dense",   "conv2d",  "max_pooling2d",
                           "average_pooling2d",      "flatten", "reshape",
                           "dropout",     "batch_normalization", "activation", "embedding",
                           "layer_normalization", "global_average_pooling2d",
                           "position_embedding", "multi_head_attention", "add", "concatenate",
                           "multiply"};
    tfl_layer *k[TFL_LAYER_KIND_END] = {NULL};
    for (int kind = TFL_LAYER_CONV2D; kind < TFL_LAYER_KIND_END; kind++) {
        bool conv = kind == TFL_LAYER_CONV2D, emb = kind == TFL_LAYER_EMBEDDING;
        bool pos = kind == TFL_LAYER_POSITION_EMBEDDING;
        bool mha = kind == TFL_LAYER_MULTI_HEAD_ATTENTION;
        k[kind] = LAYER(ctx, .kind = (tfl_layer_kind)kind, .units = conv || emb ? 2 : 0,
                        .input_dim = emb ? 3 : 0, .kernel_size = {conv, conv},
                        .sequence_length = pos ? 4 : 0, .num_heads = mha ? 2 : 0,
                        .key_dim = mha ? 4 : 0);
        assert_string_equal(tfl_layer_name(k[kind]), bases[kind]);
        assert_int_equal(tfl_layer_kind_of(k[kind]), kind);
    }
    tfl_layer *conv1 = LAYER(ctx, .kind = TFL_LAYER_CONV2D, .units = 2, .kernel_size = {1, 1});
    assert_string_equal(tfl_layer_name(conv1), "conv2d_1");
    for (int kind = TFL_LAYER_CONV2D; kind < TFL_LAYER_KIND_END; kind++) tfl_layer_free(k[kind]);
    tfl_layer *conv = LAYER(ctx, .kind = TFL_LAYER_CONV2D, .units = 2, .kernel_size = {1, 1});
    assert_string_equal(tfl_layer_name(conv), "conv2d");
    FREE_ALL(d0, d2, again, d3, named, d5, conv1, conv);
    DENSE_NAMED(fresh, "dense"); /* all freed: the first default name is free again */
    tfl_layer_free(fresh);
#undef DENSE_NAMED
}

static void test_invalid_names(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    char long_name[129];
    memset(long_name, 'x', 128);
    long_name[128] = '\0';
    const char *bad[] = {"", "a/b", "a:0", long_name};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tfl_layer_spec s = {.kind = TFL_LAYER_DENSE, .units = 1, .name = bad[i]};
        assert_null(tfl_layer_new(ctx, &s));
        char msg[300];
        snprintf(msg, sizeof msg, "tfl_layer_new: '%s' is not a valid name (non-empty, under 128 "
                 "bytes, without '/' or ':')", bad[i]);
        expect_kept_error(ctx, TFL_INVALID_ARGUMENT, msg);
    }
    /* 127 bytes is the longest name, and its variables are named after it */
    long_name[127] = '\0';
    tfl_layer *l = LAYER(ctx, .kind = TFL_LAYER_DENSE, .units = 2, .name = long_name);
    assert_string_equal(tfl_layer_name(l), long_name);
    assert_int_equal(tfl_layer_build(l, RS(-1, 3)), TFL_OK);
    tfl_tensor *kernel = NULL;
    assert_int_equal(tfl_layer_variables(l, TFL_VARS_ALL, &kernel, 1), 2);
    char want[160];
    snprintf(want, sizeof want, "%s/kernel", long_name);
    assert_string_equal(tfl_variable_name(kernel), want);
    tfl_layer_free(l);
}

static void test_spec_errors(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const tfl_layer_kind D = TFL_LAYER_DENSE, C = TFL_LAYER_CONV2D, R = TFL_LAYER_RESHAPE,
                         BN = TFL_LAYER_BATCH_NORM, DROP = TFL_LAYER_DROPOUT;
    const struct {
        tfl_layer_spec spec;
        const char *message; /* after "tfl_layer_new: " */
    } cases[] = {
        {{.kind = 0}, "unknown layer kind 0"},
        {{.kind = TFL_LAYER_KIND_END}, "unknown layer kind 18"},
        {{.kind = TFL_LAYER_MULTI_HEAD_ATTENTION, .num_heads = 2, .key_dim = -1},
         "MultiHeadAttention needs num_heads >= 1 and key_dim >= 1 (0: the features / "
         "num_heads), got 2 and -1"},
        {{.kind = TFL_LAYER_MULTI_HEAD_ATTENTION, .num_heads = 2, .key_dim = 4, .rate = 1},
         "MultiHeadAttention's dropout rate must be in [0, 1), got 1"},
        {{.kind = TFL_LAYER_MULTI_HEAD_ATTENTION, .num_heads = 2, .key_dim = 4, .units = 3},
         "MultiHeadAttention has no option 'units'"},
        {{.kind = D, .units = 2, .causal = true}, "Dense has no option 'num_heads/key_dim/causal'"},
        {{.kind = TFL_LAYER_POSITION_EMBEDDING}, "PositionEmbedding needs sequence_length >= 1, "
                                                 "got 0"},
        {{.kind = D, .units = 2, .sequence_length = 3}, "Dense has no option 'sequence_length'"},
        {{.kind = D, .units = 1, .activation = TFL_ACT_END}, "Dense: unknown activation 10"},
        {{.kind = TFL_LAYER_ACTIVATION, .activation = (tfl_activation)-1},
         "Activation: unknown activation -1"},
        {{.kind = TFL_LAYER_MAX_POOL2D, .padding = (tfl_padding)2},
         "MaxPooling2D: unknown padding 2 (VALID or SAME)"},
        {{.kind = D}, "Dense needs units >= 1, got 0"},
        {{.kind = D, .units = -3}, "Dense needs units >= 1, got -3"},
        {{.kind = TFL_LAYER_EMBEDDING, .input_dim = 5}, "Embedding needs units >= 1, got 0"},
        {{.kind = TFL_LAYER_EMBEDDING, .units = 4}, "Embedding needs input_dim >= 1, got 0"},
        {{.kind = C, .kernel_size = {3, 3}}, "Conv2D needs filters (units) >= 1, got 0"},
        {{.kind = C, .units = 8}, "Conv2D needs kernel_size >= 1, got (0, 0)"},
        {{.kind = C, .units = 8, .kernel_size = {3, 0}},
         "Conv2D needs kernel_size >= 1, got (3, 0)"},
        {{.kind = C, .units = 8, .kernel_size = {3, 3}, .strides = {-1, 1}},
         "Conv2D strides and dilations must be >= 1 (0 means 1), got strides (-1, 1), dilations "
         "(0, 0)"},
        {{.kind = C, .units = 8, .kernel_size = {3, 3}, .dilations = {2, -2}},
         "Conv2D strides and dilations must be >= 1 (0 means 1), got strides (0, 0), dilations "
         "(2, -2)"},
        {{.kind = TFL_LAYER_MAX_POOL2D, .kernel_size = {-1, 2}},
         "MaxPooling2D pool size and strides must be >= 1 (0: default), got pool (-1, 2), "
         "strides (0, 0)"},
        {{.kind = TFL_LAYER_AVG_POOL2D, .strides = {1, -1}},
         "AveragePooling2D pool size and strides must be >= 1 (0: default), got pool (0, 0), "
         "strides (1, -1)"},
        {{.kind = R, .target_rank = 8}, "Reshape's target_rank must be in [0, 7], got 8"},
        {{.kind = R, .target_rank = -1}, "Reshape's target_rank must be in [0, 7], got -1"},
        {{.kind = R, .target_rank = 2, .target_shape = {3, 0}},
         "Reshape's target_shape[1] must be >= 1 or -1, got 0"},
        {{.kind = R, .target_rank = 1, .target_shape = {-2}},
         "Reshape's target_shape[0] must be >= 1 or -1, got -2"},
        {{.kind = R, .target_rank = 3, .target_shape = {-1, 2, -1}},
         "Reshape's target_shape may hold one -1, got 2"},
        {{.kind = DROP, .rate = 1}, "Dropout's rate must be in [0, 1), got 1"},
        {{.kind = DROP, .rate = -0.25}, "Dropout's rate must be in [0, 1), got -0.25"},
        {{.kind = DROP, .rate = NAN}, "Dropout's rate must be in [0, 1), got nan"},
        {{.kind = BN, .momentum = 1},
         "BatchNormalization's momentum must be in [0, 1) (0: 0.99), got 1"},
        {{.kind = BN, .momentum = -0.5},
         "BatchNormalization's momentum must be in [0, 1) (0: 0.99), got -0.5"},
        {{.kind = BN, .epsilon = -1e-3},
         "BatchNormalization's epsilon must be > 0 (0: 1e-3), got -0.001"},
        {{.kind = BN, .epsilon = INFINITY},
         "BatchNormalization's epsilon must be > 0 (0: 1e-3), got inf"},
        {{.kind = TFL_LAYER_LAYER_NORM, .epsilon = -1e-5},
         "LayerNormalization's epsilon must be > 0 (0: 1e-3), got -1e-05"},
        {{.kind = TFL_LAYER_LAYER_NORM, .epsilon = NAN},
         "LayerNormalization's epsilon must be > 0 (0: 1e-3), got nan"},
        /* a field the kind does not read */
        {{.kind = DROP, .units = 3}, "Dropout has no option 'units'"},
        {{.kind = BN, .activation = TFL_ACT_RELU}, "BatchNormalization has no option 'activation'"},
        {{.kind = D, .units = 2, .kernel_size = {3, 3}}, "Dense has no option 'kernel_size'"},
        {{.kind = TFL_LAYER_MAX_POOL2D, .dilations = {2, 2}},
         "MaxPooling2D has no option 'dilations'"},
        {{.kind = TFL_LAYER_FLATTEN, .rate = 0.5}, "Flatten has no option 'rate'"},
        {{.kind = TFL_LAYER_EMBEDDING, .units = 2, .input_dim = 3, .no_bias = true},
         "Embedding has no option 'no_bias'"},
        {{.kind = D, .units = 2, .momentum = 0.9}, "Dense has no option 'momentum'"},
        {{.kind = D, .units = 2, .epsilon = 1e-5},
         "Dense has no option 'epsilon/no_center/no_scale'"},
        {{.kind = TFL_LAYER_LAYER_NORM, .momentum = 0.9},
         "LayerNormalization has no option 'momentum'"},
        {{.kind = TFL_LAYER_GLOBAL_AVG_POOL2D, .no_scale = true},
         "GlobalAveragePooling2D has no option 'epsilon/no_center/no_scale'"},
        {{.kind = TFL_LAYER_GLOBAL_AVG_POOL2D, .kernel_size = {2, 2}},
         "GlobalAveragePooling2D has no option 'kernel_size'"},
        {{.kind = DROP, .target_rank = 1}, "Dropout has no option 'target_rank'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tfl_layer *l = tfl_layer_new(ctx, &cases[i].spec);
        if (l) print_error("case %zu made a layer\n", i);
        assert_null(l);
        char want[256];
        snprintf(want, sizeof want, "tfl_layer_new: %s", cases[i].message);
        tfl_error e = tfl_ctx_error(ctx);
        if (e.code != TFL_INVALID_ARGUMENT || strcmp(e.message, want) != 0)
            print_error("case %zu: %s\n", i, e.message);
        assert_int_equal(e.code, TFL_INVALID_ARGUMENT);
        assert_string_equal(e.message, want);
        tfl_ctx_clear_error(ctx);
    }
    assert_null(tfl_layer_new(ctx, NULL));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "tfl_layer_new: the spec is NULL");
    assert_null(tfl_layer_new(NULL, &(tfl_layer_spec){.kind = TFL_LAYER_FLATTEN}));
    /* the valid edges: rate 0, momentum and epsilon 0 (the defaults) */
    FREE_ALL(LAYER(ctx, .kind = DROP, .rate = 0), LAYER(ctx, .kind = DROP, .rate = 0.999),
             LAYER(ctx, .kind = BN, .momentum = 0, .epsilon = 0));
    /* no failed spec took a name: the first dense is still "dense" */
    tfl_layer *d = LAYER(ctx, .kind = D, .units = 1);
    assert_string_equal(tfl_layer_name(d), "dense");
    tfl_layer_free(d);
}

/* ---- output shapes ------------------------------------------------------------------------ */

/* "-1 28 28 1" -> shape; returns the rank */
static int parse_shape(const char *text, int64_t *shape)
{
    int rank = 0;
    for (char *end; *text; text = end) {
        long long v = strtoll(text, &end, 10);
        if (end == text) break;
        shape[rank++] = v;
    }
    return rank;
}

/* A fresh layer per case (its kind's base name): for an input shape, the output shape or
 * (text starting with a letter) the error message. */
typedef struct shape_case {
    tfl_layer_spec spec;
    const char *in, *want;
} shape_case;

static void run_shape_cases(tfl_ctx *ctx, const shape_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const shape_case *c = &cases[i];
        int64_t in[TFL_MAX_RANK], want[TFL_MAX_RANK + 1], out[TFL_MAX_RANK + 1];
        int rank = parse_shape(c->in, in), r;
        tfl_layer *l = new_layer(ctx, &c->spec);
        for (int d = 0; d <= TFL_MAX_RANK; d++) out[d] = 12345;
        r = tfl_layer_output_shape(l, rank, in, out);
        if (!isalpha((unsigned char)c->want[0])) {
            if (r < 0) print_error("case %zu: %s\n", i, tfl_ctx_error(ctx).message);
            assert_int_equal(r, parse_shape(c->want, want));
            for (int d = 0; d < r; d++) assert_int_equal(out[d], want[d]);
            assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
        } else {
            if (r != -1) print_error("case %zu: no error\n", i);
            assert_int_equal(r, -1);
            expect_kept_error(ctx, TFL_INVALID_ARGUMENT, c->want);
        }
        tfl_layer_free(l);
    }
}

#define DENSE3 {.kind = TFL_LAYER_DENSE, .units = 3}
#define FLAT {.kind = TFL_LAYER_FLATTEN}
#define RESHAPE(rank, ...)                                                                     \
    {.kind = TFL_LAYER_RESHAPE, .target_rank = rank, .target_shape = {__VA_ARGS__}}
#define EMB {.kind = TFL_LAYER_EMBEDDING, .input_dim = 10, .units = 16}

static void test_output_shapes(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const shape_case cases[] = {
        {DENSE3, "-1 5", "-1 3"},
        {DENSE3, "2 4 5", "2 4 3"},
        {DENSE3, "-1 7 6 5", "-1 7 6 3"},
        {DENSE3, "5",
         "dense: Dense expects an input of rank >= 2 (batch, ..., features), got shape (5,)"},
        {DENSE3, "4 -1",
         "dense: the input's last dimension must be known and >= 1, got shape (4, -1)"},
        {DENSE3, "4 0",
         "dense: the input's last dimension must be known and >= 1, got shape (4, 0)"},
        {FLAT, "-1 2 3 4", "-1 24"},
        {FLAT, "6 5", "6 5"},
        {FLAT, "6", "6 1"},
        {FLAT, "6 -1 3", "6 -1"}, /* an unknown dimension stays unknown */
        {FLAT, "", "flatten: Flatten expects an input with a batch axis, got shape ()"},
        {RESHAPE(2, -1, 4), "-1 2 6", "-1 3 4"},
        {RESHAPE(2, -1, 4), "5 8", "5 2 4"},
        {RESHAPE(2, -1, 4), "5 6",
         "reshape: cannot reshape an input of shape (5, 6) (6 per example) to the target shape"},
        {RESHAPE(3, 2, 3, 2), "-1 12", "-1 2 3 2"},
        {RESHAPE(2, -1, 4), "-1 -1 8", "-1 -1 4"}, /* unknown input dims: the -1 stays */
        {RESHAPE(2, 3, 4), "-1 -1 6", "-1 3 4"},
        {RESHAPE(3, 2, 3, 2), "3 4 3", "3 2 3 2"},
        {RESHAPE(1, 5), "3 13",
         "reshape: cannot reshape an input of shape (3, 13) (13 per example)"},
        {RESHAPE(0, 0), "",
         "reshape: Reshape expects an input with a batch axis, got shape ()"},
        {RESHAPE(0, 0), "4 1 1", "4"},
        {RESHAPE(7, 1, 1, 1, 1, 1, 1, -1), "2 6", "2 1 1 1 1 1 1 6"},
        {{.kind = TFL_LAYER_ACTIVATION, .activation = TFL_ACT_SOFTMAX}, "-1 3 7", "-1 3 7"},
        {EMB, "-1 7", "-1 7 16"},
        {EMB, "4", "4 16"},
        {EMB, "", "16"},
        {EMB, "1 1 1 1 1 1 1 1", "embedding: Embedding's input rank must be below 8, got 8"},
    };
    run_shape_cases(ctx, cases, sizeof cases / sizeof cases[0]);
    /* the arguments; shapes alone build nothing */
    tfl_layer *d = LAYER(ctx, .kind = TFL_LAYER_DENSE, .units = 3);
    int64_t out[TFL_MAX_RANK + 1], nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    assert_int_equal(tfl_layer_output_shape(d, 9, nine, out), -1);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "dense: a shape of rank 9 (0..8) and an output array are needed");
    assert_int_equal(tfl_layer_output_shape(d, 2, nine, NULL), -1);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "dense: a shape of rank 2 (0..8)");
    assert_int_equal(tfl_layer_output_shape(NULL, 2, nine, out), -1);
    assert_int_equal(tfl_layer_variables(d, TFL_VARS_ALL, NULL, 0), 0);
    tfl_layer_free(d);
}

#define CONV(...) {.kind = TFL_LAYER_CONV2D, __VA_ARGS__}
#define CONV32 CONV(.units = 32, .kernel_size = {3, 3})
#define MAXP(...) {.kind = TFL_LAYER_MAX_POOL2D, __VA_ARGS__}
#define AVGP(...) {.kind = TFL_LAYER_AVG_POOL2D, __VA_ARGS__}
#define BN {.kind = TFL_LAYER_BATCH_NORM}

/* Conv2D, the pools, Dropout, BatchNormalization (forward ops merged later) */
static void test_spatial_output_shapes(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    const tfl_padding S = TFL_PADDING_SAME;
    const shape_case cases[] = {
        {CONV32, "-1 28 28 1", "-1 26 26 32"},
        {CONV32, "4 3 5 2", "4 1 3 32"},
        {CONV32, "1 2 5 1",
         "conv2d: the Conv2D window (3, 3) does not fit the input (1, 2, 5, 1) with VALID padding"},
        {CONV32, "28 28 1",
         "conv2d: Conv2D expects an input of rank 4 (batch, height, width, channels), got shape "
         "(28, 28, 1)"},
        {CONV32, "1 28 28 -1", "conv2d: the input's last dimension must be known and >= 1"},
        /* VALID with strides: (28 - 3) / 2 + 1; SAME: ceil(in / stride), never empty */
        {CONV(.units = 4, .kernel_size = {3, 3}, .strides = {2, 2}), "-1 28 28 3", "-1 13 13 4"},
        {CONV(.units = 4, .kernel_size = {3, 3}, .strides = {2, 2}), "2 7 8 3", "2 3 3 4"},
        {CONV(.units = 4, .kernel_size = {3, 3}, .strides = {2, 3}, .padding = S), "-1 28 28 3",
         "-1 14 10 4"},
        {CONV(.units = 4, .kernel_size = {3, 3}, .strides = {2, 3}, .padding = S), "1 1 1 3",
         "1 1 1 4"},
        {CONV(.units = 6, .kernel_size = {5, 5}, .padding = S), "-1 9 11 2", "-1 9 11 6"},
        {CONV(.units = 1, .kernel_size = {3, 1}, .strides = {2, 1}), "1 7 5 2", "1 3 5 1"},
        /* dilation 2 along the height: a span of 5 */
        {CONV(.units = 2, .kernel_size = {3, 3}, .dilations = {2, 1}), "1 10 10 1", "1 6 8 2"},
        /* pools: 2x2, strides = pool size, VALID by default; channels kept */
        {MAXP(.padding = 0), "-1 28 28 3", "-1 14 14 3"},
        {MAXP(.padding = 0), "5 7 9 1", "5 3 4 1"},
        {MAXP(.padding = 0), "5 1 9 1",
         "max_pooling2d: the MaxPooling2D window (2, 2) does not fit the input (5, 1, 9, 1) with "
         "VALID padding"},
        {MAXP(.padding = 0), "5 9",
         "max_pooling2d: MaxPooling2D expects an input of rank 4 (batch, height, width, "
         "channels), got shape (5, 9)"},
        {MAXP(.padding = S), "-1 7 9 2", "-1 4 5 2"},
        {MAXP(.padding = S), "3 1 1 2", "3 1 1 2"},
        {AVGP(.kernel_size = {3, 3}, .strides = {1, 1}), "-1 5 6 4", "-1 3 4 4"},
        {AVGP(.kernel_size = {3, 2}, .strides = {2, 1}, .padding = S), "2 5 4 6", "2 3 4 6"},
        {AVGP(.kernel_size = {3, 0}), "1 9 8 1", "1 3 4 1"}, /* pool and strides (3, 2) */
        {AVGP(.padding = 0), "1 9 8",
         "average_pooling2d: AveragePooling2D expects an input of rank 4"},
        {{.kind = TFL_LAYER_DROPOUT, .rate = 0.5}, "-1 3 7", "-1 3 7"},
        {BN, "-1 3 7", "-1 3 7"},
        {BN, "-1 5", "-1 5"},
        {BN, "5",
         "batch_normalization: BatchNormalization expects an input of rank >= 2 (batch, ..., "
         "channels), got shape (5,)"},
        {BN, "2 -1",
         "batch_normalization: the input's last dimension must be known and >= 1"},
    };
    run_shape_cases(ctx, cases, sizeof cases / sizeof cases[0]);
}

/* ---- variables ---------------------------------------------------------------------------- */

static void test_dense_variables(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    uint64_t live = live_tensors(ctx);
    int64_t trainable0 = tfl_collection_get(ctx, TFL_TRAINABLE_VARIABLES, NULL, 0);
    tfl_layer *d = LAYER(ctx, .kind = TFL_LAYER_DENSE, .units = 3);
    assert_int_equal(tfl_layer_variables(d, TFL_VARS_ALL, NULL, 0), 0);
    assert_int_equal(tfl_layer_param_count(d, TFL_VARS_ALL), 0);
    assert_int_equal(tfl_layer_build(d, RS(-1, 5)), TFL_OK);
    tfl_tensor *v[4] = {NULL};
    assert_int_equal(tfl_layer_variables(d, TFL_VARS_ALL, v, 4), 2);
    expect_var(v[0], "dense/kernel", I64(5, 3), true);
    expect_var(v[1], "dense/bias", I64(3), true);
    assert_true(in_collection(ctx, TFL_TRAINABLE_VARIABLES, v[0]));
    assert_true(in_collection(ctx, TFL_TRAINABLE_VARIABLES, v[1]));
    assert_true(in_collection(ctx, TFL_GLOBAL_VARIABLES, v[0]));
    expect_f32(v[1], F(0, 0, 0), 3, 0);   /* bias zeros */
    expect_spread(v[0], 15, 0.8661f);     /* glorot_uniform: within sqrt(6 / (5 + 3)) */
    assert_int_equal(tfl_layer_param_count(d, TFL_VARS_ALL), 18);
    assert_int_equal(tfl_layer_param_count(d, TFL_VARS_TRAINABLE), 18);
    assert_int_equal(tfl_layer_param_count(d, TFL_VARS_NON_TRAINABLE), 0);
    assert_int_equal(tfl_layer_variables(d, TFL_VARS_NON_TRAINABLE, v + 2, 2), 0);
    /* cap smaller than the count: the count, and only cap written */
    tfl_tensor *one[2] = {NULL, NULL};
    assert_int_equal(tfl_layer_variables(d, TFL_VARS_TRAINABLE, one, 1), 2);
    assert_ptr_equal(one[0], v[0]);
    assert_null(one[1]);
    /* idempotent for the same features (another batch, another rank); an error otherwise */
    assert_int_equal(tfl_layer_build(d, RS(7, 2, 5)), TFL_OK);
    tfl_tensor *w[2];
    assert_int_equal(tfl_layer_variables(d, TFL_VARS_ALL, w, 2), 2);
    assert_memory_equal(w, v, sizeof w);
    assert_int_equal(tfl_layer_build(d, RS(-1, 4)), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, BUILT("dense", 5, 4));
    expect_shape_error(ctx, d, I64(2, 6), BUILT("dense", 5, 6));
    assert_int_equal(live_tensors(ctx), live + 2);
    /* no_bias, inside a name scope */
    assert_int_equal(tfl_name_scope_push(ctx, "outer"), TFL_OK);
    tfl_layer *nb = LAYER(ctx, .kind = TFL_LAYER_DENSE, .units = 2, .no_bias = true);
    assert_int_equal(tfl_layer_build(nb, RS(-1, 4)), TFL_OK);
    assert_int_equal(tfl_name_scope_pop(ctx), TFL_OK);
    assert_int_equal(tfl_layer_variables(nb, TFL_VARS_ALL, v, 4), 1);
    expect_var(v[0], "outer/dense_1/kernel", I64(4, 2), true);
    assert_int_equal(tfl_layer_param_count(nb, TFL_VARS_ALL), 8);
    assert_int_equal(tfl_collection_get(ctx, TFL_TRAINABLE_VARIABLES, NULL, 0), trainable0 + 3);
    /* freeing releases the variables: they leave the collections */
    FREE_ALL(d, nb);
    assert_int_equal(live_tensors(ctx), live);
    assert_int_equal(tfl_collection_get(ctx, TFL_TRAINABLE_VARIABLES, NULL, 0), trainable0);
}

static void test_build_failure_rolls_back(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    uint64_t live = live_tensors(ctx);
    tfl_initializer bi = tfl_init_tensor(f32(ctx, F(1, 2, 3, 4), I64(4)));
    tfl_layer *d = LAYER(ctx, .kind = TFL_LAYER_DENSE, .units = 3, .bias_init = &bi);
    /* the kernel is made, the bias is not: the kernel goes again */
    assert_int_equal(tfl_layer_build(d, RS(-1, 2)), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "Cannot assign value to variable 'dense/bias:0': Shape mismatch. The "
                      "variable shape (3,), and the assigned value shape (4,) are incompatible.");
    assert_int_equal(tfl_layer_variables(d, TFL_VARS_ALL, NULL, 0), 0);
    assert_int_equal(live_tensors(ctx), live + 1); /* the bias tensor only */
    /* not built: another feature size is no mismatch */
    int64_t out[2];
    assert_int_equal(tfl_layer_output_shape(d, RS(1, 9), out), 2);
    assert_int_equal(out[1], 3);
    tfl_layer_free(d);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* A layer whose variables could not exist (more than INT64_MAX elements, or more than
 * PTRDIFF_MAX bytes) fails at shape inference, before anything is made, with the variable's
 * name and shape; a config is refused at load so (configs/bad/variable_too_large.yaml). */
static void test_variables_too_large(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    uint64_t live = live_tensors(ctx);
    int64_t out[4];
    tfl_layer *d = LAYER(ctx, .kind = TFL_LAYER_DENSE, .units = 1000000000);
    expect_shape_error(ctx, d, I64(-1, 4000000000000000000),
                       "dense: variable 'dense/kernel': shape (4000000000000000000, "
                       "1000000000) has more than INT64_MAX elements");
    assert_int_equal(tfl_layer_build(d, RS(-1, 4000000000000000000)), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "dense/kernel");
    /* a feature size whose kernel fits is built (the layer kept no state from the refusals) */
    assert_int_equal(tfl_layer_output_shape(d, RS(-1, 4), out), 2);
    assert_int_equal(out[1], 1000000000);
    tfl_layer *c = LAYER(ctx, .kind = TFL_LAYER_CONV2D, .units = 1000000000, .kernel_size = {4, 4});
    expect_shape_error(ctx, c, I64(-1, 8, 8, 1000000000),
                       "conv2d: variable 'conv2d/kernel': shape (4, 4, 1000000000, 1000000000) "
                       "has more than INT64_MAX elements");
    /* 2^61 float32 elements: countable, but more than PTRDIFF_MAX bytes */
    tfl_layer *e = LAYER(ctx, .kind = TFL_LAYER_EMBEDDING, .input_dim = (int64_t)1 << 60,
                         .units = 2);
    expect_shape_error(ctx, e, I64(-1, 3), "embedding: variable 'embedding/embeddings': "
                       "2305843009213693952 elements of float32 need more than");
    tfl_layer *a = LAYER(ctx, .kind = TFL_LAYER_MULTI_HEAD_ATTENTION, .num_heads = 1000000,
                         .key_dim = 1000000000);
    expect_shape_error(ctx, a, I64(-1, 5, 100000),
                       "multi_head_attention: variable 'multi_head_attention/query/kernel': "
                       "shape (100000, 1000000, 1000000000) has more than INT64_MAX elements");
    tfl_layer *p = LAYER(ctx, .kind = TFL_LAYER_POSITION_EMBEDDING,
                         .sequence_length = (int64_t)1 << 40);
    expect_shape_error(ctx, p, I64(-1, 5, (int64_t)1 << 30),
                       "position_embedding: variable 'position_embedding/embeddings': shape "
                       "(1099511627776, 1073741824) has more than INT64_MAX elements");
    assert_int_equal(live_tensors(ctx), live);
    FREE_ALL(d, c, e, a, p);
}

static void test_embedding_variables(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_layer *e = LAYER(ctx, .kind = TFL_LAYER_EMBEDDING, .input_dim = 50, .units = 4);
    assert_int_equal(tfl_layer_build(e, RS(-1, 3)), TFL_OK);
    tfl_tensor *v[2];
    assert_int_equal(tfl_layer_variables(e, TFL_VARS_ALL, v, 2), 1);
    expect_var(v[0], "embedding/embeddings", I64(50, 4), true);
    expect_spread(v[0], 200, 0.05f);
    assert_int_equal(tfl_layer_param_count(e, TFL_VARS_TRAINABLE), 200);
    /* any id shape is fine afterwards */
    int64_t out[4];
    assert_int_equal(tfl_layer_output_shape(e, RS(2, 5, 6), out), 4);
    assert_int_equal(out[3], 4);
    tfl_layer_free(e);
}

/* Conv2D (forward merged later) and the kinds without variables */
static void test_conv2d_and_spatial_variables(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_layer *c = LAYER(ctx, .kind = TFL_LAYER_CONV2D, .units = 8, .kernel_size = {3, 2});
    assert_int_equal(tfl_layer_build(c, RS(-1, 10, 10, 4)), TFL_OK);
    tfl_tensor *v[2];
    assert_int_equal(tfl_layer_variables(c, TFL_VARS_ALL, v, 2), 2);
    expect_var(v[0], "conv2d/kernel", I64(3, 2, 4, 8), true); /* HWIO */
    expect_var(v[1], "conv2d/bias", I64(8), true);
    expect_spread(v[0], 3 * 2 * 4 * 8, 0.2887f); /* sqrt(6 / (24 + 48)) */
    assert_int_equal(tfl_layer_param_count(c, TFL_VARS_ALL), 3 * 2 * 4 * 8 + 8);
    expect_shape_error(ctx, c, I64(1, 10, 10, 3), BUILT("conv2d", 4, 3));
    tfl_layer *nb = LAYER(ctx, .kind = TFL_LAYER_CONV2D, .units = 5, .kernel_size = {1, 1},
                          .no_bias = true);
    assert_int_equal(tfl_layer_build(nb, RS(2, 3, 3, 1)), TFL_OK);
    assert_int_equal(tfl_layer_variables(nb, TFL_VARS_ALL, v, 2), 1);
    expect_var(v[0], "conv2d_1/kernel", I64(1, 1, 1, 5), true);
    assert_int_equal(tfl_layer_build(nb, RS(2, 3)), TFL_INVALID_ARGUMENT);
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "conv2d_1: Conv2D expects an input of rank 4");
    tfl_layer *none[] = {
        LAYER(ctx, .kind = TFL_LAYER_MAX_POOL2D), LAYER(ctx, .kind = TFL_LAYER_AVG_POOL2D),
        LAYER(ctx, .kind = TFL_LAYER_FLATTEN),    LAYER(ctx, .kind = TFL_LAYER_DROPOUT),
        LAYER(ctx, .kind = TFL_LAYER_ACTIVATION), LAYER(ctx, .kind = TFL_LAYER_RESHAPE,
                                                        .target_rank = 1, .target_shape = {-1}),
    };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        assert_int_equal(tfl_layer_build(none[i], RS(-1, 4, 4, 2)), TFL_OK);
        assert_int_equal(tfl_layer_variables(none[i], TFL_VARS_ALL, NULL, 0), 0);
        assert_int_equal(tfl_layer_param_count(none[i], TFL_VARS_ALL), 0);
        tfl_layer_free(none[i]);
    }
    FREE_ALL(c, nb);
}

/* BatchNormalization (forward merged later) */
static void test_batch_norm_variables(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    int64_t trainable0 = tfl_collection_get(ctx, TFL_TRAINABLE_VARIABLES, NULL, 0);
    tfl_layer *bn = LAYER(ctx, .kind = TFL_LAYER_BATCH_NORM);
    assert_int_equal(tfl_layer_build(bn, RS(-1, 6, 6, 3)), TFL_OK);
    tfl_tensor *v[4];
    assert_int_equal(tfl_layer_variables(bn, TFL_VARS_ALL, v, 4), 4);
    expect_var(v[0], "batch_normalization/gamma", I64(3), true);
    expect_var(v[1], "batch_normalization/beta", I64(3), true);
    expect_var(v[2], "batch_normalization/moving_mean", I64(3), false);
    expect_var(v[3], "batch_normalization/moving_variance", I64(3), false);
    for (int i = 0; i < 4; i++) {
        expect_f32(v[i], i == 0 || i == 3 ? F(1, 1, 1) : F(0, 0, 0), 3, 0);
        assert_int_equal(in_collection(ctx, TFL_TRAINABLE_VARIABLES, v[i]), i < 2);
        assert_true(in_collection(ctx, TFL_GLOBAL_VARIABLES, v[i]));
    }
    assert_int_equal(tfl_collection_get(ctx, TFL_TRAINABLE_VARIABLES, NULL, 0), trainable0 + 2);
    tfl_tensor *t[4];
    assert_int_equal(tfl_layer_variables(bn, TFL_VARS_TRAINABLE, t, 4), 2);
    assert_memory_equal(t, v, 2 * sizeof *t);
    assert_int_equal(tfl_layer_variables(bn, TFL_VARS_NON_TRAINABLE, t, 4), 2);
    assert_memory_equal(t, v + 2, 2 * sizeof *t);
    assert_int_equal(tfl_layer_param_count(bn, TFL_VARS_ALL), 12);
    assert_int_equal(tfl_layer_param_count(bn, TFL_VARS_TRAINABLE), 6);
    assert_int_equal(tfl_layer_param_count(bn, TFL_VARS_NON_TRAINABLE), 6);
    expect_shape_error(ctx, bn, I64(2, 6, 6, 4), BUILT("batch_normalization", 3, 4));
    /* no_center, no_scale, both */
    const struct {
        bool no_center, no_scale;
        int n;
        const char *first;
    } cases[] = {
        {true, false, 3, "gamma"}, {false, true, 3, "beta"}, {true, true, 2, "moving_mean"}};
    for (size_t i = 0; i < 3; i++) {
        tfl_layer *l = LAYER(ctx, .kind = TFL_LAYER_BATCH_NORM, .no_center = cases[i].no_center,
                             .no_scale = cases[i].no_scale);
        assert_int_equal(tfl_layer_build(l, RS(-1, 5)), TFL_OK);
        assert_int_equal(tfl_layer_variables(l, TFL_VARS_ALL, t, 4), cases[i].n);
        char name[64];
        snprintf(name, sizeof name, "batch_normalization_1/%s", cases[i].first);
        assert_string_equal(tfl_variable_name(t[0]), name);
        assert_string_equal(tfl_variable_name(t[cases[i].n - 1]),
                            "batch_normalization_1/moving_variance");
        assert_int_equal(tfl_layer_param_count(l, TFL_VARS_TRAINABLE), 5 * (cases[i].n - 2));
        assert_int_equal(tfl_layer_param_count(l, TFL_VARS_NON_TRAINABLE), 10);
        tfl_layer_free(l);
    }
    tfl_layer_free(bn);
    assert_int_equal(tfl_collection_get(ctx, TFL_TRAINABLE_VARIABLES, NULL, 0), trainable0);
}

/* ---- forward values ----------------------------------------------------------------------- */

/* x (2, 3), W (3, 2), b (2): x·W + b = [[4.5, 1.5], [1.5, -1]] */
static const float X23[] = {1, 2, 3, -1, 0, 2};
static const float W32[] = {1, -1, 0, 2, 1, 0.5f};
static const float B2[] = {0.5f, -3};

static void test_dense_values(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_initializer wi = tfl_init_tensor(f32(ctx, W32, I64(3, 2)));
    tfl_initializer bi = tfl_init_tensor(f32(ctx, B2, I64(2)));
    tfl_layer *relu = LAYER(ctx, .kind = TFL_LAYER_DENSE, .units = 2, .activation = TFL_ACT_RELU,
                            .kernel_init = &wi, .bias_init = &bi);
    tfl_layer *lin = LAYER(ctx, .kind = TFL_LAYER_DENSE, .units = 2, .kernel_init = &wi,
                           .bias_init = &bi);
    tfl_layer *nob = LAYER(ctx, .kind = TFL_LAYER_DENSE, .units = 2, .no_bias = true,
                           .kernel_init = &wi, .activation = TFL_ACT_TANH);
    tfl_tensor *x = f32(ctx, X23, I64(2, 3));
    tfl_tensor *y = tfl_layer_call(relu, x, false);
    expect_shape_of(y, I64(2, 2));
    expect_f32(y, F(4.5f, 1.5f, 1.5f, 0), 4, 0);
    tfl_tensor *k = NULL;
    tfl_layer_variables(relu, TFL_VARS_ALL, &k, 1);
    expect_f32(k, W32, 6, 0); /* the kernel holds the initializer's tensor */
    expect_f32(tfl_layer_call(lin, x, true), F(4.5f, 1.5f, 1.5f, -1), 4, 0);
    expect_f32(tfl_layer_call(nob, x, false), F(tanhf(4), tanhf(4.5f), tanhf(1), tanhf(2)), 4,
               1e-6);
    /* rank 3: over the last axis; rows [0, 0, 0] and [2, -1, -4] give b and [-1.5, -9] */
    tfl_tensor *x3 = f32(ctx, F(1, 2, 3, -1, 0, 2, 0, 0, 0, 2, -1, -4), I64(2, 2, 3));
    y = tfl_layer_call(lin, x3, false);
    expect_shape_of(y, I64(2, 2, 2));
    expect_f32(y, F(4.5f, 1.5f, 1.5f, -1, 0.5f, -3, -1.5f, -9), 8, 0);
    y = tfl_layer_call(relu, x3, false);
    expect_shape_of(y, I64(2, 2, 2));
    expect_f32(y, F(4.5f, 1.5f, 1.5f, 0, 0.5f, 0, 0, 0), 8, 0);
    FREE_ALL(relu, lin, nob);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_call_errors(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_layer *d = LAYER(ctx, .kind = TFL_LAYER_DENSE, .units = 2);
    assert_non_null(tfl_layer_call(d, f32(ctx, X23, I64(2, 3)), true));
    assert_null(tfl_layer_call(d, f32(ctx, F(1, 2, 3, 4, 5, 6, 7, 8), I64(2, 4)), true));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, BUILT("dense", 3, 4));
    assert_null(tfl_layer_call(d, f32(ctx, F(1, 2, 3), I64(3)), true));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "dense: Dense expects an input of rank >= 2");
    assert_null(tfl_layer_call(d, i32(ctx, (const int32_t[]){1, 2, 3}, I64(1, 3)), true));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "dense: Dense expects a floating input, got int32");
    assert_null(tfl_layer_call(d, NULL, true));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "dense: the input is NULL");
    /* a NULL input after a failure keeps that failure */
    assert_null(tfl_layer_call(d, tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, -1, NULL, NULL), true));
    tfl_error e = tfl_ctx_error(ctx);
    assert_int_equal(e.code, TFL_INVALID_ARGUMENT);
    assert_null(strstr(e.message, "the input is NULL"));
    tfl_ctx_clear_error(ctx);
    assert_null(tfl_layer_call(NULL, f32(ctx, X23, I64(2, 3)), true));
    /* an input of another context */
    tfl_ctx *other = tfl_ctx_new(NULL, NULL);
    assert_non_null(other);
    tfl_tensor *ox = tfl_tensor_new(other, TFL_DTYPE_FLOAT32, 2, (int64_t[]){1, 3}, NULL);
    assert_null(tfl_layer_call(d, ox, true));
    expect_kept_error(ctx, TFL_MISUSE, "dense: the input belongs to another context");
    tfl_tensor_release(ox);
    tfl_ctx_free(other);
    tfl_layer_free(d);
    /* a wrong dtype on the first call is refused before any variable is made */
    tfl_layer *fresh = LAYER(ctx, .kind = TFL_LAYER_DENSE, .units = 2);
    assert_null(tfl_layer_call(fresh, i32(ctx, (const int32_t[]){1, 2, 3}, I64(1, 3)), true));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "dense: Dense expects a floating input, got int32");
    assert_int_equal(tfl_layer_variables(fresh, TFL_VARS_ALL, NULL, 0), 0);
    assert_non_null(tfl_layer_call(fresh, f32(ctx, F(1, 2, 3, 4), I64(1, 4)), true)); /* 4 wide */
    assert_int_equal(tfl_layer_param_count(fresh, TFL_VARS_ALL), 4 * 2 + 2);
    tfl_layer_free(fresh);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_activation_values(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    const float xs[] = {-2, -0.5f, 0, 1, 3, 0.25f};
    tfl_tensor *x = f32(ctx, xs, I64(2, 3));
    for (int a = TFL_ACT_LINEAR; a < TFL_ACT_END; a++) {
        tfl_layer *l = LAYER(ctx, .kind = TFL_LAYER_ACTIVATION, .activation = (tfl_activation)a);
        tfl_tensor *y = tfl_layer_call(l, x, false);
        expect_shape_of(y, I64(2, 3));
        /* the values of the op (softmax over the last axis, exact gelu) */
        tfl_tensor *ref = a == TFL_ACT_RELU           ? tfl_relu(ctx, x)
                          : a == TFL_ACT_SIGMOID      ? tfl_sigmoid(ctx, x)
                          : a == TFL_ACT_TANH         ? tfl_tanh(ctx, x)
                          : a == TFL_ACT_SOFTMAX      ? tfl_softmax(ctx, x, -1)
                          : a == TFL_ACT_GELU         ? tfl_gelu(ctx, x, false)
                          : a == TFL_ACT_SOFTPLUS     ? tfl_softplus(ctx, x)
                          : a == TFL_ACT_SILU         ? tfl_silu(ctx, x)
                          : a == TFL_ACT_ELU          ? tfl_elu(ctx, x, 1.0)
                          : a == TFL_ACT_HARD_SIGMOID ? tfl_hard_sigmoid(ctx, x)
                                                      : x;
        float *r = host_bytes(ref, NULL);
        expect_f32(y, r, 6, 0);
        free(r);
        tfl_layer_free(l);
        if (a == TFL_ACT_RELU) expect_f32(y, F(0, 0, 0, 1, 3, 0.25f), 6, 0);
        if (a == TFL_ACT_GELU) /* 0.5 x (1 + erf(x / sqrt 2)) */
            expect_f32(y, F(-0.0455003, -0.1542688, 0, 0.8413447, 2.9959503, 0.1496766), 6, 1e-6);
        if (a == TFL_ACT_SOFTPLUS) /* log(1 + e^x) */
            expect_f32(y, F(0.1269280, 0.4740770, 0.6931472, 1.3132617, 3.0485874, 0.8259394), 6,
                       1e-6);
        if (a == TFL_ACT_SILU) /* x sigmoid(x) */
            expect_f32(y, F(-0.2384058, -0.1887703, 0, 0.7310586, 2.8577224, 0.1405441), 6,
                       1e-6);
        if (a == TFL_ACT_ELU) /* e^x - 1 below 0 */
            expect_f32(y, F(-0.8646647, -0.3934693, 0, 1, 3, 0.25), 6, 1e-6);
        if (a == TFL_ACT_HARD_SIGMOID) /* (x + 3) / 6 inside (-3, 3) */
            expect_f32(y, F(0.1666667, 0.4166667, 0.5, 0.6666667, 1, 0.5416667), 6, 1e-6);
        if (a == TFL_ACT_SOFTMAX) /* row 1: e^x / (e^1 + e^3 + e^0.25) */
            expect_f32(tfl_slice(ctx, y, (int64_t[]){1, 0}, (int64_t[]){1, 3}),
                       F(0.1128487, 0.8338454, 0.0533059), 3, 1e-6);
    }
    tfl_layer *l = LAYER(ctx, .kind = TFL_LAYER_ACTIVATION, .activation = TFL_ACT_RELU);
    assert_null(tfl_layer_call(l, i32(ctx, (const int32_t[]){1, -1}, I64(1, 2)), false));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "activation: Activation expects a floating input, got int32");
    tfl_layer_free(l);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_embedding_values(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_initializer ti = tfl_init_tensor(f32(ctx, F(0, 1, 10, 11, 20, 21, 30, 31), I64(4, 2)));
    tfl_layer *e = LAYER(ctx, .kind = TFL_LAYER_EMBEDDING, .input_dim = 4, .units = 2,
                         .kernel_init = &ti);
    tfl_tensor *y = tfl_layer_call(e, i32(ctx, (const int32_t[]){3, 0, 1, 1, 1, 2}, I64(2, 3)), 0);
    expect_shape_of(y, I64(2, 3, 2));
    expect_f32(y, F(30, 31, 0, 1, 10, 11, 10, 11, 10, 11, 20, 21), 12, 0);
    y = tfl_layer_call(e, tensor(ctx, TFL_DTYPE_INT64, (const int64_t[]){2, 3}, I64(2)), true);
    expect_shape_of(y, I64(2, 2));
    expect_f32(y, F(20, 21, 30, 31), 4, 0);
    assert_null(tfl_layer_call(e, f32(ctx, F(1, 2), I64(2)), false));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "embedding: Embedding expects int32 or int64 ids, got float32");
    assert_null(tfl_layer_call(e, i32(ctx, (const int32_t[]){0, 4}, I64(2)), false));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "indices[1] = 4 is not in [0, 4)");
    assert_null(tfl_layer_call(e, i32(ctx, (const int32_t[]){-1, 0}, I64(2)), false));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT, "indices[0] = -1 is not in [0, 4)");
    tfl_layer_free(e);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

static void test_flatten_reshape_values(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    float v[12];
    for (int i = 0; i < 12; i++) v[i] = (float)i - 5.5f;
    tfl_tensor *x = f32(ctx, v, I64(2, 3, 2));
    tfl_layer *fl = LAYER(ctx, .kind = TFL_LAYER_FLATTEN);
    tfl_layer *rs = LAYER(ctx, .kind = TFL_LAYER_RESHAPE, .target_rank = 2,
                          .target_shape = {2, -1});
    tfl_tensor *y = tfl_layer_call(fl, x, true);
    expect_shape_of(y, I64(2, 6));
    expect_f32(y, v, 12, 0);
    y = tfl_layer_call(rs, x, false);
    expect_shape_of(y, I64(2, 2, 3));
    expect_f32(y, v, 12, 0);
    /* integers pass through with their dtype */
    y = tfl_layer_call(fl, i32(ctx, (const int32_t[]){1, 2, 3, 4}, I64(1, 2, 2)), false);
    expect_shape_of(y, I64(1, 4));
    assert_int_equal(tfl_tensor_dtype(y), TFL_DTYPE_INT32);
    int32_t got[4];
    assert_int_equal(tfl_tensor_to_host(y, got, sizeof got), TFL_OK);
    for (int i = 0; i < 4; i++) assert_int_equal(got[i], i + 1);
    assert_null(tfl_layer_call(rs, f32(ctx, v, I64(1, 5)), false));
    expect_kept_error(ctx, TFL_INVALID_ARGUMENT,
                      "reshape: cannot reshape an input of shape (1, 5) (5 per example)");
    FREE_ALL(fl, rs);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
}

/* Without a frame the caller owns the result; freeing a called layer releases its variables
 * (the fixture's teardown checks that no tensor is left). */
static void test_call_without_frame_and_free(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    uint64_t live = live_tensors(ctx);
    tfl_layer *d = LAYER(ctx, .kind = TFL_LAYER_DENSE, .units = 4, .activation = TFL_ACT_GELU);
    tfl_tensor *x = f32(ctx, X23, I64(2, 3));
    tfl_tensor *y = tfl_layer_call(d, x, true);
    expect_shape_of(y, I64(2, 4));
    assert_int_equal(tfl_frame_depth(ctx), 0);
    assert_int_equal(live_tensors(ctx), live + 4); /* x, y, kernel, bias */
    tfl_tensor_release(y);
    tfl_tensor_release(x);
    tfl_layer_free(d);
    assert_int_equal(live_tensors(ctx), live);
}

/* Rank 0 may come without a shape array (last: UBSan ends the run if this fails) */
static void test_rank0_without_shape(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    int64_t out[2] = {0, 0};
    tfl_layer *e = LAYER(ctx, .kind = TFL_LAYER_EMBEDDING, .input_dim = 3, .units = 5);
    tfl_layer *a = LAYER(ctx, .kind = TFL_LAYER_ACTIVATION);
    assert_int_equal(tfl_layer_output_shape(e, 0, NULL, out), 1);
    assert_int_equal(out[0], 5);
    assert_int_equal(tfl_layer_output_shape(a, 0, NULL, out), 0);
    FREE_ALL(e, a);
}

/* The spec's initializers are copied when the layer is made: the caller's structs may be gone
 * (changed, here) before the first call builds the variables. A tensor initializer's tensor is
 * kept alive by the layer. */
static void test_spec_initializers_are_copied(void **state)
{
    tfl_ctx *ctx = ((fixture *)*state)->ctx;
    tfl_initializer k = tfl_init_constant(0.5), b = tfl_init_constant(-2);
    float bias0[3] = {1, 2, 3};
    tfl_tensor *bt = tfl_tensor_new(ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){3}, bias0);
    tfl_initializer bten = tfl_init_tensor(bt);
    tfl_layer *l1 = tfl_layer_new(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 3,
                                                         .kernel_init = &k, .bias_init = &b});
    tfl_layer *l2 = tfl_layer_new(ctx, &(tfl_layer_spec){.kind = TFL_LAYER_DENSE, .units = 3,
                                                         .bias_init = &bten});
    assert_non_null(l1);
    assert_non_null(l2);
    k = tfl_init_constant(99); /* the caller's structs change before the build */
    b = tfl_init_zeros();
    tfl_tensor_release(bt);    /* and the tensor goes, as far as the caller is concerned */
    assert_int_equal(tfl_frame_push(ctx), TFL_OK);
    tfl_tensor *x = tfl_ones(ctx, TFL_DTYPE_FLOAT32, 2, (int64_t[]){1, 2});
    tfl_tensor *y1 = tfl_layer_call(l1, x, false), *y2 = tfl_layer_call(l2, x, false);
    assert_non_null(y1);
    assert_non_null(y2);
    expect_f32(y1, (float[]){-1, -1, -1}, 3, 0); /* 0.5 + 0.5 - 2 */
    float out2[3];
    assert_int_equal(tfl_tensor_to_host(y2, out2, sizeof out2), TFL_OK);
    tfl_tensor *v[2];
    assert_int_equal(tfl_layer_variables(l2, TFL_VARS_ALL, v, 2), 2);
    float bias[3];
    assert_int_equal(tfl_tensor_to_host(v[1], bias, sizeof bias), TFL_OK);
    assert_memory_equal(bias, bias0, sizeof bias);
    assert_int_equal(tfl_frame_pop(ctx), TFL_OK);
    tfl_layer_free(l1);
    tfl_layer_free(l2);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kind_and_activation_names),
        T(test_spec_initializers_are_copied),
        T(test_default_names),
        T(test_invalid_names),
        T(test_spec_errors),
        T(test_output_shapes),
        T(test_dense_variables),
        T(test_build_failure_rolls_back),
        T(test_variables_too_large),
        T(test_embedding_variables),
        T(test_dense_values),
        T(test_call_errors),
        T(test_activation_values),
        T(test_embedding_values),
        T(test_flatten_reshape_values),
        T(test_call_without_frame_and_free),
        /* kinds whose forward ops are merged later: shapes, variables and specs only */
        T(test_spatial_output_shapes),
        T(test_conv2d_and_spatial_variables),
        T(test_batch_norm_variables),
        T(test_rank0_without_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
