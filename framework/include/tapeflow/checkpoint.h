/*
 * tapeflow/checkpoint.h: checkpoints as safetensors files (huggingface/safetensors), so that
 * PyTorch, NumPy and the safetensors clients read them and tapeflow reads theirs.
 *
 * File. `u64 LE N` | N bytes of UTF-8 JSON | the data. The JSON maps each tensor's name to
 * {"dtype", "shape", "data_offsets": [begin, end)} (relative to the first data byte) and
 * "__metadata__" to a string->string object. tapeflow writes the header padded with spaces
 * to a multiple of 8 bytes, the tensors sorted by element size (largest first) and then by
 * name, so every tensor starts aligned to its element size, little-endian, row-major.
 * Dtypes: bool BOOL, int32 I32, int64 I64, float16 F16, bfloat16 BF16, float32 F32,
 * float64 F64, complex64 C64; complex128 is stored as F64 with a trailing dimension of 2,
 * and the metadata key "tapeflow.dtype/<name>" = "complex128" says so.
 * tapeflow's metadata keys (a save refuses them as user keys):
 *   "tapeflow.format_version"  "1"
 *   "tapeflow.crc32c/<name>"   the CRC-32C (Castagnoli) of the tensor's bytes, 8 hex digits;
 *                              checked whenever the tensor's bytes are read.
 *   "tapeflow.exported_from"   the source of tfl_ckpt_export.
 * Other "tapeflow." keys are free: training checkpoints write "tapeflow.weights" (the model's
 * variables, one name a line), "tapeflow.step" and "tapeflow.epoch".
 * A file that has "tapeflow.format_version" must have a CRC for every tensor. Files from
 * other writers (no CRCs) read normally, without the check.
 *
 * Saving is streamed and atomic and durable: a temporary file ".<name>.tmp.<pid>.<n>" in the
 * same directory (O_EXCL), every tensor written from its own memory (CPU tensors, contiguous:
 * no copy; others through a 1 MiB bounce buffer, non-contiguous views copied once), fsync,
 * close, rename over the final name, fsync of the directory. A failed save removes its
 * temporary file and leaves an older file of that name as it was.
 *
 * Reading trusts nothing. Every one of these is DATA_LOSS naming the file, the problem and
 * the tensor: a file shorter than 8 bytes; a header length past the end of the file or of
 * 100,000,000 bytes or more; a header that is not UTF-8, not JSON, not an object (after
 * optional leading whitespace, its first character must be '{'), or that holds "\u0000";
 * duplicate names (at any level: cJSON would keep the first, the reference reader the last);
 * an entry that is not {"dtype": string, "shape": [ints], "data_offsets": [int, int]}; an
 * unknown dtype; negative, fractional or > 2^53 numbers; offsets that are unordered,
 * overlapping or leave a gap (the first must be 0, each begins where the one before ended);
 * a byte count that differs from shape x dtype; a shape whose product overflows; data that
 * does not end exactly at the end of the file (trailing bytes or a truncated buffer);
 * "__metadata__" that is not an object of strings; a CRC entry for a tensor that does not
 * exist or that is not 8 hex digits; a CRC mismatch when the bytes are read; a bool byte
 * other than 0 or 1 read into a tensor. A missing file is NOT_FOUND.
 *
 * Memory. cJSON parses the header with malloc (it cannot take a context's hooks): that is,
 * with the zlib and libc buffers of context.h, memory the hooks do not see.
 */
#ifndef TAPEFLOW_CHECKPOINT_H
#define TAPEFLOW_CHECKPOINT_H

#include <tapeflow/base.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- reading ------------------------------------------------------------------------------- */

typedef struct tfl_ckpt tfl_ckpt; /* an open checkpoint file (its header, validated) */

/** One tensor of a checkpoint, as its header describes it (no data read). */
typedef struct tfl_ckpt_tensor_info {
    const char *name;       /* borrowed from the reader */
    const char *file_dtype; /* the safetensors dtype ("F32", "U8", ...) */
    tfl_dtype dtype;        /* tapeflow's, or TFL_DTYPE_INVALID (U8, F8_E4M3, ...: listed
                               and verified, not readable as a tensor) */
    int rank;               /* tapeflow's rank (the file's minus the 2 of a complex128) */
    int64_t shape[TFL_MAX_RANK + 1];
    int64_t offset; /* of the first byte, from the start of the file */
    int64_t bytes;
    bool has_crc;
    uint32_t crc32c; /* when has_crc */
} tfl_ckpt_tensor_info;

