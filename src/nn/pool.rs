//! Pooling: max/average/adaptive pooling and resampling.
//!
//! Every kernel works on a contiguous `(planes, H, W)` buffer (planes = batch * channels) and
//! is parallelised over planes with rayon. 1-d pools are 2-d pools of height 1 (as in
//! PyTorch: unsqueeze, pool, squeeze); 1-d resampling runs the 2-d kernels with H = 1 under
//! its own autograd node. f32 and f64 are computed natively, f16/bf16 in f32.
//!
//! Every op here is linear in its input once the argmax indices (max pools) are fixed, so
//! each backward applies the adjoint kernel through [`apply_linear`], which records the
//! forward kernel as *its* backward: gradients of any order work (create_graph) while every
//! step runs a raw kernel.

use crate::autograd::{needs_grad, record};
use crate::cpu::strided::PAR_THRESHOLD;
use crate::{with_float_dtype, DType, Element, Error, FloatElement, Result, Tensor};
use rayon::prelude::*;
use std::sync::Arc;

// ============================================================================ parameters

/// Arguments of `max_pool2d` (stride defaults to the kernel size in [`MaxPool2dParams::new`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaxPool2dParams {
    pub kernel_size: [i64; 2],
    pub stride: [i64; 2],
    pub padding: [i64; 2],
    pub dilation: [i64; 2],
    pub ceil_mode: bool,
}

impl MaxPool2dParams {
    /// `kernel_size` with stride = kernel size, no padding, no dilation, floor mode.
    pub fn new(kernel_size: [i64; 2]) -> Self {
        MaxPool2dParams {
            kernel_size,
            stride: kernel_size,
            padding: [0, 0],
            dilation: [1, 1],
            ceil_mode: false,
        }
    }
}

/// Arguments of `avg_pool2d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AvgPool2dParams {
    pub kernel_size: [i64; 2],
    pub stride: [i64; 2],
    pub padding: [i64; 2],
    pub ceil_mode: bool,
    pub count_include_pad: bool,
    pub divisor_override: Option<i64>,
}

impl AvgPool2dParams {
    /// `kernel_size` with PyTorch's defaults for everything else.
    pub fn new(kernel_size: [i64; 2]) -> Self {
        AvgPool2dParams {
            kernel_size,
            stride: kernel_size,
            padding: [0, 0],
            ceil_mode: false,
            count_include_pad: true,
            divisor_override: None,
        }
    }
}

// ============================================================================ helpers

/// Sizes of a `(planes, H, W)` problem.
#[derive(Clone, Copy, Debug)]
struct Geo {
    planes: usize,
    ih: usize,
    iw: usize,
    oh: usize,
    ow: usize,
}

impl Geo {
    fn in_plane(&self) -> usize {
        self.ih * self.iw
    }
    fn out_plane(&self) -> usize {
        self.oh * self.ow
    }
}

/// A sliding window along both spatial dims (h, w).
#[derive(Clone, Copy, Debug)]
struct Win {
    k: [i64; 2],
    s: [i64; 2],
    p: [i64; 2],
    d: [i64; 2],
}

fn float_compute_dtype(op: &'static str, x: &Tensor) -> Result<DType> {
    let dt = x.dtype();
    if !dt.is_floating_point() {
        return Err(Error::UnsupportedDType { op, dtype: dt });
    }
    Ok(dt.compute_dtype())
}

/// The elements of a contiguous tensor.
fn elems<T: Element>(t: &Tensor) -> Result<&[T]> {
    let s = t.storage_slice::<T>()?;
    let o = t.storage_offset();
    Ok(&s[o..o + t.numel()])
}

// `FloatElement` brings num-traits' `zero`/`one`/`to_f64` into scope next to `Element`'s:
// these helpers pick `Element`'s.
#[inline(always)]
fn zero<T: Element>() -> T {
    T::zero()
}
#[inline(always)]
fn one<T: Element>() -> T {
    T::one()
}
#[inline(always)]
fn f64_of<T: Element>(v: T) -> f64 {
    v.to_f64()
}

/// `x` converted to `dt` and made contiguous.
fn prepared(x: &Tensor, dt: DType) -> Tensor {
    x.to_dtype(dt).contiguous()
}

/// Run `f(plane_index, plane)` over consecutive `plane`-sized chunks of `out`, in parallel
/// when `work` (total inner iterations) is large.
fn for_planes<T: Send>(
    out: &mut [T],
    plane: usize,
    work: usize,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    if plane == 0 || out.is_empty() {
        return;
    }
    if work < PAR_THRESHOLD {
        out.chunks_mut(plane).enumerate().for_each(|(p, o)| f(p, o));
    } else {
        out.par_chunks_mut(plane)
            .enumerate()
            .for_each(|(p, o)| f(p, o));
    }
}

/// [`for_planes`] over two outputs with the same plane count (values and indices).
fn for_planes2<A: Send, B: Send>(
    a: &mut [A],
    b: &mut [B],
    plane: usize,
    work: usize,
    f: impl Fn(usize, &mut [A], &mut [B]) + Sync + Send,
) {
    if plane == 0 || a.is_empty() {
        return;
    }
    if work < PAR_THRESHOLD {
        a.chunks_mut(plane)
            .zip(b.chunks_mut(plane))
            .enumerate()
            .for_each(|(p, (x, y))| f(p, x, y));
    } else {
        a.par_chunks_mut(plane)
            .zip(b.par_chunks_mut(plane))
            .enumerate()
            .for_each(|(p, (x, y))| f(p, x, y));
    }
}

/// PyTorch's `pooling_output_shape` (with its padding checks).
fn pooling_output_shape(
    input: i64,
    k: i64,
    pad: i64,
    stride: i64,
    dilation: i64,
    ceil_mode: bool,
) -> Result<i64> {
    if stride == 0 {
        return Err(Error::Runtime("stride should not be zero".into()));
    }
    if pad < 0 {
        return Err(Error::Runtime(format!(
            "pad must be non-negative, but got pad: {pad}"
        )));
    }
    if pad > ((k - 1) * dilation + 1) / 2 {
        return Err(Error::Runtime(format!(
            "pad should be at most half of effective kernel size, but got pad={pad}, kernel_size={k} and dilation={dilation}"
        )));
    }
    let num = input + 2 * pad - dilation * (k - 1) - 1 + if ceil_mode { stride - 1 } else { 0 };
    let mut out = num.div_euclid(stride) + 1;
    if ceil_mode && (out - 1) * stride >= input + pad {
        out -= 1;
    }
    Ok(out)
}

/// Split a 3-d (unbatched) or 4-d input into (batch dims, C, H, W).
fn split_2d(x: &Tensor) -> (Vec<usize>, usize, usize, usize) {
    let s = x.shape();
    let n = s.len();
    (s[..n - 3].to_vec(), s[n - 3], s[n - 2], s[n - 1])
}

/// PyTorch's `pool2d_shape_check` (after the output size is known) for 3-d/4-d inputs.
fn pool2d_shape_check(x: &Tensor, win: &Win, oh: i64, ow: i64) -> Result<()> {
    let [kh, kw] = win.k;
    let [ph, pw] = win.p;
    if kw / 2 < pw || kh / 2 < ph {
        return Err(Error::Runtime(format!(
            "pad should be smaller than or equal to half of kernel size, but got padW = {pw}, padH = {ph}, kW = {kw}, kH = {kh}"
        )));
    }
    let (_, c, h, w) = split_2d(x);
    if oh < 1 || ow < 1 {
        return Err(Error::Runtime(format!(
            "Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{oh}x{ow}). Output size is too small"
        )));
    }
    Ok(())
}

