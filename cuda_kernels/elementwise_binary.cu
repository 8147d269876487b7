// elementwise_binary.cu: out = f(a, b), same dtype T for a and b.
//
// Two variants of every op:
//   <op>_<dtype>(const T* a, StridedLayout al, const T* b, StridedLayout bl, TO* out, long long n)
//       a and b are read through their own layouts, both already broadcast by the caller to the
//       output's shape (stride 0 on broadcast dims); out is contiguous with n elements.
//   <op>_<dtype>_contig(const T* a, const T* b, TO* out, long long n)
//       a, b, out all contiguous with n elements (no broadcasting); 16-byte packs when aligned.
// TO = T, except comparisons and logical ops, which write bool.
// f16/bf16 compute in float. Integer division or remainder by zero yields 0 (the caller
// validates if it wants an error); integer arithmetic wraps.
#include "common.cuh"

template <typename T, typename TO, typename Op>
__device__ __forceinline__ void binary_kernel(const T* __restrict__ a, const StridedLayout& al,
                                              const T* __restrict__ b, const StridedLayout& bl,
                                              TO* __restrict__ out, long long n) {
    const bool ca = layout_is_contiguous(al), cb = layout_is_contiguous(bl);
    Op op;
    FT_GRID_STRIDE(i, n) {
        out[i] = from_acc<TO>(op(to_acc(a[layout_offset(i, al, ca)]),
                                 to_acc(b[layout_offset(i, bl, cb)])));
    }
}

// Contiguous operands: 16-byte vector loads and stores when the pointers allow (each thread
// handles one pack of 16 / sizeof(T) elements; the tail element by element). The launcher
// sizes the grid by packs: see `vector_pack` in src/cuda/launch.rs.
template <typename T> struct alignas(16) Pack16 { T v[16 / sizeof(T)]; };

template <typename T, typename TO, typename Op>
__device__ __forceinline__ void binary_contig_kernel(const T* __restrict__ a,
                                                     const T* __restrict__ b,
                                                     TO* __restrict__ out, long long n) {
    Op op;
    constexpr int V = 16 / sizeof(T);
    long long head = 0;
    if constexpr (sizeof(TO) == sizeof(T)) {
      if (((size_t)a % 16 == 0) && ((size_t)b % 16 == 0) && ((size_t)out % 16 == 0)) {
        const long long packs = n / V;
        const Pack16<T>* pa = reinterpret_cast<const Pack16<T>*>(a);
        const Pack16<T>* pb = reinterpret_cast<const Pack16<T>*>(b);
        FT_GRID_STRIDE(p, packs) {
            const Pack16<T> x = pa[p], y = pb[p];
            TO r[V];
#pragma unroll
            for (int k = 0; k < V; ++k) r[k] = from_acc<TO>(op(to_acc(x.v[k]), to_acc(y.v[k])));
            *reinterpret_cast<Pack16<T>*>(out + p * V) = *reinterpret_cast<const Pack16<T>*>(r);
        }
        head = packs * V;
      }
    }
    FT_GRID_STRIDE(j, n - head) {
        const long long i = head + j;
        out[i] = from_acc<TO>(op(to_acc(a[i]), to_acc(b[i])));
    }
}

#define FT_BINARY_TO(op, Op, sfx, T, TO)                                                   \
    extern "C" __global__ void op##_##sfx(const T* a, StridedLayout al, const T* b,        \
                                          StridedLayout bl, TO* out, long long n) {        \
        binary_kernel<T, TO, Op>(a, al, b, bl, out, n);                                    \
    }                                                                                      \
    extern "C" __global__ void op##_##sfx##_contig(const T* a, const T* b, TO* out,        \
                                                   long long n) {                          \
        binary_contig_kernel<T, TO, Op>(a, b, out, n);                                     \
    }
#define FT_BINARY(op, Op, sfx, T) FT_BINARY_TO(op, Op, sfx, T, T)
#define FT_BINARY_BOOL(op, Op, sfx, T) FT_BINARY_TO(op, Op, sfx, T, bool)

