/*
 * test_crc32c.c: CRC-32C against known answers (RFC 3720's test vectors, the classic
 * "123456789" check value, TensorFlow's masked form), incremental use, the path picked for
 * the CPU, and every hardware path (one stream; three streams joined by a carry-less
 * multiply) held to the table at every length class and alignment. White-box: the CRC
 * is private to the library (checkpoints and event files use it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "io/crc32c.h"

#include <stdlib.h>
#include <string.h>

static void known_answers(void **state)
{
    (void)state;
    assert_int_equal(tfl__crc32c(0, "", 0), 0u);
    assert_int_equal(tfl__crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(tfl__crc32c(0, "a", 1), 0xc1d04330u);
    unsigned char buf[32];
    memset(buf, 0, sizeof buf); /* RFC 3720 B.4: 32 bytes of zeros */
    assert_int_equal(tfl__crc32c(0, buf, 32), 0x8a9136aau);
    memset(buf, 0xff, sizeof buf); /* 32 bytes of ones */
    assert_int_equal(tfl__crc32c(0, buf, 32), 0x62a8ab43u);
    for (int i = 0; i < 32; i++) buf[i] = (unsigned char)i; /* incrementing */
    assert_int_equal(tfl__crc32c(0, buf, 32), 0x46dd794eu);
    for (int i = 0; i < 32; i++) buf[i] = (unsigned char)(31 - i); /* decrementing */
    assert_int_equal(tfl__crc32c(0, buf, 32), 0x113fdb5cu);
    /* the same through the table alone */
    assert_int_equal(tfl__crc32c_portable(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(tfl__crc32c_portable(0, buf, 32), 0x113fdb5cu);
}

static void masked_form(void **state)
{
    (void)state;
    /* TensorFlow: Mask(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8 */
    uint32_t crc = 0xe3069283u;
    uint32_t want = ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
    assert_int_equal(tfl__crc32c_mask(crc), want);
    assert_int_equal(tfl__crc32c_unmask(tfl__crc32c_mask(crc)), crc);
    /* a TFRecord length header: the masked CRC of 8 zero bytes (length 0) */
    unsigned char zero8[8] = {0};
    assert_int_equal(tfl__crc32c_unmask(tfl__crc32c_mask(tfl__crc32c(0, zero8, 8))),
                     tfl__crc32c(0, zero8, 8));
}

static void incremental_and_paths_agree(void **state)
{
    (void)state;
    enum { N = 1000 };
    unsigned char data[N + 16];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof data; i++) {
        x = x * 1103515245u + 12345u;
        data[i] = (unsigned char)(x >> 16);
    }
    for (size_t off = 0; off < 16; off++) {
        for (size_t n = 0; n <= 80; n++) {
            uint32_t a = tfl__crc32c(0, data + off, n);
            assert_int_equal(a, tfl__crc32c_portable(0, data + off, n));
        }
        uint32_t whole = tfl__crc32c(0, data + off, N);
        assert_int_equal(whole, tfl__crc32c_portable(0, data + off, N));
        for (size_t cut = 0; cut <= N; cut += 37) {
            uint32_t c = tfl__crc32c(0, data + off, cut);
            assert_int_equal(tfl__crc32c(c, data + off + cut, N - cut), whole);
            uint32_t p = tfl__crc32c_portable(0, data + off, cut);
            assert_int_equal(tfl__crc32c_portable(p, data + off + cut, N - cut), whole);
        }
    }
}

/* The path tfl__crc32c takes follows the CPU's features. */
static void path_follows_cpu(void **state)
{
    (void)state;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    int want = !__builtin_cpu_supports("sse4.2")  ? 0
               : __builtin_cpu_supports("pclmul") ? 2
                                                  : 1;
    assert_int_equal(tfl__crc32c_hw(), want);
#else
    assert_int_equal(tfl__crc32c_hw(), 0);
#endif
}

static uint32_t lcg(uint32_t *x)
{
    *x = *x * 1664525u + 1013904223u;
    return *x >> 8;
}

/* Every path this CPU has, held to the table on lengths around the three-stream blocks
 * (3 x 256 and 3 x 8192 bytes: below, at, above, several of them), random lengths up to
 * 100,000, every start alignment, a non-zero starting CRC, and splits at random points. */
