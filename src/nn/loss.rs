//! Fused losses: cross entropy with class-index targets (log-softmax + NLL in one pass over
//! the logits, with `weight`, `ignore_index`, `label_smoothing` and the three reductions).
//!
//! Forward computes, per position, the log-sum-exp of the logits (kept for backward) and the
//! loss `(1 - ls) * -w[t] * logp[t] + ls / C * -sum_c w[c] * logp[c]`; `mean` divides the sum
//! by the total weight `sum w[t]` of the non-ignored targets (PyTorch's rule). The backward
//! kernel recomputes the softmax from the saved log-sum-exp. Under `create_graph=True` the
//! gradient is built from differentiable ops instead, so double backward works.

use crate::autograd::{formula, needs_grad, record, SavedTensor};
use crate::cpu::strided::PAR_THRESHOLD;
use crate::{no_grad, with_float_dtype, Element, Error, Result, Tensor};
use rayon::prelude::*;

/// How a per-element loss is reduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    None,
    Mean,
    Sum,
}

impl Reduction {
    pub fn parse(s: &str) -> Result<Reduction> {
        match s {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            _ => Err(Error::Value(format!(
                "{s} is not a valid value for reduction"
            ))),
        }
    }
}

/// `(N, C, S)` and the shape of the per-position loss.
fn geometry(input: &Tensor, target: &Tensor) -> Result<(usize, usize, usize, Vec<usize>)> {
    let shp = input.shape();
    match shp.len() {
        0 => Err(Error::Runtime(
            "cross_entropy: expected input with at least 1 dimension, got a 0-d tensor".into(),
        )),
        1 => {
            if target.ndim() != 0 {
                return Err(Error::Runtime(format!(
                    "cross_entropy: for an unbatched input of shape {shp:?} the target must be 0-d, got shape {:?}",
                    target.shape()
                )));
            }
            Ok((1, shp[0], 1, vec![]))
        }
        _ => {
            let mut want = vec![shp[0]];
            want.extend_from_slice(&shp[2..]);
            if target.shape() != want.as_slice() {
                if target.ndim() >= 1 && target.shape()[0] != shp[0] {
                    return Err(Error::Value(format!(
                        "Expected input batch_size ({}) to match target batch_size ({}).",
                        shp[0],
                        target.shape()[0]
                    )));
                }
                return Err(Error::Runtime(format!(
                    "cross_entropy: expected target of size {want:?}, got {:?}",
                    target.shape()
                )));
            }
            Ok((shp[0], shp[1], shp[2..].iter().product(), want))
        }
    }
}

struct Ctx<'a> {
    c: usize,
    s: usize,
    w: Option<&'a [f64]>,
    ignore_index: i64,
    ls: f64,
}

impl Ctx<'_> {
    fn wc(&self, j: usize) -> f64 {
        self.w.map_or(1.0, |w| w[j])
    }
}

/// Per position: (loss, log-sum-exp). Errors with the first out-of-range target.
fn forward_kernel<T: Element>(
    x: &[T],
    t: &[i64],
    ctx: &Ctx<'_>,
    loss: &mut [f64],
    lse: &mut [f64],
) -> Result<()> {
    let (c, s) = (ctx.c, ctx.s);
    let min = (PAR_THRESHOLD / (c * s).max(1)).max(1);
    x.par_chunks(c * s)
        .zip(t.par_chunks(s))
        .zip(loss.par_chunks_mut(s).zip(lse.par_chunks_mut(s)))
        .with_min_len(min)
        .try_for_each(|((xb, tb), (lb, eb))| {
            for p in 0..s {
                let at = |j: usize| xb[j * s + p].to_f64();
                let mut m = f64::NEG_INFINITY;
                for j in 0..c {
                    m = m.max(at(j));
                }
                let mut sum = 0.0;
                for j in 0..c {
                    sum += (at(j) - m).exp();
                }
                let e = if m.is_finite() { m + sum.ln() } else { m };
                eb[p] = e;
                let tv = tb[p];
                if tv == ctx.ignore_index {
                    lb[p] = 0.0;
                    continue;
                }
                if tv < 0 || tv as usize >= c {
                    return Err(Error::Index(format!("Target {tv} is out of bounds.")));
                }
                let ti = tv as usize;
                let mut l = -(1.0 - ctx.ls) * ctx.wc(ti) * (at(ti) - e);
                if ctx.ls > 0.0 {
                    let mut sm = 0.0;
                    for j in 0..c {
                        sm += ctx.wc(j) * (at(j) - e);
                    }
                    l -= ctx.ls / c as f64 * sm;
                }
                lb[p] = l;
            }
            Ok(())
        })
}