#define FT_BINOP(Name, expr)                                                               \
    struct Name {                                                                          \
        template <typename A> __device__ __forceinline__ auto operator()(A a, A b) const { \
            return (expr);                                                                 \
        }                                                                                  \
    };

FT_BINOP(AddOp, a + b)
FT_BINOP(SubOp, a - b)
FT_BINOP(MulOp, a * b)
FT_BINOP(DivOp, a / b)
FT_BINOP(Atan2Op, atan2(a, b))
FT_BINOP(EqOp, a == b)
FT_BINOP(NeOp, a != b)
FT_BINOP(LtOp, a < b)
FT_BINOP(LeOp, a <= b)
FT_BINOP(GtOp, a > b)
FT_BINOP(GeOp, a >= b)
FT_BINOP(LogicalAndOp, (a != A(0)) && (b != A(0)))
FT_BINOP(LogicalOrOp, (a != A(0)) || (b != A(0)))
FT_BINOP(LogicalXorOp, (a != A(0)) != (b != A(0)))
FT_BINOP(BitwiseAndOp, A(a & b))
FT_BINOP(BitwiseOrOp, A(a | b))
FT_BINOP(BitwiseXorOp, A(a ^ b))
// Shifts: shift counts outside [0, bits) give 0 (left) or the sign fill (right), like PyTorch.
FT_BINOP(ShlOp, (b < A(0) || b >= A(sizeof(A) * 8)) ? A(0) : A(a << b))
FT_BINOP(ShrOp, (b < A(0) || b >= A(sizeof(A) * 8)) ? A(a < A(0) ? -1 : 0) : A(a >> b))

// -a with two's-complement wrap-around (the most negative value maps to itself), without the
// undefined behaviour of signed overflow.
template <typename A> __device__ __forceinline__ A wrapping_neg(A a) {
    return A(0ull - (unsigned long long)a);
}

// Floor division, Python semantics (rounds toward -inf).
struct FloorDivideOp {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        if (b == A(0)) return A(0);
        if (b == A(-1)) return wrapping_neg(a);
        A q = a / b;
        if ((a % b != A(0)) && ((a < A(0)) != (b < A(0)))) q = q - A(1);
        return q;
    }
    template <typename F> __device__ __forceinline__ F floating(F a, F b) const {
        // As PyTorch's div_floor: exact for a representable quotient, sign of zero kept.
        if (b == F(0)) return a / b;
        F mod = fmod(a, b);
        F div = (a - mod) / b;
        if (mod != F(0) && ((b < F(0)) != (mod < F(0)))) div -= F(1);
        if (div == F(0)) return copysign(F(0), a / b);
        F fl = floor(div);
        if (div - fl > F(0.5)) fl += F(1);
        return fl;
    }
    __device__ __forceinline__ float operator()(float a, float b) const { return floating(a, b); }
    __device__ __forceinline__ double operator()(double a, double b) const {
        return floating(a, b);
    }
};

// Remainder, Python semantics: the result has the sign of the divisor.
struct RemainderOp {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        if (b == A(0)) return A(0);
        A r = a % b;
        if (r != A(0) && ((r < A(0)) != (b < A(0)))) r = r + b;
        return r;
    }
    template <typename F> __device__ __forceinline__ F floating(F a, F b) const {
        F r = fmod(a, b);
        if (r != F(0) && ((r < F(0)) != (b < F(0)))) r += b;
        return r;
    }
    __device__ __forceinline__ float operator()(float a, float b) const { return floating(a, b); }
    __device__ __forceinline__ double operator()(double a, double b) const {
        return floating(a, b);
    }
};

struct PowOp {
    // Integers: exponentiation by squaring; negative exponents give 1/a truncated (0 unless
    // |a| == 1).
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        if (b < A(0)) {
            if (a == A(1)) return A(1);
            if (a == A(-1)) return (b % A(2) == A(0)) ? A(1) : A(-1);
            return A(0);
        }
        long long base = a, e = b, r = 1;
        while (e > 0) {
            if (e & 1) r *= base;
            base *= base;
            e >>= 1;
        }
        return A(r);
    }
    __device__ __forceinline__ float operator()(float a, float b) const { return powf(a, b); }
    __device__ __forceinline__ double operator()(double a, double b) const { return pow(a, b); }
};

