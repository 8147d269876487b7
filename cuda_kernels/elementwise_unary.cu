// elementwise_unary.cu: y = f(x) for one strided input and a contiguous output.
//
// Signature of every kernel here (TO = T except where noted):
//   <op>_<dtype>(const T* x, StridedLayout xl, TO* out, long long n)
// n = number of elements = product of xl.shape; out[i] = f(x at linear index i of xl).
// isnan/isinf/isfinite/logical_not write bool (TO = bool).
// f16/bf16 compute in float; f64 in double.
#include "common.cuh"

template <typename TI, typename TO, typename Op>
__device__ __forceinline__ void unary_kernel(const TI* __restrict__ x, const StridedLayout& xl,
                                             TO* __restrict__ out, long long n) {
    const bool contig = layout_is_contiguous(xl);
    Op op;
    FT_GRID_STRIDE(i, n) { out[i] = from_acc<TO>(op(to_acc(x[layout_offset(i, xl, contig)]))); }
}

#define FT_UNARY(op, Op, sfx, T)                                                             \
    extern "C" __global__ void op##_##sfx(const T* x, StridedLayout xl, T* out, long long n) { \
        unary_kernel<T, T, Op>(x, xl, out, n);                                               \
    }
#define FT_UNARY_BOOL(op, Op, sfx, T)                                                           \
    extern "C" __global__ void op##_##sfx(const T* x, StridedLayout xl, bool* out, long long n) { \
        unary_kernel<T, bool, Op>(x, xl, out, n);                                               \
    }

// Each functor takes the compute type A (float, double or an integer type) and returns A/bool.
#define FT_FLOAT_FN(Name, expr)                                                          \
    struct Name {                                                                        \
        template <typename A> __device__ __forceinline__ A operator()(A x) const { return (expr); } \
    };

struct NegOp {
    template <typename A> __device__ __forceinline__ A operator()(A x) const { return -x; }
};
struct AbsOp {
    template <typename A> __device__ __forceinline__ A operator()(A x) const {
        return x < A(0) ? A(-x) : x;  // -0.0 stays -0.0 here; fabs below for floats
    }
    __device__ __forceinline__ float operator()(float x) const { return fabsf(x); }
    __device__ __forceinline__ double operator()(double x) const { return fabs(x); }
    __device__ __forceinline__ unsigned char operator()(unsigned char x) const { return x; }
};
struct SignOp {  // sign(NaN) is 0, as on the CPU and in PyTorch
    template <typename A> __device__ __forceinline__ A operator()(A x) const {
        if (ft_isnan(x)) return A(0);
        return A((x > A(0)) - (x < A(0)));
    }
};
struct ReluOp {  // clamp_min(x, 0): NaN propagates
    template <typename A> __device__ __forceinline__ A operator()(A x) const {
        return x < A(0) ? A(0) : x;
    }
};

FT_FLOAT_FN(ExpOp, exp(x))
FT_FLOAT_FN(Exp2Op, exp2(x))
FT_FLOAT_FN(Expm1Op, expm1(x))
FT_FLOAT_FN(LogOp, log(x))
FT_FLOAT_FN(Log2Op, log2(x))
FT_FLOAT_FN(Log10Op, log10(x))
FT_FLOAT_FN(Log1pOp, log1p(x))
FT_FLOAT_FN(SqrtOp, sqrt(x))
FT_FLOAT_FN(RsqrtOp, A(1) / sqrt(x))
FT_FLOAT_FN(SinOp, sin(x))
FT_FLOAT_FN(CosOp, cos(x))
FT_FLOAT_FN(TanOp, tan(x))
FT_FLOAT_FN(AsinOp, asin(x))
FT_FLOAT_FN(AcosOp, acos(x))
FT_FLOAT_FN(AtanOp, atan(x))
FT_FLOAT_FN(SinhOp, sinh(x))
FT_FLOAT_FN(CoshOp, cosh(x))
FT_FLOAT_FN(TanhOp, tanh(x))
FT_FLOAT_FN(AsinhOp, asinh(x))
FT_FLOAT_FN(AcoshOp, acosh(x))
FT_FLOAT_FN(AtanhOp, atanh(x))
FT_FLOAT_FN(ErfcOp, erfc(x))
FT_FLOAT_FN(SigmoidOp, A(1) / (A(1) + exp(-x)))
// gelu, exact: x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))
FT_FLOAT_FN(GeluOp, A(0.5) * x * (A(1) + erf(x * A(0.70710678118654752440))))
// gelu, approximate='tanh': 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
FT_FLOAT_FN(GeluTanhOp,
            A(0.5) * x * (A(1) + tanh(A(0.79788456080286535588) * (x + A(0.044715) * x * x * x))))
