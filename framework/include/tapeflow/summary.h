/*
 * tapeflow/summary.h: TensorBoard event files, written in C (no protobuf library); reading
 * them back is <tapeflow/events.h>.
 *
 *     tfl_summary_writer *w = tfl_summary_writer_new(ctx, "runs/mlp/train", NULL);
 *     tfl_summary_session_start(w, 1);               // a resumed run: its first step
 *     tfl_summary_scalar(w, "loss", 1, 0.25);
 *     tfl_summary_text(w, "config", 0, "epochs: 5");
 *     tfl_summary_writer_close(w);                   // flushes, closes, frees
 *
 * then `tensorboard --logdir runs`. The file is `<logdir>/events.out.tfevents.<unix seconds,
 * 10 digits>.<host>.<pid>` (".1", ".2", ... appended when that name exists): TFRecord
 * records (u64 length, masked CRC-32C of the length, an Event protobuf, masked CRC-32C of
 * the Event), starting with Event{file_version: "brain.Event:2"}. Every event carries
 * wall_time (seconds since the epoch, microseconds kept) and step.
 *  - scalars are Summary.Value.simple_value (float32): the form every reader (the Scalars
 *    dashboard, EventAccumulator, tbparse) lists as a scalar;
 *  - histograms are HistogramProto with TensorFlow's default bucket edges (±1e-12·1.1^k up
 *    to 1e20, 0 and ±DBL_MAX); runs of empty buckets are merged, as TensorFlow does;
 *  - text is a DT_STRING scalar tensor with plugin_data.plugin_name "text" (the Text tab,
 *    Markdown);
 *  - tfl_summary_session_start writes SessionLog{START}: TensorBoard then drops every point
 *    of the run's earlier files with a step >= that step (the first START of a run is
 *    ignored), so a resumed run draws no zig-zag.
 *
 * Durability: events are encoded into a buffer in memory and written (whole records) to the
 * file by tfl_summary_flush, by tfl_summary_writer_close, by a write that finds flush_secs
 * elapsed since the last flush, and when the buffer passes 1 MiB. A process that dies loses
 * at most what was written since the last flush. (A signal handler may not call the
 * library: stop training on SIGINT and close the writer, as the CLI does.)
 *
 * Writers belong to their context: those still open at tfl_ctx_free are closed with it.
 * One writer is used by one thread at a time.
 */
#ifndef TAPEFLOW_SUMMARY_H
#define TAPEFLOW_SUMMARY_H

#include <tapeflow/base.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tfl_summary_writer tfl_summary_writer;

/** The seconds between automatic flushes when opts give 0 (TensorFlow uses 120). */
#define TFL_SUMMARY_FLUSH_SECS 10.0

/** Options of tfl_summary_writer_new; all-zero (or NULL) means defaults. */
typedef struct tfl_summary_writer_opts {
    /* A write flushes when this many seconds passed since the last flush. 0: 10 s
     * (TFL_SUMMARY_FLUSH_SECS); < 0: never by time (explicit flushes and close only). */
    double flush_secs;
    /* Appended to the file name (TensorFlow's filename_suffix, e.g. ".v2"); NULL: none. */
    const char *filename_suffix;
    /* The wall clock, seconds since the Unix epoch (tests pin it); NULL: the real clock. */
    double (*clock)(void *user);
    void *clock_user;
} tfl_summary_writer_opts;

/**
 * Creates `logdir` (and its parents) when missing and a new event file in it, and writes
 * the file_version record (in the buffer: it reaches the file at the first flush).
 * Errors: INVALID_ARGUMENT (NULL or empty logdir, a NaN flush_secs), FAILED_PRECONDITION
 * (the directory or the file cannot be made, with the OS's reason), RESOURCE_EXHAUSTED.
 */
TFL_API tfl_summary_writer *tfl_summary_writer_new(tfl_ctx *ctx, const char *logdir,
                                                   const tfl_summary_writer_opts *opts);
/** The event file's path (owned by the writer); NULL for NULL. */
TFL_API const char *tfl_summary_writer_path(const tfl_summary_writer *w);

/** A scalar (stored as float32, TensorBoard's simple_value). Errors: INVALID_ARGUMENT (NULL
 * or empty tag), a flush's errors. A non-finite value is written as it is. */
TFL_API tfl_status tfl_summary_scalar(tfl_summary_writer *w, const char *tag, int64_t step,
                                      double value);
/** A histogram of n values (NaN and infinities are left out: num counts the finite ones).
 * Errors: INVALID_ARGUMENT (NULL tag or values with n > 0, n < 0). No finite value writes
 * an empty histogram (num 0). */
TFL_API tfl_status tfl_summary_histogram(tfl_summary_writer *w, const char *tag, int64_t step,
                                         const double *values, int64_t n);
/** A histogram of a float32 or float64 tensor's elements (copied to the host first).
 * Errors: as tfl_summary_histogram; UNIMPLEMENTED for another dtype (named). */
TFL_API tfl_status tfl_summary_histogram_tensor(tfl_summary_writer *w, const char *tag,
                                                int64_t step, const tfl_tensor *t);
/** A text (UTF-8, Markdown in TensorBoard's Text tab). Errors: INVALID_ARGUMENT (NULL). */
TFL_API tfl_status tfl_summary_text(tfl_summary_writer *w, const char *tag, int64_t step,
                                    const char *text);
/** SessionLog{status: START} at `step` (see above). */
TFL_API tfl_status tfl_summary_session_start(tfl_summary_writer *w, int64_t step);
/** Writes what is buffered to the file (fflush: the OS has it; no fsync). Errors:
 * FAILED_PRECONDITION naming the file and the OS's reason; after a failed write the writer
 * refuses further writes with the same error. */
TFL_API tfl_status tfl_summary_flush(tfl_summary_writer *w);
/** Flushes, closes the file and frees the writer (also when the flush fails: its status is
 * returned). NULL: TFL_OK. */
TFL_API tfl_status tfl_summary_writer_close(tfl_summary_writer *w);

/** Counters of a writer: records encoded, bytes written to the file, flushes done. */
typedef struct tfl_summary_stats {
    int64_t records, bytes_written, flushes;
    size_t buffered; /* bytes waiting for the next flush */
} tfl_summary_stats;
TFL_API tfl_summary_stats tfl_summary_writer_stats(const tfl_summary_writer *w);

/** SessionLog statuses (tfl_summary_session_start writes START; <tapeflow/events.h> reads
 * them all). */
#define TFL_SESSION_START 1
#define TFL_SESSION_STOP 2
#define TFL_SESSION_CHECKPOINT 3

#ifdef __cplusplus
}
#endif

#endif /* TAPEFLOW_SUMMARY_H */
