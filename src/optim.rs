//! Fused optimizer updates: one call updates every parameter of a param group in place
//! (PyTorch's `fused=True` path). A step then costs one Python -> Rust call per group and one
//! pass over each parameter's memory, instead of a dozen tensor ops (and temporaries) per
//! parameter.
//!
//! Every function takes, per parameter, the parameter, its gradient and its state buffers
//! (all contiguous CPU tensors of the parameter's dtype and size; float32 or float64) and
//! rewrites parameter and state in place, bumping their version counters. Step counters are
//! 0-d tensors that are incremented here, as PyTorch's `state["step"]`.

use rayon::prelude::*;

use crate::cpu::simd::with_avx2;
use crate::cpu::strided::{chunk_len, PAR_THRESHOLD};
use crate::cuda::optim_ops as cuda_optim;
use crate::dtype::{DType, Element, FloatElement};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::Scalar;

/// Instantiates `$body` with `$T` = the parameter's element type (float32 / float64 only).
macro_rules! with_param_dtype {
    ($p:expr, $T:ident, $body:block) => {
        match $p.dtype() {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            other => {
                return Err(Error::UnsupportedDType {
                    op: "fused optimizer step",
                    dtype: other,
                })
            }
        }
    };
}

/// Hyper-parameters of [`sgd_step`] (`torch.optim.SGD`).
#[derive(Clone, Copy, Debug)]
pub struct SgdOptions {
    pub lr: f64,
    pub momentum: f64,
    pub dampening: f64,
    pub weight_decay: f64,
    pub nesterov: bool,
    pub maximize: bool,
}

/// Hyper-parameters of [`adam_step`] (`torch.optim.Adam`, `AdamW` with `decoupled`).
#[derive(Clone, Copy, Debug)]
pub struct AdamOptions {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub amsgrad: bool,
    pub maximize: bool,
    /// AdamW: shrink the parameter by `lr * weight_decay` instead of adding an L2 gradient.
    pub decoupled: bool,
}

/// Hyper-parameters of [`rmsprop_step`] (`torch.optim.RMSprop`).
#[derive(Clone, Copy, Debug)]
pub struct RmspropOptions {
    pub lr: f64,
    pub alpha: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub momentum: f64,
    pub centered: bool,
    pub maximize: bool,
}

/// Hyper-parameters of [`adagrad_step`] (`torch.optim.Adagrad`).
#[derive(Clone, Copy, Debug)]
pub struct AdagradOptions {
    pub lr: f64,
    pub lr_decay: f64,
    pub weight_decay: f64,
    pub eps: f64,
    pub maximize: bool,
}

/// Hyper-parameters of [`adadelta_step`] (`torch.optim.Adadelta`).
#[derive(Clone, Copy, Debug)]
pub struct AdadeltaOptions {
    pub lr: f64,
    pub rho: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub maximize: bool,
}

/// SGD with momentum. `momentum_buffers[i]` is used only when `momentum != 0`;
/// `fresh[i]` marks a buffer created for this step (PyTorch sets it to the gradient).
pub fn sgd_step(
    params: &[Tensor],
    grads: &[Tensor],
    momentum_buffers: &[Tensor],
    fresh: &[bool],
    o: &SgdOptions,
) -> Result<()> {
    let use_momentum = o.momentum != 0.0;
    let states: Vec<&[Tensor]> = if use_momentum {
        vec![momentum_buffers]
    } else {
        vec![]
    };
    check_lengths("sgd", params, grads, &states)?;
    if use_momentum && fresh.len() != params.len() {
        return Err(Error::Value(format!(
            "sgd: got {} 'fresh' flags for {} parameters",
            fresh.len(),
            params.len()
        )));
    }
    for (i, (p, g)) in params.iter().zip(grads).enumerate() {
        let bufs: Vec<&Tensor> = states.iter().map(|s| &s[i]).collect();
        let first = use_momentum && fresh[i];
        if p.device().is_cuda() {
            check_cuda("sgd", p, g, &bufs)?;
            let a = cuda_optim::SgdArgs {
                lr: o.lr,
                momentum: o.momentum,
                dampening: o.dampening,
                weight_decay: o.weight_decay,
                nesterov: o.nesterov,
                maximize: o.maximize,
                first_step: first,
            };
            cuda_optim::sgd_step(p, g, bufs.first().copied(), &a)?;
            continue;
        }
        with_param_dtype!(p, T, {
            update::<T>("sgd", p, g, &bufs, |p, g, s| {
                let (lr, wd) = (T::from_f64(o.lr), T::from_f64(o.weight_decay));
                let (mom, damp) = (T::from_f64(o.momentum), T::from_f64(1.0 - o.dampening));
                for i in 0..p.len() {
                    let mut d = if o.maximize { -g[i] } else { g[i] };
                    if o.weight_decay != 0.0 {
                        d += wd * p[i];
                    }
                    if use_momentum {
                        let buf = &mut s[0][i];
                        *buf = if first { d } else { mom * *buf + damp * d };
                        d = if o.nesterov { d + mom * *buf } else { *buf };
                    }
                    p[i] -= lr * d;
                }
            })?;
        });
    }
    Ok(())
}