/// Checks shared by 2-d pools: 3-d or 4-d input with non-empty non-batch dims.
fn check_pool2d_input(x: &Tensor) -> Result<()> {
    let s = x.shape();
    let ok = match s.len() {
        3 => s.iter().all(|&d| d != 0),
        4 => s[1..].iter().all(|&d| d != 0),
        _ => false,
    };
    if !ok {
        return Err(Error::Runtime(format!(
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:{s:?}"
        )));
    }
    Ok(())
}

fn validate_window(win: &Win) -> Result<()> {
    let [kh, kw] = win.k;
    let [sh, sw] = win.s;
    let [dh, dw] = win.d;
    if kw <= 0 || kh <= 0 {
        return Err(Error::Runtime(format!(
            "kernel size should be greater than zero, but got kH: {kh} kW: {kw}"
        )));
    }
    if sw <= 0 || sh <= 0 {
        return Err(Error::Runtime(format!(
            "stride should be greater than zero, but got dH: {sh} dW: {sw}"
        )));
    }
    if dh <= 0 || dw <= 0 {
        return Err(Error::Runtime(format!(
            "dilation should be greater than zero, but got dilationH: {dh} dilationW: {dw}"
        )));
    }
    Ok(())
}

/// Validate a 2-d sliding-window pool and compute its geometry and output shape.
fn window_geometry(x: &Tensor, win: &Win, ceil_mode: bool) -> Result<(Geo, Vec<usize>)> {
    check_pool2d_input(x)?;
    validate_window(win)?;
    let (batch, c, h, w) = split_2d(x);
    let oh = pooling_output_shape(h as i64, win.k[0], win.p[0], win.s[0], win.d[0], ceil_mode)?;
    let ow = pooling_output_shape(w as i64, win.k[1], win.p[1], win.s[1], win.d[1], ceil_mode)?;
    pool2d_shape_check(x, win, oh, ow)?;
    let geo = Geo {
        planes: batch.iter().product::<usize>() * c,
        ih: h,
        iw: w,
        oh: oh as usize,
        ow: ow as usize,
    };
    let mut shape = batch;
    shape.extend([c, geo.oh, geo.ow]);
    Ok((geo, shape))
}

/// Cast a computed result back to the dtype the caller asked for.
fn finish<T: Element>(data: Vec<T>, shape: &[usize], dt: DType) -> Tensor {
    Tensor::from_vec_unchecked(data, shape).to_dtype(dt)
}

/// A linear map between tensors (a pooling/resampling kernel or its adjoint), computed in
/// the compute dtype and returned in its argument's dtype.
type LinFn = Arc<dyn Fn(&Tensor) -> Result<Tensor> + Send + Sync>;

/// Build a [`LinFn`] from a kernel over contiguous data: `lin_map!(out_shape, |x: T| body)`
/// where `body` gives the output as a `Vec<T>`.
macro_rules! lin_map {
    ($shape:expr, |$x:ident: $T:ident| $body:expr) => {{
        let shape: Vec<usize> = $shape;
        let compute = move |t: &Tensor| -> Result<Tensor> {
            let dt = t.dtype();
            let cd = dt.compute_dtype();
            with_float_dtype!(
                cd,
                $T,
                {
                    let tc = prepared(t, cd);
                    let $x: &[$T] = elems(&tc)?;
                    Ok(finish($body, &shape, dt))
                },
                Err(Error::UnsupportedDType {
                    op: "pooling",
                    dtype: dt
                })
            )
        };
        let f: LinFn = Arc::new(move |t: &Tensor| -> Result<Tensor> {
            if t.device().is_cuda() {
                // A CPU kernel (interpolation, pooling shapes without a CUDA kernel): run it
                // on a host copy; the result goes back to the device.
                use crate::tensor::host_fallback::{host, via_host};
                let h = host(t)?;
                return via_host("pooling/interpolation", t.device(), || compute(&h));
            }
            compute(t)
        });
        f
    }};
}

/// `f(x)`, recording node `name` when `x` needs grad. Its backward applies the adjoint `ft`
/// through this same function (as node `ft_name`), so every order of derivative flows
/// (create_graph works) while each step runs a raw kernel.
fn apply_linear(
    name: &'static str,
    f: &LinFn,
    ft_name: &'static str,
    ft: &LinFn,
    x: &Tensor,
) -> Result<Tensor> {
    let out = crate::no_grad(|| f(x))?;
    if needs_grad(&[x]) && out.dtype().is_floating_point() {
        let (f, ft) = (f.clone(), ft.clone());
        record(
            name,
            &[x],
            &[&out],
            Box::new(move |grads| match &grads[0] {
                Some(g) => Ok(vec![Some(apply_linear(ft_name, &ft, name, &f, g)?)]),
                None => Ok(vec![None]),
            }),
        );
    }
    Ok(out)
}

// ============================================================================ raw kernels

/// Max over each (dilated) window; NaN wins, as in PyTorch. Indices are flat over H*W.
fn max_pool_fwd<T: FloatElement>(x: &[T], g: Geo, w: Win) -> (Vec<T>, Vec<i64>) {
    let n = g.planes * g.out_plane();
    let mut out = vec![T::default(); n];
    let mut idx = vec![0i64; n];
    let (ih, iw) = (g.ih as i64, g.iw as i64);
    let work = n * (w.k[0] * w.k[1]) as usize;
    for_planes2(&mut out, &mut idx, g.out_plane(), work, |p, o, ix| {
        let src = &x[p * g.in_plane()..(p + 1) * g.in_plane()];
        for oy in 0..g.oh {
            let mut h0 = oy as i64 * w.s[0] - w.p[0];
            let h1 = (h0 + (w.k[0] - 1) * w.d[0] + 1).min(ih);
            while h0 < 0 {
                h0 += w.d[0];
            }
            for ox in 0..g.ow {
                let mut w0 = ox as i64 * w.s[1] - w.p[1];
                let w1 = (w0 + (w.k[1] - 1) * w.d[1] + 1).min(iw);
                while w0 < 0 {
                    w0 += w.d[1];
                }
                let mut best = T::neg_infinity();
                let mut best_i = h0 * iw + w0;
                let mut y = h0;
                while y < h1 {
                    let mut xx = w0;
                    while xx < w1 {
                        let i = y * iw + xx;
                        let v = src[i as usize];
                        if v > best || v.is_nan() {
                            best = v;
                            best_i = i;
                        }
                        xx += w.d[1];
                    }
                    y += w.d[0];
                }
                o[oy * g.ow + ox] = best;
                ix[oy * g.ow + ox] = best_i;
            }
        }
    });
    (out, idx)
}

