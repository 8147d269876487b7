// Emulator stand-in for NVIDIA's cuda_fp16.h: __half as IEEE binary16 bits, converted with
// GCC's _Float16 (round to nearest even, as the device's __float2half_rn).
#pragma once
#include <cstdint>
#include <cstring>

struct __half {
    uint16_t bits;
    __half() = default;
    __half(float f) {
        _Float16 h = (_Float16)f;
        std::memcpy(&bits, &h, 2);
    }
    __half(double d) {
        _Float16 h = (_Float16)d;
        std::memcpy(&bits, &h, 2);
    }
    __half(int v) : __half((float)v) {}
    __half(long long v) : __half((float)v) {}
    operator float() const {
        _Float16 h;
        std::memcpy(&h, &bits, 2);
        return (float)h;
    }
};

inline float __half2float(__half h) { return (float)h; }
inline __half __float2half_rn(float f) { return __half(f); }
inline __half __float2half(float f) { return __half(f); }
inline __half __double2half(double d) { return __half(d); }
