// random.cu: counter-based random numbers (Philox4x32-10, Salmon et al. 2011; the generator
// behind curand's Philox4_32_10 and PyTorch's CUDA generator).
//
// Keyed by (seed, offset) only, so a result does not depend on the launch configuration:
// element e is produced from the Philox block with counter
//     (lo32(g), hi32(g), lo32(offset), hi32(offset)),   g = e / PER_CALL,
// key (lo32(seed), hi32(seed)), using output word(s) of lane e % PER_CALL.
// PER_CALL = 2 for f64 uniform/normal, 4 for everything else (f32/f16/bf16, bernoulli)
// (a 53-bit uniform takes two words). The Rust generator keeps (seed, offset) and advances
// `offset` by 1 per launch (each launch then owns a disjoint counter range, because offset
// is in the high 64 bits of the counter and g in the low 64 bits).
// (Bit-exact agreement with torch.cuda random streams is not a goal.)
//
//   uniform_<dt>(T* out, long long n, unsigned long long seed, unsigned long long offset,
//                double low, double high)                     U[low, high), float dtypes
//   normal_<dt>(T* out, long long n, seed, offset, double mean, double std)   float dtypes
//   bernoulli_<dt>(T* out, long long n, seed, offset, double p)     1 with probability p;
//                                                                    every dtype
//   bernoulli_tensor_<dt>(const T* p, T* out, long long n, seed, offset)
//                p contiguous, out[i] = 1 with probability p[i]; float dtypes
#include "common.cuh"

struct Philox4 {
    unsigned int v[4];
};

__device__ __forceinline__ Philox4 philox4x32_10(unsigned long long ctr_lo,
                                                 unsigned long long ctr_hi,
                                                 unsigned long long seed) {
    const unsigned int M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
    const unsigned int W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
    unsigned int c0 = (unsigned int)ctr_lo, c1 = (unsigned int)(ctr_lo >> 32);
    unsigned int c2 = (unsigned int)ctr_hi, c3 = (unsigned int)(ctr_hi >> 32);
    unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
#pragma unroll
    for (int r = 0; r < 10; ++r) {
        const unsigned int hi0 = __umulhi(M0, c0), lo0 = M0 * c0;
        const unsigned int hi1 = __umulhi(M1, c2), lo1 = M1 * c2;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += W0;
        k1 += W1;
    }
    Philox4 out = {{c0, c1, c2, c3}};
    return out;
}