FT_FLOAT_FN(SiluOp, x / (A(1) + exp(-x)))
// softplus with beta=1, threshold=20 (PyTorch defaults; the caller scales for other beta).
FT_FLOAT_FN(SoftplusOp, x > A(20) ? x : log1p(exp(x)))
FT_FLOAT_FN(ErfOp, erf(x))
FT_FLOAT_FN(ErfinvOp, erfinv(x))
FT_FLOAT_FN(LgammaOp, lgamma(x))

// Digamma and trigamma as in src/math.rs: PyTorch's values at the poles, reflection for
// negative x, the recurrence up to 10, then the asymptotic series (computed in A).
template <typename A> __device__ A ft_digamma(A x) {
    const A pi = A(3.14159265358979323846);
    if (x == A(0)) return signbit(x) ? A(FT_INF) : A(-FT_INF);
    if (isnan(x) || x == A(-FT_INF)) return A(FT_NAN);
    A acc = A(0);
    if (x < A(0)) {
        if (x == trunc(x)) return A(FT_NAN);
        acc = -pi / tan(pi * (x - trunc(x)));
        x = A(1) - x;
    }
    while (x < A(10)) { acc -= A(1) / x; x += A(1); }
    const A z = A(1) / (x * x);
    const A series = z * (A(1.0 / 12) - z * (A(1.0 / 120) - z * (A(1.0 / 252) - z * (A(1.0 / 240)
                     - z * (A(1.0 / 132) - z * (A(691.0 / 32760) - z / A(12)))))));
    return acc + log(x) - A(0.5) / x - series;
}
template <typename A> __device__ A ft_trigamma(A x) {
    const A pi = A(3.14159265358979323846);
    if (isnan(x) || x == A(-FT_INF)) return A(FT_NAN);
    A acc = A(0), sign = A(1);
    if (x <= A(0)) {
        if (x == trunc(x)) return A(FT_INF);
        const A s = sin(pi * (x - trunc(x)));
        acc = pi * pi / (s * s);
        sign = A(-1);
        x = A(1) - x;
    }
    A r = A(0);
    while (x < A(10)) { r += A(1) / (x * x); x += A(1); }
    const A z = A(1) / (x * x);
    const A series = z * (A(1.0 / 6) - z * (A(1.0 / 30) - z * (A(1.0 / 42) - z * (A(1.0 / 30)
                     - z * (A(5.0 / 66) - z * (A(691.0 / 2730) - z * A(7.0 / 6)))))));
    r += A(1) / x + A(0.5) * z + series / x;
    return acc + sign * r;
}
FT_FLOAT_FN(DigammaOp, ft_digamma(x))
FT_FLOAT_FN(TrigammaOp, ft_trigamma(x))
FT_FLOAT_FN(FloorOp, floor(x))
FT_FLOAT_FN(CeilOp, ceil(x))
FT_FLOAT_FN(RoundOp, rint(x))  // round half to even (current rounding mode is nearest-even)
FT_FLOAT_FN(TruncOp, trunc(x))
FT_FLOAT_FN(FracOp, x - trunc(x))
FT_FLOAT_FN(ReciprocalOp, A(1) / x)

struct IsnanOp {
    template <typename A> __device__ __forceinline__ bool operator()(A x) const { return isnan(x); }
};
struct IsinfOp {
    template <typename A> __device__ __forceinline__ bool operator()(A x) const { return isinf(x); }
};
struct IsfiniteOp {
    template <typename A> __device__ __forceinline__ bool operator()(A x) const {
        return isfinite(x);
    }
};
struct IsposinfOp {
    template <typename A> __device__ __forceinline__ bool operator()(A x) const {
        return isinf(x) && x > A(0);
    }
};
struct IsneginfOp {
    template <typename A> __device__ __forceinline__ bool operator()(A x) const {
        return isinf(x) && x < A(0);
    }
};
struct LogicalNotOp {
    template <typename A> __device__ __forceinline__ bool operator()(A x) const {
        return x == A(0);
    }
};
struct BitwiseNotOp {
    template <typename A> __device__ __forceinline__ A operator()(A x) const { return ~x; }
    __device__ __forceinline__ bool operator()(bool x) const { return !x; }
};