/// Gradient of a max pool: each output gradient goes to its argmax (flat H*W index).
fn max_pool_bwd<T: FloatElement>(gout: &[T], idx: &[i64], g: Geo) -> Vec<T> {
    let mut gin = vec![zero::<T>(); g.planes * g.in_plane()];
    let in_plane = g.in_plane() as i64;
    for_planes(&mut gin, g.in_plane(), g.planes * g.out_plane(), |p, gi| {
        let range = p * g.out_plane()..(p + 1) * g.out_plane();
        for (&gv, &i) in gout[range.clone()].iter().zip(&idx[range]) {
            // An empty window (impossible with checked padding) has no argmax: skip it.
            if (0..in_plane).contains(&i) {
                gi[i as usize] = gi[i as usize] + gv;
            }
        }
    });
    gin
}

/// Values at the saved argmax indices (the adjoint of [`max_pool_bwd`]).
fn gather_fwd<T: FloatElement>(x: &[T], idx: &[i64], g: Geo) -> Vec<T> {
    let n = g.planes * g.out_plane();
    let mut out = vec![zero::<T>(); n];
    let in_plane = g.in_plane() as i64;
    for_planes(&mut out, g.out_plane(), n, |p, o| {
        let src = &x[p * g.in_plane()..(p + 1) * g.in_plane()];
        let ix = &idx[p * g.out_plane()..(p + 1) * g.out_plane()];
        for (e, &i) in o.iter_mut().zip(ix) {
            if (0..in_plane).contains(&i) {
                *e = src[i as usize];
            }
        }
    });
    out
}

/// Clipped average-pool window and its divisor, PyTorch's rules.
#[inline]
fn avg_window(
    o: [usize; 2],
    w: &Win,
    ih: i64,
    iw: i64,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Option<([i64; 4], f64)> {
    let mut h0 = o[0] as i64 * w.s[0] - w.p[0];
    let mut w0 = o[1] as i64 * w.s[1] - w.p[1];
    let mut h1 = (h0 + w.k[0]).min(ih + w.p[0]);
    let mut w1 = (w0 + w.k[1]).min(iw + w.p[1]);
    let pool_size = (h1 - h0) * (w1 - w0);
    h0 = h0.max(0);
    w0 = w0.max(0);
    h1 = h1.min(ih);
    w1 = w1.min(iw);
    if h0 >= h1 || w0 >= w1 {
        return None;
    }
    let div = match divisor_override {
        Some(d) => d,
        None if count_include_pad => pool_size,
        None => (h1 - h0) * (w1 - w0),
    };
    Some(([h0, h1, w0, w1], div as f64))
}

fn avg_pool_fwd<T: FloatElement>(
    x: &[T],
    g: Geo,
    w: Win,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Vec<T> {
    let n = g.planes * g.out_plane();
    let mut out = vec![zero::<T>(); n];
    let (ih, iw) = (g.ih as i64, g.iw as i64);
    let work = n * (w.k[0] * w.k[1]) as usize;
    for_planes(&mut out, g.out_plane(), work, |p, o| {
        let src = &x[p * g.in_plane()..(p + 1) * g.in_plane()];
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                let Some(([h0, h1, w0, w1], div)) =
                    avg_window([oy, ox], &w, ih, iw, count_include_pad, divisor_override)
                else {
                    continue;
                };
                let mut sum = 0.0f64;
                for y in h0..h1 {
                    let row = &src[(y * iw) as usize..];
                    for v in &row[w0 as usize..w1 as usize] {
                        sum += f64_of(*v);
                    }
                }
                o[oy * g.ow + ox] = T::from_f64(sum / div);
            }
        }
    });
    out
}

fn avg_pool_bwd<T: FloatElement>(
    gout: &[T],
    g: Geo,
    w: Win,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Vec<T> {
    let mut gin = vec![zero::<T>(); g.planes * g.in_plane()];
    let (ih, iw) = (g.ih as i64, g.iw as i64);
    let work = g.planes * g.out_plane() * (w.k[0] * w.k[1]) as usize;
    for_planes(&mut gin, g.in_plane(), work, |p, gi| {
        let go = &gout[p * g.out_plane()..(p + 1) * g.out_plane()];
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                let Some(([h0, h1, w0, w1], div)) =
                    avg_window([oy, ox], &w, ih, iw, count_include_pad, divisor_override)
                else {
                    continue;
                };
                let v = T::from_f64(f64_of(go[oy * g.ow + ox]) / div);
                for y in h0..h1 {
                    let row = &mut gi[(y * iw) as usize..];
                    for e in &mut row[w0 as usize..w1 as usize] {
                        *e = *e + v;
                    }
                }
            }
        }
    });
    gin
}

/// PyTorch's adaptive bins: `[floor(i*in/out), ceil((i+1)*in/out))`.
fn adaptive_bins(isz: usize, osz: usize) -> Vec<(usize, usize)> {
    (0..osz)
        .map(|i| ((i * isz) / osz, ((i + 1) * isz).div_ceil(osz)))
        .collect()
}

fn adaptive_avg_fwd<T: FloatElement>(x: &[T], g: Geo) -> Vec<T> {
    let n = g.planes * g.out_plane();
    let mut out = vec![zero::<T>(); n];
    let (bh, bw) = (adaptive_bins(g.ih, g.oh), adaptive_bins(g.iw, g.ow));
    let work = g.planes * g.in_plane().max(g.out_plane());
    for_planes(&mut out, g.out_plane(), work, |p, o| {
        let src = &x[p * g.in_plane()..(p + 1) * g.in_plane()];
        for (oy, &(h0, h1)) in bh.iter().enumerate() {
            for (ox, &(w0, w1)) in bw.iter().enumerate() {
                let mut sum = 0.0f64;
                for y in h0..h1 {
                    for v in &src[y * g.iw + w0..y * g.iw + w1] {
                        sum += f64_of(*v);
                    }
                }
                o[oy * g.ow + ox] = T::from_f64(sum / ((h1 - h0) * (w1 - w0)) as f64);
            }
        }
    });
    out
}

fn adaptive_avg_bwd<T: FloatElement>(gout: &[T], g: Geo) -> Vec<T> {
    let mut gin = vec![zero::<T>(); g.planes * g.in_plane()];
    let (bh, bw) = (adaptive_bins(g.ih, g.oh), adaptive_bins(g.iw, g.ow));
    let work = g.planes * g.in_plane().max(g.out_plane());
    for_planes(&mut gin, g.in_plane(), work, |p, gi| {
        let go = &gout[p * g.out_plane()..(p + 1) * g.out_plane()];
        for (oy, &(h0, h1)) in bh.iter().enumerate() {
            for (ox, &(w0, w1)) in bw.iter().enumerate() {
                let v = T::from_f64(f64_of(go[oy * g.ow + ox]) / ((h1 - h0) * (w1 - w0)) as f64);
                for y in h0..h1 {
                    for e in &mut gi[y * g.iw + w0..y * g.iw + w1] {
                        *e = *e + v;
                    }
                }
            }
        }
    });
    gin
}