// maximum/minimum propagate NaN (as torch.maximum/minimum).
struct MaximumOp {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        if (ft_isnan(a) || ft_isnan(b)) return ft_isnan(a) ? a : b;
        return a > b ? a : b;
    }
};
struct MinimumOp {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        if (ft_isnan(a) || ft_isnan(b)) return ft_isnan(a) ? a : b;
        return a < b ? a : b;
    }
};

// Division rounding toward zero (`div(rounding_mode='trunc')`); integer x / 0 gives 0 (the
// caller checks first).
struct DivTruncOp {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        if (b == A(0)) return A(0);
        if (b == A(-1)) return wrapping_neg(a);
        return a / b;
    }
    __device__ __forceinline__ float operator()(float a, float b) const { return truncf(a / b); }
    __device__ __forceinline__ double operator()(double a, double b) const { return trunc(a / b); }
};

// C's fmod: the remainder has the dividend's sign. Integer x % 0 gives 0 (checked by the
// caller), x % -1 is 0 (no overflow trap for the most negative value).
struct FmodOp {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        return (b == A(0) || b == A(-1)) ? A(0) : A(a % b);
    }
    __device__ __forceinline__ float operator()(float a, float b) const { return fmodf(a, b); }
    __device__ __forceinline__ double operator()(double a, double b) const { return fmod(a, b); }
};

// Float-only ops (the caller computes f16/bf16 in float32): the CPU formulas of
// src/tensor/elementwise.rs, NaN and infinity cases included.
FT_BINOP(HypotOp, hypot(a, b))
FT_BINOP(CopysignOp, copysign(a, b))
struct XlogyOp {  // x * log(y), 0 where x == 0 unless y is NaN
    template <typename A> __device__ __forceinline__ A operator()(A x, A y) const {
        if (isnan(y)) return y;
        return x == A(0) ? A(0) : x * log(y);
    }
};
struct LogAddExpOp {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        if (isinf(a) && a == b) return a;
        return fmax(a, b) + log1p(exp(-fabs(a - b)));
    }
};
struct LogAddExp2Op {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        if (isinf(a) && a == b) return a;
        return fmax(a, b) + log1p(exp2(-fabs(a - b))) / A(0.6931471805599453);
    }
};
// heaviside(x, v): v where x == 0, 1 where x > 0, 0 where x < 0 (NaN x gives 0, as the CPU).
struct HeavisideOp {
    template <typename A> __device__ __forceinline__ A operator()(A x, A v) const {
        return x == A(0) ? v : (x > A(0) ? A(1) : A(0));
    }
};

// Special functions, ported from src/math.rs and computed in double for both float dtypes
// (as the CPU does), so the two devices agree to rounding.

// Hurwitz zeta ζ(x, q) = Σ_k (k + q)^-x: a direct sum until q + k is large, then the
// Euler-Maclaurin tail. x == 1: +inf; x < 1: NaN; poles at non-positive integer q; other
// negative q only for integer x.
__device__ double ft_hurwitz_zeta(double x, double q) {
    // (2j)! / B_2j for j = 1..12.
    const double fact_over_bernoulli[12] = {
        12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183792e9,
        7.47242496e10, -2.950130727918164e12, 1.1646782814350067e14, -4.597978722407473e15,
        1.8152105401943547e17, -7.166165256175667e18};
    const double eps = 2.220446049250313e-16;
    if (isnan(x) || isnan(q)) return FT_NAN;
    if (x == 1.0) return FT_INF;
    if (x < 1.0) return FT_NAN;
    if (q <= 0.0) {
        if (q == floor(q)) return FT_INF;
        if (x != floor(x)) return FT_NAN;
    }
    if (isinf(q)) return 0.0;
    double sum = pow(q, -x);
    double a = q;
    int k = 0;
    while (k < 9 || a <= 9.0) {
        k += 1;
        a += 1.0;
        const double term = pow(a, -x);
        sum += term;
        if (fabs(term / sum) < eps) return sum;
    }
    const double w = a;
    sum += w * pow(w, -x) / (x - 1.0) - 0.5 * pow(w, -x);
    double rising = 1.0, power = pow(w, -x), extra = 0.0;
    for (int j = 0; j < 12; ++j) {
        const double m = 2.0 * j;
        rising *= x + m;
        power /= w;
        const double term = rising * power / fact_over_bernoulli[j];
        extra += term;
        if (fabs(term / (sum + extra)) < eps) break;
        rising *= x + m + 1.0;
        power /= w;
    }
    return sum + extra;
}

