/*
 * framework/io/crc32c.c: CRC-32C (polynomial 0x1EDC6F41, reflected 0x82F63B78), as in
 * RFC 3720 and TensorFlow's crc32c. Debian has no C library for it; the x86-64 crc32
 * instruction computes exactly this polynomial, and a byte table covers other CPUs.
 */
#include "crc32c.h"

#include <string.h>

/* table[b]: the CRC register after shifting byte b through it (reflected, no final xor) */
static const uint32_t table[256] = {
    0x00000000u, 0xf26b8303u, 0xe13b70f7u, 0x1350f3f4u, 0xc79a971fu, 0x35f1141cu,
    0x26a1e7e8u, 0xd4ca64ebu, 0x8ad958cfu, 0x78b2dbccu, 0x6be22838u, 0x9989ab3bu,
    0x4d43cfd0u, 0xbf284cd3u, 0xac78bf27u, 0x5e133c24u, 0x105ec76fu, 0xe235446cu,
    0xf165b798u, 0x030e349bu, 0xd7c45070u, 0x25afd373u, 0x36ff2087u, 0xc494a384u,
    0x9a879fa0u, 0x68ec1ca3u, 0x7bbcef57u, 0x89d76c54u, 0x5d1d08bfu, 0xaf768bbcu,
    0xbc267848u, 0x4e4dfb4bu, 0x20bd8edeu, 0xd2d60dddu, 0xc186fe29u, 0x33ed7d2au,
    0xe72719c1u, 0x154c9ac2u, 0x061c6936u, 0xf477ea35u, 0xaa64d611u, 0x580f5512u,
    0x4b5fa6e6u, 0xb93425e5u, 0x6dfe410eu, 0x9f95c20du, 0x8cc531f9u, 0x7eaeb2fau,
    0x30e349b1u, 0xc288cab2u, 0xd1d83946u, 0x23b3ba45u, 0xf779deaeu, 0x05125dadu,
    0x1642ae59u, 0xe4292d5au, 0xba3a117eu, 0x4851927du, 0x5b016189u, 0xa96ae28au,
    0x7da08661u, 0x8fcb0562u, 0x9c9bf696u, 0x6ef07595u, 0x417b1dbcu, 0xb3109ebfu,
    0xa0406d4bu, 0x522bee48u, 0x86e18aa3u, 0x748a09a0u, 0x67dafa54u, 0x95b17957u,
    0xcba24573u, 0x39c9c670u, 0x2a993584u, 0xd8f2b687u, 0x0c38d26cu, 0xfe53516fu,
    0xed03a29bu, 0x1f682198u, 0x5125dad3u, 0xa34e59d0u, 0xb01eaa24u, 0x42752927u,
    0x96bf4dccu, 0x64d4cecfu, 0x77843d3bu, 0x85efbe38u, 0xdbfc821cu, 0x2997011fu,
    0x3ac7f2ebu, 0xc8ac71e8u, 0x1c661503u, 0xee0d9600u, 0xfd5d65f4u, 0x0f36e6f7u,
    0x61c69362u, 0x93ad1061u, 0x80fde395u, 0x72966096u, 0xa65c047du, 0x5437877eu,
    0x4767748au, 0xb50cf789u, 0xeb1fcbadu, 0x197448aeu, 0x0a24bb5au, 0xf84f3859u,
    0x2c855cb2u, 0xdeeedfb1u, 0xcdbe2c45u, 0x3fd5af46u, 0x7198540du, 0x83f3d70eu,
    0x90a324fau, 0x62c8a7f9u, 0xb602c312u, 0x44694011u, 0x5739b3e5u, 0xa55230e6u,
    0xfb410cc2u, 0x092a8fc1u, 0x1a7a7c35u, 0xe811ff36u, 0x3cdb9bddu, 0xceb018deu,
    0xdde0eb2au, 0x2f8b6829u, 0x82f63b78u, 0x709db87bu, 0x63cd4b8fu, 0x91a6c88cu,
    0x456cac67u, 0xb7072f64u, 0xa457dc90u, 0x563c5f93u, 0x082f63b7u, 0xfa44e0b4u,
    0xe9141340u, 0x1b7f9043u, 0xcfb5f4a8u, 0x3dde77abu, 0x2e8e845fu, 0xdce5075cu,
    0x92a8fc17u, 0x60c37f14u, 0x73938ce0u, 0x81f80fe3u, 0x55326b08u, 0xa759e80bu,
    0xb4091bffu, 0x466298fcu, 0x1871a4d8u, 0xea1a27dbu, 0xf94ad42fu, 0x0b21572cu,
    0xdfeb33c7u, 0x2d80b0c4u, 0x3ed04330u, 0xccbbc033u, 0xa24bb5a6u, 0x502036a5u,
    0x4370c551u, 0xb11b4652u, 0x65d122b9u, 0x97baa1bau, 0x84ea524eu, 0x7681d14du,
    0x2892ed69u, 0xdaf96e6au, 0xc9a99d9eu, 0x3bc21e9du, 0xef087a76u, 0x1d63f975u,
    0x0e330a81u, 0xfc588982u, 0xb21572c9u, 0x407ef1cau, 0x532e023eu, 0xa145813du,
    0x758fe5d6u, 0x87e466d5u, 0x94b49521u, 0x66df1622u, 0x38cc2a06u, 0xcaa7a905u,
    0xd9f75af1u, 0x2b9cd9f2u, 0xff56bd19u, 0x0d3d3e1au, 0x1e6dcdeeu, 0xec064eedu,
    0xc38d26c4u, 0x31e6a5c7u, 0x22b65633u, 0xd0ddd530u, 0x0417b1dbu, 0xf67c32d8u,
    0xe52cc12cu, 0x1747422fu, 0x49547e0bu, 0xbb3ffd08u, 0xa86f0efcu, 0x5a048dffu,
    0x8ecee914u, 0x7ca56a17u, 0x6ff599e3u, 0x9d9e1ae0u, 0xd3d3e1abu, 0x21b862a8u,
    0x32e8915cu, 0xc083125fu, 0x144976b4u, 0xe622f5b7u, 0xf5720643u, 0x07198540u,
    0x590ab964u, 0xab613a67u, 0xb831c993u, 0x4a5a4a90u, 0x9e902e7bu, 0x6cfbad78u,
    0x7fab5e8cu, 0x8dc0dd8fu, 0xe330a81au, 0x115b2b19u, 0x020bd8edu, 0xf0605beeu,
    0x24aa3f05u, 0xd6c1bc06u, 0xc5914ff2u, 0x37faccf1u, 0x69e9f0d5u, 0x9b8273d6u,
    0x88d28022u, 0x7ab90321u, 0xae7367cau, 0x5c18e4c9u, 0x4f48173du, 0xbd23943eu,
    0xf36e6f75u, 0x0105ec76u, 0x12551f82u, 0xe03e9c81u, 0x34f4f86au, 0xc69f7b69u,
    0xd5cf889du, 0x27a40b9eu, 0x79b737bau, 0x8bdcb4b9u, 0x988c474du, 0x6ae7c44eu,
    0xbe2da0a5u, 0x4c4623a6u, 0x5f16d052u, 0xad7d5351u,
};

