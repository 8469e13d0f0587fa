/*
 * tapeflow/data.h: datasets of labelled examples for training loops: IDX files (the MNIST
 * format, gzipped or not), CSV files, in-memory arrays and next-token windows over text
 * (memory-mapped, tfl_dataset_from_text); batching, seeded shuffling per
 * epoch, a train/validation split and input normalisation.
 *
 * Memory. A dataset keeps its examples in host memory in their own type: byte data (IDX
 * ubyte, the MNIST images) stays one byte per element, other data is kept as float32.
 * Each tfl_dataset_next converts only its batch to float32, so Fashion-MNIST's 60000
 * 28x28 training images take 47 MB, not 188 MB. Labels are int32 class indices (>= 0), or
 * real-valued targets for regression (TFL_LABEL_VALUE below), kept as float32.
 *
 *     tfl_dataset *train = tfl_dataset_from_idx(ctx, "train-images-idx3-ubyte.gz",
 *                                                "train-labels-idx1-ubyte.gz", NULL);
 *     tfl_dataset_batch(train, 64, &(tfl_batch_opts){ .shuffle = true, .seed = 42 });
 *     for (uint64_t epoch = 0; epoch < 10; epoch++) {
 *         tfl_dataset_reset(train, epoch);            // a new order per epoch
 *         tfl_tensor *x, *y;
 *         for (;;) {
 *             tfl_frame_push(ctx);
 *             tfl_status st = tfl_dataset_next(train, &x, &y);   // x: (64, 28, 28) float32
 *             if (st == TFL_OK) { ... one step ... }
 *             tfl_frame_pop(ctx);
 *             if (st != TFL_OK) break;                // TFL_OUT_OF_RANGE: end of the epoch
 *         }
 *     }
 *     tfl_dataset_free(train);
 *
 * Normalisation. A batch element is x = (raw·scale + offset − mean[j]) / std[j], with j the
 * element's index within its example; mean and std are optional (0 and 1 when unset, see
 * tfl_dataset_set_normalization) and a std of 0 counts as 1 (a constant feature stays at 0,
 * as scikit-learn's StandardScaler).
 *
 * Shuffling is reproducible on every machine: the order of epoch e under seed s is the
 * Fisher-Yates shuffle of the identity p = (0, 1, ..., n − 1) with, for i = n − 1 down to 1,
 *     R = philox4x32_10((lo(i), hi(i), lo(e), hi(e)), (lo(s), hi(s)))   (see random.h),
 *     r = R[0] | (uint64)R[1] << 32,   j = floor(r·(i + 1) / 2^64),   swap(p[i], p[j]),
 * integer arithmetic only; the batch k of the epoch holds examples p[k·b], ..., p[k·b + b − 1].
 *
 * Datasets hold host memory taken through their context's allocation hooks; those still
 * alive at tfl_ctx_free are freed with their context (their handles are then invalid). A
 * dataset is used by one thread at a time, like its context.
 */
#ifndef TAPEFLOW_DATA_H
#define TAPEFLOW_DATA_H

#include <tapeflow/base.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tfl_dataset tfl_dataset;

/**
 * What a dataset's labels are.
 *  - TFL_LABEL_CLASS: integer class indices in [0, 2^31); batches give y as int32 (b,), and
 *    tfl_dataset_num_classes is the largest + 1. For the cross-entropy losses.
 *  - TFL_LABEL_VALUE: real-valued targets (regression), k per example, kept as float32 and
 *    never normalised (scale, offset, mean and std apply to x only); batches give y as
 *    float32 (b,) for one target per example, (b, k) for several (see tfl_dataset_next).
 *    Targets must be finite. num_classes is 0. For mean_squared_error (a Dense(1) output of
 *    shape (b, 1) takes a (b,) y as (b, 1)), or binary/categorical cross-entropy against soft
 *    labels; sparse_categorical_crossentropy refuses them (tfl_model_fit, evaluate).
 */
typedef enum tfl_label_kind {
    TFL_LABEL_CLASS = 0,
    TFL_LABEL_VALUE = 1,
} tfl_label_kind;