/// `dx` given a per-position gradient scale.
fn backward_kernel<T: Element>(
    x: &[T],
    t: &[i64],
    lse: &[f64],
    scale: &(impl Fn(usize) -> f64 + Sync),
    ctx: &Ctx<'_>,
) -> Vec<T> {
    let (c, s) = (ctx.c, ctx.s);
    let wall: f64 = (0..c).map(|j| ctx.wc(j)).sum();
    let mut out = vec![T::default(); x.len()];
    let min = (PAR_THRESHOLD / (c * s).max(1)).max(1);
    out.par_chunks_mut(c * s)
        .zip(x.par_chunks(c * s))
        .enumerate()
        .with_min_len(min)
        .for_each(|(n, (ob, xb))| {
            for p in 0..s {
                let pos = n * s + p;
                let tv = t[pos];
                let g = scale(pos);
                if tv == ctx.ignore_index || tv < 0 || tv as usize >= c || g == 0.0 {
                    continue;
                }
                let ti = tv as usize;
                let wt = ctx.wc(ti);
                let e = lse[pos];
                for j in 0..c {
                    let sm = (xb[j * s + p].to_f64() - e).exp();
                    let hot = if j == ti { 1.0 } else { 0.0 };
                    let mut d = (1.0 - ctx.ls) * wt * (sm - hot);
                    if ctx.ls > 0.0 {
                        d += ctx.ls / c as f64 * (wall * sm - ctx.wc(j));
                    }
                    ob[j * s + p] = T::from_f64(g * d);
                }
            }
        });
    out
}

/// The gradient w.r.t. the logits written with differentiable ops (`create_graph=True`):
/// `(softmax(x) * a - b) * scale`, where the constants `a` (per position) and `b` (per
/// logit) hold the targets, class weights, `ignore_index` and label smoothing, and `scale`
/// is the output gradient (divided by the total weight for `mean`).
fn differentiable_grad(
    x: &Tensor,
    grad: &Tensor,
    targets: &[i64],
    ctx: &Ctx<'_>,
    reduction: Reduction,
    total_w: f64,
) -> Result<Tensor> {
    let (c, s) = (ctx.c, ctx.s);
    let wall: f64 = (0..c).map(|j| ctx.wc(j)).sum();
    let ls_c = ctx.ls / c as f64;
    let mut a = vec![0.0; targets.len()];
    let mut b = vec![0.0; targets.len() * c];
    for (pos, &t) in targets.iter().enumerate() {
        if t == ctx.ignore_index || t < 0 || t as usize >= c {
            continue;
        }
        let wt = ctx.wc(t as usize);
        a[pos] = (1.0 - ctx.ls) * wt + ls_c * wall;
        let (img, p) = (pos / s, pos % s);
        for j in 0..c {
            let hot = if j == t as usize {
                (1.0 - ctx.ls) * wt
            } else {
                0.0
            };
            b[(img * c + j) * s + p] = hot + ls_c * ctx.wc(j);
        }
    }
    let class_dim = usize::from(x.ndim() > 1);
    let mut a_shape = x.shape().to_vec();
    a_shape[class_dim] = 1;
    let constant = |v: Vec<f64>, shape: &[usize]| {
        Tensor::from_vec_unchecked(v, shape)
            .to_dtype(x.dtype())
            .to_device(x.device())
    };
    let (a, b) = (constant(a, &a_shape)?, constant(b, x.shape())?);
    let p = x.softmax(class_dim as i64, None)?;
    let d = formula::sub(&formula::mul(&p, &a)?, &b)?;
    let scale = match reduction {
        Reduction::None => grad.unsqueeze(class_dim as i64)?,
        Reduction::Sum => grad.clone(),
        Reduction::Mean => formula::muls(grad, 1.0 / total_w)?,
    };
    formula::mul(&d, &scale)
}

