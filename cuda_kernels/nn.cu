// nn.cu: kernels behind torch.nn.functional that are not plain elementwise/reduction ops.
// Float dtypes only (f32 f64 f16 bf16). All tensors contiguous. A = float for f32/f16/bf16,
// double for f64: saved statistics (mean, invstd/rstd, lse, per-row losses) are stored as A.
//
// ---- convolution / pooling geometry (passed by value) ----------------------------------------
//   struct Window2d { long long n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow; }
//   (Rust: #[repr(C)] struct of 14 i64.) Input (n, c, h, w); kernel (kh, kw); stride (sh, sw);
//   padding (ph, pw); dilation (dh, dw); output spatial size (oh, ow), computed by the caller
//   (which is where ceil_mode lives).
//
//   im2col_<dt>(const T* x, Window2d p, T* col)
//       x (n, c, h, w) -> col (n, c*kh*kw, oh*ow); row index (ci*kh + ky)*kw + kx; zero padding.
//   col2im_<dt>(const T* col, Window2d p, T* x)
//       the adjoint: x (n, c, h, w) = sum of the col entries that im2col read from it
//       (overwrites x; deterministic gather, no atomics).
//   max_pool2d_fwd_<dt>(const T* x, Window2d p, T* y, long long* indices)
//       y, indices (n, c, oh, ow); index = iy * w + ix within the plane (PyTorch's); NaN wins.
//   max_pool2d_bwd_<dt>(const T* gy, const long long* indices, Window2d p, T* gx)
//       gx (n, c, h, w) overwritten (gather over the windows covering each input pixel).
//   avg_pool2d_fwd_<dt>(const T* x, Window2d p, T* y, int count_include_pad,
//                       long long divisor_override)        (dilation must be 1;
//   avg_pool2d_bwd_<dt>(const T* gy, Window2d p, T* gx, int count_include_pad,
//                       long long divisor_override)         divisor_override 0 = none)
//
// ---- normalization ---------------------------------------------------------------------------
//   batch_norm_stats_<dt>(const T* x, long long N, long long C, long long HW, double eps,
//                         A* mean, A* invstd, T* running_mean, T* running_var, double momentum)
//       training statistics per channel of x (N, C, HW); invstd = 1/sqrt(biased var + eps);
//       running stats (nullable) updated in place with the unbiased variance.
//       Launch: one block per channel (grid = min(C, 65535), block 256).
//   batch_norm_apply_<dt>(const T* x, const A* mean, const A* invstd, const T* weight,
//                         const T* bias, T* y, long long N, long long C, long long HW)
//       y = (x - mean[c]) * invstd[c] * weight[c] + bias[c]; weight/bias nullable. Eval mode:
//       pass running_mean and invstd computed from running_var. Elementwise launch.
//   batch_norm_bwd_<dt>(const T* x, const T* gy, const A* mean, const A* invstd,
//                       const T* weight, T* gx, T* gweight, T* gbias,
//                       long long N, long long C, long long HW)
//       training-mode backward; every output nullable. One block per channel.
//   layer_norm_fwd_<dt>(const T* x, const T* weight, const T* bias, T* y, A* mean, A* rstd,
//                       long long rows, long long cols, double eps)
//       normalise each row of x (rows, cols); weight/bias (cols) nullable. One block per row.
//   layer_norm_bwd_<dt>(const T* x, const T* gy, const A* mean, const A* rstd,
//                       const T* weight, T* gx, long long rows, long long cols)
//       one block per row.
//   layer_norm_bwd_params_<dt>(const T* x, const T* gy, const A* mean, const A* rstd,
//                              T* gweight, T* gbias, long long rows, long long cols)
//       one thread per column (elementwise launch over cols); outputs nullable.
//   rms_norm_fwd_<dt>(const T* x, const T* weight, T* y, A* rstd, long long rows,
//                     long long cols, double eps)
//       y = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps); weight nullable. One block
//       per row. (grad_weight: layer_norm_bwd_params with a zero mean.)
//   rms_norm_bwd_<dt>(const T* x, const T* gy, const A* rstd, const T* weight, T* gx,
//                     long long rows, long long cols)
//       gx = rstd * (wg - xhat * mean(wg * xhat)), wg = gy * weight. One block per row.
//
// ---- embedding, cross entropy ----------------------------------------------------------------
//   embedding_bwd_<dt>(const long long* indices, long long n_idx, const T* gy, long long dim,
//                      T* gweight, long long num_embeddings, long long padding_idx)
//       gweight (num_embeddings, dim) += gy rows (atomic; caller zeroes gweight first);
//       padding_idx < 0 = none; out-of-range indices are skipped. Launch over n_idx * dim.
//   cross_entropy_fwd_<dt>(const T* logits, const long long* target, const T* weight,
//                          A* loss, A* row_weight, A* lse, long long N, long long C,
//                          long long ignore_index, double label_smoothing)
//       logits (N, C) (class dim last); per row: lse = logsumexp; loss = (1-eps) w[t](lse-x[t])
//       + eps/C * sum_c w[c](lse - x[c]); row_weight = w[t] (0 for ignored rows and targets
//       outside [0, C), whose loss is 0). The caller reduces: 'mean' = sum(loss) /
//       sum(row_weight), 'sum' = sum(loss), 'none' = loss. weight nullable (= 1). Block per row.
//   cross_entropy_bwd_<dt>(const T* logits, const long long* target, const T* weight,
//                          const A* lse, const T* grad_rows, double scale, T* gx,
//                          long long N, long long C, long long ignore_index,
//                          double label_smoothing)
//       gx (N, C) = g_i * d loss_i / d logits, g_i = scale * (grad_rows ? grad_rows[i] : 1)
//       ('mean': scale = gy / sum(row_weight); 'none': grad_rows = gy). Block per row.
#include "common.cuh"