/** Options of the constructors; all-zero (or NULL) means defaults. Each field is checked
 * before any file is read (INVALID_ARGUMENT naming it): scale and offset finite, the CSV-only
 * fields 0 for IDX files and arrays, a delimiter that is no digit, sign, '.', 'e', quote or
 * line end, label_kind a tfl_label_kind (TFL_LABEL_VALUE for CSV and arrays only, not with
 * no_labels), label_count >= 0 and above 1 only with TFL_LABEL_VALUE. */
typedef struct tfl_dataset_opts {
    float scale;            /* x = raw·scale + offset; 0: 1/255 for byte data, 1 otherwise */
    float offset;           /* added after scaling (0: none) */
    /* CSV and arrays: TFL_LABEL_VALUE reads real-valued targets (an array's integer y too; a
     * floating y is always read as targets). IDX labels are class indices. */
    tfl_label_kind label_kind;
    /* CSV only */
    bool header;            /* the first line names the columns and holds no example */
    int label_column;       /* the label's column, 0-based; negative counts from the end */
    const char *label_name; /* with header: the label's column by name (overrides label_column) */
    int label_count;        /* TFL_LABEL_VALUE: the targets are this many consecutive columns
                               from the label column on (label_column -2 with label_count 2:
                               the last two columns); 0: 1. Batches' y is (b,) for 1, else
                               (b, label_count) */
    bool no_labels;         /* every column is a feature; batches have no labels */
    char delimiter;         /* the field separator; 0: ',' */
    /* CSV and IDX class labels: each must be below num_classes (a model's outputs), or the
     * load fails with DATA_LOSS naming the file and the line (CSV) or index (IDX); 0: any */
    int32_t num_classes;
} tfl_dataset_opts;

/**
 * Loads an IDX pair (the MNIST format): a big-endian header of two zero bytes, a type byte
 * (0x08 ubyte, 0x09 byte, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64) and the
 * number of dimensions, then each dimension as a big-endian uint32, then the data. Images
 * have 1 to 8 dimensions, the first counting the examples (MNIST's magic 0x00000803:
 * (n, 28, 28)); labels have one (0x00000801: (n,)). Either file may be gzipped (found by
 * its magic, read with zlib). ubyte images stay bytes in memory; other types are kept as
 * float32. Labels must be integers in [0, 2^31).
 * @param images_path the examples' file.
 * @param labels_path the labels' file; NULL: a dataset without labels.
 * @param opts        NULL for defaults (scale 1/255 for ubyte images); only scale and offset
 *                    apply.
 * Returns: a new dataset (free with tfl_dataset_free), or NULL.
 * Errors: NOT_FOUND (a missing file, naming its path), FAILED_PRECONDITION (a file that
 * cannot be opened or read), DATA_LOSS naming the path and what is wrong (bad magic, an
 * unknown type, a count that disagrees with the file size, examples of no elements, a short
 * read, "gzip data is corrupt: incorrect data check" (or another zlib finding), "gzip stream
 * ends early (truncated file)" (even inside its CRC trailer), trailing bytes, a label that is
 * not a class index), INVALID_ARGUMENT (image and label counts differ: both are named),
 * RESOURCE_EXHAUSTED. Memory follows the data that arrives, not what a header claims.
 */
TFL_API tfl_dataset *tfl_dataset_from_idx(tfl_ctx *ctx, const char *images_path,
                                          const char *labels_path, const tfl_dataset_opts *opts);

