//! Normalisation layers: batch, layer, group and RMS norm (fused forward and backward).
//!
//! Every forward kernel reads the input once to get statistics (two passes: mean, then the
//! sum of squared deviations, accumulated in f64 for accuracy), then writes the output in one
//! more pass, and returns the statistics it normalised with (`mean`, `rstd = 1/sqrt(var+eps)`)
//! so the backward kernel does not recompute them. Backward kernels use the closed-form
//! formulas (one pass for the per-channel/per-row sums, one for `grad_input`).
//!
//! Layouts: batch and group norm see the input as `(N, C, S)` (S = product of the spatial
//! dims) made of `N*C` contiguous blocks of `S` elements; layer and RMS norm see it as
//! `(M, K)` rows. Work is split over blocks / rows with rayon.
//!
//! f32 and f64 are computed natively (with f64 accumulators); f16/bf16 inputs are computed in
//! f32 and converted back, their statistics stay f32 (as PyTorch's).
//!
//! Autograd: each op records one node (`NativeBatchNormBackward0`, `NativeLayerNormBackward0`,
//! `NativeGroupNormBackward0`, `RmsNormBackward0`) whose backward calls the raw backward
//! kernels here, or, under `create_graph=True`, the same formulas written with
//! differentiable ops ([`differentiable`]), so double backward works.

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::cpu::strided::{self, PAR_THRESHOLD};
use crate::{no_grad, with_dtype, with_float_dtype, DType, Element, Error, Result, Tensor};
use rayon::prelude::*;

mod differentiable;
use differentiable::{norm_backward, NormSpec, Stats};

/// Result of a normalisation forward: the output and the statistics used (`mean` and
/// `rstd`, one per normalised group, in the compute dtype).
pub struct NormOutput {
    pub output: Tensor,
    pub mean: Tensor,
    pub rstd: Tensor,
}

// ------------------------------------------------------------------------------- helpers

/// Minimum number of items per rayon job so that each job handles about PAR_THRESHOLD
/// elements.
fn min_len(work_per_item: usize) -> usize {
    (PAR_THRESHOLD / work_per_item.max(1)).max(1)
}

fn compute_dtype(op: &'static str, t: &Tensor) -> Result<DType> {
    if !t.dtype().is_floating_point() {
        return Err(Error::UnsupportedDType {
            op,
            dtype: t.dtype(),
        });
    }
    Ok(t.dtype().compute_dtype())
}

/// The elements of a contiguous tensor.
fn cslice<T: Element>(t: &Tensor) -> Result<&[T]> {
    let s = t.storage_slice::<T>()?;
    let o = t.layout().offset;
    Ok(&s[o..o + t.numel()])
}

/// An optional parameter's values as f64 (row-major), checked against `numel`.
fn param_values(
    p: Option<&Tensor>,
    numel: usize,
    check: impl Fn(&Tensor) -> Error,
) -> Result<Option<Vec<f64>>> {
    match p {
        None => Ok(None),
        Some(t) => {
            if t.numel() != numel {
                return Err(check(t));
            }
            if !t.dtype().is_floating_point() {
                return Err(Error::Runtime(format!(
                    "expected scalar type Float but found {}",
                    t.dtype().torch_name()
                )));
            }
            Ok(Some(t.to_f64_vec()))
        }
    }
}

fn f64_tensor(v: Vec<f64>, shape: &[usize], dtype: DType) -> Tensor {
    Tensor::from_vec_unchecked(v, shape).to_dtype(dtype)
}

fn shape_str(s: &[usize]) -> String {
    format!("{s:?}")
}

/// Per block of `s` elements: `sum(x - center[stat_of(i)])` and `sum((x - c)^2)`.
fn block_moments<T: Element>(
    x: &[T],
    s: usize,
    center: Option<&[f64]>,
    stat_of: &(impl Fn(usize) -> usize + Sync),
) -> Vec<(f64, f64)> {
    x.par_chunks(s)
        .enumerate()
        .with_min_len(min_len(s))
        .map(|(i, blk)| {
            let c = center.map_or(0.0, |m| m[stat_of(i)]);
            let (mut a, mut b) = (0.0f64, 0.0f64);
            for v in blk {
                let d = v.to_f64() - c;
                a += d;
                b += d * d;
            }
            (a, b)
        })
        .collect()
}

/// Per block: `sum(dy)` and `sum(dy * (x - mean[stat_of(i)]))`.
fn block_grad_sums<T: Element>(
    dy: &[T],
    x: &[T],
    s: usize,
    mean: &[f64],
    stat_of: &(impl Fn(usize) -> usize + Sync),
) -> Vec<(f64, f64)> {
    dy.par_chunks(s)
        .zip(x.par_chunks(s))
        .enumerate()
        .with_min_len(min_len(s))
        .map(|(i, (g, xb))| {
            let m = mean[stat_of(i)];
            let (mut a, mut b) = (0.0f64, 0.0f64);
            for (gv, xv) in g.iter().zip(xb) {
                let gv = gv.to_f64();
                a += gv;
                b += gv * (xv.to_f64() - m);
            }
            (a, b)
        })
        .collect()
}

/// `out = x * scale[i] + shift[i]` for each block `i` of `s` elements.
fn block_affine<T: Element>(x: &[T], s: usize, scale: &[f64], shift: &[f64]) -> Vec<T> {
    let mut out = vec![T::default(); x.len()];
    out.par_chunks_mut(s)
        .zip(x.par_chunks(s))
        .enumerate()
        .with_min_len(min_len(s))
        .for_each(|(i, (o, xb))| {
            let (a, b) = (scale[i], shift[i]);
            for (ov, xv) in o.iter_mut().zip(xb) {
                *ov = T::from_f64(xv.to_f64() * a + b);
            }
        });
    out
}

/// `dx = dy * k[i].0 + (x - k[i].1) * k[i].2 + k[i].3` for each block `i` of `s` elements.
fn block_grad_input<T: Element>(dy: &[T], x: &[T], s: usize, k: &[[f64; 4]]) -> Vec<T> {
    let mut out = vec![T::default(); x.len()];
    out.par_chunks_mut(s)
        .zip(dy.par_chunks(s).zip(x.par_chunks(s)))
        .enumerate()
        .with_min_len(min_len(s))
        .for_each(|(i, (o, (g, xb)))| {
            let [k1, m, k2, k3] = k[i];
            for ((ov, gv), xv) in o.iter_mut().zip(g).zip(xb) {
                *ov = T::from_f64(gv.to_f64() * k1 + (xv.to_f64() - m) * k2 + k3);
            }
        });
    out
}

/// `(N, C, S)` of an input with at least 2 dims.
fn ncs(shape: &[usize]) -> (usize, usize, usize) {
    (shape[0], shape[1], shape[2..].iter().product())
}