fn adaptive_max_fwd<T: FloatElement>(x: &[T], g: Geo) -> (Vec<T>, Vec<i64>) {
    let n = g.planes * g.out_plane();
    let mut out = vec![zero::<T>(); n];
    let mut idx = vec![0i64; n];
    let (bh, bw) = (adaptive_bins(g.ih, g.oh), adaptive_bins(g.iw, g.ow));
    let work = g.planes * g.in_plane().max(g.out_plane());
    for_planes2(&mut out, &mut idx, g.out_plane(), work, |p, o, ix| {
        let src = &x[p * g.in_plane()..(p + 1) * g.in_plane()];
        for (oy, &(h0, h1)) in bh.iter().enumerate() {
            for (ox, &(w0, w1)) in bw.iter().enumerate() {
                let mut best = T::neg_infinity();
                let mut best_i = h0 * g.iw + w0;
                for y in h0..h1 {
                    for xx in w0..w1 {
                        let i = y * g.iw + xx;
                        let v = src[i];
                        if v > best || v.is_nan() {
                            best = v;
                            best_i = i;
                        }
                    }
                }
                o[oy * g.ow + ox] = best;
                ix[oy * g.ow + ox] = best_i as i64;
            }
        }
    });
    (out, idx)
}

/// Source index of output `o` for 'nearest' (`exact = false`, PyTorch's legacy rule) or
/// 'nearest-exact'. Computed in f32 like PyTorch's CPU kernels so the chosen pixels match.
/// `shortcuts`: PyTorch's 2-d CPU kernel copies same-size axes and halves indices of
/// double-size axes whatever the scale; its 1-d (and 3-d) kernels apply the scale as given.
fn nearest_indices(
    isz: usize,
    osz: usize,
    scale: Option<f64>,
    exact: bool,
    shortcuts: bool,
) -> Vec<usize> {
    let s32 = match scale {
        Some(s) if s > 0.0 => (1.0 / s) as f32,
        _ => isz as f32 / osz as f32,
    };
    (0..osz)
        .map(|o| {
            if shortcuts && !exact && osz == isz {
                return o;
            }
            if shortcuts && !exact && osz == 2 * isz {
                return o >> 1;
            }
            let src = if exact {
                (((o as f64 + 0.5) * s32 as f64) as f32).floor()
            } else {
                (o as f32 * s32).floor()
            };
            (src as i64).clamp(0, isz as i64 - 1) as usize
        })
        .collect()
}

/// Linear-interpolation taps `(i0, i1, l0, l1)` for each output position, PyTorch's
/// `area_pixel_compute_source_index` / `guard_index_and_lambda` in the compute type.
fn linear_taps<T: FloatElement>(
    isz: usize,
    osz: usize,
    align_corners: bool,
    scale: Option<f64>,
) -> Vec<(usize, usize, T, T)> {
    let ratio: T = if align_corners {
        if osz > 1 {
            T::from_f64((isz - 1) as f64) / T::from_f64((osz - 1) as f64)
        } else {
            zero::<T>()
        }
    } else {
        match scale {
            Some(s) if s > 0.0 => T::from_f64(1.0 / s),
            _ => T::from_f64(isz as f64) / T::from_f64(osz as f64),
        }
    };
    let half = T::from_f64(0.5);
    (0..osz)
        .map(|o| {
            if osz == isz {
                return (o, o, one::<T>(), zero::<T>());
            }
            let of = T::from_f64(o as f64);
            let real = if align_corners {
                ratio * of
            } else {
                let r = ratio * (of + half) - half;
                if r < zero::<T>() {
                    zero::<T>()
                } else {
                    r
                }
            };
            let i0 = (f64_of(real.floor()) as i64).min(isz as i64 - 1).max(0) as usize;
            let l1 = (real - T::from_f64(i0 as f64))
                .max(zero::<T>())
                .min(one::<T>());
            let i1 = if i0 + 1 < isz { i0 + 1 } else { i0 };
            (i0, i1, one::<T>() - l1, l1)
        })
        .collect()
}

fn nearest_fwd<T: FloatElement>(x: &[T], g: Geo, sh: &[usize], sw: &[usize]) -> Vec<T> {
    let n = g.planes * g.out_plane();
    let mut out = vec![zero::<T>(); n];
    for_planes(&mut out, g.out_plane(), n, |p, o| {
        let src = &x[p * g.in_plane()..(p + 1) * g.in_plane()];
        for (oy, &y) in sh.iter().enumerate() {
            let row = &src[y * g.iw..(y + 1) * g.iw];
            for (ox, &xx) in sw.iter().enumerate() {
                o[oy * g.ow + ox] = row[xx];
            }
        }
    });
    out
}

fn nearest_bwd<T: FloatElement>(gout: &[T], g: Geo, sh: &[usize], sw: &[usize]) -> Vec<T> {
    let mut gin = vec![zero::<T>(); g.planes * g.in_plane()];
    let work = g.planes * g.out_plane();
    for_planes(&mut gin, g.in_plane(), work, |p, gi| {
        let go = &gout[p * g.out_plane()..(p + 1) * g.out_plane()];
        for (oy, &y) in sh.iter().enumerate() {
            for (ox, &xx) in sw.iter().enumerate() {
                let e = &mut gi[y * g.iw + xx];
                *e = *e + go[oy * g.ow + ox];
            }
        }
    });
    gin
}

type Taps<T> = [(usize, usize, T, T)];

fn bilinear_fwd<T: FloatElement>(x: &[T], g: Geo, th: &Taps<T>, tw: &Taps<T>) -> Vec<T> {
    let n = g.planes * g.out_plane();
    let mut out = vec![zero::<T>(); n];
    for_planes(&mut out, g.out_plane(), n * 4, |p, o| {
        let src = &x[p * g.in_plane()..(p + 1) * g.in_plane()];
        for (oy, &(h0, h1, lh0, lh1)) in th.iter().enumerate() {
            let (r0, r1) = (&src[h0 * g.iw..], &src[h1 * g.iw..]);
            for (ox, &(w0, w1, lw0, lw1)) in tw.iter().enumerate() {
                o[oy * g.ow + ox] =
                    lh0 * (lw0 * r0[w0] + lw1 * r0[w1]) + lh1 * (lw0 * r1[w0] + lw1 * r1[w1]);
            }
        }
    });
    out
}

fn bilinear_bwd<T: FloatElement>(gout: &[T], g: Geo, th: &Taps<T>, tw: &Taps<T>) -> Vec<T> {
    let mut gin = vec![zero::<T>(); g.planes * g.in_plane()];
    let work = g.planes * g.out_plane() * 4;
    for_planes(&mut gin, g.in_plane(), work, |p, gi| {
        let go = &gout[p * g.out_plane()..(p + 1) * g.out_plane()];
        for (oy, &(h0, h1, lh0, lh1)) in th.iter().enumerate() {
            for (ox, &(w0, w1, lw0, lw1)) in tw.iter().enumerate() {
                let v = go[oy * g.ow + ox];
                let mut add = |i: usize, wgt: T| gi[i] = gi[i] + wgt * v;
                add(h0 * g.iw + w0, lh0 * lw0);
                add(h0 * g.iw + w1, lh0 * lw1);
                add(h1 * g.iw + w0, lh1 * lw0);
                add(h1 * g.iw + w1, lh1 * lw1);
            }
        }
    });
    gin
}

// ============================================================================ max pooling

