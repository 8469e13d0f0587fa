/*
 * tests/cli/events_dump.c: prints every event of an event file, one per line, through the
 * library's reader, for the CLI checks (check_tensorboard.sh):
 *     scalar STEP TAG VALUE | text STEP TAG | histogram STEP TAG NUM | session STEP STATUS
 *     | version STEP TEXT | other STEP TAG
 * then "end RECORDS truncated BYTES". Exit 1 (message on stderr) when the file cannot be
 * read or a record is damaged.
 */
#include <tapeflow/tapeflow.h>

#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: events_dump EVENT_FILE\n");
        return 2;
    }
    tfl_status st;
    tfl_ctx *ctx = tfl_ctx_new(NULL, &st);
    if (!ctx) return 1;
    tfl_event_reader *r = tfl_event_reader_open(ctx, argv[1]);
    int64_t n = 0;
    tfl_event ev;
    while (r && (st = tfl_event_reader_next(r, &ev)) == TFL_OK) {
        n++;
        long long s = (long long)ev.step;
        switch (ev.kind) {
        case TFL_EVENT_SCALAR:
            printf("scalar %lld %s %.9g\n", s, ev.tag, ev.value);
            break;
        case TFL_EVENT_TEXT:
            printf("text %lld %s\n", s, ev.tag);
            break;
        case TFL_EVENT_HISTOGRAM:
            printf("histogram %lld %s %.0f\n", s, ev.tag, ev.histo.num);
            break;
        case TFL_EVENT_SESSION_LOG:
            printf("session %lld %d\n", s, ev.session_status);
            break;
        case TFL_EVENT_FILE_VERSION:
            printf("version %lld %s\n", s, ev.text);
            break;
        default:
            printf("other %lld %s\n", s, ev.tag);
            break;
        }
    }
    int code = 0;
    if (!r || st != TFL_OUT_OF_RANGE) {
        fprintf(stderr, "events_dump: %s: %s\n", argv[1], tfl_ctx_error(ctx).message);
        code = 1;
    } else {
        printf("end %lld truncated %lld\n", (long long)n, (long long)tfl_event_reader_truncated(r));
    }
    tfl_event_reader_close(r);
    tfl_ctx_free(ctx);
    return code;
}