/**
 * Loads a CSV file (gzipped or not): one example per line, numeric fields separated by
 * opts->delimiter, an optional header line, one label column (an integer class index)
 * unless opts->no_labels, or with opts->label_kind TFL_LABEL_VALUE opts->label_count target
 * columns (real numbers) from the label column on. Blank lines are skipped, "\r\n" line ends
 * accepted; quoted fields are not supported. Features are the other columns, in order, kept
 * as float32: shape (columns − label columns,).
 *
 *     // y = f(x1, x2, x3) in the last column: x (b, 3), y float32 (b,)
 *     tfl_dataset_from_csv(ctx, "data.csv", &(tfl_dataset_opts){
 *         .header = true, .label_column = -1, .label_kind = TFL_LABEL_VALUE});
 *
 * Returns: a new dataset, or NULL.
 * Errors: NOT_FOUND, FAILED_PRECONDITION as tfl_dataset_from_idx; DATA_LOSS naming the path,
 * the line and the column (1-based, with its header name) of a field that is empty or not a
 * number, a label that is not a class index, a target that is not finite ("nan", "inf") or
 * out of float32's range, a line with another number of columns than the first, a NUL byte,
 * a line over 64 MiB, a gzip stream cut short or corrupt (as tfl_dataset_from_idx);
 * INVALID_ARGUMENT (a label column out of range, label_count columns that run past the last
 * column, a label_name the header does not have, no feature column left, no data lines),
 * RESOURCE_EXHAUSTED.
 */
TFL_API tfl_dataset *tfl_dataset_from_csv(tfl_ctx *ctx, const char *path,
                                          const tfl_dataset_opts *opts);

/**
 * A dataset of in-memory examples, copied (x and y may be released afterwards).
 * @param x    examples along axis 0: rank 1 to 8, an integer or floating dtype (kept as float32).
 * @param y    NULL (no labels); int32/int64 class indices of shape (x's dim 0,), values in
 *             [0, 2^31); or real-valued targets (TFL_LABEL_VALUE): a floating y of shape
 *             (n,) or (n, k), k >= 1 (an integer one with opts->label_kind TFL_LABEL_VALUE),
 *             kept as float32. Batches give y as (b,) for a (n,) y and (b, k) for (n, k).
 * @param opts NULL for defaults (scale 1); scale, offset and label_kind apply.
 * Returns: a new dataset, or NULL (also for a NULL x, keeping the error already kept).
 * Errors: INVALID_ARGUMENT (dtype, rank, y's shape, a negative label, a target that is not
 * finite, naming the counts and the index), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_dataset *tfl_dataset_from_arrays(tfl_ctx *ctx, const tfl_tensor *x,
                                             const tfl_tensor *y, const tfl_dataset_opts *opts);

/* ---- text: next-token windows --------------------------------------------------------------- */

/** What a token of a text dataset is. */
typedef enum tfl_text_tokens {
    TFL_TEXT_BYTES = 0, /* every byte value is a token: ids 0..255 (vocabulary 256) */
    TFL_TEXT_CHARS = 1, /* the distinct byte values of the corpus, in byte order, get the dense
                           ids 0..V-1 (the characters of an ASCII text, nanoGPT's
                           shakespeare_char vocabulary; a multi-byte UTF-8 character is several
                           tokens); tfl_dataset_text_vocab gives the mapping */
} tfl_text_tokens;

/** Which part of the corpus a text dataset covers (Keras's `subset`). */
typedef enum tfl_text_subset {
    TFL_TEXT_ALL = 0,        /* the whole corpus (validation_split ignored) */
    TFL_TEXT_TRAINING = 1,   /* the first 1 − validation_split of the tokens */
    TFL_TEXT_VALIDATION = 2, /* the last floor(tokens · validation_split) tokens */
} tfl_text_subset;

/** Options of tfl_dataset_from_text; context_length is required, the rest 0 for defaults. */
typedef struct tfl_text_opts {
    int64_t context_length;  /* tokens per window (>= 1) */
    int64_t stride;          /* tokens between the starts of consecutive windows; 0: the context
                                length (non-overlapping windows: one epoch sees each token once
                                as a target) */
    tfl_text_tokens tokens;  /* bytes (default) or chars */
    double validation_split; /* in [0, 1): the fraction of the corpus, at its end, that is the
                                validation part */
    tfl_text_subset subset;  /* the part this dataset covers */
} tfl_text_opts;