/// Update a running statistic in place: `r = (1 - momentum) * r + momentum * v`.
fn update_running(r: &Tensor, v: &[f64], momentum: f64) -> Result<()> {
    let offs = strided::offsets(r.layout());
    with_dtype!(r.dtype(), T, {
        // SAFETY: only the elements of `r` (distinct offsets of its layout) are rewritten,
        // and no other slice of this storage is alive during the loop.
        let s = unsafe { r.storage_slice_mut::<T>()? };
        for (o, val) in offs.iter().zip(v) {
            s[*o] = T::from_f64((1.0 - momentum) * s[*o].to_f64() + momentum * val);
        }
    });
    Ok(())
}

fn check_running(name: &str, r: &Tensor, c: usize) -> Result<()> {
    if r.numel() != c {
        return Err(Error::Runtime(format!(
            "{name} should contain {c} elements not {}",
            r.numel()
        )));
    }
    if !r.dtype().is_floating_point() {
        return Err(Error::Runtime(format!(
            "expected {name} to have a floating point dtype, got {}",
            r.dtype().torch_name()
        )));
    }
    Ok(())
}

/// Inputs recorded on a node: `input` plus the present parameters. Returns the list and the
/// positions of weight and bias in it.
fn node_inputs<'a>(
    input: &'a Tensor,
    weight: Option<&'a Tensor>,
    bias: Option<&'a Tensor>,
) -> Vec<&'a Tensor> {
    let mut v = vec![input];
    v.extend(weight);
    v.extend(bias);
    v
}

/// Map the three gradients to the node's present inputs.
fn node_grads(
    has_w: bool,
    has_b: bool,
    (dx, dw, db): (Option<Tensor>, Option<Tensor>, Option<Tensor>),
) -> Vec<Option<Tensor>> {
    let mut v = vec![dx];
    if has_w {
        v.push(dw);
    }
    if has_b {
        v.push(db);
    }
    v
}

fn requires(t: Option<&Tensor>) -> bool {
    t.is_some_and(|t| t.requires_grad())
}

/// `(1, C, 1, ...)` with `ndim` dims: a per-channel parameter broadcast against the input.
fn per_channel_shape(ndim: usize, c: usize) -> Vec<i64> {
    (0..ndim)
        .map(|d| if d == 1 { c as i64 } else { 1 })
        .collect()
}

/// The differentiable backward's geometry for per-channel parameters (batch and group norm).
fn channel_spec(input: &Tensor, dims: Vec<i64>, stats: Stats) -> NormSpec {
    let c = input.shape()[1];
    NormSpec {
        grouped: input.shape().iter().map(|&d| d as i64).collect(),
        dims,
        param_bshape: per_channel_shape(input.ndim(), c)
            .iter()
            .map(|&d| d as usize)
            .collect(),
        param_shape: vec![c],
        stats,
    }
}

/// Gradients of a normalisation: (input, weight, bias), each only where asked.
pub type NormGrads = (Option<Tensor>, Option<Tensor>, Option<Tensor>);

// ---------------------------------------------------------------------------- batch norm

/// Batch normalisation over dim 1 of an `(N, C, *)` input.
///
/// In training the batch statistics are used and `running_mean`/`running_var` (when given)
/// are updated in place with `momentum` (the variance with Bessel's correction); in
/// evaluation the running statistics are used. Records `NativeBatchNormBackward0`.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    input: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<NormOutput> {
    let r = no_grad(|| {
        batch_norm_forward(
            input,
            running_mean,
            running_var,
            weight,
            bias,
            training,
            momentum,
            eps,
        )
    })?;
    if needs_grad(&[input]) || (crate::is_grad_enabled() && (requires(weight) || requires(bias))) {
        {
            const NAME: &str = "NativeBatchNormBackward0";
            let sx = SavedTensor::new(input, NAME);
            let sw = weight.map(|w| SavedTensor::new(w, NAME));
            let (mean, rstd) = (r.mean.clone(), r.rstd.clone());
            let (has_w, has_b) = (weight.is_some(), bias.is_some());
            let need = [input.requires_grad(), requires(weight), requires(bias)];
            let inputs = node_inputs(input, weight, bias);
            record(
                NAME,
                &inputs,
                &[&r.output],
                Box::new(move |grads| {
                    let Some(g) = &grads[0] else {
                        return Ok(vec![None; 1 + has_w as usize + has_b as usize]);
                    };
                    let w = match &sw {
                        Some(s) => Some(s.get()?.clone()),
                        None => None,
                    };
                    let x = sx.get()?;
                    let gr = if crate::is_grad_enabled() {
                        let stats = if training {
                            Stats::Batch { eps, rms: false }
                        } else {
                            let b = per_channel_shape(x.ndim(), mean.numel());
                            Stats::Fixed {
                                mean: mean.reshape(&b)?,
                                rstd: rstd.reshape(&b)?,
                            }
                        };
                        let dims: Vec<i64> = (0..x.ndim() as i64).filter(|&d| d != 1).collect();
                        let spec = channel_spec(x, dims, stats);
                        norm_backward(&spec, g, x, w.as_ref(), need)?
                    } else {
                        batch_norm_backward(g, x, w.as_ref(), &mean, &rstd, training, need)?
                    };
                    Ok(node_grads(has_w, has_b, gr))
                }),
            );
        }
    }
    Ok(r)
}