/// `max_pool2d` returning (values, int64 indices flat over H*W), recording
/// `MaxPool2DWithIndicesBackward0`. Input `(N, C, H, W)` or `(C, H, W)`.
pub fn max_pool2d_with_indices(input: &Tensor, p: &MaxPool2dParams) -> Result<(Tensor, Tensor)> {
    let win = Win {
        k: p.kernel_size,
        s: p.stride,
        p: p.padding,
        d: p.dilation,
    };
    let cd = float_compute_dtype("max_pool2d", input)?;
    let (geo, shape) = window_geometry(input, &win, p.ceil_mode)?;
    if input.device().is_cuda() {
        let names = (
            "MaxPool2DWithIndicesBackward0",
            "MaxPool2DWithIndicesBackwardBackward0",
        );
        return cuda_max_pool(names, input, geo, &win, &shape);
    }
    let dt = input.dtype();
    let (out, idx) = with_float_dtype!(
        cd,
        T,
        {
            let xc = prepared(input, cd);
            let (o, i) = max_pool_fwd::<T>(elems(&xc)?, geo, win);
            (finish(o, &shape, dt), Tensor::from_vec_unchecked(i, &shape))
        },
        return Err(Error::UnsupportedDType {
            op: "max_pool2d",
            dtype: dt
        })
    );
    record_indexed_max(
        (
            "MaxPool2DWithIndicesBackward0",
            "MaxPool2DWithIndicesBackwardBackward0",
        ),
        input,
        &out,
        &idx,
        geo,
    );
    Ok((out, idx))
}

/// Record the node of a max pool: its backward scatters the gradient to the saved argmax
/// indices (node `name`), and the double backward gathers at them (node `back_name`).
fn record_indexed_max(
    names: (&'static str, &'static str),
    input: &Tensor,
    out: &Tensor,
    idx: &Tensor,
    geo: Geo,
) {
    if !needs_grad(&[input]) {
        return;
    }
    let (name, back_name) = names;
    let (i1, i2) = (idx.clone(), idx.clone());
    let gather = lin_map!(out.shape().to_vec(), |x: T| gather_fwd::<T>(
        x,
        elems::<i64>(&i1)?,
        geo
    ));
    let scatter = lin_map!(input.shape().to_vec(), |g: T| max_pool_bwd::<T>(
        g,
        elems::<i64>(&i2)?,
        geo
    ));
    record(
        name,
        &[input],
        &[out, idx],
        Box::new(move |grads| match &grads[0] {
            Some(g) => Ok(vec![Some(apply_linear(
                back_name, &scatter, name, &gather, g,
            )?)]),
            None => Ok(vec![None]),
        }),
    );
}

/// `max_pool2d` values only.
pub fn max_pool2d(input: &Tensor, p: &MaxPool2dParams) -> Result<Tensor> {
    Ok(max_pool2d_with_indices(input, p)?.0)
}

fn check_1d_input(op: &str, x: &Tensor) -> Result<()> {
    if x.ndim() != 2 && x.ndim() != 3 {
        return Err(Error::Runtime(format!(
            "{op}() Expected 2D or 3D input tensor, but got {:?}",
            x.shape()
        )));
    }
    Ok(())
}

/// `max_pool1d_with_indices` on `(N, C, L)` or `(C, L)`: a 2-d pool of height 1.
pub fn max_pool1d_with_indices(
    input: &Tensor,
    kernel_size: i64,
    stride: i64,
    padding: i64,
    dilation: i64,
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    check_1d_input("max_pool1d", input)?;
    if kernel_size <= 0 {
        return Err(Error::Runtime(format!(
            "max_pool1d() kernel_size must be greater than zero, but got {kernel_size}"
        )));
    }
    if stride <= 0 {
        return Err(Error::Runtime(format!(
            "max_pool1d() stride must be greater than zero, but got {stride}"
        )));
    }
    if padding < 0 {
        return Err(Error::Runtime(format!(
            "max_pool1d() padding must be non-negative, but got {padding}"
        )));
    }
    if dilation <= 0 {
        return Err(Error::Runtime(format!(
            "max_pool1d() dilation must be greater than zero, but got {dilation}"
        )));
    }
    let p = MaxPool2dParams {
        kernel_size: [1, kernel_size],
        stride: [1, stride],
        padding: [0, padding],
        dilation: [1, dilation],
        ceil_mode,
    };
    let (o, i) = max_pool2d_with_indices(&input.unsqueeze(-2)?, &p)?;
    Ok((o.squeeze(Some(&[-2]))?, i.squeeze(Some(&[-2]))?))
}

/// `max_pool1d` values only.
pub fn max_pool1d(
    input: &Tensor,
    kernel_size: i64,
    stride: i64,
    padding: i64,
    dilation: i64,
    ceil_mode: bool,
) -> Result<Tensor> {
    Ok(max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)?.0)
}

// ============================================================================ average pooling

/// `avg_pool2d` on `(N, C, H, W)` or `(C, H, W)`, recording `AvgPool2DBackward0`.
pub fn avg_pool2d(input: &Tensor, p: &AvgPool2dParams) -> Result<Tensor> {
    let win = Win {
        k: p.kernel_size,
        s: p.stride,
        p: p.padding,
        d: [1, 1],
    };
    if p.divisor_override == Some(0) {
        return Err(Error::Runtime("divisor must be not zero".into()));
    }
    float_compute_dtype("avg_pool2d", input)?;
    let (geo, shape) = window_geometry(input, &win, p.ceil_mode)?;
    let (cip, div) = (p.count_include_pad, p.divisor_override);
    if input.device().is_cuda() {
        let names = ("AvgPool2DBackward0", "AvgPool2DBackwardBackward0");
        return cuda_avg_pool(names, input, geo, &win, &shape, cip, div);
    }
    let fwd = lin_map!(shape, |x: T| avg_pool_fwd::<T>(x, geo, win, cip, div));
    let bwd = lin_map!(input.shape().to_vec(), |g: T| avg_pool_bwd::<T>(
        g, geo, win, cip, div
    ));
    apply_linear(
        "AvgPool2DBackward0",
        &fwd,
        "AvgPool2DBackwardBackward0",
        &bwd,
        input,
    )
}

/// `avg_pool1d` on `(N, C, L)` or `(C, L)` (a 2-d average pool of height 1).
pub fn avg_pool1d(
    input: &Tensor,
    kernel_size: i64,
    stride: i64,
    padding: i64,
    ceil_mode: bool,
    count_include_pad: bool,
) -> Result<Tensor> {
    check_1d_input("avg_pool1d", input)?;
    let p = AvgPool2dParams {
        kernel_size: [1, kernel_size],
        stride: [1, stride],
        padding: [0, padding],
        ceil_mode,
        count_include_pad,
        divisor_override: None,
    };
    avg_pool2d(&input.unsqueeze(-2)?, &p)?.squeeze(Some(&[-2]))
}

// ============================================================================ adaptive pooling

fn adaptive_geometry(op: &str, x: &Tensor, out: [i64; 2]) -> Result<(Geo, Vec<usize>)> {
    let s = x.shape();
    if s.len() != 3 && s.len() != 4 {
        return Err(Error::Runtime(format!(
            "{op}(): Expected 3D or 4D tensor, but got {s:?}"
        )));
    }
    for i in s.len() - 3..s.len() {
        if s[i] == 0 {
            return Err(Error::Runtime(format!(
                "{op}(): Expected input to have non-zero size for non-batch dimensions, but input has sizes {s:?} with dimension {i} being empty"
            )));
        }
    }
    if out[0] < 0 || out[1] < 0 {
        return Err(Error::Runtime(format!(
            "{op}: elements of output_size must be greater than or equal to 0 but received {{{}, {}}}",
            out[0], out[1]
        )));
    }
    let (batch, c, h, w) = split_2d(x);
    let geo = Geo {
        planes: batch.iter().product::<usize>() * c,
        ih: h,
        iw: w,
        oh: out[0] as usize,
        ow: out[1] as usize,
    };
    let mut shape = batch;
    shape.extend([c, geo.oh, geo.ow]);
    Ok((geo, shape))
}