// Regularised incomplete gamma (P, Q) for finite a, x > 0: the series below a + 1, the
// continued fraction (modified Lentz) above; the other value is 1 minus it.
__device__ void ft_incomplete_gamma(double a, double x, double* p, double* q) {
    const double eps = 2.220446049250313e-16;
    const double prefactor = a * log(x) - x - lgamma(a);
    if (x < a + 1.0) {
        double ap = a, term = 1.0 / a, sum = term;
        for (int i = 0; i < 100000; ++i) {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if (fabs(term) < fabs(sum) * eps) break;
        }
        *p = fmin(exp(log(sum) + prefactor), 1.0);
        *q = 1.0 - *p;
    } else {
        const double tiny = 1e-300;
        double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
        for (int i = 1; i < 100000; ++i) {
            const double an = -(double)i * ((double)i - a);
            b += 2.0;
            d = an * d + b;
            if (fabs(d) < tiny) d = tiny;
            c = b + an / c;
            if (fabs(c) < tiny) c = tiny;
            d = 1.0 / d;
            const double step = d * c;
            h *= step;
            if (fabs(step - 1.0) < eps) break;
        }
        *q = fmin(exp(log(h) + prefactor), 1.0);
        *p = 1.0 - *q;
    }
}

// PyTorch's edge cases, as P(a, x): NaN for negative/NaN arguments and a = x = 0; P(0, x) = 1,
// P(a, 0) = 0, P(a, inf) = 1, P(inf, x) = 0. Returns false when none applies.
__device__ bool ft_incomplete_gamma_edge(double a, double x, double* p) {
    if (isnan(a) || isnan(x) || a < 0.0 || x < 0.0 || (a == 0.0 && x == 0.0)) {
        *p = FT_NAN;
    } else if (a == 0.0) {
        *p = 1.0;
    } else if (x == 0.0) {
        *p = 0.0;
    } else if (isinf(x)) {
        *p = 1.0;
    } else if (isinf(a)) {
        *p = 0.0;
    } else {
        return false;
    }
    return true;
}

__device__ double ft_gammainc(double a, double x) {
    double p, q;
    if (ft_incomplete_gamma_edge(a, x, &p)) return p;
    ft_incomplete_gamma(a, x, &p, &q);
    return p;
}

__device__ double ft_gammaincc(double a, double x) {
    double p, q;
    if (ft_incomplete_gamma_edge(a, x, &p)) return 1.0 - p;
    ft_incomplete_gamma(a, x, &p, &q);
    return q;
}

// d x / d a of a Gamma(a, 1) sample x at a fixed quantile: -(dP/da) / (dP/dx), dP/da by a
// central difference on the float64 P.
__device__ double ft_standard_gamma_grad(double a, double x) {
    if (!(a > 0.0 && x > 0.0) || isinf(a) || isinf(x)) return FT_NAN;
    const double h = 1e-5 * fmax(a, 1e-3);
    const double lo = a - h > 0.0 ? a - h : a, hi = a + h;
    const double dp_da = (ft_gammainc(hi, x) - ft_gammainc(lo, x)) / (hi - lo);
    const double density = exp((a - 1.0) * log(x) - x - lgamma(a));
    if (density == 0.0) return 0.0;
    return -dp_da / density;
}

#define FT_SPECIAL_OP(NAME, FN)                                                          \
    struct NAME {                                                                        \
        template <typename A> __device__ __forceinline__ A operator()(A a, A b) const { \
            return A(FN((double)a, (double)b));                                          \
        }                                                                                \
    };
