/*
 * tapeflow/events.h: reading TensorFlow event files (what <tapeflow/summary.h> writes, and
 * TensorBoard's own): records checked by their CRC-32C, events decoded into scalars,
 * histograms, text and session logs. Part of the run library (configs/), where the curves of
 * a run are drawn from them (<tapeflow/plot.h>).
 */
#ifndef TAPEFLOW_EVENTS_H
#define TAPEFLOW_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include <tapeflow/base.h>
#include <tapeflow/summary.h> /* TFL_SESSION_* */

#ifdef __cplusplus
extern "C" {
#endif

/** What one event (one Summary.Value of it, for summaries) holds. */
typedef enum tfl_event_kind {
    TFL_EVENT_FILE_VERSION = 1, /* text: "brain.Event:2" */
    TFL_EVENT_SCALAR,           /* value: simple_value, or a float/double/int tensor of one element */
    TFL_EVENT_HISTOGRAM,        /* histo: HistogramProto, or a [k, 3] tensor (left, right, count) */
    TFL_EVENT_TEXT,             /* text: a DT_STRING tensor's first string (plugin "text") */
    TFL_EVENT_SESSION_LOG,      /* session_status (1 START, 2 STOP, 3 CHECKPOINT), text: msg */
    TFL_EVENT_OTHER             /* anything else (graphs, images, metadata): tag may be set */
} tfl_event_kind;

/** A histogram: bucket i counts the values in (bucket_limit[i-1], bucket_limit[i]]. From a
 * [k, 3] tensor, sum and sum_squares are NaN (not recorded). */
typedef struct tfl_histogram {
    double min, max, num, sum, sum_squares;
    int64_t n_buckets;
    const double *bucket_limit, *bucket;
} tfl_histogram;

/** One decoded event. Pointers are owned by the reader and valid until its next call. */
typedef struct tfl_event {
    tfl_event_kind kind;
    double wall_time;
    int64_t step;
    const char *tag;        /* NUL-terminated; "" when none */
    const char *plugin;     /* the value's plugin_data.plugin_name; "" when none */
    double value;           /* SCALAR */
    const char *text;       /* TEXT, FILE_VERSION, SESSION_LOG (msg); NUL-terminated */
    size_t text_len;        /* (the text may hold NUL bytes) */
    int session_status;     /* SESSION_LOG */
    tfl_histogram histo;    /* HISTOGRAM */
    int64_t record;         /* the record's index in the file, 0-based */
    int64_t offset;         /* the record's byte offset in the file */
} tfl_event;

typedef struct tfl_event_reader tfl_event_reader;

/** The largest record a reader accepts (larger: DATA_LOSS). */
#define TFL_EVENT_MAX_RECORD (64 * 1024 * 1024)

/** Opens an event file. Errors: INVALID_ARGUMENT (NULL path), NOT_FOUND / FAILED_PRECONDITION
 * (cannot open, with the OS's reason). */
TFL_API tfl_event_reader *tfl_event_reader_open(tfl_ctx *ctx, const char *path);
/** Reads event records from memory (borrowed until the reader is closed). */
TFL_API tfl_event_reader *tfl_event_reader_from_memory(tfl_ctx *ctx, const void *data,
                                                       size_t n);
/**
 * The next event. Returns TFL_OK with *ev filled; TFL_OUT_OF_RANGE at the end of the
 * records (no error kept: a clean end, or a last record cut short, which
 * tfl_event_reader_truncated then reports); DATA_LOSS for a record whose length or data
 * fails its CRC-32C or whose protobuf is malformed (kept, naming the source, the record and
 * its offset). After DATA_LOSS the reader stays at the end.
 */
TFL_API tfl_status tfl_event_reader_next(tfl_event_reader *r, tfl_event *ev);
/** Bytes of a last record cut short (0: none), once next has returned OUT_OF_RANGE. */
TFL_API int64_t tfl_event_reader_truncated(const tfl_event_reader *r);
/** Closes and frees (NULL: no-op). */
TFL_API void tfl_event_reader_close(tfl_event_reader *r);

#ifdef __cplusplus
}
#endif

#endif /* TAPEFLOW_EVENTS_H */
