/*
 * layers/dataset_internal.h: what the dataset files share: text corpora (dataset_corpus.c);
 * the example store behind tfl_dataset (bytes or float32 examples and int32 labels,
 * refcounted so that splits share it) and its wrapping in a dataset (dataset.c); the uploads
 * of batches to a device (dataset_upload.c); the loaders' file helpers (dataset_io.c, used
 * by dataset_csv.c). Never installed.
 *
 * The dataset files read bottom-up (tests/layering/check_layers_order.sh enforces it, below
 * the layers' files of layers_internal.h):
 *   0 dataset_corpus.c dataset_upload.c   a text corpus's windows; batches to a device
 *   1 dataset.c                           the store, the dataset, batching, splits
 *   2 dataset_io.c dataset_arrays.c dataset_text.c   IDX and file helpers; arrays; text
 *   3 dataset_csv.c                       CSV (through dataset_io.c's readers)
 */
#ifndef TFL_DATASET_INTERNAL_H
#define TFL_DATASET_INTERNAL_H

#include "core_api/module_api.h" /* framework's API for modules (tfl_framework_private) */

#include <tapeflow/data.h>

typedef enum tfl__ds_kind {
    TFL__DS_U8 = 1, /* one byte per element (IDX ubyte) */
    TFL__DS_F32,    /* float32 per element */
    TFL__DS_TEXT,   /* next-token windows over a mapped corpus (dataset_corpus.c); no x */
} tfl__ds_kind;

/** One mapped file of a text corpus. */
typedef struct tfl__ds_text_seg {
    const uint8_t *p; /* the mapping (len bytes) */
    int64_t len;      /* bytes */
    int64_t off;      /* the file's first byte in the corpus */
} tfl__ds_text_seg;

/** A mapped text corpus and its windows: made by tfl_dataset_from_text (dataset_text.c),
 * read through the functions of dataset_corpus.c. */
struct tfl__ds_text {
    tfl_ctx *ctx;
    int nseg;
    tfl__ds_text_seg *seg; /* in corpus order */
    int64_t base;          /* the corpus offset of window 0 (the subset's first token) */
    int64_t stride;        /* tokens between consecutive windows */
    int64_t context;       /* tokens per window */
    uint8_t id[256];       /* byte -> token id */
    uint8_t vocab[256];    /* token id -> byte */
    int nvocab;
};

/** Unmaps and frees a corpus (NULL: nothing). */
void tfl__ds_text_free(struct tfl__ds_text *t);
/** Window ex (0-based, of the subset): its context tokens into x and, unless y is NULL, the
 * next tokens into y; scratch holds context + 1 bytes. */
void tfl__ds_text_window(const struct tfl__ds_text *t, int64_t ex, uint8_t *scratch, int32_t *x,
                         int32_t *y);
/** The vocabulary size; bytes (NULL, or room for 256) receives each token id's byte. */
int tfl__ds_text_vocab(const struct tfl__ds_text *t, uint8_t *bytes);

/** The examples of one load, shared by the datasets split from it. */
typedef struct tfl__ds_store {
    int32_t refs;                  /* datasets using it */
    tfl_ctx *ctx;                  /* whose hooks own the memory */
    tfl__ds_kind kind;
    void *x;                       /* n * feat elements, row-major (uint8_t or float) */
    int32_t *y;                    /* n class labels, or NULL (no labels, or targets) */
    float *t;                      /* n * tdim targets (TFL_LABEL_VALUE), or NULL */
    int64_t tdim;                  /* targets per example (t), 0 without */
    int trank;                     /* a batch's y: 0: (b,), 1: (b, tdim) */
    int64_t n;                     /* examples */
    int64_t feat;                  /* elements per example */
    int rank;                      /* rank of one example, 0..TFL_MAX_RANK-1 */
    int64_t shape[TFL_MAX_RANK];   /* one example's shape */
    int32_t num_classes;           /* max label + 1; 0 without labels; text: the vocabulary */
    struct tfl__ds_text *text;     /* TFL__DS_TEXT: the corpus (owned), else NULL */
} tfl__ds_store;

/** A zeroed store (refs 1) with its shape set and x (and y when labelled) allocated
 * (uninitialised); NULL with RESOURCE_EXHAUSTED or INVALID_ARGUMENT kept. */
tfl__ds_store *tfl__ds_store_new(tfl_ctx *ctx, tfl__ds_kind kind, int64_t n, int rank,
                                 const int64_t *shape, bool labelled);
/** As tfl__ds_store_new, but the store takes `x` (n * feat elements of `kind`, from
 * tfl__host_alloc(ctx, ..., TFL_ALIGN)) instead of allocating it; x is freed on failure too. */
tfl__ds_store *tfl__ds_store_adopt(tfl_ctx *ctx, tfl__ds_kind kind, int64_t n, int rank,
                                   const int64_t *shape, bool labelled, void *x);
void tfl__ds_store_release(tfl__ds_store *s);
/** A store of n text windows of `context` tokens over t (taken: freed on failure too); x and
 * y stay NULL, batches come from tfl__ds_text_window. NULL with the error kept. */
tfl__ds_store *tfl__ds_store_text(tfl_ctx *ctx, struct tfl__ds_text *t, int64_t n,
                                  int64_t context);