// Every numeric dtype.
FT_FOR_NUMERIC(FT_UNARY, neg, NegOp)
FT_FOR_NUMERIC(FT_UNARY, abs, AbsOp)
FT_FOR_NUMERIC(FT_UNARY, sign, SignOp)
FT_FOR_NUMERIC(FT_UNARY, relu, ReluOp)

// Floating dtypes only (integer inputs are promoted to float by the caller).
FT_FOR_FLOAT(FT_UNARY, exp, ExpOp)
FT_FOR_FLOAT(FT_UNARY, exp2, Exp2Op)
FT_FOR_FLOAT(FT_UNARY, expm1, Expm1Op)
FT_FOR_FLOAT(FT_UNARY, log, LogOp)
FT_FOR_FLOAT(FT_UNARY, log2, Log2Op)
FT_FOR_FLOAT(FT_UNARY, log10, Log10Op)
FT_FOR_FLOAT(FT_UNARY, log1p, Log1pOp)
FT_FOR_FLOAT(FT_UNARY, sqrt, SqrtOp)
FT_FOR_FLOAT(FT_UNARY, rsqrt, RsqrtOp)
FT_FOR_FLOAT(FT_UNARY, sin, SinOp)
FT_FOR_FLOAT(FT_UNARY, cos, CosOp)
FT_FOR_FLOAT(FT_UNARY, tan, TanOp)
FT_FOR_FLOAT(FT_UNARY, asin, AsinOp)
FT_FOR_FLOAT(FT_UNARY, acos, AcosOp)
FT_FOR_FLOAT(FT_UNARY, atan, AtanOp)
FT_FOR_FLOAT(FT_UNARY, sinh, SinhOp)
FT_FOR_FLOAT(FT_UNARY, cosh, CoshOp)
FT_FOR_FLOAT(FT_UNARY, tanh, TanhOp)
FT_FOR_FLOAT(FT_UNARY, asinh, AsinhOp)
FT_FOR_FLOAT(FT_UNARY, acosh, AcoshOp)
FT_FOR_FLOAT(FT_UNARY, atanh, AtanhOp)
FT_FOR_FLOAT(FT_UNARY, erfc, ErfcOp)
FT_FOR_FLOAT(FT_UNARY, sigmoid, SigmoidOp)
FT_FOR_FLOAT(FT_UNARY, gelu, GeluOp)
FT_FOR_FLOAT(FT_UNARY, gelu_tanh, GeluTanhOp)
FT_FOR_FLOAT(FT_UNARY, silu, SiluOp)
FT_FOR_FLOAT(FT_UNARY, softplus, SoftplusOp)
FT_FOR_FLOAT(FT_UNARY, erf, ErfOp)
FT_FOR_FLOAT(FT_UNARY, erfinv, ErfinvOp)
FT_FOR_FLOAT(FT_UNARY, lgamma, LgammaOp)
FT_FOR_FLOAT(FT_UNARY, digamma, DigammaOp)
FT_FOR_FLOAT(FT_UNARY, trigamma, TrigammaOp)
FT_FOR_FLOAT(FT_UNARY, floor, FloorOp)
FT_FOR_FLOAT(FT_UNARY, ceil, CeilOp)
FT_FOR_FLOAT(FT_UNARY, round, RoundOp)
FT_FOR_FLOAT(FT_UNARY, trunc, TruncOp)
FT_FOR_FLOAT(FT_UNARY, frac, FracOp)
FT_FOR_FLOAT(FT_UNARY, reciprocal, ReciprocalOp)

// Predicates: bool output.
FT_FOR_FLOAT(FT_UNARY_BOOL, isnan, IsnanOp)
FT_FOR_FLOAT(FT_UNARY_BOOL, isinf, IsinfOp)
FT_FOR_FLOAT(FT_UNARY_BOOL, isfinite, IsfiniteOp)
FT_FOR_FLOAT(FT_UNARY_BOOL, isposinf, IsposinfOp)
FT_FOR_FLOAT(FT_UNARY_BOOL, isneginf, IsneginfOp)
FT_FOR_ALL(FT_UNARY_BOOL, logical_not, LogicalNotOp)

// Integer and bool dtypes.
FT_FOR_INT_BOOL(FT_UNARY, bitwise_not, BitwiseNotOp)