struct Window2d {
    long long n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
};

// ---- im2col / col2im ---------------------------------------------------------------------------
template <typename T>
__device__ __forceinline__ void im2col_kernel(const T* __restrict__ x, const Window2d& p,
                                              T* __restrict__ col) {
    const long long total = p.n * p.c * p.kh * p.kw * p.oh * p.ow;
    FT_GRID_STRIDE(i, total) {
        long long r = i;
        const long long ox = r % p.ow; r /= p.ow;
        const long long oy = r % p.oh; r /= p.oh;
        const long long kx = r % p.kw; r /= p.kw;
        const long long ky = r % p.kh; r /= p.kh;
        const long long ci = r % p.c;
        const long long ni = r / p.c;
        const long long iy = oy * p.sh - p.ph + ky * p.dh, ix = ox * p.sw - p.pw + kx * p.dw;
        col[i] = (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w)
                     ? x[((ni * p.c + ci) * p.h + iy) * p.w + ix]
                     : from_acc<T>(0.0f);
    }
}

template <typename T>
__device__ __forceinline__ void col2im_kernel(const T* __restrict__ col, const Window2d& p,
                                              T* __restrict__ x) {
    typedef typename FloatAccT<T>::type A;
    const long long total = p.n * p.c * p.h * p.w;
    const long long L = p.oh * p.ow;
    FT_GRID_STRIDE(i, total) {
        long long r = i;
        const long long ix = r % p.w; r /= p.w;
        const long long iy = r % p.h; r /= p.h;
        const long long ci = r % p.c;
        const long long ni = r / p.c;
        A acc = A(0);
        for (long long ky = 0; ky < p.kh; ++ky) {
            const long long ty = iy + p.ph - ky * p.dh;
            if (ty < 0 || ty % p.sh != 0) continue;
            const long long oy = ty / p.sh;
            if (oy >= p.oh) continue;
            for (long long kx = 0; kx < p.kw; ++kx) {
                const long long tx = ix + p.pw - kx * p.dw;
                if (tx < 0 || tx % p.sw != 0) continue;
                const long long ox = tx / p.sw;
                if (ox >= p.ow) continue;
                const long long row = (ci * p.kh + ky) * p.kw + kx;
                acc += load_f(col[(ni * p.c * p.kh * p.kw + row) * L + oy * p.ow + ox]);
            }
        }
        x[i] = from_acc<T>(acc);
    }
}