static void fast_paths_agree_with_table(void **state)
{
    (void)state;
    enum { CAP = 100000 + 64 };
    unsigned char *data = malloc(CAP);
    assert_non_null(data);
    uint32_t x = 987654321u;
    for (size_t i = 0; i < CAP; i++) data[i] = (unsigned char)lcg(&x);
    size_t edges[] = {0,     1,     7,     8,     9,     255,   256,   767,   768,
                      769,   775,   1536,  1537,  8191,  8192,  24575, 24576, 24577,
                      25343, 25344, 25345, 49152, 50697, 73731, 99999, 100000};
    int top = tfl__crc32c_hw();
    for (int which = 1; which <= top; which++) {
        for (size_t e = 0; e < sizeof edges / sizeof *edges; e++)
            for (size_t off = 0; off < 16; off++) {
                size_t n = edges[e];
                assert_int_equal(tfl__crc32c_path(which, 0, data + off, n),
                                 tfl__crc32c_portable(0, data + off, n));
                assert_int_equal(tfl__crc32c_path(which, 0xdeadbeefu, data + off, n),
                                 tfl__crc32c_portable(0xdeadbeefu, data + off, n));
            }
        for (int r = 0; r < 300; r++) {
            size_t off = lcg(&x) % 64, n = lcg(&x) % 100001;
            uint32_t want = tfl__crc32c_portable(0, data + off, n);
            assert_int_equal(tfl__crc32c_path(which, 0, data + off, n), want);
            size_t cut = n ? lcg(&x) % (n + 1) : 0;
            uint32_t c = tfl__crc32c_path(which, 0, data + off, cut);
            assert_int_equal(tfl__crc32c_path(which, c, data + off + cut, n - cut), want);
        }
        /* all zeros and all ones: the joined streams see the same words */
        memset(data, 0, 30000);
        assert_int_equal(tfl__crc32c_path(which, 0, data, 30000),
                         tfl__crc32c_portable(0, data, 30000));
        memset(data, 0xff, 30000);
        assert_int_equal(tfl__crc32c_path(which, 0, data, 30000),
                         tfl__crc32c_portable(0, data, 30000));
        for (size_t i = 0; i < 30000; i++) data[i] = (unsigned char)lcg(&x);
    }
    /* the public entry is the fastest path */
    assert_int_equal(tfl__crc32c(7u, data + 3, 54321),
                     tfl__crc32c_path(top, 7u, data + 3, 54321));
    /* a path the CPU lacks (or no such path) runs the table */
    assert_int_equal(tfl__crc32c_path(99, 0, data, 1000), tfl__crc32c_portable(0, data, 1000));
    free(data);
}

/* The lane test, by definition: some whole 8-byte word, read little-endian, has a lane of
 * `bits` bits with every bit of mask set. */
static int lanes_ref(const unsigned char *p, size_t n, uint64_t mask, unsigned bits)
{
    uint64_t lane = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t w = 0;
        for (int k = 0; k < 8; k++)
            w |= (uint64_t)p[i + k] << (8 * k);
        for (unsigned at = 0; at < 64; at += bits)
            if ((((w & mask) >> at) & lane) == ((mask >> at) & lane)) return 1;
    }
    return 0;
}

/* tfl__crc32c_flag on every path: the CRC is the table's, and the flag is set exactly when
 * an exponent of all ones (float32, float64, float16, bfloat16) lies in a whole word, found
 * in each of the three streams, in the last whole word, on every lane, and not in the tail. */
static void crc_with_lane_test(void **state)
{
    (void)state;
    enum { CAP = 80000 };
    struct {
        uint64_t mask;
        unsigned bits;
    } kinds[] = {{0x7f8000007f800000u, 32},
                 {0x7ff0000000000000u, 64},
                 {0x7c007c007c007c00u, 16},
                 {0x7f807f807f807f80u, 16}};
    unsigned char *data = malloc(CAP);
    assert_non_null(data);
    uint32_t x = 55555u;
    int top = tfl__crc32c_hw();
    for (int which = 0; which <= top; which++)
        for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
            uint64_t mask = kinds[k].mask;
            unsigned bits = kinds[k].bits;
            for (int r = 0; r < 60; r++) {
                /* finite values: each lane's exponent one short of all ones at most */
                for (size_t i = 0; i + 8 <= CAP; i += 8) {
                    uint64_t w = ((uint64_t)lcg(&x) << 40) ^ ((uint64_t)lcg(&x) << 16) ^ lcg(&x);
                    uint64_t lane = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
                    for (unsigned at = 0; at < 64; at += bits) {
                        uint64_t lm = (mask >> at) & lane;
                        if (((w >> at) & lm) == lm) w &= ~((lm & (0 - lm)) << at);
                    }
                    memcpy(data + i, &w, 8);
                }
                size_t n = r < 4 ? (size_t[]){0, 8, 24576, 3 * 24576 + 13}[r]
                                 : lcg(&x) % (CAP - 8) + 1;
                n &= ~(size_t)((bits / 8) - 1); /* whole lanes, as the writer passes */
                if (r % 3 != 0 && n >= 8) {
                    /* plant one all-ones exponent: anywhere, or the last whole word, or the
                     * tail, which is not tested */
                    size_t word = r % 3 == 1 ? (size_t)lcg(&x) % (n / 8) : n / 8 - 1;
                    unsigned at = (unsigned)(lcg(&x) % (64 / bits)) * bits;
                    uint64_t w;
                    memcpy(&w, data + 8 * word, 8);
                    w |= mask & ((bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1) << at);
                    memcpy(data + 8 * word, &w, 8);
                }
                if (r % 7 == 6 && n % 8 >= bits / 8 && n % 8) {
                    size_t t = n - n % 8; /* a NaN in the tail only */
                    memset(data + t, 0xff, n % 8);
                }
                uint64_t flag = 12345;
                uint32_t crc = tfl__crc32c_flag_path(which, 0x1234u, data, n, mask, bits, &flag);
                assert_int_equal(crc, tfl__crc32c_portable(0x1234u, data, n));
                assert_int_equal(flag != 0, lanes_ref(data, n, mask, bits));
            }
        }
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(known_answers),
        cmocka_unit_test(masked_form),
        cmocka_unit_test(incremental_and_paths_agree),
        cmocka_unit_test(path_follows_cpu),
        cmocka_unit_test(fast_paths_agree_with_table),
        cmocka_unit_test(crc_with_lane_test),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