/// Adam / AdamW (optionally AMSGrad). `max_exp_avg_sqs` is read only with `amsgrad`.
pub fn adam_step(
    params: &[Tensor],
    grads: &[Tensor],
    exp_avgs: &[Tensor],
    exp_avg_sqs: &[Tensor],
    max_exp_avg_sqs: &[Tensor],
    steps: &[Tensor],
    o: &AdamOptions,
) -> Result<()> {
    let mut states = vec![exp_avgs, exp_avg_sqs];
    if o.amsgrad {
        states.push(max_exp_avg_sqs);
    }
    check_lengths("adam", params, grads, &states)?;
    let steps = increment_steps("adam", steps, params.len())?;
    for (i, (p, g)) in params.iter().zip(grads).enumerate() {
        let bufs: Vec<&Tensor> = states.iter().map(|s| &s[i]).collect();
        let bias_correction1 = 1.0 - o.beta1.powf(steps[i]);
        let bias_correction2_sqrt = (1.0 - o.beta2.powf(steps[i])).sqrt();
        if p.device().is_cuda() {
            check_cuda("adam", p, g, &bufs)?;
            let a = cuda_optim::AdamArgs {
                lr: o.lr,
                beta1: o.beta1,
                beta2: o.beta2,
                eps: o.eps,
                weight_decay: o.weight_decay,
                decoupled: o.decoupled,
                maximize: o.maximize,
                bias_correction1,
                bias_correction2: 1.0 - o.beta2.powf(steps[i]),
            };
            cuda_optim::adam_step(p, g, bufs[0], bufs[1], bufs.get(2).copied(), &a)?;
            continue;
        }
        with_param_dtype!(p, T, {
            update::<T>("adam", p, g, &bufs, |p, g, s| {
                let (b1, b2) = (T::from_f64(o.beta1), T::from_f64(o.beta2));
                let (one_b1, one_b2) = (T::from_f64(1.0 - o.beta1), T::from_f64(1.0 - o.beta2));
                let wd = T::from_f64(o.weight_decay);
                let shrink = T::from_f64(1.0 - o.lr * o.weight_decay);
                let step_size = T::from_f64(o.lr / bias_correction1);
                let bc2 = T::from_f64(bias_correction2_sqrt);
                let eps = T::from_f64(o.eps);
                let (m, rest) = s.split_at_mut(1);
                let (v, vmax) = rest.split_at_mut(1);
                let (m, v, mut vmax) = (&mut *m[0], &mut *v[0], vmax.get_mut(0));
                if vmax.is_none() && !o.maximize && o.weight_decay == 0.0 {
                    // The common case, branch-free so that it vectorises (same arithmetic,
                    // in the same order, as the general loop below).
                    let n = p.len();
                    let (g, m, v) = (&g[..n], &mut m[..n], &mut v[..n]);
                    for i in 0..n {
                        let d = g[i];
                        let mi = b1 * m[i] + one_b1 * d;
                        let vi = b2 * v[i] + one_b2 * d * d;
                        m[i] = mi;
                        v[i] = vi;
                        p[i] -= step_size * mi / (vi.sqrt() / bc2 + eps);
                    }
                    return;
                }
                for i in 0..p.len() {
                    let mut d = if o.maximize { -g[i] } else { g[i] };
                    if o.weight_decay != 0.0 {
                        if o.decoupled {
                            p[i] *= shrink;
                        } else {
                            d += wd * p[i];
                        }
                    }
                    m[i] = b1 * m[i] + one_b1 * d;
                    v[i] = b2 * v[i] + one_b2 * d * d;
                    let second = match vmax.as_deref_mut() {
                        Some(vmax) => {
                            vmax[i] = vmax[i].max(v[i]);
                            vmax[i]
                        }
                        None => v[i],
                    };
                    p[i] -= step_size * m[i] / (second.sqrt() / bc2 + eps);
                }
            })?;
        });
    }
    Ok(())
}

