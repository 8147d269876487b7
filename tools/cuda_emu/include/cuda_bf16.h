// Emulator stand-in for NVIDIA's cuda_bf16.h: bfloat16 as the top 16 bits of a float,
// rounded to nearest even (NaN stays a quiet NaN), as the device's __float2bfloat16_rn.
#pragma once
#include <cstdint>
#include <cstring>

struct __nv_bfloat16 {
    uint16_t bits;
    __nv_bfloat16() = default;
    __nv_bfloat16(float f) {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        if ((u & 0x7fffffffu) > 0x7f800000u) {
            bits = (uint16_t)((u >> 16) | 0x40u);
        } else {
            bits = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        }
    }
    __nv_bfloat16(double d) : __nv_bfloat16((float)d) {}
    __nv_bfloat16(int v) : __nv_bfloat16((float)v) {}
    __nv_bfloat16(long long v) : __nv_bfloat16((float)v) {}
    operator float() const {
        uint32_t u = (uint32_t)bits << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
};

inline float __bfloat162float(__nv_bfloat16 h) { return (float)h; }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16((float)d); }