FT_SPECIAL_OP(ZetaOp, ft_hurwitz_zeta)
FT_SPECIAL_OP(IgammaOp, ft_gammainc)
FT_SPECIAL_OP(IgammacOp, ft_gammaincc)
FT_SPECIAL_OP(StandardGammaGradOp, ft_standard_gamma_grad)

#define FT_FOR_F32_F64(M, ...) M(__VA_ARGS__, f32, float) M(__VA_ARGS__, f64, double)

// Arithmetic: numeric dtypes (bool arithmetic is promoted by the caller).
FT_FOR_NUMERIC(FT_BINARY, add, AddOp)
FT_FOR_NUMERIC(FT_BINARY, sub, SubOp)
FT_FOR_NUMERIC(FT_BINARY, mul, MulOp)
FT_FOR_FLOAT(FT_BINARY, div, DivOp)  // true division; integer inputs are promoted first
FT_FOR_NUMERIC(FT_BINARY, floor_divide, FloorDivideOp)
FT_FOR_NUMERIC(FT_BINARY, remainder, RemainderOp)
FT_FOR_NUMERIC(FT_BINARY, pow, PowOp)
FT_FOR_FLOAT(FT_BINARY, atan2, Atan2Op)
FT_FOR_F32_F64(FT_BINARY, div_trunc, DivTruncOp)
FT_FOR_INT(FT_BINARY, div_trunc, DivTruncOp)
FT_FOR_F32_F64(FT_BINARY, fmod, FmodOp)
FT_FOR_INT(FT_BINARY, fmod, FmodOp)
FT_FOR_F32_F64(FT_BINARY, hypot, HypotOp)
FT_FOR_F32_F64(FT_BINARY, copysign, CopysignOp)
FT_FOR_F32_F64(FT_BINARY, xlogy, XlogyOp)
FT_FOR_F32_F64(FT_BINARY, logaddexp, LogAddExpOp)
FT_FOR_F32_F64(FT_BINARY, logaddexp2, LogAddExp2Op)
FT_FOR_F32_F64(FT_BINARY, heaviside, HeavisideOp)
FT_FOR_F32_F64(FT_BINARY, zeta, ZetaOp)
FT_FOR_F32_F64(FT_BINARY, igamma, IgammaOp)
FT_FOR_F32_F64(FT_BINARY, igammac, IgammacOp)
FT_FOR_F32_F64(FT_BINARY, standard_gamma_grad, StandardGammaGradOp)
FT_FOR_INT_BOOL(FT_BINARY, heaviside, HeavisideOp)
FT_FOR_ALL(FT_BINARY, maximum, MaximumOp)
FT_FOR_ALL(FT_BINARY, minimum, MinimumOp)

// Comparisons and logical ops: every dtype, bool output.
FT_FOR_ALL(FT_BINARY_BOOL, eq, EqOp)
FT_FOR_ALL(FT_BINARY_BOOL, ne, NeOp)
FT_FOR_ALL(FT_BINARY_BOOL, lt, LtOp)
FT_FOR_ALL(FT_BINARY_BOOL, le, LeOp)
FT_FOR_ALL(FT_BINARY_BOOL, gt, GtOp)
FT_FOR_ALL(FT_BINARY_BOOL, ge, GeOp)
FT_FOR_ALL(FT_BINARY_BOOL, logical_and, LogicalAndOp)
FT_FOR_ALL(FT_BINARY_BOOL, logical_or, LogicalOrOp)
FT_FOR_ALL(FT_BINARY_BOOL, logical_xor, LogicalXorOp)

// Bitwise ops: integer and bool dtypes; shifts: integer dtypes.
FT_FOR_INT_BOOL(FT_BINARY, bitwise_and, BitwiseAndOp)
FT_FOR_INT_BOOL(FT_BINARY, bitwise_or, BitwiseOrOp)
FT_FOR_INT_BOOL(FT_BINARY, bitwise_xor, BitwiseXorOp)
FT_FOR_INT(FT_BINARY, bitwise_left_shift, ShlOp)
FT_FOR_INT(FT_BINARY, bitwise_right_shift, ShrOp)