// ---- pooling ----------------------------------------------------------------------------------
template <typename T>
__device__ __forceinline__ void max_pool2d_fwd_kernel(const T* __restrict__ x, const Window2d& p,
                                                      T* __restrict__ y,
                                                      long long* __restrict__ indices) {
    typedef typename FloatAccT<T>::type A;
    const long long total = p.n * p.c * p.oh * p.ow;
    FT_GRID_STRIDE(i, total) {
        const long long ox = i % p.ow, oy = (i / p.ow) % p.oh, plane = i / (p.ow * p.oh);
        const T* xp = x + plane * p.h * p.w;
        A best = -FT_INF;
        long long best_idx = -1;
        for (long long ky = 0; ky < p.kh; ++ky) {
            const long long iy = oy * p.sh - p.ph + ky * p.dh;
            if (iy < 0 || iy >= p.h) continue;
            for (long long kx = 0; kx < p.kw; ++kx) {
                const long long ix = ox * p.sw - p.pw + kx * p.dw;
                if (ix < 0 || ix >= p.w) continue;
                const A v = load_f(xp[iy * p.w + ix]);
                if (best_idx < 0 || v > best || (isnan(v) && !isnan(best))) {
                    best = v;
                    best_idx = iy * p.w + ix;
                }
            }
        }
        y[i] = from_acc<T>(best);
        indices[i] = best_idx;
    }
}

template <typename T>
__device__ __forceinline__ void max_pool2d_bwd_kernel(const T* __restrict__ gy,
                                                      const long long* __restrict__ indices,
                                                      const Window2d& p, T* __restrict__ gx) {
    typedef typename FloatAccT<T>::type A;
    const long long total = p.n * p.c * p.h * p.w;
    FT_GRID_STRIDE(i, total) {
        const long long ix = i % p.w, iy = (i / p.w) % p.h, plane = i / (p.w * p.h);
        const long long me = iy * p.w + ix;
        const long long obase = plane * p.oh * p.ow;
        A acc = A(0);
        for (long long ky = 0; ky < p.kh; ++ky) {
            const long long ty = iy + p.ph - ky * p.dh;
            if (ty < 0 || ty % p.sh != 0 || ty / p.sh >= p.oh) continue;
            const long long oy = ty / p.sh;
            for (long long kx = 0; kx < p.kw; ++kx) {
                const long long tx = ix + p.pw - kx * p.dw;
                if (tx < 0 || tx % p.sw != 0 || tx / p.sw >= p.ow) continue;
                const long long o = obase + oy * p.ow + tx / p.sw;
                if (indices[o] == me) acc += load_f(gy[o]);
            }
        }
        gx[i] = from_acc<T>(acc);
    }
}

// Window [hs, he) x [ws, we) of output (oy, ox) after clipping, and its divisor (PyTorch rules).
__device__ __forceinline__ long long avg_window(const Window2d& p, long long oy, long long ox,
                                                int count_include_pad, long long divisor_override,
                                                long long& hs, long long& he, long long& ws,
                                                long long& we) {
    hs = oy * p.sh - p.ph;
    ws = ox * p.sw - p.pw;
    he = min(hs + p.kh, p.h + p.ph);
    we = min(ws + p.kw, p.w + p.pw);
    const long long pool_size = (he - hs) * (we - ws);
    hs = max(hs, 0LL);
    ws = max(ws, 0LL);
    he = min(he, p.h);
    we = min(we, p.w);
    if (divisor_override) return divisor_override;
    return count_include_pad ? pool_size : (he - hs) * (we - ws);
}

template <typename T>
__device__ __forceinline__ void avg_pool2d_fwd_kernel(const T* __restrict__ x, const Window2d& p,
                                                      T* __restrict__ y, int count_include_pad,
                                                      long long divisor_override) {
    typedef typename FloatAccT<T>::type A;
    const long long total = p.n * p.c * p.oh * p.ow;
    FT_GRID_STRIDE(i, total) {
        const long long ox = i % p.ow, oy = (i / p.ow) % p.oh, plane = i / (p.ow * p.oh);
        long long hs, he, ws, we;
        const long long div =
            avg_window(p, oy, ox, count_include_pad, divisor_override, hs, he, ws, we);
        const T* xp = x + plane * p.h * p.w;
        A acc = A(0);
        for (long long iy = hs; iy < he; ++iy)
            for (long long ix = ws; ix < we; ++ix) acc += load_f(xp[iy * p.w + ix]);
        y[i] = from_acc<T>(acc / A(div));
    }
}