/**
 * Opens a checkpoint and validates its header (not the data: see tfl_ckpt_verify).
 * Returns: the reader (close it with tfl_ckpt_close; the context closes those still open), or
 * NULL with the error kept: NOT_FOUND (no such file), FAILED_PRECONDITION (not a regular file,
 * not readable), DATA_LOSS (see the top of this header), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_ckpt *tfl_ckpt_open(tfl_ctx *ctx, const char *path);
/** The same over `size` bytes in memory, borrowed (they must outlive the reader). Messages
 * call it "<memory>". */
TFL_API tfl_ckpt *tfl_ckpt_open_memory(tfl_ctx *ctx, const void *data, size_t size);
/** Closes the reader. NULL: no-op. */
TFL_API void tfl_ckpt_close(tfl_ckpt *ck);

/** The number of tensors (-1 for NULL). They are indexed in the order of their data. */
TFL_API int64_t tfl_ckpt_num_tensors(const tfl_ckpt *ck);
/** Tensor i's description. Errors: OUT_OF_RANGE. */
TFL_API tfl_status tfl_ckpt_tensor_info_at(const tfl_ckpt *ck, int64_t i,
                                           tfl_ckpt_tensor_info *out);
/** The index of the tensor `name`, or -1 (no error kept). */
TFL_API int64_t tfl_ckpt_find(const tfl_ckpt *ck, const char *name);
/** "__metadata__": its number of entries, entry i's key and value (borrowed; NULL out of
 * range), and the value of `key` (NULL when absent). */
TFL_API int64_t tfl_ckpt_num_metadata(const tfl_ckpt *ck);
TFL_API const char *tfl_ckpt_metadata_key(const tfl_ckpt *ck, int64_t i);
TFL_API const char *tfl_ckpt_metadata_value(const tfl_ckpt *ck, int64_t i);
TFL_API const char *tfl_ckpt_metadata(const tfl_ckpt *ck, const char *key);
/** The path the reader was opened from ("<memory>"). */
TFL_API const char *tfl_ckpt_path(const tfl_ckpt *ck);

/**
 * Reads tensor i's bytes (as stored) into dst, which has room for exactly info.bytes, and
 * checks its CRC. Errors: OUT_OF_RANGE, INVALID_ARGUMENT (bytes differ), DATA_LOSS (short
 * read: the file changed; CRC mismatch).
 */
TFL_API tfl_status tfl_ckpt_read(tfl_ckpt *ck, int64_t i, void *dst, size_t bytes);
/** Tensor `name` as a new CPU tensor of its tapeflow dtype and shape (frame-owned, or the
 * caller's when no frame is open), CRC checked. Errors: NOT_FOUND, UNIMPLEMENTED (a dtype
 * tapeflow has not), DATA_LOSS, RESOURCE_EXHAUSTED. */
TFL_API tfl_tensor *tfl_ckpt_read_tensor(tfl_ckpt *ck, const char *name);
/** Reads every tensor in 1 MiB pieces and checks each CRC; *checked (optional) receives how
 * many tensors had one. Errors: DATA_LOSS naming the first bad tensor. */
TFL_API tfl_status tfl_ckpt_verify(tfl_ckpt *ck, int64_t *checked);

/* ---- writing ------------------------------------------------------------------------------- */

/** tfl_ckpt_save_opts.flags */
enum {
    TFL_CKPT_ALLOW_NONFINITE = 1u << 0, /* save NaN and Inf (refused otherwise) */
    TFL_CKPT_NO_FSYNC = 1u << 1,        /* atomic (rename) but not durable: no fsync */
};

/** Options of a save; all-zero (or NULL) means defaults. */
typedef struct tfl_ckpt_save_opts {
    unsigned flags;                   /* TFL_CKPT_* */
    int n_metadata;                   /* extra "__metadata__" entries (strings, UTF-8) */
    const char *const *metadata_keys; /* not tapeflow's own keys (see the top) */
    const char *const *metadata_values;
} tfl_ckpt_save_opts;

/**
 * Writes n tensors to `path` (see the top of this header).
 * @param names   n names (UTF-8, non-empty, not "__metadata__", unique); NULL, or a NULL
 *                entry: the tensor must be a variable and its name is used.
 * @param tensors n tensors or variables (initialized), of any device.
 * Errors (nothing is written): INVALID_ARGUMENT (a bad, missing or duplicate name, naming
 * both tensors; a NaN or Inf without TFL_CKPT_ALLOW_NONFINITE, naming the tensor and the
 * element; a metadata key of tapeflow's own; bad flags), FAILED_PRECONDITION (an uninitialized
 * variable; the directory cannot be written: "open", "write", "fsync", "rename" with strerror),
 * RESOURCE_EXHAUSTED, MISUSE (a tensor of another context or released).
 */
TFL_API tfl_status tfl_ckpt_save(tfl_ctx *ctx, const char *path, int64_t n,
                                 const char *const *names, const tfl_tensor *const *tensors,
                                 const tfl_ckpt_save_opts *opts);

