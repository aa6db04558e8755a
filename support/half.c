/* half.c: f16 and bf16 to and from f32, rounding to nearest even as IEEE
 * 754 and PyTorch do: the CPU backend's kernels, the weights files, the
 * collectives on host memory and the tests. */
#include "support.h"

#include <string.h>

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

float su_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) { /* zero or subnormal: m * 2^-24, exact in f32 */
        float f = (float)m * 0x1p-24f;
        return sign ? -f : f;
    }
    if (e == 0x1f) /* inf, or nan with its payload */
        return bits_f32(sign | 0x7f800000u | (m << 13));
    return bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

/* Keeps q, or rounds it up, by the discarded bits rem of width shift
 * (1..25): to nearest, ties to even. */
static uint32_t round_even(uint32_t q, uint32_t rem, int shift)
{
    uint32_t half = 1u << (shift - 1);
    return q + (rem > half || (rem == half && (q & 1)));
}

uint16_t su_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    x &= 0x7fffffffu;
    if (x >= 0x7f800000u) /* inf; nan stays a quiet nan with the top of its payload */
        return sign | (x > 0x7f800000u ? (uint16_t)(0x7e00u | ((x >> 13) & 0x3ffu)) : 0x7c00u);
    if (x >= 0x477ff000u) /* 65520 and above round to inf */
        return sign | 0x7c00u;
    uint32_t e = x >> 23, m = (x & 0x7fffffu) | 0x800000u;
    if (x >= 0x38800000u) { /* a normal f16; a carry out of the mantissa bumps the exponent */
        uint32_t q = ((e - 112) << 10) | ((m >> 13) & 0x3ffu);
        return sign | (uint16_t)round_even(q, m & 0x1fffu, 13);
    }
    /* subnormal in f16 (units of 2^-24): m * 2^(e - 150) = m >> (126 - e) */
    int shift = 126 - (int)e;
    if (shift > 25)
        return sign;
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1);
    return sign | (uint16_t)round_even(q, rem, shift);
}

float su_bf16_to_f32(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

uint16_t su_f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* nan: keep it a quiet nan */
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