/// Cross entropy of logits `input` (`(N, C, *)` or `(C,)`) against int64 class indices
/// `target` (`(N, *)` or 0-d). Records `CrossEntropyLossBackward0` (first order only).
pub fn cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    if !input.dtype().is_floating_point() {
        return Err(Error::UnsupportedDType {
            op: "cross_entropy",
            dtype: input.dtype(),
        });
    }
    if target.dtype() != crate::DType::I64 {
        return Err(Error::Runtime(format!(
            "expected scalar type Long but found {}",
            target.dtype().torch_name()
        )));
    }
    if !(0.0..=1.0).contains(&label_smoothing) {
        return Err(Error::Value(format!(
            "label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}"
        )));
    }
    let (n, c, s, out_shape) = geometry(input, target)?;
    if let Some(w) = weight {
        if w.numel() != c || w.ndim() != 1 {
            return Err(Error::Runtime(format!(
                "weight tensor should be defined either for all {c} classes or no classes but got weight tensor of shape: {:?}",
                w.shape()
            )));
        }
    }
    if input.device().is_cuda() {
        let geo = (n, c, s, out_shape);
        return cross_entropy_cuda(
            input,
            target,
            weight,
            reduction,
            ignore_index,
            label_smoothing,
            geo,
        );
    }
    let w = weight.map(Tensor::to_f64_vec);
    let cd = input.dtype().compute_dtype();
    let x = no_grad(|| input.to_dtype(cd).contiguous());
    let tv = target.contiguous().to_vec::<i64>()?;
    let ctx = Ctx {
        c,
        s,
        w: w.as_deref(),
        ignore_index,
        ls: label_smoothing,
    };
    let mut loss = vec![0.0; n * s];
    let mut lse = vec![0.0; n * s];
    if n * s > 0 {
        if c == 0 {
            return Err(Error::Runtime("cross_entropy: input has 0 classes".into()));
        }
        with_float_dtype!(
            cd,
            T,
            {
                let xs = &x.storage_slice::<T>()?[x.layout().offset..][..x.numel()];
                forward_kernel(xs, &tv, &ctx, &mut loss, &mut lse)?;
            },
            unreachable!()
        );
    }
    let total_w: f64 = tv
        .iter()
        .filter(|&&t| t != ignore_index)
        .map(|&t| ctx.wc(t as usize))
        .sum();
    let out = match reduction {
        Reduction::None => Tensor::from_vec_unchecked(loss, &out_shape),
        Reduction::Sum => Tensor::from_vec_unchecked(vec![loss.iter().sum::<f64>()], &[]),
        Reduction::Mean => {
            Tensor::from_vec_unchecked(vec![loss.iter().sum::<f64>() / total_w], &[])
        }
    }
    .to_dtype(input.dtype());
    if needs_grad(&[input]) {
        const NAME: &str = "CrossEntropyLossBackward0";
        let sx = SavedTensor::new(input, NAME);
        record(
            NAME,
            &[input],
            &[&out],
            Box::new(move |grads| {
                let Some(g) = &grads[0] else {
                    return Ok(vec![None]);
                };
                let xin = sx.get()?;
                let ctx = Ctx {
                    c,
                    s,
                    w: w.as_deref(),
                    ignore_index,
                    ls: label_smoothing,
                };
                if crate::is_grad_enabled() {
                    let gi = differentiable_grad(xin, g, &tv, &ctx, reduction, total_w)?;
                    return Ok(vec![Some(gi)]);
                }
                let x = xin.to_dtype(cd).contiguous();
                let gv = g.to_f64_vec();
                let gi = with_float_dtype!(
                    cd,
                    T,
                    {
                        let xs = &x.storage_slice::<T>()?[x.layout().offset..][..x.numel()];
                        let v = if xs.is_empty() {
                            Vec::new()
                        } else {
                            match reduction {
                                Reduction::None => backward_kernel(xs, &tv, &lse, &|p| gv[p], &ctx),
                                Reduction::Sum => {
                                    let g0 = gv[0];
                                    backward_kernel(xs, &tv, &lse, &|_| g0, &ctx)
                                }
                                Reduction::Mean => {
                                    let g0 = gv[0] / total_w;
                                    backward_kernel(xs, &tv, &lse, &|_| g0, &ctx)
                                }
                            }
                        };
                        Tensor::from_vec_unchecked(v, xin.shape())
                    },
                    unreachable!()
                );
                Ok(vec![Some(gi.to_dtype(xin.dtype()))])
            }),
        );
    }
    Ok(out)
}