/// RMSprop. States per parameter: `square_avgs`, plus `momentum_buffers` when
/// `momentum > 0` and `grad_avgs` when `centered` (pass empty slices otherwise).
pub fn rmsprop_step(
    params: &[Tensor],
    grads: &[Tensor],
    square_avgs: &[Tensor],
    momentum_buffers: &[Tensor],
    grad_avgs: &[Tensor],
    steps: &[Tensor],
    o: &RmspropOptions,
) -> Result<()> {
    let use_momentum = o.momentum > 0.0;
    let mut states = vec![square_avgs];
    if use_momentum {
        states.push(momentum_buffers);
    }
    if o.centered {
        states.push(grad_avgs);
    }
    check_lengths("rmsprop", params, grads, &states)?;
    increment_steps("rmsprop", steps, params.len())?;
    for (i, (p, g)) in params.iter().zip(grads).enumerate() {
        let bufs: Vec<&Tensor> = states.iter().map(|s| &s[i]).collect();
        with_param_dtype!(p, T, {
            update::<T>("rmsprop", p, g, &bufs, |p, g, s| {
                let (lr, alpha) = (T::from_f64(o.lr), T::from_f64(o.alpha));
                let one_alpha = T::from_f64(1.0 - o.alpha);
                let (eps, wd, mom) = (
                    T::from_f64(o.eps),
                    T::from_f64(o.weight_decay),
                    T::from_f64(o.momentum),
                );
                let (sq, rest) = s.split_at_mut(1);
                let sq = &mut *sq[0];
                let (mut buf, mut gavg) = match (use_momentum, o.centered) {
                    (true, true) => {
                        let (b, a) = rest.split_at_mut(1);
                        (Some(&mut *b[0]), Some(&mut *a[0]))
                    }
                    (true, false) => (Some(&mut *rest[0]), None),
                    (false, true) => (None, Some(&mut *rest[0])),
                    (false, false) => (None, None),
                };
                for i in 0..p.len() {
                    let mut d = if o.maximize { -g[i] } else { g[i] };
                    if o.weight_decay != 0.0 {
                        d += wd * p[i];
                    }
                    sq[i] = alpha * sq[i] + one_alpha * d * d;
                    let avg = match gavg.as_deref_mut() {
                        Some(ga) => {
                            ga[i] = alpha * ga[i] + one_alpha * d;
                            (sq[i] - ga[i] * ga[i]).sqrt() + eps
                        }
                        None => sq[i].sqrt() + eps,
                    };
                    match buf.as_deref_mut() {
                        Some(b) => {
                            b[i] = mom * b[i] + d / avg;
                            p[i] -= lr * b[i];
                        }
                        None => p[i] -= lr * d / avg,
                    }
                }
            })?;
        });
    }
    Ok(())
}

/// Adagrad: `sums` are the accumulated squared gradients.
pub fn adagrad_step(
    params: &[Tensor],
    grads: &[Tensor],
    sums: &[Tensor],
    steps: &[Tensor],
    o: &AdagradOptions,
) -> Result<()> {
    check_lengths("adagrad", params, grads, &[sums])?;
    let steps = increment_steps("adagrad", steps, params.len())?;
    for (i, (p, g)) in params.iter().zip(grads).enumerate() {
        let clr = o.lr / (1.0 + (steps[i] - 1.0) * o.lr_decay);
        with_param_dtype!(p, T, {
            update::<T>("adagrad", p, g, &[&sums[i]], |p, g, s| {
                let (clr, wd, eps) = (
                    T::from_f64(clr),
                    T::from_f64(o.weight_decay),
                    T::from_f64(o.eps),
                );
                let sum = &mut *s[0];
                for i in 0..p.len() {
                    let mut d = if o.maximize { -g[i] } else { g[i] };
                    if o.weight_decay != 0.0 {
                        d += wd * p[i];
                    }
                    sum[i] += d * d;
                    p[i] -= clr * d / (sum[i].sqrt() + eps);
                }
            })?;
        });
    }
    Ok(())
}

