// optim.cu: fused optimizer steps over contiguous buffers (one launch per parameter tensor,
// or per flattened group buffer). Float dtypes; state buffers have the parameter's dtype;
// arithmetic in float (f32/f16/bf16) or double (f64). Semantics follow torch.optim.
//
//   sgd_step_<dt>(T* param, const T* grad, T* momentum_buf, long long n, double lr,
//                 double momentum, double dampening, double weight_decay, int nesterov,
//                 int maximize, int first_step)
//       momentum_buf may be null when momentum == 0. first_step: the buffer is initialised
//       to the gradient (torch's "buf is None" case) instead of being decayed.
//   adam_step_<dt>(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq,
//                  long long n, double lr, double beta1, double beta2, double eps,
//                  double weight_decay, int decoupled, int maximize,
//                  double bias_correction1, double bias_correction2)
//       decoupled = 1 for AdamW (param *= 1 - lr * weight_decay), 0 for Adam (L2 added to
//       the gradient). max_exp_avg_sq non-null = amsgrad. bias_correction{1,2} =
//       1 - beta{1,2}^step, computed by the caller from the step count.
#include "common.cuh"

template <typename T>
__device__ __forceinline__ void sgd_kernel(T* __restrict__ param, const T* __restrict__ grad,
                                           T* __restrict__ buf, long long n, double lr_,
                                           double momentum_, double dampening_,
                                           double weight_decay_, int nesterov, int maximize,
                                           int first_step) {
    typedef typename FloatAccT<T>::type A;
    const A lr = A(lr_), mom = A(momentum_), damp = A(dampening_), wd = A(weight_decay_);
    FT_GRID_STRIDE(i, n) {
        A p = load_f(param[i]);
        A g = load_f(grad[i]);
        if (maximize) g = -g;
        if (wd != A(0)) g += wd * p;
        if (mom != A(0) && buf != nullptr) {
            A b = first_step ? g : mom * load_f(buf[i]) + (A(1) - damp) * g;
            buf[i] = from_acc<T>(b);
            g = nesterov ? g + mom * b : b;
        }
        param[i] = from_acc<T>(p - lr * g);
    }
}

template <typename T>
__device__ __forceinline__ void adam_kernel(T* __restrict__ param, const T* __restrict__ grad,
                                            T* __restrict__ m_, T* __restrict__ v_,
                                            T* __restrict__ vmax_, long long n, double lr_,
                                            double beta1_, double beta2_, double eps_,
                                            double weight_decay_, int decoupled, int maximize,
                                            double bc1_, double bc2_) {
    typedef typename FloatAccT<T>::type A;
    const A lr = A(lr_), b1 = A(beta1_), b2 = A(beta2_), eps = A(eps_), wd = A(weight_decay_);
    const A step_size = lr / A(bc1_);
    const A bc2_sqrt = sqrt(A(bc2_));
    FT_GRID_STRIDE(i, n) {
        A p = load_f(param[i]);
        A g = load_f(grad[i]);
        if (maximize) g = -g;
        if (wd != A(0)) {
            if (decoupled) p *= A(1) - lr * wd;
            else g += wd * p;
        }
        const A m = b1 * load_f(m_[i]) + (A(1) - b1) * g;
        A v = b2 * load_f(v_[i]) + (A(1) - b2) * g * g;
        m_[i] = from_acc<T>(m);
        v_[i] = from_acc<T>(v);
        if (vmax_ != nullptr) {
            const A vm = load_f(vmax_[i]);
            v = v > vm ? v : vm;
            vmax_[i] = from_acc<T>(v);
        }
        const A denom = sqrt(v) / bc2_sqrt + eps;
        param[i] = from_acc<T>(p - step_size * m / denom);
    }
}

#define FT_OPTIM(unused, sfx, T)                                                             \
    extern "C" __global__ void sgd_step_##sfx(T* param, const T* grad, T* momentum_buf,      \
                                              long long n, double lr, double momentum,       \
                                              double dampening, double weight_decay,         \
                                              int nesterov, int maximize, int first_step) {  \
        sgd_kernel<T>(param, grad, momentum_buf, n, lr, momentum, dampening, weight_decay,   \
                      nesterov, maximize, first_step);                                       \
    }                                                                                        \
    extern "C" __global__ void adam_step_##sfx(T* param, const T* grad, T* exp_avg,          \
                                               T* exp_avg_sq, T* max_exp_avg_sq, long long n, \
                                               double lr, double beta1, double beta2,        \
                                               double eps, double weight_decay,              \
                                               int decoupled, int maximize,                  \
                                               double bias_correction1,                      \
                                               double bias_correction2) {                    \
        adam_kernel<T>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, lr, beta1, beta2, \
                       eps, weight_decay, decoupled, maximize, bias_correction1,             \
                       bias_correction2);                                                    \
    }

FT_FOR_FLOAT(FT_OPTIM, _)