// ------------------------------------------------------------------------------- CUDA

/// The logits of `input` (`(N, C, S)` in memory) as contiguous `(N*S, C)` rows (class dim
/// last, as the CUDA kernels take them), in `input`'s dtype.
fn cuda_rows(input: &Tensor, n: usize, c: usize, s: usize) -> Result<Tensor> {
    use crate::cuda::nn_ops as nn;
    let x = nn::contig(input, input.dtype())?;
    if s == 1 {
        return Ok(x.reshape_contiguous(&[n, c]));
    }
    let x3 = x.reshape_contiguous(&[n, c, s]);
    let mut l = x3.layout().clone();
    l.shape = smallvec::smallvec![n, s, c];
    l.strides = smallvec::smallvec![c * s, 1, s];
    let rows = nn::contig(&x3.with_layout(l), input.dtype())?;
    Ok(rows.reshape_contiguous(&[n * s, c]))
}

/// The inverse of [`cuda_rows`]: `(N*S, C)` rows back to `shape` (`(N, C, *)` or `(C,)`).
fn cuda_unrows(rows: &Tensor, n: usize, c: usize, s: usize, shape: &[usize]) -> Result<Tensor> {
    if s == 1 {
        return Ok(rows.reshape_contiguous(shape));
    }
    let r3 = rows.reshape_contiguous(&[n, s, c]);
    let mut l = r3.layout().clone();
    l.shape = smallvec::smallvec![n, c, s];
    l.strides = smallvec::smallvec![s * c, 1, c];
    let t = crate::cuda::nn_ops::contig(&r3.with_layout(l), rows.dtype())?;
    Ok(t.reshape_contiguous(shape))
}