uint32_t tfl__crc32c_portable(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) crc = table[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
    return ~crc;
}

/* The lane test of tfl__crc32c_flag: for lanes of `bits` bits (16, 32, 64) whose top bit is
 * not in `mask`, ((mask & ~w) - low) & high has a lane's top bit set when that lane of w has
 * every bit of mask set (its masked complement is 0 and borrows), and none when no lane has
 * (a lane that does not borrow stays below its top bit; only a lane already found can borrow
 * from the one above it). */
static inline uint64_t lane_hits(uint64_t w, uint64_t mask, uint64_t low, uint64_t high)
{
    return ((mask & ~w) - low) & high;
}

static uint64_t lane_low(unsigned bits)
{
    return bits == 64 ? 1u : bits == 32 ? 0x0000000100000001u : 0x0001000100010001u;
}

/* The lane test alone, over the whole 8-byte words of data (little-endian). */
static uint64_t flag_words(const void *data, size_t n, uint64_t mask, unsigned bits)
{
    const uint64_t low = lane_low(bits), high = low << (bits - 1);
    const unsigned char *p = data;
    uint64_t hit = 0;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t w = 0;
        for (int k = 0; k < 8; k++)
            w |= (uint64_t)p[i + k] << (8 * k);
        hit |= lane_hits(w, mask, low, high);
    }
    return hit;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#include <smmintrin.h>
#include <wmmintrin.h>

/* One stream: eight bytes a step; the head up to 8-byte alignment and the tail a byte at a
 * time. `c` is the register (already inverted). */
__attribute__((target("sse4.2"))) static uint64_t stream1(uint64_t c, const unsigned char *p,
                                                           size_t n)
{
    while (n > 0 && ((uintptr_t)p & 7u) != 0) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
    }
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, sizeof w);
        c = _mm_crc32_u64(c, w);
    }
    while (n-- > 0) c = _mm_crc32_u8((uint32_t)c, *p++);
    return c;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const void *data,
                                                               size_t n)
{
    return ~(uint32_t)stream1(~crc, data, n);
}