/// Adadelta: `square_avgs` and `acc_deltas` are the running averages of squared gradients
/// and squared updates.
pub fn adadelta_step(
    params: &[Tensor],
    grads: &[Tensor],
    square_avgs: &[Tensor],
    acc_deltas: &[Tensor],
    steps: &[Tensor],
    o: &AdadeltaOptions,
) -> Result<()> {
    check_lengths("adadelta", params, grads, &[square_avgs, acc_deltas])?;
    increment_steps("adadelta", steps, params.len())?;
    for (i, (p, g)) in params.iter().zip(grads).enumerate() {
        with_param_dtype!(p, T, {
            update::<T>(
                "adadelta",
                p,
                g,
                &[&square_avgs[i], &acc_deltas[i]],
                |p, g, s| {
                    let (lr, rho, one_rho) = (
                        T::from_f64(o.lr),
                        T::from_f64(o.rho),
                        T::from_f64(1.0 - o.rho),
                    );
                    let (eps, wd) = (T::from_f64(o.eps), T::from_f64(o.weight_decay));
                    let (sq, acc) = s.split_at_mut(1);
                    let (sq, acc) = (&mut *sq[0], &mut *acc[0]);
                    for i in 0..p.len() {
                        let mut d = if o.maximize { -g[i] } else { g[i] };
                        if o.weight_decay != 0.0 {
                            d += wd * p[i];
                        }
                        sq[i] = rho * sq[i] + one_rho * d * d;
                        let delta = (acc[i] + eps).sqrt() / (sq[i] + eps).sqrt() * d;
                        acc[i] = rho * acc[i] + one_rho * delta * delta;
                        p[i] -= lr * delta;
                    }
                },
            )?;
        });
    }
    Ok(())
}

// ---------------------------------------------------------------- shared plumbing

fn check_lengths(
    op: &str,
    params: &[Tensor],
    grads: &[Tensor],
    states: &[&[Tensor]],
) -> Result<()> {
    let n = params.len();
    if grads.len() != n || states.iter().any(|s| s.len() != n) {
        return Err(Error::Value(format!(
            "{op}: expected one gradient and one of each state tensor per parameter ({n} parameters), \
             got {} gradients and state lists of lengths {:?}",
            grads.len(),
            states.iter().map(|s| s.len()).collect::<Vec<_>>()
        )));
    }
    Ok(())
}

/// Adds one to every step counter and returns the new values.
fn increment_steps(op: &str, steps: &[Tensor], n: usize) -> Result<Vec<f64>> {
    if steps.len() != n {
        return Err(Error::Value(format!(
            "{op}: got {} step counters for {n} parameters",
            steps.len()
        )));
    }
    steps
        .iter()
        .map(|s| {
            if s.numel() != 1 {
                return Err(Error::Value(format!(
                    "{op}: a step counter must hold one value, got shape {:?}",
                    s.shape()
                )));
            }
            let next = s.item()?.to_f64() + 1.0;
            s.fill_(Scalar::Float(next))?;
            Ok(next)
        })
        .collect()
}

/// Checks of a fused step on CUDA: the parameter, its gradient and its state buffers are
/// contiguous float tensors of one dtype, shape and device, and no writable buffer shares
/// memory with another or with the gradient. Bumps the versions of the written tensors.
fn check_cuda(op: &str, param: &Tensor, grad: &Tensor, states: &[&Tensor]) -> Result<()> {
    if !param.dtype().is_floating_point() {
        return Err(Error::UnsupportedDType {
            op: "fused optimizer step",
            dtype: param.dtype(),
        });
    }
    let all = std::iter::once(("the parameter", param))
        .chain(std::iter::once(("the gradient", grad)))
        .chain(states.iter().map(|s| ("a state buffer", *s)));
    for (what, t) in all {
        if t.device() != param.device() {
            return Err(Error::Runtime(format!(
                "{op}: {what} is on {} but its parameter is on {}; optimizer state must live on the parameter's device",
                t.device(),
                param.device()
            )));
        }
        if t.dtype() != param.dtype() || t.shape() != param.shape() || !t.is_contiguous() {
            return Err(Error::Runtime(format!(
                "{op}: {what} must be a contiguous {} tensor of shape {:?} like its parameter, \
                 got {} of shape {:?} (contiguous: {})",
                param.dtype().torch_name(),
                param.shape(),
                t.dtype().torch_name(),
                t.shape(),
                t.is_contiguous()
            )));
        }
    }
    let writable: Vec<&Tensor> = std::iter::once(param)
        .chain(states.iter().copied())
        .collect();
    for (i, a) in writable.iter().enumerate() {
        if writable[i + 1..]
            .iter()
            .chain([&grad])
            .any(|b| a.shares_storage(b))
        {
            return Err(Error::Runtime(format!(
                "{op}: a parameter, its gradient and its optimizer state must not share memory"
            )));
        }
    }
    for t in writable {
        t.storage().bump_version();
    }
    Ok(())
}

