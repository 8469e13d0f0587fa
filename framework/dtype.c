/*
 * framework/dtype.c: status and dtype names, sizes and predicates, and the float16 /
 * bfloat16 conversions (round to nearest even, as IEEE 754 and TensorFlow do).
 */
#include "internal.h"

#include <complex.h>

#include <stdio.h>

static const char *const status_names[] = {
#define TFL_X_(id, name, text) name,
    TFL_STATUS_MAP(TFL_X_)
#undef TFL_X_
};
static const char *const status_texts[] = {
#define TFL_X_(id, name, text) text,
    TFL_STATUS_MAP(TFL_X_)
#undef TFL_X_
};

const char *tfl_status_name(tfl_status status)
{
    return (unsigned)status < TFL_STATUS_COUNT ? status_names[status] : "UNKNOWN";
}

const char *tfl_status_string(tfl_status status)
{
    return (unsigned)status < TFL_STATUS_COUNT ? status_texts[status] : "unknown status code";
}

static const char *const dtype_names[] = {
    "invalid",
#define TFL_X_(id, name, size) name,
    TFL_DTYPE_MAP(TFL_X_)
#undef TFL_X_
};
static const size_t dtype_sizes[] = {
    0,
#define TFL_X_(id, name, size) size,
    TFL_DTYPE_MAP(TFL_X_)
#undef TFL_X_
};

const char *tfl_dtype_name(tfl_dtype dtype)
{
    return tfl_dtype_is_valid(dtype) ? dtype_names[dtype] : "invalid";
}

size_t tfl_dtype_size(tfl_dtype dtype)
{
    return tfl_dtype_is_valid(dtype) ? dtype_sizes[dtype] : 0;
}

bool tfl_dtype_from_name(const char *name, tfl_dtype *out)
{
    if (!name) return false;
    for (int d = 1; d < TFL_DTYPE_COUNT; d++) {
        if (strcmp(name, dtype_names[d]) == 0) {
            if (out) *out = (tfl_dtype)d;
            return true;
        }
    }
    return false;
}

bool tfl_dtype_is_valid(tfl_dtype d) { return d > TFL_DTYPE_INVALID && d < TFL_DTYPE_COUNT; }

bool tfl_dtype_is_floating(tfl_dtype d)
{
    return tfl_dtype_is_valid(d) && (TFL_MASK_FLOAT >> d & 1u);
}
bool tfl_dtype_is_complex(tfl_dtype d)
{
    return tfl_dtype_is_valid(d) && (TFL_MASK_COMPLEX >> d & 1u);
}
bool tfl_dtype_is_integer(tfl_dtype d)
{
    return tfl_dtype_is_valid(d) && (TFL_MASK_INT >> d & 1u);
}

bool tfl__dtype_converts(tfl_dtype from, tfl_dtype to)
{
    if (from == to) return true;
    if (TFL_MASK_REAL >> from & 1u) return ((TFL_MASK_REAL | TFL_MASK_COMPLEX) >> to & 1u) != 0;
    return (TFL_MASK_COMPLEX >> from & 1u) && (TFL_MASK_COMPLEX >> to & 1u);
}

char *tfl__dtype_list(uint32_t mask, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int d = 1; d < TFL_DTYPE_COUNT; d++) {
        if (!(mask >> d & 1u)) continue;
        int w = snprintf(buf + len, size - len, "%s%s", len ? ", " : "", dtype_names[d]);
        if (w < 0 || (size_t)w >= size - len) break;
        len += (size_t)w;
    }
    return buf;
}

/* ---- 16-bit floats -------------------------------------------------------------------- */

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float tfl__bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t tfl__f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float tfl__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (mant << 13)); /* inf, NaN */
    if (exp == 0) {                                                      /* zero, subnormal */
        float v = (float)mant * 5.9604644775390625e-8f; /* 2^-24 */
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t tfl__f32_to_f16(float f)
{
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;           /* NaN */
    if (a >= 0x477ff000u) return sign | 0x7c00u;          /* overflow (>= 65520) to inf */
    if (a < 0x38800000u) {                                /* below 2^-14: subnormal or zero */
        /* scale so the subnormal unit (2^-24) becomes 1 and round to nearest even */
        float v = bits_f32(a) * 16777216.0f;
        uint32_t m = (uint32_t)v;
        float rem = v - (float)m;
        if (rem > 0.5f || (rem == 0.5f && (m & 1u))) m++;
        return sign | (uint16_t)m;
    }
    uint32_t r = a + 0x0fffu + ((a >> 13) & 1u);          /* round mantissa to 10 bits */
    return sign | (uint16_t)(((r >> 13) - (112u << 10)) & 0x7fffu);
}

double tfl__load_f64(const void *p, tfl_dtype dtype)
{
    switch (dtype) {
    case TFL_DTYPE_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
    case TFL_DTYPE_INT32: return *(const int32_t *)p;
    case TFL_DTYPE_INT64: return (double)*(const int64_t *)p;
    case TFL_DTYPE_FLOAT16: return tfl__f16_to_f32(*(const uint16_t *)p);
    case TFL_DTYPE_BFLOAT16: return tfl__bf16_to_f32(*(const uint16_t *)p);
    case TFL_DTYPE_FLOAT32: return *(const float *)p;
    case TFL_DTYPE_FLOAT64: return *(const double *)p;
    case TFL_DTYPE_COMPLEX64: return crealf(*(const float complex *)p);
    case TFL_DTYPE_COMPLEX128: return creal(*(const double complex *)p);
    default: return 0.0;
    }
}