template <typename T>
__device__ __forceinline__ void avg_pool2d_bwd_kernel(const T* __restrict__ gy, const Window2d& p,
                                                      T* __restrict__ gx, int count_include_pad,
                                                      long long divisor_override) {
    typedef typename FloatAccT<T>::type A;
    const long long total = p.n * p.c * p.h * p.w;
    FT_GRID_STRIDE(i, total) {
        const long long ix = i % p.w, iy = (i / p.w) % p.h, plane = i / (p.w * p.h);
        // Output rows whose (unclipped) window [oy*sh - ph, oy*sh - ph + kh) contains iy.
        const long long oy_lo = max(0LL, (iy + p.ph - p.kh + p.sh) / p.sh);
        const long long oy_hi = min(p.oh - 1, (iy + p.ph) / p.sh);
        const long long ox_lo = max(0LL, (ix + p.pw - p.kw + p.sw) / p.sw);
        const long long ox_hi = min(p.ow - 1, (ix + p.pw) / p.sw);
        A acc = A(0);
        for (long long oy = oy_lo; oy <= oy_hi; ++oy) {
            for (long long ox = ox_lo; ox <= ox_hi; ++ox) {
                long long hs, he, ws, we;
                const long long div =
                    avg_window(p, oy, ox, count_include_pad, divisor_override, hs, he, ws, we);
                if (iy < hs || iy >= he || ix < ws || ix >= we) continue;
                acc += load_f(gy[(plane * p.oh + oy) * p.ow + ox]) / A(div);
            }
        }
        gx[i] = from_acc<T>(acc);
    }
}

// ---- batch norm -------------------------------------------------------------------------------
template <typename T>
__device__ __forceinline__ void batch_norm_stats_kernel(
    const T* __restrict__ x, long long N, long long C, long long HW, double eps,
    typename FloatAccT<T>::type* mean, typename FloatAccT<T>::type* invstd, T* running_mean,
    T* running_var, double momentum) {
    typedef typename FloatAccT<T>::type A;
    const long long M = N * HW;
    for (long long c = blockIdx.x; c < C; c += gridDim.x) {
        Welford<A> w{A(0), A(0), A(0)};
        for (long long k = threadIdx.x; k < M; k += blockDim.x) {
            const long long ni = k / HW, s = k - ni * HW;
            w.push(load_f(x[(ni * C + c) * HW + s]));
        }
        block_welford(w);
        if (threadIdx.x == 0) {
            const A var = w.n > A(0) ? w.m2 / w.n : A(0);
            mean[c] = w.mean;
            invstd[c] = A(1) / sqrt(var + A(eps));
            const A mom = A(momentum);
            if (running_mean)
                running_mean[c] = from_acc<T>((A(1) - mom) * load_f(running_mean[c]) + mom * w.mean);
            if (running_var) {
                const A unbiased = w.n > A(1) ? w.m2 / (w.n - A(1)) : var;
                running_var[c] = from_acc<T>((A(1) - mom) * load_f(running_var[c]) + mom * unbiased);
            }
        }
    }
}

template <typename T>
__device__ __forceinline__ void batch_norm_apply_kernel(
    const T* __restrict__ x, const typename FloatAccT<T>::type* mean,
    const typename FloatAccT<T>::type* invstd, const T* weight, const T* bias,
    T* __restrict__ y, long long N, long long C, long long HW) {
    typedef typename FloatAccT<T>::type A;
    FT_GRID_STRIDE(i, N * C * HW) {
        const long long c = (i / HW) % C;
        A v = (load_f(x[i]) - mean[c]) * invstd[c];
        if (weight) v *= load_f(weight[c]);
        if (bias) v += load_f(bias[c]);
        y[i] = from_acc<T>(v);
    }
}

template <typename T>
__device__ __forceinline__ void batch_norm_bwd_kernel(
    const T* __restrict__ x, const T* __restrict__ gy, const typename FloatAccT<T>::type* mean,
    const typename FloatAccT<T>::type* invstd, const T* weight, T* gx, T* gweight, T* gbias,
    long long N, long long C, long long HW) {
    typedef typename FloatAccT<T>::type A;
    const long long M = N * HW;
    for (long long c = blockIdx.x; c < C; c += gridDim.x) {
        const A mu = mean[c], is = invstd[c];
        A sg = A(0), sgx = A(0);
        for (long long k = threadIdx.x; k < M; k += blockDim.x) {
            const long long ni = k / HW, s = k - ni * HW, e = (ni * C + c) * HW + s;
            const A g = load_f(gy[e]);
            sg += g;
            sgx += g * (load_f(x[e]) - mu) * is;
        }
        sg = block_reduce(sg, SumOp(), A(0));
        sgx = block_reduce(sgx, SumOp(), A(0));
        if (threadIdx.x == 0) {
            if (gweight) gweight[c] = from_acc<T>(sgx);
            if (gbias) gbias[c] = from_acc<T>(sg);
        }
        if (gx) {
            const A wc = weight ? load_f(weight[c]) : A(1);
            const A inv_m = A(1) / A(M);
            for (long long k = threadIdx.x; k < M; k += blockDim.x) {
                const long long ni = k / HW, s = k - ni * HW, e = (ni * C + c) * HW + s;
                const A xhat = (load_f(x[e]) - mu) * is;
                gx[e] = from_acc<T>(wc * is * (load_f(gy[e]) - sg * inv_m - xhat * sgx * inv_m));
            }
        }
    }
}