/*
 * Three streams. The crc32 instruction takes 3 cycles and issues every cycle, so one stream
 * runs at a third of its speed: a block of 3 x L bytes is split into three runs of L bytes,
 * each with its own register (the first continues the CRC, the others start at 0), and the
 * three are joined. The register is linear: running L zero bytes through register r gives
 * r * x^(8L) mod P, so the block's register is ra * x^(16L) + rb * x^(8L) + rc (mod P).
 *
 * shift(r, k) = r * x^(8L) mod P with k = x^(8L-33) mod P (bit-reflected, as the registers
 * are): the carry-less product of two reflected 32-bit values is the reflected 64-bit product
 * times x, and crc32 over 64 bits from register 0 multiplies by x^32 and reduces, so
 * crc32_u64(0, clmul(r, k)) = r * x^(8L-33) * x^33 mod P.
 */
enum { LONG = 8192, SHORT = 256 };
/* x^(8L-33) mod P, reflected, for L = LONG, 2*LONG, SHORT, 2*SHORT */
static const uint64_t K_LONG = 0x54a86326u, K_LONG2 = 0x1dc403ccu;
static const uint64_t K_SHORT = 0xb9e02b86u, K_SHORT2 = 0xdd7e3b0cu;

__attribute__((target("sse4.2,pclmul"))) static inline uint64_t shift(uint64_t r, uint64_t k)
{
    __m128i p = _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)r),
                                     _mm_cvtsi64_si128((long long)k), 0x00);
    return _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(p));
}

__attribute__((target("sse4.2,pclmul"))) static inline uint64_t
blocks3(uint64_t c, const unsigned char **pp, size_t *np, size_t len, uint64_t k1, uint64_t k2)
{
    const unsigned char *p = *pp;
    size_t n = *np;
    while (n >= 3 * len) {
        uint64_t a = c, b = 0, d = 0;
        const unsigned char *e = p + len;
        for (; p < e; p += 8) {
            uint64_t wa, wb, wd;
            memcpy(&wa, p, 8);
            memcpy(&wb, p + len, 8);
            memcpy(&wd, p + 2 * len, 8);
            a = _mm_crc32_u64(a, wa);
            b = _mm_crc32_u64(b, wb);
            d = _mm_crc32_u64(d, wd);
        }
        c = shift(a, k2) ^ shift(b, k1) ^ d;
        p += 2 * len;
        n -= 3 * len;
    }
    *pp = p;
    *np = n;
    return c;
}

__attribute__((target("sse4.2,pclmul"))) static uint32_t crc32c_sse42x3(uint32_t crc,
                                                                        const void *data,
                                                                        size_t n)
{
    const unsigned char *p = data;
    uint64_t c = ~crc;
    while (n > 0 && ((uintptr_t)p & 7u) != 0) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
    }
    c = blocks3(c, &p, &n, LONG, K_LONG, K_LONG2);
    c = blocks3(c, &p, &n, SHORT, K_SHORT, K_SHORT2);
    return ~(uint32_t)stream1(c, p, n);
}

/* The lane test on 16 bytes with SSE: a lane of v & mask equal to mask compares equal. */
__attribute__((target("sse4.2"), always_inline)) static inline __m128i
lanes_eq(__m128i v, __m128i m, unsigned bits)
{
    __m128i t = _mm_and_si128(v, m);
    return bits == 16 ? _mm_cmpeq_epi16(t, m)
           : bits == 32 ? _mm_cmpeq_epi32(t, m)
                        : _mm_cmpeq_epi64(t, m);
}

/* Three CRC streams, and the lane test on the vector units beside them (the crc32
 * instruction and the vector compares use different execution ports). */