/**
 * A dataset of next-token windows over a text corpus, for language models: example i is the
 * window of context_length tokens starting at token i·stride of its part of the corpus; its
 * x is those tokens and its label y the tokens one position later (the window shifted by
 * one), both int32 of shape (context_length,), so batches give x and y int32 (b, context) and
 * sparse_categorical_crossentropy applies at every position. A part of L tokens has
 * floor((L − context_length − 1) / stride) + 1 windows; the tokens after the last one are
 * unused. tfl_dataset_num_classes is the vocabulary size.
 *
 *     tfl_text_opts o = {.context_length = 128, .validation_split = 0.1,
 *                        .subset = TFL_TEXT_TRAINING};
 *     tfl_dataset *train = tfl_dataset_from_text(ctx, "/usr/share/games/fortunes/?*.u8", &o);
 *     o.subset = TFL_TEXT_VALIDATION;
 *     tfl_dataset *val = tfl_dataset_from_text(ctx, "/usr/share/games/fortunes/?*.u8", &o);
 *
 * Files. `path` is a file, or else a glob(3) pattern whose matches, sorted by name byte by
 * byte, are concatenated as they are (as `cat` would, no separator added; symbolic links are
 * followed). Each file is mapped read-only (mmap), never copied: a batch gathers its windows
 * from the mapping, so a corpus of any size costs the context only the batch; the pages are
 * the operating system's cache. A file must not shrink while a dataset maps it.
 * Split. The validation part is the end of the corpus by position (nanoGPT's train/val
 * split): no window of one part reads a token of the other. The vocabulary (chars) is the
 * whole corpus's, so both parts share their ids. Shuffling (tfl_dataset_batch) permutes the
 * windows, 8 bytes of memory per window.
 * Text. A file is refused as binary when it holds a NUL byte, or when more than 1% of its
 * bytes are outside well-formed UTF-8 sequences (a Latin-1 text with some accents loads).
 * Normalisation does not apply: tfl_dataset_set_normalization and tfl_dataset_moments refuse
 * text datasets (INVALID_ARGUMENT).
 * Returns: a new dataset, or NULL.
 * Errors: INVALID_ARGUMENT (NULL path or opts, a field out of range, naming it; subset
 * TFL_TEXT_VALIDATION with validation_split 0; a part shorter than context_length + 1 tokens,
 * naming the path and the counts), NOT_FOUND (a missing file; a pattern that matches no
 * file, naming it), FAILED_PRECONDITION (a match that is not a regular file, a file that
 * cannot be opened), DATA_LOSS naming the file (empty; binary: the offset of its first NUL
 * byte, or the count of bytes that are not UTF-8), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_dataset *tfl_dataset_from_text(tfl_ctx *ctx, const char *path,
                                           const tfl_text_opts *opts);

/**
 * A text dataset's vocabulary: the byte of every token id (256 ids for TFL_TEXT_BYTES, the
 * corpus's distinct bytes in byte order for TFL_TEXT_CHARS), to decode generated ids.
 * @param bytes NULL, or room for 256 bytes: bytes[id] receives the id's byte.
 * Returns: the vocabulary size V (ids are 0..V-1); -1 for a NULL dataset or one that is not
 * a text dataset (INVALID_ARGUMENT kept).
 */
TFL_API int tfl_dataset_text_vocab(const tfl_dataset *ds, uint8_t *bytes);

/** Frees a dataset (the examples when no split of it still uses them). NULL: no-op. A
 * dataset already freed: MISUSE kept in its context (base.h). */
TFL_API void tfl_dataset_free(tfl_dataset *ds);

/* ---- iteration ---------------------------------------------------------------------------- */

/** Batching options; all-zero means in order, last partial batch kept. */
typedef struct tfl_batch_opts {
    bool shuffle;        /* a new order every epoch (see the top of this header) */
    uint64_t seed;       /* the shuffle's seed; 0: the context's seed (tfl_ctx_opts.seed) */
    bool drop_remainder; /* drop the last batch when it has fewer than batch_size examples */
} tfl_batch_opts;

