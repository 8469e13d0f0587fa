/*
 * layers/dataset_corpus.c: a mapped text corpus (dataset_internal.h's struct tfl__ds_text):
 * its windows of token ids, its vocabulary and its unmapping, what batching (dataset.c) reads.
 * The corpus is made by its loader, tfl_dataset_from_text (dataset_text.c). It calls no
 * other file of layers/.
 */
#include "dataset_internal.h"

#include <string.h>
#include <sys/mman.h>

void tfl__ds_text_free(struct tfl__ds_text *t)
{
    if (!t) return;
    for (int i = 0; i < t->nseg; i++)
        if (t->seg[i].p) munmap((void *)(uintptr_t)t->seg[i].p, (size_t)t->seg[i].len);
    tfl__host_free(t->ctx, t->seg);
    tfl__host_free(t->ctx, t);
}

int tfl__ds_text_vocab(const struct tfl__ds_text *t, uint8_t *bytes)
{
    if (bytes) memcpy(bytes, t->vocab, (size_t)t->nvocab);
    return t->nvocab;
}

/* Copies corpus bytes [pos, pos + len) into dst, across files. */
static void corpus_copy(const struct tfl__ds_text *t, int64_t pos, int64_t len, uint8_t *dst)
{
    int lo = 0, hi = t->nseg - 1; /* the last file starting at or before pos */
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (t->seg[mid].off <= pos)
            lo = mid;
        else
            hi = mid - 1;
    }
    for (int i = lo; len > 0 && i < t->nseg; i++) {
        int64_t at = pos - t->seg[i].off, n = t->seg[i].len - at;
        if (n > len) n = len;
        memcpy(dst, t->seg[i].p + at, (size_t)n);
        dst += n;
        pos += n;
        len -= n;
    }
}

void tfl__ds_text_window(const struct tfl__ds_text *t, int64_t ex, uint8_t *scratch, int32_t *x,
                         int32_t *y)
{
    const int64_t c = t->context;
    corpus_copy(t, t->base + ex * t->stride, c + 1, scratch);
    for (int64_t j = 0; j < c; j++)
        x[j] = t->id[scratch[j]];
    if (y)
        for (int64_t j = 0; j < c; j++)
            y[j] = t->id[scratch[j + 1]];
}
