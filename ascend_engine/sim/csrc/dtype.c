/*
 * dtype.c -- data-type sizes and IEEE half-precision conversion.
 *
 * The conversions are exact bit manipulations (no hardware F16C needed):
 * float -> half rounds to nearest, ties to even, produces subnormals and
 * overflows to infinity; NaN stays NaN (quiet, sign and top payload kept).
 */
#include <string.h>

#include "sim.h"

float sim_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);           /* inf / nan */
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);    /* normal: rebias 15 -> 127 */
    } else if (man == 0) {
        bits = sign;                                        /* zero */
    } else {
        /* subnormal half: value = man * 2^-24, normalize it */
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400u));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t sim_float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;

    if (exp == 0xff) {
        if (man == 0)
            return sign | 0x7c00u;
        return sign | 0x7e00u | (uint16_t)(man >> 13);     /* quiet NaN */
    }
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31)
        return sign | 0x7c00u;                              /* overflow -> inf */
    if (e <= 0) {
        /* subnormal half (or zero): shift the full significand into place */
        if (e < -10)
            return sign;                                    /* below half the smallest subnormal */
        uint32_t m = man | 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u)))
            half++;                                         /* may carry into the smallest normal: correct */
        return sign | (uint16_t)half;
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
        half++;                                             /* a carry may round up to inf: correct */
    return sign | (uint16_t)half;
}

SIM_EXPORT float aclFloat16ToFloat(aclFloat16 value)
{
    return sim_half_to_float(value);
}

SIM_EXPORT aclFloat16 aclFloatToFloat16(float value)
{
    return sim_float_to_half(value);
}

SIM_EXPORT size_t aclDataTypeSize(aclDataType dataType)
{
    switch (dataType) {
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32:
        return 4;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16:
        return 2;
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL:
        return 1;
    case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64:
        return 8;
    case ACL_COMPLEX128:
        return 16;
    default:
        return 0;   /* undefined, string and sub-byte types have no element size */
    }
}