/* ---- restoring variables by name ----------------------------------------------------------- */

/** Options of a restore; all-zero means strict: every variable must be in the file and every
 * tensor of the file must have a variable (TensorFlow's assert_consumed). */
typedef struct tfl_ckpt_restore_opts {
    bool allow_missing;        /* variables the file lacks keep their values (a partial restore) */
    bool allow_unexpected;     /* tensors no variable asks for are ignored (expect_partial;
                                  each is logged at INFO, not as a warning) */
    const char *ignore_prefix; /* tensors whose names start with it are not variables' (a
                                  training checkpoint's "_tapeflow/" state): never unexpected */
    const char *const *ignore_names; /* NULL, or a NULL-ended list of tensor names that are
                                        never unexpected either (state the caller left out) */
} tfl_ckpt_restore_opts;

/** What a restore found (every field is set, also on error). */
typedef struct tfl_ckpt_restore_report {
    int64_t restored;   /* variables assigned (0 on error) */
    int64_t matched;    /* variables whose name, dtype and shape match a tensor */
    int64_t missing;    /* variables without a tensor of their name */
    int64_t unexpected; /* tensors without a variable */
    int64_t mismatched; /* same name, another dtype or shape */
} tfl_ckpt_restore_report;

/**
 * Restores n variables from the tensors of their names. Everything is checked first (names,
 * dtypes, shapes, then every matched tensor is read and its CRC checked); only then is any
 * variable assigned, so on any error no variable has changed. A deferred variable restored
 * this way is initialized without running its initializer.
 * Every mismatch is reported at once: the kept message counts them and names the first few
 * (with "did you mean" for a missing name close to an unexpected one); each one is also
 * logged at ERROR. Errors: INVALID_ARGUMENT (a shape or dtype mismatch, an unexpected tensor,
 * a repeated or non-variable entry), NOT_FOUND (only missing names), and tfl_ckpt_open's and
 * tfl_ckpt_read's.
 */
TFL_API tfl_status tfl_ckpt_restore(tfl_ctx *ctx, const char *path, int64_t n,
                                    tfl_tensor *const *variables, const tfl_ckpt_restore_opts *opts,
                                    tfl_ckpt_restore_report *report);
/** The same from an open reader. */
TFL_API tfl_status tfl_ckpt_restore_from(tfl_ckpt *ck, int64_t n, tfl_tensor *const *variables,
                                         const tfl_ckpt_restore_opts *opts,
                                         tfl_ckpt_restore_report *report);

/* ---- tools: diff, export and summary (what `tapeflow diff|export|inspect` call) -------------- */

/** How a tensor compares in tfl_ckpt_diff. */
typedef enum tfl_ckpt_diff_kind {
    TFL_CKPT_SAME = 0,  /* same dtype, shape and bytes */
    TFL_CKPT_DIFFERENT, /* same dtype and shape, other values (max_abs, max_rel set) */
    TFL_CKPT_ONLY_IN_A,
    TFL_CKPT_ONLY_IN_B,
    TFL_CKPT_INCOMPATIBLE, /* another dtype or shape */
} tfl_ckpt_diff_kind;

typedef struct tfl_ckpt_diff_entry {
    const char *name;
    tfl_ckpt_diff_kind kind;
    double max_abs; /* max |a - b| over the elements (complex: of each part) */
    double max_rel; /* max |a - b| / max(|a|, |b|), 0 where both are 0 */
} tfl_ckpt_diff_entry;

typedef void (*tfl_ckpt_diff_fn)(void *user, const tfl_ckpt_diff_entry *entry);

/**
 * Compares two checkpoints tensor by tensor (A's order, then B's extra tensors), calling fn
 * for every tensor (also the same ones); *n_different (optional) receives how many are not
 * TFL_CKPT_SAME. Tensors of dtypes tapeflow has not compare by bytes (max_abs NaN when they
 * differ). Errors: those of tfl_ckpt_open and tfl_ckpt_read.
 */
TFL_API tfl_status tfl_ckpt_diff(tfl_ctx *ctx, const char *path_a, const char *path_b,
                                 tfl_ckpt_diff_fn fn, void *user, int64_t *n_different);

/** Which tensors tfl_ckpt_export keeps: true to keep `name`. */
typedef bool (*tfl_ckpt_keep_fn)(void *user, const char *name);

/**
 * Writes the tensors of `src` that keep() accepts (NULL: all) to `dst` (a new checkpoint,
 * saved as tfl_ckpt_save does, with src's CRCs checked while copying, src's user metadata
 * kept and "tapeflow.exported_from" set to src). With keep NULL and the metadata key
 * "tapeflow.weights" present (training checkpoints), only the tensors it lists are kept:
 * the model's weights without optimizer state. Errors: NOT_FOUND (keep kept nothing),
 * tfl_ckpt_open's, tfl_ckpt_read's and tfl_ckpt_save's.
 */