/// Checks that `t` can be rewritten as `numel` contiguous elements of type `T`.
fn check_buffer<T: FloatElement>(op: &str, what: &str, t: &Tensor, param: &Tensor) -> Result<()> {
    if t.dtype() != T::DTYPE || t.shape() != param.shape() || !t.is_contiguous() {
        return Err(Error::Runtime(format!(
            "{op}: {what} must be a contiguous {} tensor of shape {:?} like its parameter, \
             got {} of shape {:?} (contiguous: {})",
            T::DTYPE.torch_name(),
            param.shape(),
            t.dtype().torch_name(),
            t.shape(),
            t.is_contiguous()
        )));
    }
    if t.device() != param.device() || t.device() != crate::Device::Cpu {
        return Err(Error::Runtime(format!(
            "{op}: fused CPU step got tensors on {} and {}",
            param.device(),
            t.device()
        )));
    }
    Ok(())
}

/// Matching pieces of a parameter, its gradient and its state buffers.
type Chunk<'a, T> = (&'a mut [T], &'a [T], Vec<&'a mut [T]>);

/// Rewrites one parameter and its state buffers with `kernel`, which sees matching chunks
/// of (parameter, gradient, states) and runs on several threads for big parameters.
fn update<T: FloatElement>(
    op: &str,
    param: &Tensor,
    grad: &Tensor,
    states: &[&Tensor],
    kernel: impl Fn(&mut [T], &[T], &mut [&mut [T]]) + Sync,
) -> Result<()> {
    check_buffer::<T>(op, "the parameter", param, param)?;
    check_buffer::<T>(op, "the gradient", grad, param)?;
    for s in states {
        check_buffer::<T>(op, "a state buffer", s, param)?;
    }
    // Writable buffers must not share memory with each other or with the gradient.
    let writable: Vec<&Tensor> = std::iter::once(param)
        .chain(states.iter().copied())
        .collect();
    for (i, a) in writable.iter().enumerate() {
        let clash = writable[i + 1..]
            .iter()
            .chain([&grad])
            .any(|b| a.shares_storage(b));
        if clash {
            return Err(Error::Runtime(format!(
                "{op}: a parameter, its gradient and its optimizer state must not share memory"
            )));
        }
    }
    let n = param.numel();
    if n == 0 {
        return Ok(());
    }
    let range = |t: &Tensor| t.storage_offset()..t.storage_offset() + n;
    let g = &grad.storage_slice::<T>()?[range(grad)];
    // SAFETY: each tensor's storage was checked above to be distinct from every other one
    // used here, so these mutable slices do not alias each other or `g`; the caller (the
    // optimizer, under no_grad) holds no other reference into them during the update.
    let p = unsafe { &mut param.storage_slice_mut::<T>()?[range(param)] };
    let mut s: Vec<&mut [T]> = Vec::with_capacity(states.len());
    for t in states {
        // SAFETY: as above (distinct storages, checked).
        s.push(unsafe { &mut t.storage_slice_mut::<T>()?[range(t)] });
    }
    if n < PAR_THRESHOLD {
        with_avx2(|| kernel(p, g, &mut s));
        return Ok(());
    }
    let chunk = chunk_len(n);
    let mut state_chunks: Vec<_> = s.iter_mut().map(|b| b.chunks_mut(chunk)).collect();
    let jobs: Vec<Chunk<'_, T>> = p
        .chunks_mut(chunk)
        .zip(g.chunks(chunk))
        .map(|(pc, gc)| {
            let sc = state_chunks
                .iter_mut()
                .map(|it| it.next().unwrap_or_default())
                .collect();
            (pc, gc, sc)
        })
        .collect();
    jobs.into_par_iter()
        .for_each(|(pc, gc, mut sc)| with_avx2(|| kernel(pc, gc, &mut sc)));
    Ok(())
}
