/* fp16/fp32 rounding (rowfuse/tensor.h) against closed-form cases: exact values, ties to
 * even at 1 + 2^-11, subnormals, overflow to infinity, NaN; then every pair of adjacent
 * halves: the exact midpoint must go to the even neighbour, a hair above or below to the
 * nearer one, and every half must round-trip through fp32 bit for bit. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rf_test.h"
#include "rowfuse/tensor.h"

static int is_even_half(uint16_t h) {
    return (h & 1) == 0;
}

static void test_closed_form(void) {
    /* Exactly representable values keep their bits. */
    CHECK(rf_f32_to_f16(1.0f) == 0x3c00);
    CHECK(rf_f32_to_f16(-2.0f) == 0xc000);
    CHECK(rf_f32_to_f16(65504.0f) == 0x7bff);
    CHECK(rf_f32_to_f16(0.0f) == 0x0000);
    CHECK(rf_f32_to_f16(-0.0f) == 0x8000);
    /* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even gives 1. */
    CHECK(rf_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00);
    CHECK(rf_round_f16(1.0 + 0x1p-11) == 1.0);
    /* 1 + 3 * 2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even). */
    CHECK(rf_f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02);
    CHECK(rf_round_f16(1.0 + 3 * 0x1p-11) == 1.0 + 0x1p-9);
    /* Just above the tie rounds up. */
    CHECK(rf_round_f16(1.0 + 0x1p-11 + 0x1p-30) == 1.0 + 0x1p-10);
    /* Subnormals: the smallest is 2^-24; half of it ties to 0, a bit more rounds up. */
    CHECK(rf_f32_to_f16(0x1p-24f) == 0x0001);
    CHECK(rf_f32_to_f16(0x1p-25f) == 0x0000);
    CHECK(rf_f32_to_f16(0x1p-25f * 1.5f) == 0x0001);
    CHECK(rf_f32_to_f16(3 * 0x1p-25f) == 0x0002);                /* 1.5 * 2^-24: tie to even (2) */
    CHECK(rf_round_f16(0x1p-14 - 0x1p-24) == 0x1p-14 - 0x1p-24); /* largest subnormal */
    CHECK(rf_f16_to_f32(0x03ff) == 0x1p-14f - 0x1p-24f);
    CHECK(rf_f16_to_f32(0x0001) == 0x1p-24f);
    /* Overflow: 65519.99 rounds to 65504; 65520 (the tie) and beyond to infinity. */
    CHECK(rf_round_f16(65519.99) == 65504.0);
    CHECK(isinf(rf_round_f16(65520.0)) && rf_round_f16(65520.0) > 0);
    CHECK(rf_f32_to_f16(65520.0f) == 0x7c00);
    CHECK(rf_f32_to_f16(-1e9f) == 0xfc00);
    CHECK(rf_f32_to_f16(INFINITY) == 0x7c00);
    CHECK(isinf(rf_f16_to_f32(0x7c00)));
    /* NaN stays NaN (quiet), both ways. */
    uint16_t hn = rf_f32_to_f16(NAN);
    CHECK((hn & 0x7c00) == 0x7c00 && (hn & 0x3ff) != 0);
    CHECK(isnan(rf_f16_to_f32(0x7e00)));
    CHECK(isnan(rf_f16_to_f32(0x7c01)));
    CHECK(isnan(rf_round_f16(NAN)));
    /* fp32 rounding of doubles. */
    CHECK(rf_round_f32(1.0 + 0x1p-24) == 1.0);               /* tie to even */
    CHECK(rf_round_f32(1.0 + 3 * 0x1p-24) == 1.0 + 0x1p-22); /* tie to even, up */
    CHECK(rf_round_f32(0.1) == (double)0.1f);
    CHECK(rf_round_f32(ldexp(1.0, 128) - ldexp(1.0, 104)) == (double)FLT_MAX);
    CHECK(isinf(rf_round_f32(ldexp(1.0, 128) - ldexp(1.0, 103))));
    CHECK(isinf(rf_round_f32(1e300)) && rf_round_f32(-1e300) < 0);
}

static void test_all_halves(void) {
    int bad_roundtrip = 0, bad_mid = 0, bad_near = 0, bad_double = 0;
    for (uint32_t h = 0; h < 0x7c00; h++) {
        /* Every finite non-negative half, and its negative. */
        for (int s = 0; s < 2; s++) {
            uint16_t bits = (uint16_t)(h | (s ? 0x8000u : 0));
            float f = rf_f16_to_f32(bits);
            if (rf_f32_to_f16(f) != bits && !(h == 0 && s)) /* -0 keeps its sign too */
                bad_roundtrip++;
            if (rf_round_f16((double)f) != (double)f)
                bad_double++;
        }
        if (h + 1 >= 0x7c00)
            continue;
        float a = rf_f16_to_f32((uint16_t)h), b = rf_f16_to_f32((uint16_t)(h + 1));
        float mid = (a + b) / 2; /* exact: needs 12 significant bits */
        uint16_t even = is_even_half((uint16_t)h) ? (uint16_t)h : (uint16_t)(h + 1);
        if (rf_f32_to_f16(mid) != even || rf_round_f16((double)mid) != rf_f16_to_f32(even))
            bad_mid++;
        if (rf_f32_to_f16(nextafterf(mid, 0.0f)) != h ||
            rf_f32_to_f16(nextafterf(mid, INFINITY)) != h + 1)
            bad_near++;
    }
    CHECK(bad_roundtrip == 0);
    CHECK(bad_double == 0);
    CHECK(bad_mid == 0);
    CHECK(bad_near == 0);
    CHECK(rf_f32_to_f16(-0.0f) == 0x8000);
}

int main(void) {
    test_closed_form();
    test_all_halves();
    return rf_test_finish();
}