/**
 * Sets the batch size and order, and restarts at epoch 0. Before any call a dataset gives
 * batches of 32 in order, keeping the last partial batch (Keras's fit defaults).
 * @param batch_size >= 1.
 * @param opts       NULL for defaults.
 * Errors: INVALID_ARGUMENT (batch_size < 1), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_status tfl_dataset_batch(tfl_dataset *ds, int64_t batch_size,
                                     const tfl_batch_opts *opts);

/**
 * Starts epoch `epoch` from its first batch (with shuffling, in that epoch's order: the
 * same seed and epoch always give the same order).
 * Errors: INVALID_ARGUMENT (NULL ds), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_status tfl_dataset_reset(tfl_dataset *ds, uint64_t epoch);

/**
 * Moves to batch `batch` (0-based) of the current epoch without reading the batches before
 * it: the next tfl_dataset_next gives that batch, as it would after `batch` calls (resuming
 * in the middle of an epoch). `batch` == tfl_dataset_num_batches is the end of the epoch.
 * Errors: INVALID_ARGUMENT (NULL ds), OUT_OF_RANGE (batch < 0 or past the end).
 */
TFL_API tfl_status tfl_dataset_seek(tfl_dataset *ds, int64_t batch);

/**
 * The next batch of the epoch.
 * @param x receives float32 examples of shape (b, feature shape...), normalised, on the
 *          device of the current device scope (CPU:0 when none); of a text dataset, int32
 *          token ids (b, context_length), and y int32 next tokens (b, context_length).
 * @param y receives the labels: int32 class indices of shape (b,); float32 targets
 *          (TFL_LABEL_VALUE) of shape (b,) or (b, k), as the dataset was made; NULL for a
 *          dataset without labels. y may be NULL when the caller does not want them.
 * b is the batch size, or less for the last batch of an epoch without drop_remainder; of a
 * sharded dataset (tfl_dataset_shard), this shard's rows of that global batch (maybe 0).
 * Returns: TFL_OK with new frame-owned tensors (owned by the caller when no frame is open);
 * TFL_OUT_OF_RANGE, with *x and *y NULL and no error kept, when the epoch has no more batches
 * (again at every call until tfl_dataset_reset or tfl_dataset_batch).
 * Errors: INVALID_ARGUMENT (NULL ds or x), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_status tfl_dataset_next(tfl_dataset *ds, tfl_tensor **x, tfl_tensor **y);

/**
 * Data parallelism: makes every batch this dataset yields only shard `index` of `count` of
 * the global batch, so that `count` processes (replicas) reading the same data with the same
 * batching and seed read disjoint parts of every batch and together the whole of it.
 *  - The global batch keeps its size and order: tfl_dataset_batch's batch_size is the global
 *    batch (B), and the order of an epoch (shuffled from seed and epoch, see the top of this
 *    header) is the same on every replica. Of a global batch of m rows (m = B, or less for
 *    the last batch of an epoch without drop_remainder), shard i gets the rows
 *    [floor(i·m / count), floor((i + 1)·m / count)): consecutive, sizes differing by at most
 *    one, the later shards the larger; shard 0 then shard 1 ... concatenated are the batch.
 *  - A shard may be empty (m < count): tfl_dataset_next still gives TFL_OK with an x (and y)
 *    of 0 rows, so that every replica takes the same number of steps (their collectives must
 *    match). tfl_model_fit runs such a step's seams with zero gradients (model.h).
 *  - Positions stay global: tfl_dataset_num_batches counts global batches (the steps of an
 *    epoch, the same on every replica), tfl_dataset_seek(ds, k) moves to global batch k,
 *    tfl_dataset_size is the whole dataset's size.
 *  - count 1, index 0 (the default of every dataset, also of tfl_dataset_split's parts) is no
 *    sharding. The shard outlives tfl_dataset_batch and tfl_dataset_reset; setting it does
 *    not move the position. tfl_model_evaluate and tfl_model_predict of a sharded dataset see
 *    this shard's rows only.
 * Errors: INVALID_ARGUMENT (NULL ds; count < 1; index outside [0, count), naming both
 * values); the shard is then unchanged.
 */
TFL_API tfl_status tfl_dataset_shard(tfl_dataset *ds, int index, int count);
/** The shard set by tfl_dataset_shard: its index (0 by default) and count (1 by default);
 * -1 for NULL. */