/// batch_norm's checks of the running statistics and the batch (shared by both devices).
fn check_batch_norm_state(
    input: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    c: usize,
) -> Result<()> {
    if let Some(r) = running_mean {
        check_running("running_mean", r, c)?;
    }
    if let Some(r) = running_var {
        check_running("running_var", r, c)?;
    }
    if !training && (running_mean.is_none() || running_var.is_none()) {
        return Err(Error::Runtime(
            "running_mean and running_var must be defined in evaluation mode".into(),
        ));
    }
    let (n, _, s) = ncs(input.shape());
    if training && n * s == 1 {
        return Err(Error::Value(format!(
            "Expected more than 1 value per channel when training, got input size {}",
            shape_str(input.shape())
        )));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn batch_norm_forward(
    input: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<NormOutput> {
    let cd = compute_dtype("batch_norm", input)?;
    if input.ndim() < 2 {
        return Err(Error::Runtime(format!(
            "batch_norm: expected an input with at least 2 dims (N, C, *), got input of size {}",
            shape_str(input.shape())
        )));
    }
    let (n, c, s) = ncs(input.shape());
    if input.device().is_cuda() {
        return batch_norm_forward_cuda(
            input,
            running_mean,
            running_var,
            weight,
            bias,
            training,
            momentum,
            eps,
        );
    }
    let per_channel = |name: &'static str| {
        move |t: &Tensor| {
            Error::Runtime(format!(
                "{name} should contain {c} elements not {}",
                t.numel()
            ))
        }
    };
    let w = param_values(weight, c, per_channel("weight"))?;
    let b = param_values(bias, c, per_channel("bias"))?;
    check_batch_norm_state(input, running_mean, running_var, training, c)?;
    let count = n * s;
    let x = input.to_dtype(cd).contiguous();
    let nblocks = n * c;
    let chan = move |i: usize| i % c;
    let (mean, rstd): (Vec<f64>, Vec<f64>) = with_float_dtype!(
        cd,
        T,
        {
            let xs = cslice::<T>(&x)?;
            if training {
                if count == 0 {
                    (vec![0.0; c], vec![0.0; c])
                } else {
                    let m1 = block_moments(xs, s, None, &chan);
                    let mut mean = vec![0.0; c];
                    for (i, (a, _)) in m1.iter().enumerate() {
                        mean[i % c] += a;
                    }
                    mean.iter_mut().for_each(|m| *m /= count as f64);
                    let m2 = block_moments(xs, s, Some(&mean), &chan);
                    let mut var = vec![0.0; c];
                    for (i, (_, b)) in m2.iter().enumerate() {
                        var[i % c] += b;
                    }
                    let cnt = count as f64;
                    if let Some(rm) = running_mean {
                        update_running(rm, &mean, momentum)?;
                    }
                    if let Some(rv) = running_var {
                        let unbiased: Vec<f64> =
                            var.iter().map(|v| v / (cnt - 1.0).max(0.0)).collect();
                        update_running(rv, &unbiased, momentum)?;
                    }
                    let rstd = var.iter().map(|v| 1.0 / (v / cnt + eps).sqrt()).collect();
                    (mean, rstd)
                }
            } else {
                let (Some(rm), Some(rv)) = (running_mean, running_var) else {
                    unreachable!("checked above")
                };
                let rstd = rv
                    .to_f64_vec()
                    .iter()
                    .map(|v| 1.0 / (v + eps).sqrt())
                    .collect();
                (rm.to_f64_vec(), rstd)
            }
        },
        unreachable!("compute dtype is f32 or f64")
    );
    let mut scale = vec![0.0; nblocks];
    let mut shift = vec![0.0; nblocks];
    for i in 0..nblocks {
        let ch = i % c;
        let a = rstd[ch] * w.as_ref().map_or(1.0, |w| w[ch]);
        scale[i] = a;
        shift[i] = b.as_ref().map_or(0.0, |b| b[ch]) - mean[ch] * a;
    }
    let out = with_float_dtype!(
        cd,
        T,
        {
            let xs = cslice::<T>(&x)?;
            let o = if xs.is_empty() {
                Vec::new()
            } else {
                block_affine(xs, s, &scale, &shift)
            };
            Tensor::from_vec_unchecked(o, input.shape())
        },
        unreachable!()
    );
    Ok(NormOutput {
        output: out.to_dtype(input.dtype()),
        mean: f64_tensor(mean, &[c], cd),
        rstd: f64_tensor(rstd, &[c], cd),
    })
}

/// Backward of [`batch_norm`]: `mean`/`rstd` are the statistics the forward used (batch
/// statistics in training, running ones in evaluation). `need` = which of (input, weight,
/// bias) gradients to compute.
pub fn batch_norm_backward(
    grad_out: &Tensor,
    input: &Tensor,
    weight: Option<&Tensor>,
    mean: &Tensor,
    rstd: &Tensor,
    training: bool,
    need: [bool; 3],
) -> Result<NormGrads> {
    let cd = compute_dtype("batch_norm_backward", input)?;
    if input.device().is_cuda() {
        return batch_norm_backward_cuda(grad_out, input, weight, mean, rstd, training, need);
    }
    let (n, c, s) = ncs(input.shape());
    let x = input.to_dtype(cd).contiguous();
    let g = grad_out.to_dtype(cd).contiguous();
    let mean = mean.to_f64_vec();
    let rstd = rstd.to_f64_vec();
    let w = weight.map(|w| w.to_f64_vec());
    let count = (n * s) as f64;
    let chan = move |i: usize| i % c;
    with_float_dtype!(
        cd,
        T,
        {
            let xs = cslice::<T>(&x)?;
            let gs = cslice::<T>(&g)?;
            let mut sdy = vec![0.0; c];
            let mut sdyx = vec![0.0; c];
            if !xs.is_empty() {
                for (i, (a, b)) in block_grad_sums(gs, xs, s, &mean, &chan)
                    .into_iter()
                    .enumerate()
                {
                    sdy[i % c] += a;
                    sdyx[i % c] += b;
                }
            }
            let dx = if need[0] {
                let k: Vec<[f64; 4]> = (0..n * c)
                    .map(|i| {
                        let ch = i % c;
                        let r = rstd[ch];
                        let wr = r * w.as_ref().map_or(1.0, |w| w[ch]);
                        if training {
                            [
                                wr,
                                mean[ch],
                                -wr * r * r * sdyx[ch] / count,
                                -wr * sdy[ch] / count,
                            ]
                        } else {
                            [wr, 0.0, 0.0, 0.0]
                        }
                    })
                    .collect();
                let v = if xs.is_empty() {
                    Vec::new()
                } else {
                    block_grad_input(gs, xs, s, &k)
                };
                Some(Tensor::from_vec_unchecked(v, input.shape()).to_dtype(input.dtype()))
            } else {
                None
            };
            let wdt = weight.map_or(input.dtype(), |w| w.dtype());
            let dw = need[1].then(|| {
                let v = (0..c).map(|ch| sdyx[ch] * rstd[ch]).collect();
                f64_tensor(v, weight.map_or(&[c][..], |w| w.shape()), wdt)
            });
            let db = need[2].then(|| f64_tensor(sdy.clone(), &[c], wdt));
            Ok((dx, dw, db))
        },
        unreachable!()
    )
}

// ---------------------------------------------------------------------------- group norm

/// Group normalisation of an `(N, C, *)` input: statistics over each group of `C /
/// num_groups` channels (and all spatial positions) of each sample, then a per-channel
/// affine. Records `NativeGroupNormBackward0`.
pub fn group_norm(
    input: &Tensor,
    num_groups: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<NormOutput> {
    let r = no_grad(|| group_norm_forward(input, num_groups, weight, bias, eps))?;
    if needs_grad(&[input]) || (crate::is_grad_enabled() && (requires(weight) || requires(bias))) {
        const NAME: &str = "NativeGroupNormBackward0";
        let sx = SavedTensor::new(input, NAME);
        let sw = weight.map(|w| SavedTensor::new(w, NAME));
        let (mean, rstd) = (r.mean.clone(), r.rstd.clone());
        let (has_w, has_b) = (weight.is_some(), bias.is_some());
        let need = [input.requires_grad(), requires(weight), requires(bias)];
        let inputs = node_inputs(input, weight, bias);
        record(
            NAME,
            &inputs,
            &[&r.output],
            Box::new(move |grads| {
                let Some(g) = &grads[0] else {
                    return Ok(vec![None; 1 + has_w as usize + has_b as usize]);
                };
                let w = match &sw {
                    Some(s) => Some(s.get()?.clone()),
                    None => None,
                };
                let x = sx.get()?;
                let gr = if crate::is_grad_enabled() {
                    let mut spec = channel_spec(x, vec![2], Stats::Batch { eps, rms: false });
                    spec.grouped = vec![x.shape()[0] as i64, num_groups as i64, -1];
                    norm_backward(&spec, g, x, w.as_ref(), need)?
                } else {
                    group_norm_backward(g, x, w.as_ref(), &mean, &rstd, num_groups, need)?
                };
                Ok(node_grads(has_w, has_b, gr))
            }),
        );
    }
    Ok(r)
}

fn group_norm_forward(
    input: &Tensor,
    num_groups: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<NormOutput> {
    let cd = compute_dtype("group_norm", input)?;
    if input.ndim() < 2 {
        return Err(Error::Runtime(format!(
            "Expected at least 2 dimensions for input tensor but received {}",
            input.ndim()
        )));
    }
    let (n, c, s) = ncs(input.shape());
    if num_groups == 0 || c % num_groups != 0 {
        return Err(Error::Runtime(format!(
            "Expected number of channels in input to be divisible by num_groups, but got input of shape {} and num_groups={num_groups}",
            shape_str(input.shape())
        )));
    }
    let per_channel = |name: &'static str| {
        let shape = input.shape().to_vec();
        move |t: &Tensor| {
            Error::Runtime(format!(
                "Expected {name} to be a vector of size equal to the number of channels in input, but got {name} of shape {} and input of shape {}",
                shape_str(t.shape()),
                shape_str(&shape)
            ))
        }
    };
    if input.device().is_cuda() {
        check_same_device("group_norm", input, &[weight, bias])?;
        for (p, name) in [(weight, "weight"), (bias, "bias")] {
            if let Some(t) = p {
                if t.numel() != c {
                    return Err(per_channel(name)(t));
                }
            }
        }
        return group_norm_forward_cuda(input, num_groups, weight, bias, eps);
    }
    let w = param_values(weight, c, per_channel("weight"))?;
    let b = param_values(bias, c, per_channel("bias"))?;
    let cg = c / num_groups;
    let nstats = n * num_groups;
    let group_len = (cg * s) as f64;
    let stat_of = move |i: usize| (i / c) * num_groups + (i % c) / cg;
    let x = input.to_dtype(cd).contiguous();
    let (mean, rstd, out) = with_float_dtype!(
        cd,
        T,
        {
            let xs = cslice::<T>(&x)?;
            let mut mean = vec![0.0; nstats];
            let mut var = vec![0.0; nstats];
            if xs.is_empty() {
                mean.fill(f64::NAN);
                var.fill(f64::NAN);
            } else {
                for (i, (a, _)) in block_moments(xs, s, None, &stat_of).iter().enumerate() {
                    mean[stat_of(i)] += a;
                }
                mean.iter_mut().for_each(|m| *m /= group_len);
                for (i, (_, b)) in block_moments(xs, s, Some(&mean), &stat_of)
                    .iter()
                    .enumerate()
                {
                    var[stat_of(i)] += b;
                }
            }
            let rstd: Vec<f64> = var
                .iter()
                .map(|v| 1.0 / (v / group_len + eps).sqrt())
                .collect();
            let out = if xs.is_empty() {
                Vec::new()
            } else {
                let nb = n * c;
                let mut scale = vec![0.0; nb];
                let mut shift = vec![0.0; nb];
                for i in 0..nb {
                    let (ch, st) = (i % c, stat_of(i));
                    let a = rstd[st] * w.as_ref().map_or(1.0, |w| w[ch]);
                    scale[i] = a;
                    shift[i] = b.as_ref().map_or(0.0, |b| b[ch]) - mean[st] * a;
                }
                block_affine(xs, s, &scale, &shift)
            };
            (mean, rstd, Tensor::from_vec_unchecked(out, input.shape()))
        },
        unreachable!()
    );
    Ok(NormOutput {
        output: out.to_dtype(input.dtype()),
        mean: f64_tensor(mean, &[n, num_groups], cd),
        rstd: f64_tensor(rstd, &[n, num_groups], cd),
    })
}

/// `weight` (C) viewed as (1, C, 1) in `dt`, for broadcasting over (N, C, S).
fn per_channel_view(w: &Tensor, dt: DType) -> Tensor {
    w.to_dtype(dt).reshape_contiguous(&[1, w.numel(), 1])
}

/// [`group_norm_forward`] on CUDA: the statistics of each (sample, group) are layer norm's
/// over the rows of the input viewed as (N * G, C / G * S) (nn.cu's `layer_norm_fwd`), then
/// the per-channel affine with broadcasting kernels.
fn group_norm_forward_cuda(
    input: &Tensor,
    num_groups: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<NormOutput> {
    use crate::cuda::nn_ops as nn;
    use crate::tensor::BinaryOp;
    let dt = input.dtype();
    let (n, c, s) = ncs(input.shape());
    let rows = n * num_groups;
    let x = nn::contig(input, dt)?;
    let (y, mean, rstd) = nn::layer_norm_fwd(&x, None, None, rows, (c / num_groups) * s, eps)?;
    let mut y = y.reshape_contiguous(&[n, c, s]);
    if let Some(w) = weight {
        y = y.binary(&per_channel_view(w, dt), BinaryOp::Mul)?;
    }
    if let Some(b) = bias {
        y = y.binary(&per_channel_view(b, dt), BinaryOp::Add)?;
    }
    Ok(NormOutput {
        output: y.reshape_contiguous(input.shape()),
        mean: mean.reshape_contiguous(&[n, num_groups]),
        rstd: rstd.reshape_contiguous(&[n, num_groups]),
    })
}

/// [`group_norm_backward`] on CUDA. With `wg = grad * weight` (per channel), the input
/// gradient is layer norm's (no affine) over the (N * G, C / G * S) rows of `wg`; the
/// parameter gradients are sums over N and S of `grad * xhat` and `grad`.
fn group_norm_backward_cuda(
    grad_out: &Tensor,
    input: &Tensor,
    weight: Option<&Tensor>,
    (mean, rstd): (&Tensor, &Tensor),
    num_groups: usize,
    need: [bool; 3],
) -> Result<NormGrads> {
    use crate::cuda::nn_ops as nn;
    use crate::tensor::BinaryOp;
    let dt = input.dtype();
    let ad = nn::acc_dtype(dt);
    let (n, c, s) = ncs(input.shape());
    let (rows, cols) = (n * num_groups, (c / num_groups) * s);
    let x = nn::contig(input, dt)?;
    let g = nn::contig(grad_out, dt)?.reshape_contiguous(&[n, c, s]);
    let (mean, rstd) = (nn::contig(mean, ad)?, nn::contig(rstd, ad)?);
    let gx = if need[0] {
        let wg = match weight {
            Some(w) => nn::contig(&g.binary(&per_channel_view(w, dt), BinaryOp::Mul)?, dt)?,
            None => g.clone(),
        };
        let [gx, _, _] = nn::layer_norm_bwd(
            &x,
            &wg,
            &mean,
            &rstd,
            None,
            [true, false, false],
            rows,
            cols,
        )?;
        gx.map(|t| t.reshape_contiguous(input.shape()))
    } else {
        None
    };
    let wdt = weight.map_or(dt, |w| w.dtype());
    let over_n_s: [i64; 2] = [0, 2];
    let gw = if need[1] {
        let stat = |t: &Tensor| t.to_dtype(dt).reshape_contiguous(&[n, num_groups, 1]);
        let xhat = x
            .reshape_contiguous(&[n, num_groups, cols])
            .binary(&stat(&mean), BinaryOp::Sub)?
            .binary(&stat(&rstd), BinaryOp::Mul)?
            .reshape_contiguous(&[n, c, s]);
        let gw = g
            .binary(&xhat, BinaryOp::Mul)?
            .sum_raw(Some(&over_n_s), false, None)?;
        Some(gw.to_dtype(wdt))
    } else {
        None
    };
    let gb = if need[2] {
        Some(g.sum_raw(Some(&over_n_s), false, None)?.to_dtype(wdt))
    } else {
        None
    };
    Ok((gx, gw, gb))
}

/// Backward of [`group_norm`] (statistics of shape `(N, num_groups)` from the forward).
pub fn group_norm_backward(
    grad_out: &Tensor,
    input: &Tensor,
    weight: Option<&Tensor>,
    mean: &Tensor,
    rstd: &Tensor,
    num_groups: usize,
    need: [bool; 3],
) -> Result<NormGrads> {
    if input.device().is_cuda() {
        return group_norm_backward_cuda(grad_out, input, weight, (mean, rstd), num_groups, need);
    }
    let cd = compute_dtype("group_norm_backward", input)?;
    let (n, c, s) = ncs(input.shape());
    let cg = c / num_groups.max(1);
    let stat_of = move |i: usize| (i / c) * num_groups + (i % c) / cg.max(1);
    let x = input.to_dtype(cd).contiguous();
    let g = grad_out.to_dtype(cd).contiguous();
    let mean = mean.to_f64_vec();
    let rstd = rstd.to_f64_vec();
    let w = weight.map(|w| w.to_f64_vec());
    let wc = |ch: usize| w.as_ref().map_or(1.0, |w| w[ch]);
    let len = (cg * s) as f64;
    with_float_dtype!(
        cd,
        T,
        {
            let xs = cslice::<T>(&x)?;
            let gs = cslice::<T>(&g)?;
            let sums = if xs.is_empty() {
                vec![(0.0, 0.0); n * c]
            } else {
                block_grad_sums(gs, xs, s, &mean, &stat_of)
            };
            let dx = if need[0] {
                // Per group: A = sum w*dy, B = sum w*dy*xhat.
                let mut a = vec![0.0; n * num_groups];
                let mut bb = vec![0.0; n * num_groups];
                for (i, (sd, sx)) in sums.iter().enumerate() {
                    let st = stat_of(i);
                    a[st] += wc(i % c) * sd;
                    bb[st] += wc(i % c) * sx * rstd[st];
                }
                let k: Vec<[f64; 4]> = (0..n * c)
                    .map(|i| {
                        let st = stat_of(i);
                        let r = rstd[st];
                        [
                            r * wc(i % c),
                            mean[st],
                            -r * r * bb[st] / len,
                            -r * a[st] / len,
                        ]
                    })
                    .collect();
                let v = if xs.is_empty() {
                    Vec::new()
                } else {
                    block_grad_input(gs, xs, s, &k)
                };
                Some(Tensor::from_vec_unchecked(v, input.shape()).to_dtype(input.dtype()))
            } else {
                None
            };
            let wdt = weight.map_or(input.dtype(), |w| w.dtype());
            let mut dwv = vec![0.0; c];
            let mut dbv = vec![0.0; c];
            for (i, (sd, sx)) in sums.iter().enumerate() {
                dwv[i % c] += sx * rstd[stat_of(i)];
                dbv[i % c] += sd;
            }
            let dw = need[1].then(|| f64_tensor(dwv, &[c], wdt));
            let db = need[2].then(|| f64_tensor(dbv, &[c], wdt));
            Ok((dx, dw, db))
        },
        unreachable!()
    )
}

// ---------------------------------------------------------------------- layer / RMS norm

/// Row statistics and output for `(M, K)` rows: layer norm (`rms == false`) or RMS norm.
#[allow(clippy::too_many_arguments)]
fn rows_forward<T: Element>(
    x: &[T],
    k: usize,
    w: Option<&[f64]>,
    b: Option<&[f64]>,
    eps: f64,
    rms: bool,
    out: &mut [T],
    mean: &mut [f64],
    rstd: &mut [f64],
) {
    let kf = k as f64;
    out.par_chunks_mut(k)
        .zip(x.par_chunks(k))
        .zip(mean.par_iter_mut().zip(rstd.par_iter_mut()))
        .with_min_len(min_len(k))
        .for_each(|((o, row), (m, r))| {
            let mu = if rms {
                0.0
            } else {
                row.iter().map(|v| v.to_f64()).sum::<f64>() / kf
            };
            let var = row
                .iter()
                .map(|v| {
                    let d = v.to_f64() - mu;
                    d * d
                })
                .sum::<f64>()
                / kf;
            let rs = 1.0 / (var + eps).sqrt();
            *m = mu;
            *r = rs;
            for (j, (ov, xv)) in o.iter_mut().zip(row).enumerate() {
                let mut y = (xv.to_f64() - mu) * rs;
                if let Some(w) = w {
                    y *= w[j];
                }
                if let Some(b) = b {
                    y += b[j];
                }
                *ov = T::from_f64(y);
            }
        });
}

/// Backward for `(M, K)` rows; returns (dx, sum over rows of dy*xhat, sum over rows of dy).
#[allow(clippy::too_many_arguments)]
fn rows_backward<T: Element>(
    dy: &[T],
    x: &[T],
    k: usize,
    w: Option<&[f64]>,
    mean: &[f64],
    rstd: &[f64],
    rms: bool,
    need: [bool; 3],
) -> (Option<Vec<T>>, Vec<f64>, Vec<f64>) {
    let kf = k as f64;
    let dx = need[0].then(|| {
        let mut dx = vec![T::default(); x.len()];
        dx.par_chunks_mut(k)
            .zip(dy.par_chunks(k).zip(x.par_chunks(k)))
            .zip(mean.par_iter().zip(rstd.par_iter()))
            .with_min_len(min_len(k))
            .for_each(|((o, (g, row)), (&mu, &r))| {
                let wj = |j: usize| w.map_or(1.0, |w| w[j]);
                let (mut s1, mut s2) = (0.0f64, 0.0f64);
                for (j, (gv, xv)) in g.iter().zip(row).enumerate() {
                    let gw = gv.to_f64() * wj(j);
                    s1 += gw;
                    s2 += gw * (xv.to_f64() - mu) * r;
                }
                let (c1, c2) = (s1 / kf, s2 / kf);
                for (j, (ov, (gv, xv))) in o.iter_mut().zip(g.iter().zip(row)).enumerate() {
                    let gw = gv.to_f64() * wj(j);
                    let xhat = (xv.to_f64() - mu) * r;
                    let v = if rms {
                        gw - xhat * c2
                    } else {
                        gw - c1 - xhat * c2
                    };
                    *ov = T::from_f64(r * v);
                }
            });
        dx
    });
    let (mut dw, mut db) = (Vec::new(), Vec::new());
    if need[1] || need[2] {
        let acc = dy
            .par_chunks(k)
            .zip(x.par_chunks(k))
            .zip(mean.par_iter().zip(rstd.par_iter()))
            .with_min_len(min_len(k))
            .fold(
                || vec![0.0f64; 2 * k],
                |mut acc, ((g, row), (&mu, &r))| {
                    let (aw, ab) = acc.split_at_mut(k);
                    for (j, (gv, xv)) in g.iter().zip(row).enumerate() {
                        let gv = gv.to_f64();
                        aw[j] += gv * (xv.to_f64() - mu) * r;
                        ab[j] += gv;
                    }
                    acc
                },
            )
            .reduce(
                || vec![0.0f64; 2 * k],
                |mut a, b| {
                    a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                    a
                },
            );
        db = acc[k..].to_vec();
        dw = acc;
        dw.truncate(k);
    }
    (dx, dw, db)
}

/// `(M, K)` for an input normalised over its last dims `normalized_shape`.
fn rows_of(input: &Tensor, normalized_shape: &[usize]) -> Result<(usize, usize)> {
    let nd = normalized_shape.len();
    let shp = input.shape();
    if nd == 0 {
        return Err(Error::Runtime(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = []".into(),
        ));
    }
    if shp.len() < nd || shp[shp.len() - nd..] != *normalized_shape {
        let mut star = vec!["*".to_string()];
        star.extend(normalized_shape.iter().map(|d| d.to_string()));
        return Err(Error::Runtime(format!(
            "Given normalized_shape={}, expected input with shape [{}], but got input of size{}",
            shape_str(normalized_shape),
            star.join(", "),
            shape_str(shp)
        )));
    }
    let k: usize = normalized_shape.iter().product();
    let m: usize = shp[..shp.len() - nd].iter().product();
    Ok((m, k))
}

fn check_affine_shape(
    p: Option<&Tensor>,
    name: &str,
    normalized_shape: &[usize],
) -> Result<Option<Vec<f64>>> {
    if let Some(t) = p {
        if t.shape() != normalized_shape {
            return Err(Error::Runtime(format!(
                "Expected {name} to be of same shape as normalized_shape, but got {name} of shape {} and normalized_shape = {}",
                shape_str(t.shape()),
                shape_str(normalized_shape)
            )));
        }
    }
    param_values(p, normalized_shape.iter().product(), |_| {
        Error::Runtime("unreachable".into())
    })
}

fn rows_forward_op(
    op: &'static str,
    input: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    rms: bool,
) -> Result<NormOutput> {
    let cd = compute_dtype(op, input)?;
    let (m, k) = rows_of(input, normalized_shape)?;
    if input.device().is_cuda() {
        return rows_forward_cuda(op, input, normalized_shape, weight, bias, eps, rms, (m, k));
    }
    let w = check_affine_shape(weight, "weight", normalized_shape)?;
    let b = check_affine_shape(bias, "bias", normalized_shape)?;
    let x = input.to_dtype(cd).contiguous();
    let mut mean = vec![0.0; m];
    let mut rstd = vec![0.0; m];
    let out = with_float_dtype!(
        cd,
        T,
        {
            let xs = cslice::<T>(&x)?;
            let mut out = vec![T::default(); xs.len()];
            if k == 0 {
                mean.fill(f64::NAN);
                rstd.fill(f64::NAN);
            } else {
                rows_forward(
                    xs,
                    k,
                    w.as_deref(),
                    b.as_deref(),
                    eps,
                    rms,
                    &mut out,
                    &mut mean,
                    &mut rstd,
                );
            }
            Tensor::from_vec_unchecked(out, input.shape())
        },
        unreachable!()
    );
    // Statistics keep the input's leading dims with 1s for the normalised ones (PyTorch).
    let nd = normalized_shape.len();
    let mut sshape = input.shape()[..input.ndim() - nd].to_vec();
    sshape.extend(std::iter::repeat_n(1, nd));
    Ok(NormOutput {
        output: out.to_dtype(input.dtype()),
        mean: f64_tensor(mean, &sshape, cd),
        rstd: f64_tensor(rstd, &sshape, cd),
    })
}

#[allow(clippy::too_many_arguments)]
fn rows_backward_op(
    grad_out: &Tensor,
    input: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    mean: &Tensor,
    rstd: &Tensor,
    rms: bool,
    need: [bool; 3],
) -> Result<NormGrads> {
    let cd = compute_dtype("layer_norm_backward", input)?;
    let (_, k) = rows_of(input, normalized_shape)?;
    if input.device().is_cuda() {
        let cuda_args = (weight, mean, rstd, rms, need);
        return rows_backward_cuda(grad_out, input, normalized_shape, cuda_args);
    }
    let x = input.to_dtype(cd).contiguous();
    let g = grad_out.to_dtype(cd).contiguous();
    let mean = mean.to_f64_vec();
    let rstd = rstd.to_f64_vec();
    let w = weight.map(|w| w.to_f64_vec());
    let wdt = weight.map_or(input.dtype(), |w| w.dtype());
    with_float_dtype!(
        cd,
        T,
        {
            let xs = cslice::<T>(&x)?;
            let gs = cslice::<T>(&g)?;
            let (dx, dw, db) = if k == 0 {
                (need[0].then(Vec::new), Vec::new(), Vec::new())
            } else {
                rows_backward(gs, xs, k, w.as_deref(), &mean, &rstd, rms, need)
            };
            let dx =
                dx.map(|v| Tensor::from_vec_unchecked(v, input.shape()).to_dtype(input.dtype()));
            let dw = need[1].then(|| f64_tensor(dw, normalized_shape, wdt));
            let db = need[2].then(|| f64_tensor(db, normalized_shape, wdt));
            Ok((dx, dw, db))
        },
        unreachable!()
    )
}

/// Layer normalisation over the trailing `normalized_shape` dims. Records
/// `NativeLayerNormBackward0`. The statistics have the input's leading dims followed by 1s.
pub fn layer_norm(
    input: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<NormOutput> {
    let r = no_grad(|| {
        rows_forward_op(
            "layer_norm",
            input,
            normalized_shape,
            weight,
            bias,
            eps,
            false,
        )
    })?;
    record_rows(
        "NativeLayerNormBackward0",
        input,
        normalized_shape,
        weight,
        bias,
        &r,
        eps,
        false,
    );
    Ok(r)
}

/// Backward of [`layer_norm`].
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_backward(
    grad_out: &Tensor,
    input: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    mean: &Tensor,
    rstd: &Tensor,
    need: [bool; 3],
) -> Result<NormGrads> {
    rows_backward_op(
        grad_out,
        input,
        normalized_shape,
        weight,
        mean,
        rstd,
        false,
        need,
    )
}

/// RMS normalisation over the trailing `normalized_shape` dims: `x / sqrt(mean(x^2) + eps) *
/// weight`; `eps = None` uses the machine epsilon of the input's dtype (as PyTorch). Records
/// `RmsNormBackward0`. The returned `mean` is all zeros.
pub fn rms_norm(
    input: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    eps: Option<f64>,
) -> Result<NormOutput> {
    let eps = eps.unwrap_or(match input.dtype() {
        DType::F64 => f64::EPSILON,
        DType::F16 => 0.0009765625,
        DType::BF16 => 0.0078125,
        _ => f32::EPSILON as f64,
    });
    let r =
        no_grad(|| rows_forward_op("rms_norm", input, normalized_shape, weight, None, eps, true))?;
    record_rows(
        "RmsNormBackward0",
        input,
        normalized_shape,
        weight,
        None,
        &r,
        eps,
        true,
    );
    Ok(r)
}

/// Backward of [`rms_norm`] (`need[2]` is ignored: there is no bias).
pub fn rms_norm_backward(
    grad_out: &Tensor,
    input: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    rstd: &Tensor,
    need: [bool; 3],
) -> Result<NormGrads> {
    let zeros = Tensor::full_on(
        rstd.device(),
        rstd.shape(),
        crate::Scalar::Int(0),
        rstd.dtype(),
    )?;
    rows_backward_op(
        grad_out,
        input,
        normalized_shape,
        weight,
        &zeros,
        rstd,
        true,
        [need[0], need[1], false],
    )
}

#[allow(clippy::too_many_arguments)]
fn record_rows(
    name: &'static str,
    input: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    r: &NormOutput,
    eps: f64,
    rms: bool,
) {
    if !(crate::is_grad_enabled() && (input.requires_grad() || requires(weight) || requires(bias)))
    {
        return;
    }
    let sx = SavedTensor::new(input, name);
    let sw = weight.map(|w| SavedTensor::new(w, name));
    let (mean, rstd) = (r.mean.clone(), r.rstd.clone());
    let (has_w, has_b) = (weight.is_some(), bias.is_some());
    let need = [input.requires_grad(), requires(weight), requires(bias)];
    let ns = normalized_shape.to_vec();
    let inputs = node_inputs(input, weight, bias);
    record(
        name,
        &inputs,
        &[&r.output],
        Box::new(move |grads| {
            let Some(g) = &grads[0] else {
                return Ok(vec![None; 1 + has_w as usize + has_b as usize]);
            };
            let w = match &sw {
                Some(s) => Some(s.get()?.clone()),
                None => None,
            };
            let x = sx.get()?;
            let gr = if crate::is_grad_enabled() {
                let nd = x.ndim();
                let spec = NormSpec {
                    grouped: x.shape().iter().map(|&d| d as i64).collect(),
                    dims: (nd - ns.len()..nd).map(|d| d as i64).collect(),
                    param_bshape: ns.clone(),
                    param_shape: ns.clone(),
                    stats: Stats::Batch { eps, rms },
                };
                norm_backward(&spec, g, x, w.as_ref(), need)?
            } else {
                rows_backward_op(g, x, &ns, w.as_ref(), &mean, &rstd, rms, need)?
            };
            Ok(node_grads(has_w, has_b, gr))
        }),
    );
}

// ---------------------------------------------------------------------------- CUDA

/// Every given tensor must be on `input`'s device.
fn check_same_device(op: &'static str, input: &Tensor, others: &[Option<&Tensor>]) -> Result<()> {
    for t in others.iter().flatten() {
        if t.device() != input.device() {
            return Err(Error::DeviceMismatch {
                op,
                lhs: input.device(),
                rhs: t.device(),
            });
        }
    }
    Ok(())
}

/// A per-channel / per-feature parameter's shape and dtype checks (as [`param_values`]
/// does, without copying the values to the host).
fn check_param(p: Option<&Tensor>, numel: usize, err: impl Fn(&Tensor) -> Error) -> Result<()> {
    if let Some(t) = p {
        if t.numel() != numel {
            return Err(err(t));
        }
        if !t.dtype().is_floating_point() {
            return Err(Error::Runtime(format!(
                "expected scalar type Float but found {}",
                t.dtype().torch_name()
            )));
        }
    }
    Ok(())
}

/// [`batch_norm_forward`] on CUDA tensors (nn.cu's `batch_norm_stats` / `batch_norm_apply`),
/// computed in the compute dtype (f32 for f16/bf16 inputs) like the CPU kernels.
#[allow(clippy::too_many_arguments)]
fn batch_norm_forward_cuda(
    input: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<NormOutput> {
    use crate::cuda::nn_ops as nn;
    use crate::cuda::ops as cu;
    let cd = compute_dtype("batch_norm", input)?;
    let dt = input.dtype();
    let (n, c, s) = ncs(input.shape());
    check_same_device(
        "batch_norm",
        input,
        &[weight, bias, running_mean, running_var],
    )?;
    let per_channel = |name: &'static str| {
        move |t: &Tensor| {
            Error::Runtime(format!(
                "{name} should contain {c} elements not {}",
                t.numel()
            ))
        }
    };
    check_param(weight, c, per_channel("weight"))?;
    check_param(bias, c, per_channel("bias"))?;
    check_batch_norm_state(input, running_mean, running_var, training, c)?;
    let count = n * s;
    let x = nn::contig(input, cd)?;
    let w = weight.map(|w| nn::contig(w, cd)).transpose()?;
    let b = bias.map(|b| nn::contig(b, cd)).transpose()?;
    let (mean, rstd) = if training {
        if count == 0 {
            let z = || cu::full_on(&x, &[c], crate::Scalar::Int(0), cd);
            (z()?, z()?)
        } else {
            // The kernel updates contiguous running statistics of the compute dtype in
            // place: the tensors themselves when they are such, else copies written back.
            let rm = running_mean.map(|r| nn::contig(r, cd)).transpose()?;
            let rv = running_var.map(|r| nn::contig(r, cd)).transpose()?;
            let stats = nn::batch_norm_stats(&x, n, c, s, eps, rm.as_ref(), rv.as_ref(), momentum)?;
            for (orig, tmp) in [(running_mean, &rm), (running_var, &rv)] {
                if let (Some(orig), Some(tmp)) = (orig, tmp) {
                    if tmp.same_tensor(orig) {
                        orig.storage().bump_version();
                    } else {
                        orig.copy_raw(tmp)?;
                    }
                }
            }
            stats
        }
    } else {
        let (Some(rm), Some(rv)) = (running_mean, running_var) else {
            unreachable!("checked above")
        };
        let mean = cu::clone(&cu::cast(rm, cd)?)?;
        let e = Tensor::scalar(crate::Scalar::Float(eps), cd);
        let var_eps = cu::binary(&cu::cast(rv, cd)?, &e, crate::tensor::BinaryOp::Add, cd)?;
        let rstd = cu::unary(&var_eps, crate::tensor::UnaryOp::Rsqrt)?;
        (mean, rstd)
    };
    let y = nn::batch_norm_apply(&x, &mean, &rstd, w.as_ref(), b.as_ref(), n, c, s)?;
    Ok(NormOutput {
        output: cu::cast(&y, dt)?,
        mean,
        rstd,
    })
}

/// [`batch_norm_backward`] on CUDA tensors.
fn batch_norm_backward_cuda(
    grad_out: &Tensor,
    input: &Tensor,
    weight: Option<&Tensor>,
    mean: &Tensor,
    rstd: &Tensor,
    training: bool,
    need: [bool; 3],
) -> Result<NormGrads> {
    use crate::cuda::nn_ops as nn;
    use crate::cuda::ops as cu;
    let cd = compute_dtype("batch_norm_backward", input)?;
    let (n, c, s) = ncs(input.shape());
    let x = nn::contig(input, cd)?;
    let g = nn::contig(grad_out, cd)?;
    let w = weight.map(|w| nn::contig(w, cd)).transpose()?;
    let mean = nn::contig(mean, cd)?;
    let rstd = nn::contig(rstd, cd)?;
    let [gx, gw, gb] = if training {
        nn::batch_norm_bwd(&x, &g, &mean, &rstd, w.as_ref(), need, n, c, s)?
    } else {
        // Evaluation: the statistics are constants, dx = dy * rstd * weight.
        let gx = if need[0] {
            let zero = cu::full_on(&x, &[c], crate::Scalar::Int(0), cd)?;
            Some(nn::batch_norm_apply(
                &g,
                &zero,
                &rstd,
                w.as_ref(),
                None,
                n,
                c,
                s,
            )?)
        } else {
            None
        };
        let need_p = [false, need[1], need[2]];
        let [_, gw, gb] = nn::batch_norm_bwd(&x, &g, &mean, &rstd, w.as_ref(), need_p, n, c, s)?;
        [gx, gw, gb]
    };
    let wdt = weight.map_or(input.dtype(), |w| w.dtype());
    let dx = gx.map(|t| cu::cast(&t, input.dtype())).transpose()?;
    let dw = match gw {
        Some(t) => {
            let shape = weight.map_or(vec![c], |w| w.shape().to_vec());
            Some(cu::cast(&t, wdt)?.reshape_contiguous(&shape))
        }
        None => None,
    };
    let db = gb.map(|t| cu::cast(&t, wdt)).transpose()?;
    Ok((dx, dw, db))
}

/// [`rows_forward_op`] on CUDA tensors: layer norm through nn.cu's `layer_norm_fwd`, in the
/// input's dtype (statistics in f32, or f64 for f64). RMS norm has no CUDA kernel yet.
#[allow(clippy::too_many_arguments)]
fn rows_forward_cuda(
    op: &'static str,
    input: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    rms: bool,
    (m, k): (usize, usize),
) -> Result<NormOutput> {
    use crate::cuda::nn_ops as nn;
    check_same_device(op, input, &[weight, bias])?;
    for (p, name) in [(weight, "weight"), (bias, "bias")] {
        if let Some(t) = p {
            if t.shape() != normalized_shape {
                return Err(Error::Runtime(format!(
                    "Expected {name} to be of same shape as normalized_shape, but got {name} of shape {} and normalized_shape = {}",
                    shape_str(t.shape()),
                    shape_str(normalized_shape)
                )));
            }
        }
        check_param(p, k, |_| Error::Runtime("unreachable".into()))?;
    }
    let dt = input.dtype();
    let x = nn::contig(input, dt)?;
    let w = weight.map(|w| nn::contig(w, dt)).transpose()?;
    let b = bias.map(|b| nn::contig(b, dt)).transpose()?;
    let (y, mean, rstd) = if rms {
        let (y, rstd) = nn::rms_norm_fwd(&x, w.as_ref(), m, k, eps)?;
        let zeros = crate::cuda::ops::full_on(&x, &[m], crate::Scalar::Float(0.0), rstd.dtype())?;
        (y, zeros, rstd)
    } else {
        nn::layer_norm_fwd(&x, w.as_ref(), b.as_ref(), m, k, eps)?
    };
    let nd = normalized_shape.len();
    let mut sshape = input.shape()[..input.ndim() - nd].to_vec();
    sshape.extend(std::iter::repeat_n(1, nd));
    Ok(NormOutput {
        output: y.reshape_contiguous(input.shape()),
        mean: mean.reshape_contiguous(&sshape),
        rstd: rstd.reshape_contiguous(&sshape),
    })
}

/// [`rows_backward_op`] on CUDA tensors (`layer_norm_bwd` and `layer_norm_bwd_params`).
#[allow(clippy::type_complexity)]
fn rows_backward_cuda(
    grad_out: &Tensor,
    input: &Tensor,
    normalized_shape: &[usize],
    (weight, mean, rstd, rms, need): (Option<&Tensor>, &Tensor, &Tensor, bool, [bool; 3]),
) -> Result<NormGrads> {
    use crate::cuda::nn_ops as nn;
    use crate::cuda::ops as cu;
    let (m, k) = rows_of(input, normalized_shape)?;
    let dt = input.dtype();
    let ad = nn::acc_dtype(dt);
    let x = nn::contig(input, dt)?;
    let g = nn::contig(grad_out, dt)?;
    let w = weight.map(|w| nn::contig(w, dt)).transpose()?;
    let rstd = nn::contig(rstd, ad)?;
    let [gx, gw, gb] = if rms {
        // (`mean` is all zeros for RMS norm, and may live on the host.)
        nn::rms_norm_bwd(&x, &g, &rstd, w.as_ref(), need, m, k)?
    } else {
        let mean = nn::contig(mean, ad)?;
        nn::layer_norm_bwd(&x, &g, &mean, &rstd, w.as_ref(), need, m, k)?
    };
    let wdt = weight.map_or(dt, |w| w.dtype());
    let dx = gx.map(|t| t.reshape_contiguous(input.shape()));
    let dw = gw
        .map(|t| cu::cast(&t, wdt).map(|t| t.reshape_contiguous(normalized_shape)))
        .transpose()?;
    let db = gb
        .map(|t| cu::cast(&t, wdt).map(|t| t.reshape_contiguous(normalized_shape)))
        .transpose()?;
    Ok((dx, dw, db))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_norm_rows_are_normalised() {
        let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 10.0, 20.0], &[2, 3]).unwrap();
        let r = layer_norm(&x, &[3], None, None, 0.0).unwrap();
        let v = r.output.to_vec::<f64>().unwrap();
        let s = (2.0f64 / 3.0).sqrt();
        for (a, b) in v.iter().zip([-1.0 / s, 0.0, 1.0 / s]) {
            assert!((a - b).abs() < 1e-12);
        }
        assert_eq!(r.mean.shape(), &[2, 1]);
    }

    #[test]
    fn batch_norm_updates_running_stats() {
        let x = Tensor::from_vec(vec![1.0f32, 3.0, 5.0, 7.0], &[2, 2]).unwrap();
        let rm = Tensor::zeros(&[2], DType::F32);
        let rv = Tensor::ones(&[2], DType::F32);
        batch_norm(&x, Some(&rm), Some(&rv), None, None, true, 0.5, 1e-5).unwrap();
        assert_eq!(rm.to_vec::<f32>().unwrap(), vec![1.5, 2.5]);
        assert_eq!(rv.to_vec::<f32>().unwrap(), vec![4.5, 4.5]);
    }

    #[test]
    fn group_norm_rejects_bad_groups() {
        let x = Tensor::zeros(&[2, 5], DType::F32);
        assert!(group_norm(&x, 2, None, None, 1e-5).is_err());
    }
}