// ---- layer norm -------------------------------------------------------------------------------
template <typename T>
__device__ __forceinline__ void layer_norm_fwd_kernel(
    const T* __restrict__ x, const T* weight, const T* bias, T* __restrict__ y,
    typename FloatAccT<T>::type* mean, typename FloatAccT<T>::type* rstd, long long rows,
    long long cols, double eps) {
    typedef typename FloatAccT<T>::type A;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * cols;
        Welford<A> w{A(0), A(0), A(0)};
        for (long long k = threadIdx.x; k < cols; k += blockDim.x) w.push(load_f(xr[k]));
        block_welford_all(w);
        const A var = w.n > A(0) ? w.m2 / w.n : A(0);
        const A rs = A(1) / sqrt(var + A(eps));
        if (threadIdx.x == 0) {
            if (mean) mean[r] = w.mean;
            if (rstd) rstd[r] = rs;
        }
        for (long long k = threadIdx.x; k < cols; k += blockDim.x) {
            A v = (load_f(xr[k]) - w.mean) * rs;
            if (weight) v *= load_f(weight[k]);
            if (bias) v += load_f(bias[k]);
            y[r * cols + k] = from_acc<T>(v);
        }
    }
}

// gx = rstd * (wg - mean(wg) - xhat * mean(wg * xhat)), wg = gy * weight
template <typename T>
__device__ __forceinline__ void layer_norm_bwd_kernel(
    const T* __restrict__ x, const T* __restrict__ gy, const typename FloatAccT<T>::type* mean,
    const typename FloatAccT<T>::type* rstd, const T* weight, T* __restrict__ gx, long long rows,
    long long cols) {
    typedef typename FloatAccT<T>::type A;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const long long base = r * cols;
        const A mu = mean[r], rs = rstd[r];
        A s1 = A(0), s2 = A(0);
        for (long long k = threadIdx.x; k < cols; k += blockDim.x) {
            const A wg = load_f(gy[base + k]) * (weight ? load_f(weight[k]) : A(1));
            s1 += wg;
            s2 += wg * (load_f(x[base + k]) - mu) * rs;
        }
        s1 = block_reduce(s1, SumOp(), A(0)) / A(cols);
        s2 = block_reduce(s2, SumOp(), A(0)) / A(cols);
        for (long long k = threadIdx.x; k < cols; k += blockDim.x) {
            const A wg = load_f(gy[base + k]) * (weight ? load_f(weight[k]) : A(1));
            const A xhat = (load_f(x[base + k]) - mu) * rs;
            gx[base + k] = from_acc<T>(rs * (wg - s1 - xhat * s2));
        }
    }
}

template <typename T>
__device__ __forceinline__ void layer_norm_bwd_params_kernel(
    const T* __restrict__ x, const T* __restrict__ gy, const typename FloatAccT<T>::type* mean,
    const typename FloatAccT<T>::type* rstd, T* gweight, T* gbias, long long rows,
    long long cols) {
    typedef typename FloatAccT<T>::type A;
    FT_GRID_STRIDE(k, cols) {
        A sw = A(0), sb = A(0);
        for (long long r = 0; r < rows; ++r) {
            const A g = load_f(gy[r * cols + k]);
            sb += g;
            sw += g * (load_f(x[r * cols + k]) - mean[r]) * rstd[r];
        }
        if (gweight) gweight[k] = from_acc<T>(sw);
        if (gbias) gbias[k] = from_acc<T>(sb);
    }
}