TFL_API int tfl_dataset_shard_index(const tfl_dataset *ds);
TFL_API int tfl_dataset_shard_count(const tfl_dataset *ds);

/* ---- properties (pointers are borrowed from ds) --------------------------------------------
 * A NULL ds has no context to report to: sizes, ranks and counts give -1, the epoch and
 * num_classes 0, the shape NULL, has_labels false, label_kind TFL_LABEL_CLASS. */

/** The number of examples. */
TFL_API int64_t tfl_dataset_size(const tfl_dataset *ds);
/** The number of batches of one epoch with the current batch size and drop_remainder. */
TFL_API int64_t tfl_dataset_num_batches(const tfl_dataset *ds);
/** The current epoch (the last tfl_dataset_reset's, 0 after tfl_dataset_batch). */
TFL_API uint64_t tfl_dataset_epoch(const tfl_dataset *ds);
/** The rank of one example (a batch has rank + 1): 2 for MNIST images. */
TFL_API int tfl_dataset_feature_rank(const tfl_dataset *ds);
/** The shape of one example (feature rank dimensions), borrowed: (28, 28) for MNIST. */
TFL_API const int64_t *tfl_dataset_feature_shape(const tfl_dataset *ds);
/** Elements per example (the product of the feature shape). */
TFL_API int64_t tfl_dataset_feature_size(const tfl_dataset *ds);
/** Whether batches carry labels (class indices or targets). */
TFL_API bool tfl_dataset_has_labels(const tfl_dataset *ds);
/** The largest label + 1 over the examples (0 without labels and for targets): the classes
 * to predict. */
TFL_API int32_t tfl_dataset_num_classes(const tfl_dataset *ds);
/** TFL_LABEL_VALUE for real-valued targets, TFL_LABEL_CLASS otherwise (also without labels). */
TFL_API tfl_label_kind tfl_dataset_label_kind(const tfl_dataset *ds);
/** Targets per example (k) for TFL_LABEL_VALUE; 0 for class labels or none (-1 for NULL). */
TFL_API int64_t tfl_dataset_target_size(const tfl_dataset *ds);

/* ---- splitting and normalisation --------------------------------------------------------- */

/**
 * Splits ds into its first n_first examples and the rest (in the dataset's stored order,
 * not shuffled; shuffle before storing, or split a shuffled source once, for a random
 * validation set). The parts share ds's examples (no copy) and start with its
 * normalisation and default batching; ds itself is unchanged and may be freed at once.
 * @param first receives the first n_first examples; @param rest the others (may be empty).
 * Errors: INVALID_ARGUMENT (n_first outside [0, size], NULL outputs), RESOURCE_EXHAUSTED
 * (nothing is returned then).
 */
TFL_API tfl_status tfl_dataset_split(tfl_dataset *ds, int64_t n_first, tfl_dataset **first,
                                     tfl_dataset **rest);

/**
 * Replaces the normalisation: x = (raw·scale + offset − mean[j]) / std[j].
 * @param scale, offset applied to every element (scale 0: the default of the data's type).
 * @param mean, std NULL or feature_size values each (copied); NULL: 0 and 1. std[j] == 0
 *                  counts as 1.
 * Errors: INVALID_ARGUMENT (a value that is not finite, a negative std), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_status tfl_dataset_set_normalization(tfl_dataset *ds, float scale, float offset,
                                                 const float *mean, const float *std);

/**
 * Per-feature mean and (population) standard deviation of raw·scale + offset over the
 * examples (features only, never the labels or targets), computed in double: pass them to tfl_dataset_set_normalization of this dataset
 * and of its validation and test sets.
 * @param mean, std feature_size floats each (either may be NULL).
 * Errors: INVALID_ARGUMENT (an empty dataset).
 */
TFL_API tfl_status tfl_dataset_moments(const tfl_dataset *ds, float *mean, float *std);

#ifdef __cplusplus
}
#endif
#endif /* TAPEFLOW_DATA_H */
