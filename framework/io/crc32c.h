/*
 * framework/io/crc32c.h: CRC-32C (Castagnoli), the checksum of safetensors checkpoints'
 * per-tensor CRCs and of TFRecord framing in TensorBoard event files. Private to tapeflow.
 */
#ifndef TFL_IO_CRC32C_H
#define TFL_IO_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/**
 * Extends `crc` (0 to start) over n bytes: tfl__crc32c(tfl__crc32c(0, a, n), b, m) is the CRC
 * of a followed by b. Picks the fastest path this CPU has (checked at run time): the SSE 4.2
 * crc32 instruction on three interleaved streams joined with a carry-less multiply
 * (PCLMULQDQ), the crc32 instruction on one stream, or a byte table.
 */
uint32_t tfl__crc32c(uint32_t crc, const void *data, size_t n);
/** The portable path alone (tests hold the paths to each other). */
uint32_t tfl__crc32c_portable(uint32_t crc, const void *data, size_t n);
/** The path tfl__crc32c takes on this CPU: 2 three streams (SSE 4.2 and PCLMULQDQ), 1 the
 * crc32 instruction on one stream (SSE 4.2 alone), 0 the table. */
int tfl__crc32c_hw(void);
/** One path by its number (as tfl__crc32c_hw counts them), for tests; a path the CPU lacks
 * runs the table. */
uint32_t tfl__crc32c_path(int which, uint32_t crc, const void *data, size_t n);

/**
 * tfl__crc32c and, in the same pass, a test of every whole 8-byte word of data (read
 * little-endian, from data on; a tail of n % 8 bytes is CRC'd, not tested) split in lanes of
 * `bits` bits (16, 32 or 64): *flag is non-zero when some lane has every bit of `mask` set,
 * 0 when none has. `mask` repeats one lane's pattern and leaves out each lane's top bit (a
 * float's exponent, whose all-ones is a NaN or an Inf). One read of the data for the
 * checkpoint writer's CRC and its non-finite guard.
 */
uint32_t tfl__crc32c_flag(uint32_t crc, const void *data, size_t n, uint64_t mask,
                          unsigned bits, uint64_t *flag);
/** One path of it by number, as tfl__crc32c_path (for tests). */
uint32_t tfl__crc32c_flag_path(int which, uint32_t crc, const void *data, size_t n,
                               uint64_t mask, unsigned bits, uint64_t *flag);

/** TFRecord's masked CRC: rotate right by 15 bits and add a constant (TensorFlow's
 * crc32c::Mask), so that a CRC of data holding CRCs is not degenerate. */
static inline uint32_t tfl__crc32c_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
static inline uint32_t tfl__crc32c_unmask(uint32_t masked)
{
    uint32_t rot = masked - 0xa282ead8u;
    return (rot >> 17) | (rot << 15);
}

#endif /* TFL_IO_CRC32C_H */