/// `adaptive_avg_pool2d` on `(N, C, H, W)` or `(C, H, W)`, recording
/// `AdaptiveAvgPool2DBackward0`.
pub fn adaptive_avg_pool2d(input: &Tensor, output_size: [i64; 2]) -> Result<Tensor> {
    float_compute_dtype("adaptive_avg_pool2d", input)?;
    let (geo, shape) = adaptive_geometry("adaptive_avg_pool2d", input, output_size)?;
    if input.device().is_cuda() {
        let names = (
            "AdaptiveAvgPool2DBackward0",
            "AdaptiveAvgPool2DBackwardBackward0",
        );
        return match cuda_adaptive_window("adaptive_avg_pool2d", geo) {
            Ok(win) => cuda_avg_pool(names, input, geo, &win, &shape, true, None),
            Err(_) => cuda_adaptive_avg_matmul(names, input, geo, &shape),
        };
    }
    let fwd = lin_map!(shape, |x: T| adaptive_avg_fwd::<T>(x, geo));
    let bwd = lin_map!(input.shape().to_vec(), |g: T| adaptive_avg_bwd::<T>(g, geo));
    apply_linear(
        "AdaptiveAvgPool2DBackward0",
        &fwd,
        "AdaptiveAvgPool2DBackwardBackward0",
        &bwd,
        input,
    )
}

/// `adaptive_max_pool2d` returning (values, indices flat over H*W), recording
/// `AdaptiveMaxPool2DBackward0`.
pub fn adaptive_max_pool2d(input: &Tensor, output_size: [i64; 2]) -> Result<(Tensor, Tensor)> {
    let cd = float_compute_dtype("adaptive_max_pool2d", input)?;
    let (geo, shape) = adaptive_geometry("adaptive_max_pool2d", input, output_size)?;
    if input.device().is_cuda() {
        let win = cuda_adaptive_window("adaptive_max_pool2d", geo)?;
        let names = (
            "AdaptiveMaxPool2DBackward0",
            "AdaptiveMaxPool2DBackwardBackward0",
        );
        return cuda_max_pool(names, input, geo, &win, &shape);
    }
    let dt = input.dtype();
    let (out, idx) = with_float_dtype!(
        cd,
        T,
        {
            let xc = prepared(input, cd);
            let (o, i) = adaptive_max_fwd::<T>(elems(&xc)?, geo);
            (finish(o, &shape, dt), Tensor::from_vec_unchecked(i, &shape))
        },
        return Err(Error::UnsupportedDType {
            op: "adaptive_max_pool2d",
            dtype: dt
        })
    );
    record_indexed_max(
        (
            "AdaptiveMaxPool2DBackward0",
            "AdaptiveMaxPool2DBackwardBackward0",
        ),
        input,
        &out,
        &idx,
        geo,
    );
    Ok((out, idx))
}

fn check_adaptive_1d(op: &str, x: &Tensor, output_size: i64) -> Result<()> {
    if x.ndim() != 2 && x.ndim() != 3 {
        return Err(Error::Runtime(format!(
            "{op}(): Expected 2D or 3D tensor, but got {:?}",
            x.shape()
        )));
    }
    if output_size < 0 {
        return Err(Error::Runtime(format!(
            "{op}: elements of output_size must be greater than or equal to 0 but received {{{output_size}}}"
        )));
    }
    Ok(())
}

/// `adaptive_avg_pool1d` on `(N, C, L)` or `(C, L)`.
pub fn adaptive_avg_pool1d(input: &Tensor, output_size: i64) -> Result<Tensor> {
    check_adaptive_1d("adaptive_avg_pool1d", input, output_size)?;
    adaptive_avg_pool2d(&input.unsqueeze(-2)?, [1, output_size])?.squeeze(Some(&[-2]))
}

/// `adaptive_max_pool1d` on `(N, C, L)` or `(C, L)`: (values, indices over L).
pub fn adaptive_max_pool1d(input: &Tensor, output_size: i64) -> Result<(Tensor, Tensor)> {
    check_adaptive_1d("adaptive_max_pool1d", input, output_size)?;
    let (o, i) = adaptive_max_pool2d(&input.unsqueeze(-2)?, [1, output_size])?;
    Ok((o.squeeze(Some(&[-2]))?, i.squeeze(Some(&[-2]))?))
}

// ============================================================================ CUDA

/// The pooling window of `geo`/`win` as the CUDA kernels take it (planes as the batch).
fn cuda_window(geo: Geo, win: &Win) -> crate::cuda::nn_ops::Window2d {
    crate::cuda::nn_ops::Window2d {
        n: geo.planes as i64,
        c: 1,
        h: geo.ih as i64,
        w: geo.iw as i64,
        kh: win.k[0],
        kw: win.k[1],
        sh: win.s[0],
        sw: win.s[1],
        ph: win.p[0],
        pw: win.p[1],
        dh: win.d[0],
        dw: win.d[1],
        oh: geo.oh as i64,
        ow: geo.ow as i64,
    }
}

/// An adaptive pool on CUDA: only when every bin has the same size (input divisible by the
/// output), where it is a plain pool with kernel = stride = input / output.
fn cuda_adaptive_window(op: &str, geo: Geo) -> Result<Win> {
    if geo.oh == 0
        || geo.ow == 0
        || !geo.ih.is_multiple_of(geo.oh)
        || !geo.iw.is_multiple_of(geo.ow)
    {
        return Err(Error::Runtime(format!(
            "{op} on CUDA tensors is only implemented when the input size is divisible by the output size, got input {}x{} and output {}x{}; move the tensor to the CPU with .cpu()",
            geo.ih, geo.iw, geo.oh, geo.ow
        )));
    }
    let (kh, kw) = ((geo.ih / geo.oh) as i64, (geo.iw / geo.ow) as i64);
    Ok(Win {
        k: [kh, kw],
        s: [kh, kw],
        p: [0, 0],
        d: [1, 1],
    })
}

