/*
 * configs/schema.c: the config schema as tables: every section, key, type, default, range,
 * the kinds that read it, and a line of documentation. Validation (resolve.c), emission
 * (emit.c) and the Markdown reference (tfl_config_schema_markdown) all walk these tables.
 * Defaults are Keras's.
 */
#include "configs_internal.h"

#include <stddef.h>
#include <stdio.h>

#define COUNT(a) ((int)(sizeof(a) / sizeof(a)[0]))
#define ENUM(var, what, ...)                                                                       \
    static const char *const var##_names[] = {__VA_ARGS__};                                        \
    const enum_def var = {what, var##_names, COUNT(var##_names)}
#define B(k) (1u << (k))

/* Orders matter: an index is the tapeflow enum's value (or value - 1, see build.c). */
ENUM(tfl__enum_layer, "layer kind", "dense", "conv2d", "max_pooling2d", "average_pooling2d",
     "flatten", "reshape", "dropout", "batch_normalization", "activation", "embedding",
     "layer_normalization", "global_average_pooling2d", "position_embedding",
     "multi_head_attention", "add", "concatenate", "multiply"); /* tfl_layer_kind's order */
ENUM(tfl__enum_activation, "activation", "linear", "relu", "sigmoid", "tanh", "softmax", "gelu",
     "softplus", "silu", "elu", "hard_sigmoid");
ENUM(tfl__enum_optimizer, "optimizer", "sgd", "adam", "adamw", "rmsprop", "adagrad", "nadam",
     "adamax");
ENUM(tfl__enum_formula, "formula", "default", "tensorflow", "pytorch");
ENUM(tfl__enum_loss, "loss", "sparse_categorical_crossentropy", "categorical_crossentropy",
     "binary_crossentropy", "mean_squared_error");
ENUM(tfl__enum_metric, "metric", "accuracy");
ENUM(tfl__enum_schedule, "schedule", "constant", "exponential", "step", "cosine");
ENUM(tfl__enum_init, "initializer", "zeros", "ones", "constant", "random_uniform", "random_normal",
     "truncated_normal", "glorot_uniform", "glorot_normal", "he_uniform", "he_normal");
ENUM(tfl__enum_padding, "padding", "valid", "same");
ENUM(tfl__enum_format, "data format", "idx", "csv", "text");
ENUM(enum_text_tokens, "token kind", "bytes", "chars"); /* tfl_text_tokens' order */
ENUM(enum_label_kind, "label kind", "class", "value"); /* tfl_label_kind's order */
ENUM(enum_nonfinite, "on_nonfinite policy", "halt", "skip");
ENUM(enum_precision, "precision policy", "float32", "tf32", "bfloat16",
     "float16"); /* tfl_precision's order */
ENUM(enum_monitor, "monitored figure", "loss", "accuracy", "val_loss", "val_accuracy");

enum {
    L_DENSE, L_CONV, L_MAXP, L_AVGP, L_FLAT, L_RESHAPE, L_DROP, L_BN, L_ACT, L_EMB, L_LN, L_GAP,
    L_POS, L_MHA, L_ADD, L_CAT, L_MUL
};
enum { O_SGD, O_ADAM, O_ADAMW, O_RMSPROP, O_ADAGRAD, O_NADAM, O_ADAMAX, O_COUNT };
enum { S_CONST, S_EXP, S_STEP, S_COS };
enum { I_ZEROS, I_ONES, I_CONST, I_RU, I_RN, I_TN, I_GU, I_GN, I_HU, I_HN };

#define INF 1e300
#define REQ K_REQUIRED
#define NUL K_NULLABLE
#define RNG K_RANGE

/* ---- initializers: `he_normal` or `{random_normal: {stddev: 0.02}}` ------------------------- */

static const key_def init_keys[] = {
    {"value", VT_FLOAT, B(I_CONST), 0, "0", 0, 0, 0, 0, 0, 0, "the constant"},
    {"minval", VT_FLOAT, B(I_RU), 0, "-0.05", 0, 0, 0, 0, 0, 0, "the lower bound"},
    {"maxval", VT_FLOAT, B(I_RU), 0, "0.05", 0, 0, 0, 0, 0, 0, "the upper bound"},
    {"mean", VT_FLOAT, B(I_RN) | B(I_TN), 0, "0", 0, 0, 0, 0, 0, 0, "the mean"},
    {"stddev", VT_FLOAT, B(I_RN) | B(I_TN), RNG | K_MIN_EXCL, "0.05", 0, INF, 0, 0, 0, 0,
     "the standard deviation"},
    {"seed", VT_INT, 0x3F8u /* the random kinds */, RNG, "0", 0, 9.2e18, 0, 0, 0, 0,
     "0: the context's next stream; otherwise the same values on every run"},
};
static const sec_def init_sec = {
    "initializer",   init_keys, COUNT(init_keys),
    &tfl__enum_init, true,      "an initializer: a name, or {name: {options}}"};

/* ---- layers: `- dense: {units: 64, activation: relu}` ---------------------------------------- */

#define CONV B(L_CONV)
#define POOLS (B(L_MAXP) | B(L_AVGP))
#define DC (B(L_DENSE) | B(L_CONV))
#define WEIGHTED (DC | B(L_MHA)) /* kernels and biases */
#define NORMS (B(L_BN) | B(L_LN))
static const key_def layer_keys[] = {
    {"name", VT_STR, 0, NUL, NULL, 0, 0, 0, 0, 0, 0,
     "the layer's name (null: the kind's name made unique)"},
    {"inputs", VT_NAMES, 0, NUL, NULL, 0, 0, 0, 0, 1, 32,
     "the layers whose outputs it takes, by name (`input`: the model's input); null: the "
     "previous layer's. Merges (add, concatenate, multiply) take 2 or more"},
    {"units", VT_INT, B(L_DENSE), REQ | RNG, NULL, 1, 1e9, 0, 0, 0, 0, "output features"},
    {"filters", VT_INT, CONV, REQ | RNG, NULL, 1, 1e9, 0, 0, 0, 0, "output channels"},
    {"kernel_size", VT_INTS, CONV, REQ | RNG | K_PAIR, NULL, 1, 1e6, 0, 0, 1, 2,
     "the window, n or [h, w]"},
    {"pool_size", VT_INTS, POOLS, RNG | K_PAIR, "2", 1, 1e6, 0, 0, 1, 2, "the window, n or [h, w]"},
    {"strides", VT_INTS, CONV, RNG | K_PAIR, "1", 1, 1e6, 0, 0, 1, 2, "n or [h, w]"},
    {"strides", VT_INTS, POOLS, RNG | K_PAIR | NUL, NULL, 1, 1e6, 0, 0, 1, 2,
     "n or [h, w]; null: the pool size"},
    {"padding", VT_ENUM, CONV | POOLS, 0, "valid", 0, 0, &tfl__enum_padding, 0, 0, 0,
     "valid or same"},
    {"dilation_rate", VT_INTS, CONV, RNG | K_PAIR, "1", 1, 1e6, 0, 0, 1, 2, "n or [h, w]"},
    {"activation", VT_ENUM, DC, 0, "linear", 0, 0, &tfl__enum_activation, 0, 0, 0,
     "applied to the output"},
    {"activation", VT_ENUM, B(L_ACT), REQ, NULL, 0, 0, &tfl__enum_activation, 0, 0, 0,
     "the function"},
    {"use_bias", VT_BOOL, WEIGHTED, 0, "true", 0, 0, 0, 0, 0, 0, "add bias vectors"},
    {"kernel_initializer", VT_SEC, WEIGHTED, 0, "glorot_uniform", 0, 0, 0, &init_sec, 0, 0,
     "the kernels' initializer"},
    {"bias_initializer", VT_SEC, WEIGHTED, 0, "zeros", 0, 0, 0, &init_sec, 0, 0,
     "the biases' initializer"},
    {"num_heads", VT_INT, B(L_MHA), REQ | RNG, NULL, 1, 1e6, 0, 0, 0, 0, "attention heads"},
    {"key_dim", VT_INT, B(L_MHA), NUL | RNG, NULL, 1, 1e9, 0, 0, 0, 0,
     "each head's query, key and value size; null: the input's features / num_heads, which "
     "must divide them"},
    {"dropout", VT_FLOAT, B(L_MHA), RNG | K_MAX_EXCL, "0", 0, 1, 0, 0, 0, 0,
     "dropout on the attention weights while training"},
    {"use_causal_mask", VT_BOOL, B(L_MHA), 0, "false", 0, 0, 0, 0, 0, 0,
     "position i attends to positions <= i only"},
    {"target_shape", VT_INTS, B(L_RESHAPE), REQ | RNG | K_NEG1, NULL, 1, 1e9, 0, 0, 1, 7,
     "the shape after the batch axis; one -1 allowed"},
    {"rate", VT_FLOAT, B(L_DROP), REQ | RNG | K_MAX_EXCL, NULL, 0, 1, 0, 0, 0, 0,
     "the fraction dropped while training"},
    {"seed", VT_INT, B(L_DROP) | B(L_MHA), RNG, "0", 0, 9.2e18, 0, 0, 0, 0,
     "0: the context's streams"},
    {"momentum", VT_FLOAT, B(L_BN), RNG | K_MIN_EXCL | K_MAX_EXCL, "0.99", 0, 1, 0, 0, 0, 0,
     "of the moving statistics"},
    {"epsilon", VT_FLOAT, NORMS, RNG | K_MIN_EXCL, "0.001", 0, INF, 0, 0, 0, 0,
     "added to the variance"},
    {"center", VT_BOOL, NORMS, 0, "true", 0, 0, 0, 0, 0, 0, "learn an offset (beta)"},
    {"scale", VT_BOOL, NORMS, 0, "true", 0, 0, 0, 0, 0, 0, "learn a scale (gamma)"},
    {"input_dim", VT_INT, B(L_EMB), REQ | RNG, NULL, 1, 2147483647.0, 0, 0, 0, 0,
     "the vocabulary size"},
    {"output_dim", VT_INT, B(L_EMB), REQ | RNG, NULL, 1, 1e9, 0, 0, 0, 0, "the embedding size"},
    {"embeddings_initializer", VT_SEC, B(L_EMB), 0, "random_uniform", 0, 0, 0, &init_sec, 0, 0,
     "the embeddings' initializer"},
    {"sequence_length", VT_INT, B(L_POS), REQ | RNG, NULL, 1, 1e9, 0, 0, 0, 0,
     "the longest sequence: the position table's rows"},
    {"embeddings_initializer", VT_SEC, B(L_POS), 0, "glorot_uniform", 0, 0, 0, &init_sec, 0, 0,
     "the position table's initializer"},
    {"axis", VT_INT, B(L_CAT), RNG, "-1", -7, 7, 0, 0, 0, 0,
     "the axis joined (negative: from the end; never the batch axis 0)"},
};
const sec_def tfl__schema_layer = {
    "layer",          layer_keys, COUNT(layer_keys),
    &tfl__enum_layer, true,       "a layer: `- kind: {options}` (or `- flatten`)"};

static const key_def model_keys[] = {
    {"name", VT_STR, 0, NUL, NULL, 0, 0, 0, 0, 0, 0, "null: \"sequential\" made unique"},
    {"input_shape", VT_INTS, 0, REQ | RNG, NULL, 1, 1e9, 0, 0, 1, 7,
     "one example's shape, without the batch axis"},
    {"layers", VT_LIST, 0, REQ, NULL, 0, 0, 0, &tfl__schema_layer, 1, 1000, "the layers, in order"},
};
static const sec_def model_sec = {"model", model_keys, COUNT(model_keys),
                                  NULL,    false,      "a sequential model"};

/* ---- data ------------------------------------------------------------------------------------ */

#define IDX B(0)
#define CSV B(1)
#define TXT B(2)
static const key_def source_keys[] = {
    {"format", VT_ENUM, 0, REQ | K_DISCRIM, NULL, 0, 0, &tfl__enum_format, 0, 0, 0,
     "idx, csv or text"},
    {"images", VT_PATH, IDX, REQ | K_INPUT, NULL, 0, 0, 0, 0, 0, 0,
     "the examples' IDX file (.gz too)"},
    {"labels", VT_PATH, IDX, NUL | K_INPUT, NULL, 0, 0, 0, 0, 0, 0,
     "the labels' IDX file; null: none"},
    {"path", VT_PATH, CSV, REQ | K_INPUT, NULL, 0, 0, 0, 0, 0, 0, "the CSV file (.gz too)"},
    {"header", VT_BOOL, CSV, 0, "false", 0, 0, 0, 0, 0, 0, "the first line names the columns"},
    {"label_column", VT_INT, CSV, RNG, "0", -1e6, 1e6, 0, 0, 0, 0,
     "0-based; negative counts from the end"},
    {"label_name", VT_STR, CSV, NUL, NULL, 0, 0, 0, 0, 0, 0,
     "with header: the label column's name"},
    {"label_kind", VT_ENUM, CSV, 0, "class", 0, 0, &enum_label_kind, 0, 0, 0,
     "class: an integer class index; value: real-valued targets (regression), not normalised"},
    {"label_count", VT_INT, CSV, RNG, "1", 1, 1e6, 0, 0, 0, 0,
     "label_kind value: the target columns, from the label column on"},
    {"no_labels", VT_BOOL, CSV, 0, "false", 0, 0, 0, 0, 0, 0, "every column is a feature"},
    {"delimiter", VT_STR, CSV, 0, ",", 0, 0, 0, 0, 0, 0, "one character"},
    {"path", VT_PATH, TXT, REQ, NULL, 0, 0, 0, 0, 0, 0,
     "a text file, or a glob(3) pattern whose files, sorted by name, are concatenated as they "
     "are; memory-mapped, never copied"},
    {"context_length", VT_INT, TXT, REQ | RNG, NULL, 1, 1e9, 0, 0, 0, 0,
     "tokens per window: x is a window, y the next tokens (int32, shape [context_length]); "
     "model.input_shape is [context_length]"},
    {"stride", VT_INT, TXT, NUL | RNG, NULL, 1, 1e9, 0, 0, 0, 0,
     "tokens between the starts of windows; null: context_length (each token a target once "
     "an epoch)"},
    {"tokens", VT_ENUM, TXT, 0, "bytes", 0, 0, &enum_text_tokens, 0, 0, 0,
     "bytes: 256 ids, one per byte value; chars: the corpus's distinct bytes, in byte order"},
};
static const sec_def source_sec = {"source",          source_keys, COUNT(source_keys),
                                   &tfl__enum_format, false,       "a data source"};

static const key_def data_keys[] = {
    {"train", VT_SEC, 0, REQ, NULL, 0, 0, 0, &source_sec, 0, 0, "the training examples"},
    {"validation", VT_SEC, 0, NUL, NULL, 0, 0, 0, &source_sec, 0, 0,
     "evaluated after every epoch; null: none (or validation_split)"},
    {"test", VT_SEC, 0, NUL, NULL, 0, 0, 0, &source_sec, 0, 0, "evaluated after training"},
    {"validation_split", VT_FLOAT, 0, RNG | K_MAX_EXCL, "0", 0, 1, 0, 0, 0, 0,
     "the last fraction of train held out for validation (text: the end of the corpus, by "
     "position)"},
    {"shuffle", VT_BOOL, 0, 0, "true", 0, 0, 0, 0, 0, 0, "a new order every epoch"},
    {"scale", VT_FLOAT, 0, NUL, NULL, 0, 0, 0, 0, 0, 0,
     "x = raw*scale + offset; null: 1/255 for bytes, 1 otherwise"},
    {"offset", VT_FLOAT, 0, 0, "0", 0, 0, 0, 0, 0, 0, "added after scaling"},
    {"standardize", VT_BOOL, 0, 0, "false", 0, 0, 0, 0, 0, 0,
     "subtract the training set's mean and divide by its std, per feature"},
};
static const sec_def data_sec = {"data", data_keys, COUNT(data_keys), NULL, false, "the data"};

/* ---- optimizer ---------------------------------------------------------------------------------
 */

static const key_def schedule_keys[] = {
    {"kind", VT_ENUM, 0, K_DISCRIM, "constant", 0, 0, &tfl__enum_schedule, 0, 0, 0,
     "constant, exponential, step or cosine"},
    {"decay_steps", VT_INT, B(S_EXP) | B(S_STEP) | B(S_COS), REQ | RNG, NULL, 1, 9.2e18, 0, 0, 0, 0,
     "steps of one decay period"},
    {"decay_rate", VT_FLOAT, B(S_EXP) | B(S_STEP), REQ | RNG | K_MIN_EXCL, NULL, 0, INF, 0, 0, 0, 0,
     "the factor per period"},
    {"alpha", VT_FLOAT, B(S_COS), RNG, "0", 0, 1, 0, 0, 0, 0, "the final factor"},
    {"warmup_steps", VT_INT, 0, RNG, "0", 0, 9.2e18, 0, 0, 0, 0, "linear warmup steps"},
    {"warmup_start_factor", VT_FLOAT, 0, RNG, "0", 0, 1, 0, 0, 0, 0,
     "the factor at step 0 of the warmup"},
};
static const sec_def schedule_sec = {
    "schedule",          schedule_keys, COUNT(schedule_keys),
    &tfl__enum_schedule, false,         "a learning-rate schedule"};

#define ALL_OPT 0
#define ADAMS (B(O_ADAM) | B(O_ADAMW))
#define BETAS (ADAMS | B(O_NADAM) | B(O_ADAMAX))
static const key_def optimizer_keys[] = {
    {"kind", VT_ENUM, 0, K_DISCRIM, "rmsprop", 0, 0, &tfl__enum_optimizer, 0, 0, 0,
     "sgd, adam, adamw, rmsprop (Keras's default), adagrad, nadam or adamax"},
    {"formula", VT_ENUM, 0, 0, "default", 0, 0, &tfl__enum_formula, 0, 0, 0,
     "tensorflow or pytorch; default: the optimizer's own (see optim.h)"},
    {"name", VT_STR, 0, NUL, NULL, 0, 0, 0, 0, 0, 0, "null: the kind's name"},
    {"learning_rate", VT_FLOAT, ALL_OPT, K_OPTDEF | RNG, NULL, 0, INF, 0, 0, 0, 0, "the base rate"},
    {"weight_decay", VT_FLOAT, ALL_OPT, K_OPTDEF | RNG, NULL, 0, INF, 0, 0, 0, 0,
     "coupled or decoupled by formula"},
    {"momentum", VT_FLOAT, B(O_SGD) | B(O_RMSPROP), K_OPTDEF | RNG, NULL, 0, INF, 0, 0, 0, 0,
     "momentum"},
    {"dampening", VT_FLOAT, B(O_SGD), K_OPTDEF | RNG, NULL, 0, 1, 0, 0, 0, 0,
     "pytorch formula only"},
    {"nesterov", VT_BOOL, B(O_SGD), 0, "false", 0, 0, 0, 0, 0, 0, "needs momentum > 0"},
    {"beta_1", VT_FLOAT, BETAS, K_OPTDEF | RNG | K_MAX_EXCL, NULL, 0, 1, 0, 0, 0, 0,
     "first moment decay"},
    {"beta_2", VT_FLOAT, BETAS, K_OPTDEF | RNG | K_MAX_EXCL, NULL, 0, 1, 0, 0, 0, 0,
     "second moment decay"},
    {"epsilon", VT_FLOAT, ~B(O_SGD) & (B(O_COUNT) - 1), K_OPTDEF | RNG, NULL, 0, INF, 0, 0, 0, 0,
     "numerical stability"},
    {"amsgrad", VT_BOOL, ADAMS, 0, "false", 0, 0, 0, 0, 0, 0, "keep the maximum of v"},
    {"rho", VT_FLOAT, B(O_RMSPROP), K_OPTDEF | RNG, NULL, 0, 1, 0, 0, 0, 0,
     "the squares' decay (torch's alpha)"},
    {"centered", VT_BOOL, B(O_RMSPROP), 0, "false", 0, 0, 0, 0, 0, 0, "normalise by the variance"},
    {"initial_accumulator_value", VT_FLOAT, B(O_ADAGRAD), K_OPTDEF | RNG, NULL, 0, INF, 0, 0, 0, 0,
     "the accumulator's start"},
    {"momentum_decay", VT_FLOAT, B(O_NADAM), K_OPTDEF | RNG, NULL, 0, INF, 0, 0, 0, 0,
     "nadam's momentum schedule decay psi (torch's momentum_decay; Keras: 1)"},
    {"clipvalue", VT_FLOAT, ALL_OPT, NUL | RNG | K_MIN_EXCL, NULL, 0, INF, 0, 0, 0, 0,
     "clip every gradient element to [-c, c]; null: off"},
    {"clipnorm", VT_FLOAT, ALL_OPT, NUL | RNG | K_MIN_EXCL, NULL, 0, INF, 0, 0, 0, 0,
     "clip each gradient's norm; null: off"},
    {"global_clipnorm", VT_FLOAT, ALL_OPT, NUL | RNG | K_MIN_EXCL, NULL, 0, INF, 0, 0, 0, 0,
     "clip the norm of all gradients together; null: off"},
    {"loss_scale", VT_FLOAT, ALL_OPT, NUL | RNG | K_MIN_EXCL, NULL, 0, 3.4e38, 0, 0, 0, 0,
     "dynamic loss scaling from this scale (halved on a step whose gradient is not finite, "
     "which is skipped; doubled after loss_scale_growth_steps finite ones); null: 32768 "
     "(Keras's 2^15) under training.precision float16, off otherwise"},
    {"loss_scale_growth_steps", VT_INT, ALL_OPT, RNG, "2000", 1, 1e18, 0, 0, 0, 0,
     "finite steps in a row before the loss scale doubles"},
    {"schedule", VT_SEC, ALL_OPT, 0, "", 0, 0, 0, &schedule_sec, 0, 0,
     "multiplies the learning rate"},
};
#define FIELD(key, field, type) {key, offsetof(tfl_optimizer_opts, field), type}
const opt_field tfl__optimizer_fields[] = {
    FIELD("learning_rate", learning_rate, 'd'),
    FIELD("weight_decay", weight_decay, 'd'),
    FIELD("momentum", momentum, 'd'),
    FIELD("dampening", dampening, 'd'),
    FIELD("nesterov", nesterov, 'b'),
    FIELD("beta_1", beta1, 'd'),
    FIELD("beta_2", beta2, 'd'),
    FIELD("epsilon", epsilon, 'd'),
    FIELD("amsgrad", amsgrad, 'b'),
    FIELD("rho", rho, 'd'),
    FIELD("centered", centered, 'b'),
    FIELD("initial_accumulator_value", initial_accumulator, 'd'),
    FIELD("momentum_decay", momentum_decay, 'd'),
    FIELD("clipvalue", clip_value, 'n'),
    FIELD("clipnorm", clip_norm, 'n'),
    FIELD("global_clipnorm", global_clip_norm, 'n'),
    {NULL, 0, 0},
};
#undef FIELD

static const sec_def optimizer_sec = {"optimizer",          optimizer_keys, COUNT(optimizer_keys),
                                      &tfl__enum_optimizer, false,          "the optimizer"};

/* ---- training, checkpoint, logging ---------------------------------------------------------- */

static const key_def training_keys[] = {
    {"epochs", VT_INT, 0, RNG, "1", 1, 1e9, 0, 0, 0, 0, "passes over the training data"},
    {"batch_size", VT_INT, 0, RNG, "32", 1, 2147483647.0, 0, 0, 0, 0, "examples per step"},
    {"drop_remainder", VT_BOOL, 0, 0, "false", 0, 0, 0, 0, 0, 0, "drop the last, smaller batch"},
    {"seed", VT_INT, 0, RNG, "0", 0, 9.2e18, 0, 0, 0, 0,
     "initializers, dropout and shuffling; 0: tapeflow's fixed default"},
    {"threads", VT_INT, 0, RNG, "0", 0, 4096, 0, 0, 0, 0, "0: OMP_NUM_THREADS or the cores"},
    {"device", VT_STR, 0, 0, "auto", 0, 0, 0, 0, 0, 0,
     "where the model, its variables, the optimizer's slots and the batches go: CPU:0, "
     "GPU:0, ...; auto: the best device, GPU:0 when there is one (a GPU named but absent: "
     "CPU:0); under mpirun, auto and GPU give rank r GPU:(its local rank mod the host's "
     "GPUs), one rank per GPU, and GPU:N is refused with several ranks on a host"},
    {"deterministic", VT_BOOL, 0, 0, "false", 0, 0, 0, 0, 0, 0,
     "GPU kernels pick run-to-run reproducible algorithms, at some speed (the CPU's are "
     "deterministic either way)"},
    {"precision", VT_ENUM, 0, 0, "float32", 0, 0, &enum_precision, 0, 0, 0,
     "float32: float32 arithmetic everywhere; tf32: a GPU's float32 matmuls and convolutions "
     "on TF32 tensor cores (as TensorFlow's default); bfloat16, float16: mixed precision on a "
     "GPU (16-bit matmuls, convolutions and the elementwise ops between them; float32 "
     "variables, sums, softmax, losses and normalisation; float16 with dynamic loss scaling, "
     "optimizer.loss_scale); the CPU computes in float32 under every policy (a warning says "
     "so when training there)"},
    {"sync_every", VT_INT, 0, NUL | RNG, NULL, 0, 1e9, 0, 0, 0, 0,
     "on a GPU, steps between the host's reads of the loss (the epoch's sums stay on the "
     "device); 0: every step; null: every step that logging or checkpoint.every_steps acts on "
     "(the greatest common divisor of log_interval, every_steps and checkpoint.every_steps "
     "that are set, else once an epoch); no effect on the CPU"},
    {"step_graphs", VT_BOOL, 0, 0, "false", 0, 0, 0, 0, 0, 0,
     "on a GPU, record a training step of a steady batch shape once and replay it (one CUDA "
     "graph launch) without the per-op host work; the same results bit for bit; refused, "
     "with the reason logged, for a step that draws random values (dropout); no effect on "
     "the CPU"},
    {"on_nonfinite", VT_ENUM, 0, 0, "halt", 0, 0, &enum_nonfinite, 0, 0, 0,
     "halt or skip a step whose loss or gradient is not finite"},
    {"allreduce_bucket_mb", VT_FLOAT, 0, RNG | K_MIN_EXCL, "25", 0, 65536, 0, 0, 0, 0,
     "under mpirun: MiB of gradients all-reduced per message"},
};
static const sec_def training_sec = {"training", training_keys, COUNT(training_keys),
                                     NULL,       false,         "the fit loop"};

static const key_def checkpoint_keys[] = {
    {"directory", VT_PATH, 0, NUL, NULL, 0, 0, 0, 0, 0, 0, "null: <run dir>/checkpoints"},
    {"every", VT_INT, 0, RNG, "1", 1, 1e9, 0, 0, 0, 0, "epochs between checkpoints"},
    {"every_steps", VT_INT, 0, RNG, "0", 0, 1e9, 0, 0, 0, 0,
     "steps between checkpoints, mid-epoch too; 0: every `every` epochs"},
    {"keep", VT_INT, 0, RNG, "5", 0, 1e6, 0, 0, 0, 0, "the newest kept; 0: all"},
    {"save_best_only", VT_BOOL, 0, 0, "false", 0, 0, 0, 0, 0, 0, "only when monitor improved"},
    {"monitor", VT_ENUM, 0, 0, "val_loss", 0, 0, &enum_monitor, 0, 0, 0,
     "the figure save_best_only watches"},
};
static const sec_def checkpoint_sec = {
    "checkpoint", checkpoint_keys, COUNT(checkpoint_keys),
    NULL,         false,           "checkpoints (parsed and validated)"};

static const key_def logging_keys[] = {
    {"metrics_csv", VT_PATH, 0, NUL, NULL, 0, 0, 0, 0, 0, 0, "null: <run dir>/metrics.csv"},
    {"log_interval", VT_INT, 0, RNG, "0", 0, 1e9, 0, 0, 0, 0,
     "steps between progress lines off a terminal; 0: one line per epoch"},
    {"tensorboard", VT_BOOL, 0, 0, "true", 0, 0, 0, 0, 0, 0,
     "TensorBoard event files in <run dir>/train and <run dir>/validation"},
    {"every_steps", VT_INT, 0, RNG, "50", 0, 1e9, 0, 0, 0, 0,
     "steps between the event files' step scalars (loss, learning rate, gradient norm, "
     "samples/s); 0: none"},
    {"histograms", VT_BOOL, 0, 0, "false", 0, 0, 0, 0, 0, 0,
     "histograms of the weights and gradients in the event files, once an epoch"},
    {"flush_seconds", VT_FLOAT, 0, RNG | K_MIN_EXCL, "10", 0, INF, 0, 0, 0, 0,
     "the event files are written out at least this often (and every epoch, on SIGINT and "
     "SIGTERM, at the end)"},
};
static const sec_def logging_sec = {"logging", logging_keys, COUNT(logging_keys),
                                    NULL,      false,        "logs"};

static const key_def root_keys[] = {
    {"format_version", VT_INT, 0, RNG, "1", 1, 1, 0, 0, 0, 0,
     "the config format; a newer one needs a newer tapeflow"},
    {"data", VT_SEC, 0, REQ, NULL, 0, 0, 0, &data_sec, 0, 0, "the data"},
    {"model", VT_SEC, 0, REQ, NULL, 0, 0, 0, &model_sec, 0, 0, "the model"},
    {"loss", VT_ENUM, 0, REQ, NULL, 0, 0, &tfl__enum_loss, 0, 0, 0,
     "computed from the model's logits"},
    {"metrics", VT_ENUMS, 0, 0, NULL, 0, 0, &tfl__enum_metric, 0, 0, 8, "measured every epoch"},
    {"optimizer", VT_SEC, 0, 0, "", 0, 0, 0, &optimizer_sec, 0, 0, "the optimizer"},
    {"training", VT_SEC, 0, 0, "", 0, 0, 0, &training_sec, 0, 0, "the fit loop"},
    {"checkpoint", VT_SEC, 0, 0, "", 0, 0, 0, &checkpoint_sec, 0, 0, "checkpoints"},
    {"logging", VT_SEC, 0, 0, "", 0, 0, 0, &logging_sec, 0, 0, "logs"},
};
const sec_def tfl__schema_root = {"config", root_keys, COUNT(root_keys),
                                  NULL,     false,     "a run config"};

/* ---- lookups -------------------------------------------------------------------------------- */

int tfl__enum_find(const enum_def *e, const char *name)
{
    for (int i = 0; i < e->n; i++)
        if (!strcmp(e->names[i], name)) return i;
    return -1;
}

const key_def *tfl__key_find(const sec_def *s, const char *name, int kind, const key_def **other)
{
    if (other) *other = NULL;
    for (int i = 0; i < s->n_keys; i++) {
        const key_def *k = &s->keys[i];
        if (strcmp(k->name, name)) continue;
        if (kind < 0 || k->kinds == 0 || (k->kinds & B(kind))) return k;
        if (other && !*other) *other = k;
    }
    return NULL;
}

void tfl__kinds_list(const sec_def *s, unsigned mask, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; s->kinds && i < s->kinds->n && o < size; i++)
        if (mask & B(i))
            o += (size_t)snprintf(buf + o, size - o, "%s%s", o ? ", " : "", s->kinds->names[i]);
}

/* the optimizer options of schema kind `kind` (the enum's order, from 0) before the config's
 * keys: the library's defaults for its formula */
tfl_optimizer_opts tfl__optim_defaults(int kind, int formula)
{
    return tfl_optimizer_defaults((tfl_optimizer_kind)(kind + 1), (tfl_formula)formula);
}