__attribute__((target("sse4.2,pclmul"), always_inline)) static inline uint32_t
flag_x3(uint32_t crc, const void *data, size_t n, uint64_t mask, unsigned bits, uint64_t *flag)
{
    const __m128i m = _mm_set1_epi64x((long long)mask);
    const unsigned char *p = data;
    uint64_t c = ~crc;
    __m128i hit = _mm_setzero_si128();
    while (n >= 3 * (size_t)LONG) {
        uint64_t a = c, b = 0, d = 0;
        __m128i ha = _mm_setzero_si128(), hb = ha, hd = ha;
        const unsigned char *e = p + LONG;
        for (; p < e; p += 16) {
            uint64_t wa[2], wb[2], wd[2];
            memcpy(wa, p, 16);
            memcpy(wb, p + LONG, 16);
            memcpy(wd, p + 2 * LONG, 16);
            a = _mm_crc32_u64(a, wa[0]);
            b = _mm_crc32_u64(b, wb[0]);
            d = _mm_crc32_u64(d, wd[0]);
            a = _mm_crc32_u64(a, wa[1]);
            b = _mm_crc32_u64(b, wb[1]);
            d = _mm_crc32_u64(d, wd[1]);
            ha = _mm_or_si128(ha, lanes_eq(_mm_loadu_si128((const __m128i *)p), m, bits));
            hb = _mm_or_si128(hb, lanes_eq(_mm_loadu_si128((const __m128i *)(p + LONG)), m, bits));
            hd = _mm_or_si128(hd,
                              lanes_eq(_mm_loadu_si128((const __m128i *)(p + 2 * LONG)), m, bits));
        }
        c = shift(a, K_LONG2) ^ shift(b, K_LONG) ^ d;
        hit = _mm_or_si128(hit, _mm_or_si128(ha, _mm_or_si128(hb, hd)));
        p += 2 * LONG;
        n -= 3 * (size_t)LONG;
    }
    uint64_t h = (uint64_t)_mm_cvtsi128_si64(hit) | (uint64_t)_mm_extract_epi64(hit, 1);
    const uint64_t low = lane_low(bits), high = low << (bits - 1);
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        h |= lane_hits(w, mask, low, high);
    }
    *flag = h;
    return ~(uint32_t)stream1(c, p, n); /* the tail: CRC'd, not tested */
}

__attribute__((target("sse4.2,pclmul"))) static uint32_t
crc32c_flag_x3(uint32_t crc, const void *data, size_t n, uint64_t mask, unsigned bits,
               uint64_t *flag)
{
    switch (bits) {
    case 16: return flag_x3(crc, data, n, mask, 16, flag);
    case 32: return flag_x3(crc, data, n, mask, 32, flag);
    default: return flag_x3(crc, data, n, mask, 64, flag);
    }
}

static int path(void)
{
    if (!__builtin_cpu_supports("sse4.2")) return 0;
    return __builtin_cpu_supports("pclmul") ? 2 : 1;
}

int tfl__crc32c_hw(void) { return path(); }

uint32_t tfl__crc32c(uint32_t crc, const void *data, size_t n)
{
    switch (path()) {
    case 2: return crc32c_sse42x3(crc, data, n);
    case 1: return crc32c_sse42(crc, data, n);
    default: return tfl__crc32c_portable(crc, data, n);
    }
}

uint32_t tfl__crc32c_flag(uint32_t crc, const void *data, size_t n, uint64_t mask,
                          unsigned bits, uint64_t *flag)
{
    return tfl__crc32c_flag_path(path(), crc, data, n, mask, bits, flag);
}

uint32_t tfl__crc32c_flag_path(int which, uint32_t crc, const void *data, size_t n,
                               uint64_t mask, unsigned bits, uint64_t *flag)
{
    if (which > path()) which = 0;
    switch (which) {
    case 2: return crc32c_flag_x3(crc, data, n, mask, bits, flag);
    case 1: *flag = flag_words(data, n, mask, bits); return crc32c_sse42(crc, data, n);
    default: *flag = flag_words(data, n, mask, bits); return tfl__crc32c_portable(crc, data, n);
    }
}

uint32_t tfl__crc32c_path(int which, uint32_t crc, const void *data, size_t n)
{
    if (which > path()) which = 0;
    switch (which) {
    case 2: return crc32c_sse42x3(crc, data, n);
    case 1: return crc32c_sse42(crc, data, n);
    default: return tfl__crc32c_portable(crc, data, n);
    }
}
#else
int tfl__crc32c_hw(void) { return 0; }

uint32_t tfl__crc32c(uint32_t crc, const void *data, size_t n)
{
    return tfl__crc32c_portable(crc, data, n);
}

uint32_t tfl__crc32c_path(int which, uint32_t crc, const void *data, size_t n)
{
    (void)which;
    return tfl__crc32c_portable(crc, data, n);
}

uint32_t tfl__crc32c_flag(uint32_t crc, const void *data, size_t n, uint64_t mask,
                          unsigned bits, uint64_t *flag)
{
    *flag = flag_words(data, n, mask, bits);
    return tfl__crc32c_portable(crc, data, n);
}

uint32_t tfl__crc32c_flag_path(int which, uint32_t crc, const void *data, size_t n,
                               uint64_t mask, unsigned bits, uint64_t *flag)
{
    (void)which;
    return tfl__crc32c_flag(crc, data, n, mask, bits, flag);
}
#endif