/// Max pool of a CUDA tensor: values and indices, and the same node as on the CPU (its
/// backward scatters with `max_pool2d_bwd`, its double backward gathers at the indices).
fn cuda_max_pool(
    names: (&'static str, &'static str),
    input: &Tensor,
    geo: Geo,
    win: &Win,
    shape: &[usize],
) -> Result<(Tensor, Tensor)> {
    use crate::cuda::nn_ops as nn;
    let wd = cuda_window(geo, win);
    let x = nn::contig(input, input.dtype())?;
    let (o, i) = nn::max_pool2d_fwd(&x, &wd)?;
    let (out, idx) = (o.reshape_contiguous(shape), i.reshape_contiguous(shape));
    if needs_grad(&[input]) {
        let (name, back_name) = names;
        let (i1, i2) = (idx.clone(), idx.clone());
        let out_shape = shape.to_vec();
        let in_shape = input.shape().to_vec();
        let planes = geo.planes;
        let gather: LinFn = Arc::new(move |t: &Tensor| {
            Ok(nn::gather_planes(t, &i1, planes)?.reshape_contiguous(&out_shape))
        });
        let scatter: LinFn = Arc::new(move |g: &Tensor| {
            let gc = nn::contig(g, g.dtype())?;
            Ok(nn::max_pool2d_bwd(&gc, &i2, &wd)?.reshape_contiguous(&in_shape))
        });
        record(
            name,
            &[input],
            &[&out, &idx],
            Box::new(move |grads| match &grads[0] {
                Some(g) => Ok(vec![Some(apply_linear(
                    back_name, &scatter, name, &gather, g,
                )?)]),
                None => Ok(vec![None]),
            }),
        );
    }
    Ok((out, idx))
}

/// `(osz, isz)` matrix averaging each adaptive bin (PyTorch's bins), in `dt` on `device`.
fn adaptive_matrix(isz: usize, osz: usize, dt: DType, device: crate::Device) -> Result<Tensor> {
    let mut v = vec![0.0f64; osz * isz];
    for (o, (s, e)) in adaptive_bins(isz, osz).into_iter().enumerate() {
        for i in s..e {
            v[o * isz + i] = 1.0 / (e - s) as f64;
        }
    }
    Tensor::from_vec(v, &[osz, isz])?
        .to_dtype(dt)
        .to_device(device)
}

/// Adaptive average pooling of a CUDA tensor when the bins differ in size: the pool is
/// separable, `y[p] = A_h @ x[p] @ A_w^T` with bin-averaging matrices, and its adjoint
/// `A_h^T @ g[p] @ A_w` (batched cuBLAS products).
fn cuda_adaptive_avg_matmul(
    names: (&'static str, &'static str),
    input: &Tensor,
    geo: Geo,
    shape: &[usize],
) -> Result<Tensor> {
    use crate::cuda::nn_ops as nn;
    use crate::cuda::ops::matmul;
    let dt = input.dtype();
    let ah = adaptive_matrix(geo.ih, geo.oh, dt, input.device())?;
    let aw = adaptive_matrix(geo.iw, geo.ow, dt, input.device())?;
    let tr = |t: &Tensor| t.with_layout(t.layout().transpose(0, 1));
    let (aht, awt) = (tr(&ah), tr(&aw));
    let (out_shape, in_shape) = (shape.to_vec(), input.shape().to_vec());
    let fwd: LinFn = Arc::new(move |t: &Tensor| {
        let x = nn::contig(t, t.dtype())?.reshape_contiguous(&[geo.planes, geo.ih, geo.iw]);
        let y = matmul(&matmul(&ah, &x)?, &awt)?;
        Ok(y.reshape_contiguous(&out_shape))
    });
    let bwd: LinFn = Arc::new(move |g: &Tensor| {
        let gy = nn::contig(g, g.dtype())?.reshape_contiguous(&[geo.planes, geo.oh, geo.ow]);
        let gx = matmul(&matmul(&aht, &gy)?, &aw)?;
        Ok(gx.reshape_contiguous(&in_shape))
    });
    apply_linear(names.0, &fwd, names.1, &bwd, input)
}

/// Average pool of a CUDA tensor through [`apply_linear`] (forward and adjoint kernels).
fn cuda_avg_pool(
    names: (&'static str, &'static str),
    input: &Tensor,
    geo: Geo,
    win: &Win,
    shape: &[usize],
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    use crate::cuda::nn_ops as nn;
    let wd = cuda_window(geo, win);
    let out_shape = shape.to_vec();
    let in_shape = input.shape().to_vec();
    let fwd: LinFn = Arc::new(move |t: &Tensor| {
        let x = nn::contig(t, t.dtype())?;
        let y = nn::avg_pool2d_fwd(&x, &wd, count_include_pad, divisor_override)?;
        Ok(y.reshape_contiguous(&out_shape))
    });
    let bwd: LinFn = Arc::new(move |g: &Tensor| {
        let gc = nn::contig(g, g.dtype())?;
        let gx = nn::avg_pool2d_bwd(&gc, &wd, count_include_pad, divisor_override)?;
        Ok(gx.reshape_contiguous(&in_shape))
    });
    apply_linear(names.0, &fwd, names.1, &bwd, input)
}

// ============================================================================ resampling

/// Nearest-neighbour resampling mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NearestMode {
    /// PyTorch's 'nearest': `src = floor(dst * in / out)`.
    Nearest,
    /// PyTorch's 'nearest-exact': `src = floor((dst + 0.5) * in / out)`.
    Exact,
}

/// Geometry of a resampling of the last `dims` (1 or 2) dims of a `(N, C, *spatial)` input.
fn resample_geometry(
    op: &str,
    x: &Tensor,
    dims: usize,
    output_size: &[i64],
) -> Result<(Geo, Vec<usize>)> {
    let s = x.shape();
    if s.len() != dims + 2 {
        return Err(Error::Runtime(format!(
            "{op}: It is expected input_size equals to {}, but got size {}",
            dims + 2,
            s.len()
        )));
    }
    if output_size.len() != dims {
        return Err(Error::Runtime(format!(
            "{op}: It is expected output_size equals to {dims}, but got size {}",
            output_size.len()
        )));
    }
    let spatial = &s[2..];
    if spatial.contains(&0) || output_size.iter().any(|&d| d <= 0) {
        let names = ["H", "W"];
        let skip = 2 - dims;
        let fmt = |v: Vec<String>| v.join(", ");
        return Err(Error::Runtime(format!(
            "{op}: Input and output sizes should be greater than 0, but got input ({}) output ({})",
            fmt((0..dims)
                .map(|i| format!("{}: {}", names[i + skip], spatial[i]))
                .collect()),
            fmt((0..dims)
                .map(|i| format!("{}: {}", names[i + skip], output_size[i]))
                .collect()),
        )));
    }
    let (ih, oh) = if dims == 2 {
        (spatial[0], output_size[0] as usize)
    } else {
        (1, 1)
    };
    let (iw, ow) = (spatial[dims - 1], output_size[dims - 1] as usize);
    let geo = Geo {
        planes: s[0] * s[1],
        ih,
        iw,
        oh,
        ow,
    };
    let mut shape = vec![s[0], s[1]];
    shape.extend(output_size.iter().map(|&d| d as usize));
    Ok((geo, shape))
}

fn nearest_impl(
    op: &'static str,
    names: (&'static str, &'static str),
    input: &Tensor,
    dims: usize,
    output_size: &[i64],
    scales: &[Option<f64>],
    mode: NearestMode,
) -> Result<Tensor> {
    float_compute_dtype(op, input)?;
    let (geo, shape) = resample_geometry(op, input, dims, output_size)?;
    let exact = mode == NearestMode::Exact;
    let sh = if dims == 2 {
        nearest_indices(geo.ih, geo.oh, scales[0], exact, true)
    } else {
        vec![0]
    };
    let sw = nearest_indices(geo.iw, geo.ow, scales[dims - 1], exact, dims == 2);
    let (sh2, sw2) = (sh.clone(), sw.clone());
    let fwd = lin_map!(shape, |x: T| nearest_fwd::<T>(x, geo, &sh, &sw));
    let bwd = lin_map!(input.shape().to_vec(), |g: T| nearest_bwd::<T>(
        g, geo, &sh2, &sw2
    ));
    apply_linear(names.0, &fwd, names.1, &bwd, input)
}