// Uniform in [0, 1) from 24 bits (float) / (0, 1] variant for logs.
__device__ __forceinline__ float u01f(unsigned int x) { return (x >> 8) * (1.0f / 16777216.0f); }
__device__ __forceinline__ float u01f_open0(unsigned int x) {
    return ((x >> 8) + 1) * (1.0f / 16777216.0f);
}
// Uniform in [0, 1) from 53 bits of two words.
__device__ __forceinline__ double u01d(unsigned int a, unsigned int b) {
    const unsigned long long m = ((unsigned long long)a << 21) ^ (unsigned long long)(b >> 11);
    return (m & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}
__device__ __forceinline__ double u01d_open0(unsigned int a, unsigned int b) {
    return 1.0 - u01d(a, b);
}

// Each thread handles whole Philox blocks (PER_CALL elements), grid-stride over blocks.
#define FT_PHILOX_LOOP(g, n, per_call)                                                    \
    FT_GRID_STRIDE(g, ((n) + (per_call) - 1) / (per_call))

template <typename T>
__device__ __forceinline__ void uniform_kernel(T* out, long long n, unsigned long long seed,
                                               unsigned long long offset, double low,
                                               double high) {
    const float lo = (float)low, span = (float)(high - low);
    FT_PHILOX_LOOP(g, n, 4) {
        const Philox4 r = philox4x32_10((unsigned long long)g, offset, seed);
#pragma unroll
        for (int l = 0; l < 4; ++l) {
            const long long e = g * 4 + l;
            if (e < n) {
                float v = lo + span * u01f(r.v[l]);
                // rounding to the storage type may reach `high`; keep the interval half-open
                T t = from_acc<T>(v);
                if (to_acc(t) >= (float)high && span > 0.f) t = from_acc<T>(lo);
                out[e] = t;
            }
        }
    }
}

__device__ __forceinline__ void uniform_kernel_f64(double* out, long long n,
                                                   unsigned long long seed,
                                                   unsigned long long offset, double low,
                                                   double high) {
    FT_PHILOX_LOOP(g, n, 2) {
        const Philox4 r = philox4x32_10((unsigned long long)g, offset, seed);
#pragma unroll
        for (int l = 0; l < 2; ++l) {
            const long long e = g * 2 + l;
            if (e < n) out[e] = low + (high - low) * u01d(r.v[2 * l], r.v[2 * l + 1]);
        }
    }
}

// Box-Muller: two uniforms -> two independent normals.
template <typename T>
__device__ __forceinline__ void normal_kernel(T* out, long long n, unsigned long long seed,
                                              unsigned long long offset, double mean,
                                              double std) {
    const float m = (float)mean, s = (float)std;
    FT_PHILOX_LOOP(g, n, 4) {
        const Philox4 r = philox4x32_10((unsigned long long)g, offset, seed);
        float z[4];
#pragma unroll
        for (int p = 0; p < 2; ++p) {
            const float rad = sqrtf(-2.0f * logf(u01f_open0(r.v[2 * p])));
            float sn, cs;
            sincospif(2.0f * u01f(r.v[2 * p + 1]), &sn, &cs);
            z[2 * p] = rad * cs;
            z[2 * p + 1] = rad * sn;
        }
#pragma unroll
        for (int l = 0; l < 4; ++l) {
            const long long e = g * 4 + l;
            if (e < n) out[e] = from_acc<T>(m + s * z[l]);
        }
    }
}

__device__ __forceinline__ void normal_kernel_f64(double* out, long long n,
                                                  unsigned long long seed,
                                                  unsigned long long offset, double mean,
                                                  double std) {
    FT_PHILOX_LOOP(g, n, 2) {
        const Philox4 r = philox4x32_10((unsigned long long)g, offset, seed);
        const double rad = sqrt(-2.0 * log(u01d_open0(r.v[0], r.v[1])));
        double sn, cs;
        sincospi(2.0 * u01d(r.v[2], r.v[3]), &sn, &cs);
        const long long e = g * 2;
        out[e] = mean + std * rad * cs;
        if (e + 1 < n) out[e + 1] = mean + std * rad * sn;
    }
}

template <typename T>
__device__ __forceinline__ void bernoulli_kernel(T* out, long long n, unsigned long long seed,
                                                 unsigned long long offset, double p) {
    const float pf = (float)p;
    FT_PHILOX_LOOP(g, n, 4) {
        const Philox4 r = philox4x32_10((unsigned long long)g, offset, seed);
#pragma unroll
        for (int l = 0; l < 4; ++l) {
            const long long e = g * 4 + l;
            if (e < n) out[e] = from_acc<T>(u01f(r.v[l]) < pf ? 1 : 0);
        }
    }
}

template <typename T>
__device__ __forceinline__ void bernoulli_tensor_kernel(const T* __restrict__ p,
                                                        T* __restrict__ out, long long n,
                                                        unsigned long long seed,
                                                        unsigned long long offset) {
    FT_PHILOX_LOOP(g, n, 4) {
        const Philox4 r = philox4x32_10((unsigned long long)g, offset, seed);
#pragma unroll
        for (int l = 0; l < 4; ++l) {
            const long long e = g * 4 + l;
            if (e < n) out[e] = from_acc<T>(u01f(r.v[l]) < (float)to_acc(p[e]) ? 1 : 0);
        }
    }
}

#define FT_RAND_ARGS long long n, unsigned long long seed, unsigned long long offset
#define FT_RAND_FLOAT(unused, sfx, T)                                                          \
    extern "C" __global__ void uniform_##sfx(T* out, FT_RAND_ARGS, double low, double high) {  \
        uniform_kernel<T>(out, n, seed, offset, low, high);                                    \
    }                                                                                          \
    extern "C" __global__ void normal_##sfx(T* out, FT_RAND_ARGS, double mean, double std) {   \
        normal_kernel<T>(out, n, seed, offset, mean, std);                                     \
    }                                                                                          \
    extern "C" __global__ void bernoulli_tensor_##sfx(const T* p, T* out, FT_RAND_ARGS) {      \
        bernoulli_tensor_kernel<T>(p, out, n, seed, offset);                                   \
    }
#define FT_BERNOULLI(unused, sfx, T)                                                           \
    extern "C" __global__ void bernoulli_##sfx(T* out, FT_RAND_ARGS, double p) {               \
        bernoulli_kernel<T>(out, n, seed, offset, p);                                          \
    }

FT_RAND_FLOAT(_, f32, float)
FT_RAND_FLOAT(_, f16, __half)
FT_RAND_FLOAT(_, bf16, __nv_bfloat16)
extern "C" __global__ void uniform_f64(double* out, FT_RAND_ARGS, double low, double high) {
    uniform_kernel_f64(out, n, seed, offset, low, high);
}
extern "C" __global__ void normal_f64(double* out, FT_RAND_ARGS, double mean, double std) {
    normal_kernel_f64(out, n, seed, offset, mean, std);
}
extern "C" __global__ void bernoulli_tensor_f64(const double* p, double* out, FT_RAND_ARGS) {
    // 24-bit uniforms suffice for a probability threshold.
    bernoulli_tensor_kernel<double>(p, out, n, seed, offset);
}
FT_FOR_ALL(FT_BERNOULLI, _)