// ---- RMS norm ---------------------------------------------------------------------------------
template <typename T>
__device__ __forceinline__ void rms_norm_fwd_kernel(const T* __restrict__ x, const T* weight,
                                                    T* __restrict__ y,
                                                    typename FloatAccT<T>::type* rstd,
                                                    long long rows, long long cols, double eps) {
    typedef typename FloatAccT<T>::type A;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * cols;
        A ss = A(0);
        for (long long k = threadIdx.x; k < cols; k += blockDim.x) {
            const A v = load_f(xr[k]);
            ss += v * v;
        }
        ss = block_reduce(ss, SumOp(), A(0));
        const A rs = A(1) / sqrt(ss / A(cols) + A(eps));
        if (threadIdx.x == 0 && rstd) rstd[r] = rs;
        for (long long k = threadIdx.x; k < cols; k += blockDim.x) {
            A v = load_f(xr[k]) * rs;
            if (weight) v *= load_f(weight[k]);
            y[r * cols + k] = from_acc<T>(v);
        }
    }
}

template <typename T>
__device__ __forceinline__ void rms_norm_bwd_kernel(
    const T* __restrict__ x, const T* __restrict__ gy, const typename FloatAccT<T>::type* rstd,
    const T* weight, T* __restrict__ gx, long long rows, long long cols) {
    typedef typename FloatAccT<T>::type A;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const long long base = r * cols;
        const A rs = rstd[r];
        A s = A(0);
        for (long long k = threadIdx.x; k < cols; k += blockDim.x) {
            const A wg = load_f(gy[base + k]) * (weight ? load_f(weight[k]) : A(1));
            s += wg * load_f(x[base + k]) * rs;
        }
        s = block_reduce(s, SumOp(), A(0)) / A(cols);
        for (long long k = threadIdx.x; k < cols; k += blockDim.x) {
            const A wg = load_f(gy[base + k]) * (weight ? load_f(weight[k]) : A(1));
            const A xhat = load_f(x[base + k]) * rs;
            gx[base + k] = from_acc<T>(rs * (wg - xhat * s));
        }
    }
}

// ---- embedding backward -------------------------------------------------------------------------
template <typename T>
__device__ __forceinline__ void embedding_bwd_kernel(const long long* __restrict__ indices,
                                                     long long n_idx, const T* __restrict__ gy,
                                                     long long dim, T* gweight,
                                                     long long num_embeddings,
                                                     long long padding_idx) {
    FT_GRID_STRIDE(i, n_idx * dim) {
        const long long k = i / dim, d = i - k * dim;
        const long long row = indices[k];
        if (row < 0 || row >= num_embeddings || row == padding_idx) continue;
        atomic_add(gweight + row * dim + d, to_acc(gy[i]));
    }
}

// ---- cross entropy ------------------------------------------------------------------------------
template <typename T>
__device__ __forceinline__ void cross_entropy_fwd_kernel(
    const T* __restrict__ logits, const long long* __restrict__ target, const T* weight,
    typename FloatAccT<T>::type* loss, typename FloatAccT<T>::type* row_weight,
    typename FloatAccT<T>::type* lse_out, long long N, long long C, long long ignore_index,
    double label_smoothing) {
    typedef typename FloatAccT<T>::type A;
    const A eps = A(label_smoothing);
    for (long long r = blockIdx.x; r < N; r += gridDim.x) {
        const T* xr = logits + r * C;
        A m = -FT_INF;
        for (long long k = threadIdx.x; k < C; k += blockDim.x) m = MaxOp()(m, load_f(xr[k]));
        m = block_reduce(m, MaxOp(), A(-FT_INF));
        const A shift = isinf(m) ? A(0) : m;
        A s = A(0), sw = A(0);
        for (long long k = threadIdx.x; k < C; k += blockDim.x) {
            const A v = load_f(xr[k]);
            s += exp(v - shift);
            if (eps != A(0)) sw += (weight ? load_f(weight[k]) : A(1)) * v;
        }
        s = block_reduce(s, SumOp(), A(0));
        if (eps != A(0)) sw = block_reduce(sw, SumOp(), A(0));
        if (threadIdx.x == 0) {
            const A lse = log(s) + shift;
            lse_out[r] = lse;
            const long long t = target[r];
            if (t == ignore_index || t < 0 || t >= C) {
                loss[r] = A(0);
                row_weight[r] = A(0);
            } else {
                const A wt = weight ? load_f(weight[t]) : A(1);
                A l = (A(1) - eps) * wt * (lse - load_f(xr[t]));
                if (eps != A(0)) {
                    A wsum = A(C);
                    if (weight) {
                        wsum = A(0);
                        for (long long k = 0; k < C; ++k) wsum += load_f(weight[k]);
                    }
                    // sum_c w_c (lse - x_c) = lse * sum(w) - sum(w x)
                    l += eps / A(C) * (lse * wsum - sw);
                }
                loss[r] = l;
                row_weight[r] = wt;
            }
        }
    }
}