/// [`cross_entropy`] on a CUDA input: the fused kernels of nn.cu (`cross_entropy_fwd/bwd`),
/// same validation, reductions and node (`CrossEntropyLossBackward0`) as on the CPU.
fn cross_entropy_cuda(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
    ignore_index: i64,
    label_smoothing: f64,
    (n, c, s, out_shape): (usize, usize, usize, Vec<usize>),
) -> Result<Tensor> {
    use crate::cuda::nn_ops as nn;
    use crate::cuda::ops as cu;
    let dev = input.device();
    for t in [Some(target), weight].into_iter().flatten() {
        if t.device() != dev {
            return Err(Error::DeviceMismatch {
                op: "cross_entropy",
                lhs: dev,
                rhs: t.device(),
            });
        }
    }
    let dt = input.dtype();
    let ad = nn::acc_dtype(dt);
    let w = weight.map(|w| nn::contig(w, dt)).transpose()?;
    let rows = n * s;
    if rows > 0 && c == 0 {
        return Err(Error::Runtime("cross_entropy: input has 0 classes".into()));
    }
    let t = nn::contig(target, crate::DType::I64)?.reshape_contiguous(&[rows]);
    if nn::count_bad_targets(&t, c, ignore_index)? > 0 {
        let tv = t.to_vec::<i64>()?;
        let bad = tv
            .iter()
            .find(|&&v| v != ignore_index && (v < 0 || v as usize >= c))
            .copied()
            .unwrap_or(-1);
        return Err(Error::Index(format!("Target {bad} is out of bounds.")));
    }
    let x = cuda_rows(input, n, c, s)?;
    let (loss, row_weight, lse) =
        nn::cross_entropy_fwd(&x, &t, w.as_ref(), ignore_index, label_smoothing)?;
    drop(x);
    let sum_all = |v: &Tensor| cu::reduce(v, &[true], false, cu::Reduction::Sum);
    let total_w = match reduction {
        Reduction::Mean => Some(sum_all(&row_weight)?),
        _ => None,
    };
    let out = match reduction {
        Reduction::None => loss.reshape_contiguous(&out_shape),
        Reduction::Sum => sum_all(&loss)?,
        Reduction::Mean => {
            let tw = total_w.as_ref().expect("computed for mean");
            cu::binary(&sum_all(&loss)?, tw, crate::tensor::BinaryOp::Div, ad)?
        }
    };
    let out = cu::cast(&out, dt)?;
    if needs_grad(&[input]) {
        const NAME: &str = "CrossEntropyLossBackward0";
        let sx = SavedTensor::new(input, NAME);
        let in_shape = input.shape().to_vec();
        record(
            NAME,
            &[input],
            &[&out],
            Box::new(move |grads| {
                let Some(g) = &grads[0] else {
                    return Ok(vec![None]);
                };
                let g = &g.to_device(dev)?;
                if crate::is_grad_enabled() {
                    // create_graph: the differentiable formula, its constants built on the host.
                    let host = |v: &Tensor| v.to_device(crate::Device::Cpu);
                    let tv = host(&t)?.to_vec::<i64>()?;
                    let wv = w
                        .as_ref()
                        .map(|w| host(w).map(|w| w.to_f64_vec()))
                        .transpose()?;
                    let tw = match &total_w {
                        Some(tw) => host(tw)?.to_f64_vec()[0],
                        None => 1.0,
                    };
                    let ctx = Ctx {
                        c,
                        s,
                        w: wv.as_deref(),
                        ignore_index,
                        ls: label_smoothing,
                    };
                    let gi = differentiable_grad(sx.get()?, g, &tv, &ctx, reduction, tw)?;
                    return Ok(vec![Some(gi)]);
                }
                let x = cuda_rows(sx.get()?, n, c, s)?;
                // Per-row gradient scale, in the input's dtype.
                let grad_rows = match reduction {
                    Reduction::None => nn::contig(g, dt)?.reshape_contiguous(&[rows]),
                    Reduction::Sum | Reduction::Mean => {
                        let g0 = match &total_w {
                            Some(tw) => {
                                cu::binary(&cu::cast(g, ad)?, tw, crate::tensor::BinaryOp::Div, ad)?
                            }
                            None => g.clone(),
                        };
                        let mut l = g0.layout().clone();
                        l.shape = smallvec::smallvec![rows];
                        l.strides = smallvec::smallvec![0];
                        nn::contig(&g0.with_layout(l), dt)?
                    }
                };
                let gx = nn::cross_entropy_bwd(
                    &x,
                    &t,
                    w.as_ref(),
                    &lse,
                    &grad_rows,
                    ignore_index,
                    label_smoothing,
                )?;
                Ok(vec![Some(cuda_unrows(&gx, n, c, s, &in_shape)?)])
            }),
        );
    }
    Ok(out)
}
