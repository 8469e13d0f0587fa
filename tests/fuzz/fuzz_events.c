/* fuzz_events.c: libFuzzer harness of the TensorBoard event-file reader (tapeflow/events.h).
 * The input is
 *   [flags: 1 byte] [the file's bytes]
 * flags bit 0: read through a file (memfd, tfl_event_reader_open) instead of from memory.
 * Every event is read to the end; the contract checked after each input: an event's strings
 * are set and readable, a histogram's arrays hold n_buckets readable numbers, the end is
 * OUT_OF_RANGE with no error kept (a cut last record reported by
 * tfl_event_reader_truncated, at most the bytes given) or DATA_LOSS kept, naming the source
 * and the record; nothing leaks. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t flags = data[0];
    data++;
    size--;
    tfl_ctx *ctx = fuzz_ctx();
    char path[64];
    int fd = -1;
    tfl_event_reader *r;
    if (flags & 1) {
        fd = fuzz_file("events", data, size, path, sizeof path);
        r = tfl_event_reader_open(ctx, path);
    } else {
        r = tfl_event_reader_from_memory(ctx, data, size);
    }
    if (!r) abort();
    tfl_event ev;
    tfl_status st;
    volatile double sink = 0;
    int64_t events = 0;
    while ((st = tfl_event_reader_next(r, &ev)) == TFL_OK) {
        if (ev.kind < TFL_EVENT_FILE_VERSION || ev.kind > TFL_EVENT_OTHER) abort();
        if (!ev.tag || !ev.plugin || !ev.text) abort();
        sink += (double)strlen(ev.tag) + (double)strlen(ev.plugin) + (double)ev.text_len;
        if (ev.text_len && ev.text[ev.text_len] != 0) abort(); /* NUL-terminated */
        if (ev.kind == TFL_EVENT_HISTOGRAM) {
            if (ev.histo.n_buckets < 0) abort();
            for (int64_t i = 0; i < ev.histo.n_buckets; i++)
                sink += ev.histo.bucket_limit[i] + ev.histo.bucket[i];
        }
        if (ev.record < 0 || ev.offset < 0 || (uint64_t)ev.offset >= size) abort();
        events++;
    }
    tfl_error e = tfl_ctx_error(ctx);
    if (st == TFL_OUT_OF_RANGE) {
        if (e.code != TFL_OK) abort();
        int64_t cut = tfl_event_reader_truncated(r);
        if (cut < 0 || (uint64_t)cut > size) abort();
    } else if (st == TFL_DATA_LOSS) {
        if (e.code != TFL_DATA_LOSS || !strstr(e.message, "event file '") ||
            !strstr(e.message, "record ")) abort();
    } else if (st != TFL_RESOURCE_EXHAUSTED) {
        abort();
    }
    (void)tfl_event_reader_next(r, &ev); /* after the end: the end again, no crash */
    tfl_event_reader_close(r);
    if (fd >= 0) close(fd);
    tfl_ctx_clear_error(ctx);
    (void)sink;
    (void)events;
    return 0;
}