/** Gives a store without class labels room for tdim targets per example (uninitialised),
 * batches' y of rank trank + 1; false with RESOURCE_EXHAUSTED kept. */
bool tfl__ds_store_add_targets(tfl__ds_store *s, int64_t tdim, int trank);
/** Sets num_classes from the labels. */
void tfl__ds_store_count_classes(tfl__ds_store *s);
/** Wraps a store (taking its reference) in a dataset with opts' normalisation; on failure
 * releases the store and returns NULL. */
tfl_dataset *tfl__dataset_wrap(tfl_ctx *ctx, tfl__ds_store *s, const tfl_dataset_opts *opts);
/** Where a tfl_dataset_opts is checked: what each constructor reads. */
typedef enum tfl__ds_src { TFL__SRC_IDX, TFL__SRC_CSV, TFL__SRC_ARRAYS } tfl__ds_src;
/** Checks opts (NULL: valid) field by field before anything is read: scale and offset
 * finite; label_kind known (TFL_LABEL_VALUE not for IDX, not with no_labels), label_count
 * >= 0 and > 1 only for targets; for IDX and arrays the CSV-only fields 0; for CSV, a
 * delimiter that cannot be part of a number or a line end. INVALID_ARGUMENT naming the field. */
bool tfl__dataset_opts_check(tfl_ctx *ctx, const char *who, const tfl_dataset_opts *opts,
                             tfl__ds_src src);

/** MISUSE kept in ctx naming `who` unless ds is a live dataset of ctx (model fit, evaluate,
 * predict). */
bool tfl__dataset_check(tfl_ctx *ctx, const tfl_dataset *ds, const char *who);

/* uploads to a device (dataset_upload.c) */

/** The upload state of one dataset: two host buffers and two device batches used in turn, a
 * copy stream and its events (see dataset_upload.c). */
typedef struct tfl__ds_upload tfl__ds_upload;
/** Whether batches for dev go through an upload state: dev's memory is not the host's and
 * it has copy_host_async. Otherwise the batch is made synchronously, as on the CPU. */
bool tfl__ds_upload_wanted(const tfl__device *dev);
/** Where the labels or targets start in the host buffer, after xbytes of features. */
size_t tfl__ds_upload_offset(size_t xbytes);
/** The host buffer (at least `bytes`) to assemble the next batch for dev in: x's floats,
 * then at tfl__ds_upload_offset the labels or targets. Makes *up (or a new one when dev
 * changed); waits for the copy that last read the buffer. NULL with the error kept. */
void *tfl__ds_upload_begin(tfl_ctx *ctx, tfl__ds_upload **up, tfl__device *dev, size_t bytes);
/** Copies the assembled batch to dev asynchronously: x float32 of xshape, and y (yrank 0:
 * none) of ydt and yshape; *x and *y are new references registered with the innermost
 * frame. */
tfl_status tfl__ds_upload_end(tfl__ds_upload *up, int xrank, const int64_t *xshape,
                              tfl_dtype ydt, int yrank, const int64_t *yshape, tfl_tensor **x,
                              tfl_tensor **y);
/** Waits for the copies in flight and frees everything (NULL: nothing). */
void tfl__ds_upload_free(tfl__ds_upload *up);
/** tfl_dataset_next with the batch made on dev (fit: the model's device). */
tfl_status tfl__dataset_next_on(tfl_dataset *ds, tfl__device *dev, tfl_tensor **x,
                                tfl_tensor **y);

/* file helpers (dataset_io.c) */

/** Opens path for reading through zlib (plain or gzip); NOT_FOUND / FAILED_PRECONDITION kept
 * naming `what` and the path. *file_bytes: the size on disk; *gzip: compressed. */
void *tfl__ds_open(tfl_ctx *ctx, const char *what, const char *path, int64_t *file_bytes,
                   bool *gzip);

/** How a read ended (tfl__ds_read). */
typedef enum tfl__ds_rd {
    TFL__RD_FULL = 0,  /* every byte asked for */
    TFL__RD_EOF,       /* a clean end of file came first (the gzip stream, if any, is whole) */
    TFL__RD_TRUNCATED, /* the gzip stream ends early: the file was cut */
    TFL__RD_CORRUPT,   /* zlib found the gzip data corrupt (bad CRC, bad deflate data, ...) */
    TFL__RD_IO,        /* the operating system failed the read */
    TFL__RD_NOMEM,     /* zlib ran out of memory */
} tfl__ds_rd;

/** Reads up to `bytes` (any size) into dst; returns the bytes read and sets *why to how the
 * read ended. A read that stops at the end of the file checks zlib's error state, so a gzip
 * stream cut short (even inside its CRC trailer) or with a bad CRC is never a clean EOF. */
int64_t tfl__ds_read(void *gz, void *dst, int64_t bytes, tfl__ds_rd *why);
/** Keeps the error for a read that ended with `why` (not FULL): "<file>: <what is wrong>
 * (<where>)", DATA_LOSS (RESOURCE_EXHAUSTED for NOMEM). `file` names the file, e.g.
 * "IDX images file 'a.gz'"; `where` says what was being read. Returns the status. */
tfl_status tfl__ds_read_error(tfl_ctx *ctx, void *gz, tfl__ds_rd why, const char *file,
                              const char *where);

#endif /* TFL_DATASET_INTERNAL_H */