/// Nearest upsampling of `(N, C, L)` to length `output_size`. `scale` is the user's scale
/// factor (when given, PyTorch uses `1/scale` rather than `in/out` to pick sources).
pub fn upsample_nearest1d(
    input: &Tensor,
    output_size: i64,
    scale: Option<f64>,
    mode: NearestMode,
) -> Result<Tensor> {
    let (op, node) = match mode {
        NearestMode::Nearest => (
            "upsample_nearest1d",
            (
                "UpsampleNearest1DBackward0",
                "UpsampleNearest1DBackwardBackward0",
            ),
        ),
        NearestMode::Exact => (
            "_upsample_nearest_exact1d",
            (
                "UpsampleNearestExact1DBackward0",
                "UpsampleNearestExact1DBackwardBackward0",
            ),
        ),
    };
    nearest_impl(op, node, input, 1, &[output_size], &[scale], mode)
}

/// Nearest upsampling of `(N, C, H, W)` to `output_size`.
pub fn upsample_nearest2d(
    input: &Tensor,
    output_size: [i64; 2],
    scales: [Option<f64>; 2],
    mode: NearestMode,
) -> Result<Tensor> {
    let (op, node) = match mode {
        NearestMode::Nearest => (
            "upsample_nearest2d",
            (
                "UpsampleNearest2DBackward0",
                "UpsampleNearest2DBackwardBackward0",
            ),
        ),
        NearestMode::Exact => (
            "_upsample_nearest_exact2d",
            (
                "UpsampleNearestExact2DBackward0",
                "UpsampleNearestExact2DBackwardBackward0",
            ),
        ),
    };
    nearest_impl(op, node, input, 2, &output_size, &scales, mode)
}

fn linear_impl(
    op: &'static str,
    names: (&'static str, &'static str),
    input: &Tensor,
    dims: usize,
    output_size: &[i64],
    align_corners: bool,
    scales: &[Option<f64>],
) -> Result<Tensor> {
    float_compute_dtype(op, input)?;
    let (geo, shape) = resample_geometry(op, input, dims, output_size)?;
    let hs = if dims == 2 { scales[0] } else { None };
    let ws = scales[dims - 1];
    let fwd = lin_map!(shape, |x: T| {
        let th = linear_taps::<T>(geo.ih, geo.oh, align_corners, hs);
        let tw = linear_taps::<T>(geo.iw, geo.ow, align_corners, ws);
        bilinear_fwd::<T>(x, geo, &th, &tw)
    });
    let bwd = lin_map!(input.shape().to_vec(), |g: T| {
        let th = linear_taps::<T>(geo.ih, geo.oh, align_corners, hs);
        let tw = linear_taps::<T>(geo.iw, geo.ow, align_corners, ws);
        bilinear_bwd::<T>(g, geo, &th, &tw)
    });
    apply_linear(names.0, &fwd, names.1, &bwd, input)
}

/// Linear interpolation of `(N, C, L)` to length `output_size` (`mode='linear'`).
pub fn upsample_linear1d(
    input: &Tensor,
    output_size: i64,
    align_corners: bool,
    scale: Option<f64>,
) -> Result<Tensor> {
    linear_impl(
        "upsample_linear1d",
        (
            "UpsampleLinear1DBackward0",
            "UpsampleLinear1DBackwardBackward0",
        ),
        input,
        1,
        &[output_size],
        align_corners,
        &[scale],
    )
}

/// Bilinear interpolation of `(N, C, H, W)` to `output_size` (`mode='bilinear'`).
pub fn upsample_bilinear2d(
    input: &Tensor,
    output_size: [i64; 2],
    align_corners: bool,
    scales: [Option<f64>; 2],
) -> Result<Tensor> {
    linear_impl(
        "upsample_bilinear2d",
        (
            "UpsampleBilinear2DBackward0",
            "UpsampleBilinear2DBackwardBackward0",
        ),
        input,
        2,
        &output_size,
        align_corners,
        &scales,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: Vec<f64>, s: &[usize]) -> Tensor {
        Tensor::from_vec(v, s).unwrap()
    }

    #[test]
    fn max_pool2d_small() {
        let x = t((0..16).map(|v| v as f64).collect(), &[1, 1, 4, 4]);
        let (o, i) = max_pool2d_with_indices(&x, &MaxPool2dParams::new([2, 2])).unwrap();
        assert_eq!(o.shape(), &[1, 1, 2, 2]);
        assert_eq!(o.to_vec::<f64>().unwrap(), vec![5.0, 7.0, 13.0, 15.0]);
        assert_eq!(i.to_vec::<i64>().unwrap(), vec![5, 7, 13, 15]);
    }

    #[test]
    fn avg_pool_padding_divisor() {
        let x = t(vec![1.0; 9], &[1, 3, 3]);
        let mut p = AvgPool2dParams::new([2, 2]);
        p.padding = [1, 1];
        p.stride = [2, 2];
        let o = avg_pool2d(&x, &p).unwrap();
        assert_eq!(o.to_vec::<f64>().unwrap(), vec![0.25, 0.5, 0.5, 1.0]);
        p.count_include_pad = false;
        let o = avg_pool2d(&x, &p).unwrap();
        assert_eq!(o.to_vec::<f64>().unwrap(), vec![1.0; 4]);
    }

    #[test]
    fn adaptive_bins_match_pytorch() {
        assert_eq!(adaptive_bins(5, 3), vec![(0, 2), (1, 4), (3, 5)]);
    }

    #[test]
    fn bad_padding_and_too_small() {
        let x = t(vec![0.0; 4], &[1, 1, 2, 2]);
        let mut p = MaxPool2dParams::new([2, 2]);
        p.padding = [2, 2];
        let e = max_pool2d(&x, &p).unwrap_err().to_string();
        assert!(e.contains("pad should be at most half"), "{e}");
        let p = MaxPool2dParams::new([3, 3]);
        let e = max_pool2d(&x, &p).unwrap_err().to_string();
        assert!(e.contains("Output size is too small"), "{e}");
    }

    #[test]
    fn nearest_and_linear_taps() {
        assert_eq!(
            nearest_indices(3, 5, None, false, true),
            vec![0, 0, 1, 1, 2]
        );
        assert_eq!(nearest_indices(3, 5, None, true, true), vec![0, 0, 1, 2, 2]);
        // 1-d: a same-size output with scale 1.3 samples floor(o / 1.3), no copy shortcut
        assert_eq!(
            nearest_indices(3, 3, Some(1.3), false, false),
            vec![0, 0, 1]
        );
        assert_eq!(nearest_indices(3, 3, Some(1.3), false, true), vec![0, 1, 2]);
        let taps = linear_taps::<f64>(2, 4, false, None);
        assert_eq!(taps[0], (0, 1, 1.0, 0.0));
        assert_eq!(taps[1], (0, 1, 0.75, 0.25));
        let taps = linear_taps::<f64>(2, 3, true, None);
        assert_eq!(taps[1], (0, 1, 0.5, 0.5));
    }
}