template <typename T>
__device__ __forceinline__ void cross_entropy_bwd_kernel(
    const T* __restrict__ logits, const long long* __restrict__ target, const T* weight,
    const typename FloatAccT<T>::type* lse, const T* grad_rows, double scale,
    T* __restrict__ gx, long long N, long long C, long long ignore_index,
    double label_smoothing) {
    typedef typename FloatAccT<T>::type A;
    const A eps = A(label_smoothing);
    for (long long r = blockIdx.x; r < N; r += gridDim.x) {
        const long long t = target[r];
        const bool ignored = t == ignore_index || t < 0 || t >= C;
        A wsum = A(C);
        if (weight && eps != A(0)) {
            A part = A(0);
            for (long long k = threadIdx.x; k < C; k += blockDim.x) part += load_f(weight[k]);
            wsum = block_reduce(part, SumOp(), A(0));
        }
        const A g = A(scale) * (grad_rows ? load_f(grad_rows[r]) : A(1));
        const A wt = (ignored || !weight) ? A(1) : load_f(weight[t]);
        const A l = lse[r];
        for (long long k = threadIdx.x; k < C; k += blockDim.x) {
            A d = A(0);
            if (!ignored) {
                const A pk = exp(load_f(logits[r * C + k]) - l);
                d = (A(1) - eps) * wt * (pk - (k == t ? A(1) : A(0)));
                if (eps != A(0)) {
                    const A wk = weight ? load_f(weight[k]) : A(1);
                    d += eps / A(C) * (pk * wsum - wk);
                }
                d *= g;
            }
            gx[r * C + k] = from_acc<T>(d);
        }
    }
}

