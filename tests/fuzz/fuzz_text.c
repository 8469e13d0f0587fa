/* fuzz_text.c: libFuzzer harness of tfl_dataset_from_text. The input is
 *   [flags: 1 byte] [the file's bytes]
 * flags bits 0-2: context_length - 1 (1..8), bit 3: chars (else bytes), bits 4-5: the stride
 * (0: the context length, else 1..3), bits 6-7: the subset (0: all, 1: training, 2:
 * validation, 3: training) with validation_split 0.3. The file lives in memory (memfd) and is
 * mapped as a file on disk would be. A load must succeed or fail with an error kept (damaged
 * or binary data naming the file); its first batch is read; nothing leaks. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t flags = data[0];
    data++;
    size--;
    int subset = (flags >> 6) & 3;
    tfl_text_opts opts = {.context_length = 1 + (flags & 7),
                          .tokens = flags & 8 ? TFL_TEXT_CHARS : TFL_TEXT_BYTES,
                          .stride = (flags >> 4) & 3,
                          .subset = subset == 3 ? TFL_TEXT_TRAINING : (tfl_text_subset)subset,
                          .validation_split = subset ? 0.3 : 0.0};
    char path[64];
    int fd = fuzz_file("text", data, size, path, sizeof path);
    tfl_ctx *ctx = fuzz_ctx();
    tfl_dataset *ds = tfl_dataset_from_text(ctx, path, &opts);
    if (ds) { /* the ids are in the vocabulary */
        uint8_t vocab[256];
        int v = tfl_dataset_text_vocab(ds, vocab);
        if (v < 1 || v > 256 || tfl_dataset_num_classes(ds) != v) abort();
    }
    fuzz_consume(ctx, ds);
    close(fd);
    return 0;
}