TFL_API tfl_status tfl_ckpt_export(tfl_ctx *ctx, const char *src, const char *dst,
                                   tfl_ckpt_keep_fn keep, void *user,
                                   const tfl_ckpt_save_opts *opts);

/**
 * A checkpoint's contents as text, from its header (no data read, no CRC checked: see
 * tfl_ckpt_verify): "<path>: <n> tensors, step <tapeflow.step or (not recorded)>", then a
 * line per tensor "  <name> <dtype> <shape> <bytes> bytes" (tapeflow's dtype name, else the
 * file's; the shape as "(2, 16)", "(3,)" or "()"), then "<total> bytes of tensors", each line
 * ending in a newline. Like snprintf: writes at most size bytes into buf (NULL with size 0:
 * nothing), always NUL-terminated when size > 0, and returns the length of the whole text
 * (without its NUL), so a caller sizes buf by calling it twice. Returns -1 for a NULL or
 * closed reader (MISUSE kept for a closed one).
 */
TFL_API int64_t tfl_ckpt_summary(const tfl_ckpt *ck, char *buf, size_t size);

/* ---- the checkpoint manager (TensorFlow's CheckpointManager) --------------------------------- */

typedef struct tfl_ckpt_manager tfl_ckpt_manager;

typedef struct tfl_ckpt_manager_opts {
    int max_to_keep;         /* > 0: keep the newest N; 0: keep all */
    double keep_every_hours; /* > 0: also keep for good one checkpoint every K hours */
    const char *prefix;      /* file names "<prefix>-<step, 8 digits>.safetensors"; NULL:
                                "ckpt" (letters, digits, '_', '.', '-' only) */
} tfl_ckpt_manager_opts;

/**
 * A manager of the checkpoints in `directory` (created when missing, one level). It reads the
 * index ("checkpoint", TensorFlow's text format) when there is one, else lists the
 * checkpoint files there, and removes stray temporary files of earlier crashed saves.
 * Errors: INVALID_ARGUMENT (options), FAILED_PRECONDITION (the directory), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_ckpt_manager *tfl_ckpt_manager_new(tfl_ctx *ctx, const char *directory,
                                               const tfl_ckpt_manager_opts *opts);
TFL_API void tfl_ckpt_manager_free(tfl_ckpt_manager *m);

/** The path a checkpoint of `step` (>= 0) gets: "<directory>/<prefix>-00000042.safetensors".
 * Returns the length it needs (like snprintf), or -1. */
TFL_API int tfl_ckpt_manager_path(const tfl_ckpt_manager *m, int64_t step, char *buf, size_t size);
/**
 * Records the checkpoint of `step`, already saved at tfl_ckpt_manager_path (by any save
 * function): the index is rewritten (atomically, durably) naming it latest, the checkpoints
 * past max_to_keep are deleted (unless keep_every_hours keeps them), and the index written
 * again. Errors: NOT_FOUND (no such file), FAILED_PRECONDITION (I/O).
 */
TFL_API tfl_status tfl_ckpt_manager_commit(tfl_ckpt_manager *m, int64_t step);
/** tfl_ckpt_save to the step's path, then tfl_ckpt_manager_commit. */
TFL_API tfl_status tfl_ckpt_manager_save(tfl_ckpt_manager *m, int64_t step, int64_t n,
                                         const char *const *names, const tfl_tensor *const *tensors,
                                         const tfl_ckpt_save_opts *opts);
/** The checkpoints the manager keeps (oldest first): up to cap steps into out. Returns the
 * count (may exceed cap). */
TFL_API int64_t tfl_ckpt_manager_steps(const tfl_ckpt_manager *m, int64_t *out, int64_t cap);

/**
 * The newest usable checkpoint of a directory: one that opens (its header valid) and whose
 * CRCs all verify (the file is read once): the index's latest, else (no index, a damaged one,
 * or a latest that is not usable) the highest step among the checkpoint files of `prefix`
 * (NULL: "ckpt"). Files skipped are logged at WARNING and leave no error kept. Writes its
 * path into buf and its step into *step (optional). Errors: NOT_FOUND (none),
 * INVALID_ARGUMENT (buf too small).
 */
TFL_API tfl_status tfl_ckpt_latest(tfl_ctx *ctx, const char *directory, const char *prefix,
                                   char *buf, size_t size, int64_t *step);

#ifdef __cplusplus
}
#endif
#endif /* TAPEFLOW_CHECKPOINT_H */