// ---- instantiation ------------------------------------------------------------------------------
#define FT_NN(unused, sfx, T)                                                                    \
    typedef FloatAccT<T>::type Acc_##sfx;                                                        \
    extern "C" __global__ void im2col_##sfx(const T* x, Window2d p, T* col) {                    \
        im2col_kernel<T>(x, p, col);                                                             \
    }                                                                                            \
    extern "C" __global__ void col2im_##sfx(const T* col, Window2d p, T* x) {                    \
        col2im_kernel<T>(col, p, x);                                                             \
    }                                                                                            \
    extern "C" __global__ void max_pool2d_fwd_##sfx(const T* x, Window2d p, T* y,                \
                                                    long long* indices) {                        \
        max_pool2d_fwd_kernel<T>(x, p, y, indices);                                              \
    }                                                                                            \
    extern "C" __global__ void max_pool2d_bwd_##sfx(const T* gy, const long long* indices,       \
                                                    Window2d p, T* gx) {                         \
        max_pool2d_bwd_kernel<T>(gy, indices, p, gx);                                            \
    }                                                                                            \
    extern "C" __global__ void avg_pool2d_fwd_##sfx(const T* x, Window2d p, T* y,                \
                                                    int count_include_pad,                       \
                                                    long long divisor_override) {                \
        avg_pool2d_fwd_kernel<T>(x, p, y, count_include_pad, divisor_override);                  \
    }                                                                                            \
    extern "C" __global__ void avg_pool2d_bwd_##sfx(const T* gy, Window2d p, T* gx,              \
                                                    int count_include_pad,                       \
                                                    long long divisor_override) {                \
        avg_pool2d_bwd_kernel<T>(gy, p, gx, count_include_pad, divisor_override);                \
    }                                                                                            \
    extern "C" __global__ void batch_norm_stats_##sfx(                                           \
        const T* x, long long N, long long C, long long HW, double eps, Acc_##sfx* mean,         \
        Acc_##sfx* invstd, T* running_mean, T* running_var, double momentum) {                   \
        batch_norm_stats_kernel<T>(x, N, C, HW, eps, mean, invstd, running_mean, running_var,    \
                                   momentum);                                                    \
    }                                                                                            \
    extern "C" __global__ void batch_norm_apply_##sfx(                                           \
        const T* x, const Acc_##sfx* mean, const Acc_##sfx* invstd, const T* weight,             \
        const T* bias, T* y, long long N, long long C, long long HW) {                           \
        batch_norm_apply_kernel<T>(x, mean, invstd, weight, bias, y, N, C, HW);                  \
    }                                                                                            \
    extern "C" __global__ void batch_norm_bwd_##sfx(                                             \
        const T* x, const T* gy, const Acc_##sfx* mean, const Acc_##sfx* invstd,                 \
        const T* weight, T* gx, T* gweight, T* gbias, long long N, long long C, long long HW) {   \
        batch_norm_bwd_kernel<T>(x, gy, mean, invstd, weight, gx, gweight, gbias, N, C, HW);     \
    }                                                                                            \
    extern "C" __global__ void layer_norm_fwd_##sfx(const T* x, const T* weight, const T* bias,  \
                                                    T* y, Acc_##sfx* mean, Acc_##sfx* rstd,      \
                                                    long long rows, long long cols,              \
                                                    double eps) {                                \
        layer_norm_fwd_kernel<T>(x, weight, bias, y, mean, rstd, rows, cols, eps);               \
    }                                                                                            \
    extern "C" __global__ void layer_norm_bwd_##sfx(const T* x, const T* gy,                     \
                                                    const Acc_##sfx* mean,                       \
                                                    const Acc_##sfx* rstd, const T* weight,      \
                                                    T* gx, long long rows, long long cols) {     \
        layer_norm_bwd_kernel<T>(x, gy, mean, rstd, weight, gx, rows, cols);                     \
    }                                                                                            \
    extern "C" __global__ void layer_norm_bwd_params_##sfx(                                      \
        const T* x, const T* gy, const Acc_##sfx* mean, const Acc_##sfx* rstd, T* gweight,       \
        T* gbias, long long rows, long long cols) {                                              \
        layer_norm_bwd_params_kernel<T>(x, gy, mean, rstd, gweight, gbias, rows, cols);          \
    }                                                                                            \
    extern "C" __global__ void rms_norm_fwd_##sfx(const T* x, const T* weight, T* y,             \
                                                  Acc_##sfx* rstd, long long rows,               \
                                                  long long cols, double eps) {                  \
        rms_norm_fwd_kernel<T>(x, weight, y, rstd, rows, cols, eps);                             \
    }                                                                                            \
    extern "C" __global__ void rms_norm_bwd_##sfx(const T* x, const T* gy,                       \
                                                  const Acc_##sfx* rstd, const T* weight,        \
                                                  T* gx, long long rows, long long cols) {       \
        rms_norm_bwd_kernel<T>(x, gy, rstd, weight, gx, rows, cols);                             \
    }                                                                                            \
    extern "C" __global__ void embedding_bwd_##sfx(const long long* indices, long long n_idx,    \
                                                   const T* gy, long long dim, T* gweight,       \
                                                   long long num_embeddings,                     \
                                                   long long padding_idx) {                      \
        embedding_bwd_kernel<T>(indices, n_idx, gy, dim, gweight, num_embeddings, padding_idx);  \
    }                                                                                            \
    extern "C" __global__ void cross_entropy_fwd_##sfx(                                          \
        const T* logits, const long long* target, const T* weight, Acc_##sfx* loss,              \
        Acc_##sfx* row_weight, Acc_##sfx* lse, long long N, long long C, long long ignore_index, \
        double label_smoothing) {                                                                \
        cross_entropy_fwd_kernel<T>(logits, target, weight, loss, row_weight, lse, N, C,         \
                                    ignore_index, label_smoothing);                              \
    }                                                                                            \
    extern "C" __global__ void cross_entropy_bwd_##sfx(                                          \
        const T* logits, const long long* target, const T* weight, const Acc_##sfx* lse,         \
        const T* grad_rows, double scale, T* gx, long long N, long long C,                       \
        long long ignore_index, double label_smoothing) {                                        \
        cross_entropy_bwd_kernel<T>(logits, target, weight, lse, grad_rows, scale, gx, N, C,     \
                                    ignore_index, label_smoothing);                              \
    }

FT_FOR_FLOAT(FT_NN, _)
