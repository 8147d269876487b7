//! Convolutions (1-d/2-d, transposed), computed as im2col + gemm.
//!
//! Every convolution is reduced to one 2-d geometry ([`Geom`]) between a "big" side (the
//! input of a convolution, the output of a transposed convolution) and a "small" side (the
//! output of a convolution, the input of a transposed convolution); a 1-d convolution is a
//! 2-d one with height 1. Three kernels cover forward and backward of both:
//!
//! * [`small_from_big`]: `small[n, g] = W_g @ im2col(big[n, g])` (conv forward, transposed
//!   conv grad_input),
//! * [`big_from_small`]: `big[n, g] = col2im(W_g^T @ small[n, g])` (transposed conv forward,
//!   conv grad_input),
//! * [`weight_from_both`]: `gW_g = sum_n small[n, g] @ im2col(big[n, g])^T` (grad_weight of
//!   both).
//!
//! The weight is `(O, C/groups, kh, kw)` for a convolution and `(C_in, C_out/groups, kh, kw)`
//! for a transposed one: in both cases `(small channels, big channels / groups, kh, kw)`, so
//! the kernels take it as is. Images run in parallel (one single-threaded gemm each, writing
//! straight into the image's output slice); a batch of one uses gemm's own threads.
//!
//! Autograd: one `ConvolutionBackward0` node per call, whose backward calls these raw
//! kernels; under `create_graph=True` it builds the gradients from the same kernels as
//! differentiable ops instead ([`bilinear`]), so gradients of any order work.

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::cpu::matmul::{MatStrides, MatmulElement};
use crate::{DType, Element, Error, FloatElement, Result, Tensor};
use rayon::prelude::*;

mod bilinear;
mod direct;
use bilinear::{ConvMap, ConvShapes};
use direct::DirectFloat;

/// The `padding` argument of a convolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConvPadding {
    /// Explicit zero padding per spatial dim (one value is repeated for every dim).
    Explicit(Vec<i64>),
    /// No padding (`padding='valid'`).
    Valid,
    /// Output as large as the input (`padding='same'`, stride 1 only); an odd total padding
    /// puts the extra element at the end, as PyTorch does.
    Same,
}

/// Hyper-parameters of a convolution. Each per-dim list has one value (repeated for every
/// spatial dim) or one value per spatial dim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvParams {
    pub stride: Vec<i64>,
    pub padding: ConvPadding,
    pub dilation: Vec<i64>,
    /// Only used by transposed convolutions.
    pub output_padding: Vec<i64>,
    pub groups: i64,
}

impl Default for ConvParams {
    fn default() -> Self {
        ConvParams {
            stride: vec![1],
            padding: ConvPadding::Explicit(vec![0]),
            dilation: vec![1],
            output_padding: vec![0],
            groups: 1,
        }
    }
}

/// 1-d convolution: input `(N, C, L)` or `(C, L)`, weight `(O, C/groups, K)`.
pub fn conv1d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    params: &ConvParams,
) -> Result<Tensor> {
    convolution(input, weight, bias, params, false, 1)
}

/// 2-d convolution: input `(N, C, H, W)` or `(C, H, W)`, weight `(O, C/groups, kh, kw)`.
pub fn conv2d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    params: &ConvParams,
) -> Result<Tensor> {
    convolution(input, weight, bias, params, false, 2)
}

/// 1-d transposed convolution: input `(N, C_in, L)` or `(C_in, L)`, weight
/// `(C_in, C_out/groups, K)`.
pub fn conv_transpose1d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    params: &ConvParams,
) -> Result<Tensor> {
    convolution(input, weight, bias, params, true, 1)
}

/// 2-d transposed convolution: input `(N, C_in, H, W)` or `(C_in, H, W)`, weight
/// `(C_in, C_out/groups, kh, kw)`.
pub fn conv_transpose2d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    params: &ConvParams,
) -> Result<Tensor> {
    convolution(input, weight, bias, params, true, 2)
}

// ------------------------------------------------------------------------------- geometry

/// The 2-d geometry shared by all kernels (1-d convolutions have `h = oh = kh = 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Geom {
    n: usize,
    groups: usize,
    /// Big side: channels (all groups) and spatial size.
    c: usize,
    h: usize,
    w: usize,
    /// Small side: channels (all groups) and spatial size.
    o: usize,
    oh: usize,
    ow: usize,
    kh: usize,
    kw: usize,
    sh: usize,
    sw: usize,
    /// Padding before the first element (the padding after it only shows in `oh`/`ow`).
    ph: usize,
    pw: usize,
    dh: usize,
    dw: usize,
}

impl Geom {
    fn cg(&self) -> usize {
        self.c / self.groups
    }
    fn og(&self) -> usize {
        self.o / self.groups
    }
    fn hw(&self) -> usize {
        self.h * self.w
    }
    fn ohw(&self) -> usize {
        self.oh * self.ow
    }
    /// Rows of one group's column matrix (= columns of one group's weight matrix).
    fn rows(&self) -> usize {
        self.cg() * self.kh * self.kw
    }
    /// A 1x1 kernel with unit stride and no padding: im2col is the identity.
    fn pointwise(&self) -> bool {
        self.kh == 1
            && self.kw == 1
            && self.sh == 1
            && self.sw == 1
            && self.ph == 0
            && self.pw == 0
            && self.oh == self.h
            && self.ow == self.w
    }
    fn parallel(&self) -> bool {
        self.n > 1 && rayon::current_num_threads() > 1
    }
}

/// `ox` in `[lo, hi)` are the outputs whose input column `ox * s + off` lies in `[0, len)`.
fn valid_range(out_len: usize, s: usize, off: isize, len: usize) -> (usize, usize) {
    let s_i = s as isize;
    let lo = if off >= 0 {
        0
    } else {
        ((-off + s_i - 1) / s_i) as usize
    };
    let last = len as isize - 1 - off;
    let hi = if last < 0 {
        0
    } else {
        ((last / s_i) as usize + 1).min(out_len)
    };
    (lo.min(hi), hi)
}

/// Unfold one group of one image: `src` is `(cg, h, w)`, `dst` is `(cg*kh*kw, oh*ow)`.
fn im2col<T: Element>(g: &Geom, src: &[T], dst: &mut [T]) {
    let (h, w, oh, ow) = (g.h, g.w, g.oh, g.ow);
    let ohw = g.ohw();
    let zero = T::zero();
    for c in 0..g.cg() {
        let plane = &src[c * h * w..(c + 1) * h * w];
        for ki in 0..g.kh {
            for kj in 0..g.kw {
                let r = (c * g.kh + ki) * g.kw + kj;
                let row = &mut dst[r * ohw..(r + 1) * ohw];
                let xoff = (kj * g.dw) as isize - g.pw as isize;
                let (x_lo, x_hi) = valid_range(ow, g.sw, xoff, w);
                for (oy, out) in row.chunks_exact_mut(ow).enumerate().take(oh) {
                    let iy = (oy * g.sh + ki * g.dh) as isize - g.ph as isize;
                    if iy < 0 || iy >= h as isize {
                        out.fill(zero);
                        continue;
                    }
                    let irow = &plane[iy as usize * w..(iy as usize + 1) * w];
                    out[..x_lo].fill(zero);
                    out[x_hi..].fill(zero);
                    if x_lo < x_hi {
                        let start = (x_lo as isize * g.sw as isize + xoff) as usize;
                        if g.sw == 1 {
                            out[x_lo..x_hi].copy_from_slice(&irow[start..start + (x_hi - x_lo)]);
                        } else {
                            for (o, i) in out[x_lo..x_hi]
                                .iter_mut()
                                .zip(irow[start..].iter().step_by(g.sw))
                            {
                                *o = *i;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Fold (accumulate) one group's column matrix `(cg*kh*kw, oh*ow)` back into `dst`
/// `(cg, h, w)`; the inverse scatter of [`im2col`].
fn col2im<T: Element>(g: &Geom, col: &[T], dst: &mut [T]) {
    let (h, w, oh, ow) = (g.h, g.w, g.oh, g.ow);
    let ohw = g.ohw();
    for c in 0..g.cg() {
        let plane = &mut dst[c * h * w..(c + 1) * h * w];
        for ki in 0..g.kh {
            for kj in 0..g.kw {
                let r = (c * g.kh + ki) * g.kw + kj;
                let row = &col[r * ohw..(r + 1) * ohw];
                let xoff = (kj * g.dw) as isize - g.pw as isize;
                let (x_lo, x_hi) = valid_range(ow, g.sw, xoff, w);
                if x_lo >= x_hi {
                    continue;
                }
                for (oy, src) in row.chunks_exact(ow).enumerate().take(oh) {
                    let iy = (oy * g.sh + ki * g.dh) as isize - g.ph as isize;
                    if iy < 0 || iy >= h as isize {
                        continue;
                    }
                    let orow = &mut plane[iy as usize * w..(iy as usize + 1) * w];
                    let start = (x_lo as isize * g.sw as isize + xoff) as usize;
                    if g.sw == 1 {
                        for (o, s) in orow[start..start + (x_hi - x_lo)]
                            .iter_mut()
                            .zip(&src[x_lo..x_hi])
                        {
                            *o = o.add(*s);
                        }
                    } else {
                        for (o, s) in orow[start..].iter_mut().step_by(g.sw).zip(&src[x_lo..x_hi]) {
                            *o = o.add(*s);
                        }
                    }
                }
            }
        }
    }
}

/// `dst (m x n, row-major) = [dst +] A @ B` with `A` `m x k` and `B` `k x n` given by strides.
#[allow(clippy::too_many_arguments)]
fn gemm_into<T: MatmulElement>(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [T],
    accumulate: bool,
    a: &[T],
    la: MatStrides,
    b: &[T],
    lb: MatStrides,
    threaded: bool,
) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            dst[..m * n].fill(T::zero());
        }
        return;
    }
    assert!(dst.len() >= m * n, "conv: gemm destination too small");
    assert!(
        (m - 1) * la.rs + (k - 1) * la.cs < a.len(),
        "conv: gemm lhs out of bounds"
    );
    assert!(
        (k - 1) * lb.rs + (n - 1) * lb.cs < b.len(),
        "conv: gemm rhs out of bounds"
    );
    // SAFETY: the bounds of all three operands were checked above; `dst` is exclusively
    // borrowed, so it aliases neither input.
    unsafe {
        T::gemm_raw(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            n,
            1,
            accumulate,
            a.as_ptr(),
            la,
            b.as_ptr(),
            lb,
            T::one(),
            T::one(),
            threaded,
        )
    }
}

/// Run `f(n, chunk)` for every image's output chunk, in parallel over images when worth it;
/// `f` gets `threaded = true` (gemm may use threads) when images run one after the other.
fn for_each_image<T: Send>(
    g: &Geom,
    out: &mut [T],
    chunk: usize,
    f: impl Fn(usize, &mut [T], bool) + Sync + Send,
) {
    if chunk == 0 {
        return;
    }
    if g.parallel() {
        out.par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(n, o)| f(n, o, false));
    } else {
        out.chunks_mut(chunk)
            .enumerate()
            .for_each(|(n, o)| f(n, o, true));
    }
}

/// `small[n, g] = W_g @ im2col(big[n, g]) (+ bias)`; returns `(n, o, oh, ow)` contiguous.
fn small_from_big<T: MatmulElement>(g: &Geom, big: &[T], wt: &[T], bias: Option<&[T]>) -> Vec<T> {
    let (cg, og, rows, ohw, hw) = (g.cg(), g.og(), g.rows(), g.ohw(), g.hw());
    let mut out = vec![T::zero(); g.n * g.o * ohw];
    let pointwise = g.pointwise();
    for_each_image(g, &mut out, g.o * ohw, |n, out_n, threaded| {
        let mut col = if pointwise {
            Vec::new()
        } else {
            vec![T::zero(); rows * ohw]
        };
        for gi in 0..g.groups {
            let src = &big[(n * g.c + gi * cg) * hw..(n * g.c + (gi + 1) * cg) * hw];
            let colm: &[T] = if pointwise {
                src
            } else {
                im2col(g, src, &mut col);
                &col
            };
            let dst = &mut out_n[gi * og * ohw..(gi + 1) * og * ohw];
            if let Some(b) = bias {
                for (oc, d) in dst.chunks_exact_mut(ohw).enumerate() {
                    d.fill(b[gi * og + oc]);
                }
            }
            gemm_into(
                og,
                ohw,
                rows,
                dst,
                bias.is_some(),
                &wt[gi * og * rows..(gi + 1) * og * rows],
                MatStrides { rs: rows, cs: 1 },
                colm,
                MatStrides { rs: ohw, cs: 1 },
                threaded,
            );
        }
    });
    out
}

/// `big[n, g] = col2im(W_g^T @ small[n, g]) (+ bias)`; returns `(n, c, h, w)` contiguous.
fn big_from_small<T: MatmulElement>(g: &Geom, small: &[T], wt: &[T], bias: Option<&[T]>) -> Vec<T> {
    let (cg, og, rows, ohw, hw) = (g.cg(), g.og(), g.rows(), g.ohw(), g.hw());
    let mut out = vec![T::zero(); g.n * g.c * hw];
    let pointwise = g.pointwise();
    for_each_image(g, &mut out, g.c * hw, |n, out_n, threaded| {
        let mut col = if pointwise {
            Vec::new()
        } else {
            vec![T::zero(); rows * ohw]
        };
        for gi in 0..g.groups {
            let src = &small[(n * g.o + gi * og) * ohw..(n * g.o + (gi + 1) * og) * ohw];
            let dst = &mut out_n[gi * cg * hw..(gi + 1) * cg * hw];
            let wg = &wt[gi * og * rows..(gi + 1) * og * rows];
            let product = |target: &mut [T]| {
                gemm_into(
                    rows,
                    ohw,
                    og,
                    target,
                    false,
                    wg,
                    MatStrides { rs: 1, cs: rows },
                    src,
                    MatStrides { rs: ohw, cs: 1 },
                    threaded,
                )
            };
            if pointwise {
                product(dst);
            } else {
                product(&mut col);
                col2im(g, &col, dst);
            }
        }
        if let Some(b) = bias {
            for (ch, plane) in out_n.chunks_exact_mut(hw).enumerate() {
                let bv = b[ch];
                plane.iter_mut().for_each(|x| *x = x.add(bv));
            }
        }
    });
    out
}

/// `gW_g = sum_n small[n, g] @ im2col(big[n, g])^T`; returns `(o, cg, kh, kw)` contiguous.
fn weight_from_both<T: MatmulElement>(g: &Geom, big: &[T], small: &[T]) -> Vec<T> {
    let (cg, og, rows, ohw, hw) = (g.cg(), g.og(), g.rows(), g.ohw(), g.hw());
    let size = g.o * rows;
    let pointwise = g.pointwise();
    let one_image = |acc: &mut [T], col: &mut Vec<T>, n: usize, threaded: bool| {
        if col.is_empty() && !pointwise {
            col.resize(rows * ohw, T::zero());
        }
        for gi in 0..g.groups {
            let src = &big[(n * g.c + gi * cg) * hw..(n * g.c + (gi + 1) * cg) * hw];
            let colm: &[T] = if pointwise {
                src
            } else {
                im2col(g, src, col);
                &col[..]
            };
            gemm_into(
                og,
                rows,
                ohw,
                &mut acc[gi * og * rows..(gi + 1) * og * rows],
                true,
                &small[(n * g.o + gi * og) * ohw..(n * g.o + (gi + 1) * og) * ohw],
                MatStrides { rs: ohw, cs: 1 },
                colm,
                MatStrides { rs: 1, cs: ohw },
                threaded,
            );
        }
    };
    if g.parallel() {
        (0..g.n)
            .into_par_iter()
            .fold(
                || (vec![T::zero(); size], Vec::new()),
                |(mut acc, mut col), n| {
                    one_image(&mut acc, &mut col, n, false);
                    (acc, col)
                },
            )
            .map(|(acc, _)| acc)
            .reduce(
                || vec![T::zero(); size],
                |mut a, b| {
                    a.iter_mut().zip(&b).for_each(|(x, y)| *x = x.add(*y));
                    a
                },
            )
    } else {
        let mut acc = vec![T::zero(); size];
        let mut col = Vec::new();
        for n in 0..g.n {
            one_image(&mut acc, &mut col, n, true);
        }
        acc
    }
}

/// Sum of a slice with 8 independent accumulators (vectorises; fewer rounding steps in a row).
fn lane_sum<T: Element>(x: &[T]) -> T {
    let mut acc = [T::zero(); 8];
    let chunks = x.chunks_exact(8);
    let rem = chunks.remainder();
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a = a.add(*v);
        }
    }
    let mut s = ((acc[0].add(acc[4])).add(acc[2].add(acc[6])))
        .add((acc[1].add(acc[5])).add(acc[3].add(acc[7])));
    for v in rem {
        s = s.add(*v);
    }
    s
}

/// Sum of `(n, ch, spatial)` over `n` and `spatial`: the bias gradient.
fn channel_sums<T: Element>(x: &[T], n: usize, ch: usize, spatial: usize) -> Vec<T> {
    let zeros = || vec![T::zero(); ch];
    if spatial == 0 || ch == 0 || n == 0 {
        return zeros();
    }
    let img = ch * spatial;
    let add_image = |mut acc: Vec<T>, i: usize| {
        for (o, plane) in acc
            .iter_mut()
            .zip(x[i * img..(i + 1) * img].chunks_exact(spatial))
        {
            *o = o.add(lane_sum(plane));
        }
        acc
    };
    if n > 1 && rayon::current_num_threads() > 1 && n * img >= crate::cpu::strided::PAR_THRESHOLD {
        (0..n)
            .into_par_iter()
            .fold(zeros, add_image)
            .reduce(zeros, |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x = x.add(*y));
                a
            })
    } else {
        (0..n).fold(zeros(), add_image)
    }
}

// --------------------------------------------------------------------- argument checking

fn fmt_sizes(v: &[usize]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(" x ")
}

/// Expand a per-dim list (one value or `nd` values) to `nd` values.
fn expand_param(name: &str, v: &[i64], nd: usize) -> Result<Vec<i64>> {
    match v.len() {
        1 => Ok(vec![v[0]; nd]),
        l if l == nd => Ok(v.to_vec()),
        _ => Err(Error::Runtime(format!(
            "expected {name} to be a single integer value or a list of {nd} values to match the convolution dimensions, but got {name}={v:?}"
        ))),
    }
}

/// Everything the kernels need, derived from the arguments (errors as PyTorch words them).
struct Plan {
    geom: Geom,
    out_shape: Vec<usize>,
}

#[allow(clippy::too_many_arguments)]
fn plan(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    params: &ConvParams,
    transposed: bool,
    nd: usize,
) -> Result<Plan> {
    let name = if transposed {
        format!("conv_transpose{nd}d")
    } else {
        format!("conv{nd}d")
    };
    let is = input.shape();
    let ws = weight.shape();
    if is.len() != nd + 1 && is.len() != nd + 2 {
        return Err(Error::Runtime(format!(
            "Expected {}D (unbatched) or {}D (batched) input to {name}, but got input of size: {is:?}",
            nd + 1,
            nd + 2
        )));
    }
    if ws.len() != nd + 2 {
        return Err(Error::Runtime(format!(
            "Expected {}-dimensional weight for {name}, but got {}-dimensional weight of size {ws:?} instead",
            nd + 2,
            ws.len()
        )));
    }
    // dtypes: floating point, and all the same.
    let dt = input.dtype();
    if !dt.is_floating_point() {
        let op = if transposed {
            "slow_conv_transpose2d_cpu"
        } else {
            "slow_conv2d_cpu"
        };
        return Err(Error::UnsupportedDType { op, dtype: dt });
    }
    if weight.dtype() != dt {
        return Err(Error::Runtime(format!(
            "Input type ({}) and weight type ({}) should be the same",
            dt.torch_name().to_lowercase(),
            weight.dtype().torch_name().to_lowercase()
        )));
    }
    if let Some(b) = bias {
        if b.dtype() != dt {
            return Err(Error::Runtime(format!(
                "Input type ({}) and bias type ({}) should be the same",
                dt.torch_name().to_lowercase(),
                b.dtype().torch_name().to_lowercase()
            )));
        }
    }
    if params.groups <= 0 {
        return Err(Error::Runtime(
            "non-positive groups is not supported".into(),
        ));
    }
    let groups = params.groups as usize;
    let stride = expand_param("stride", &params.stride, nd)?;
    let dilation = expand_param("dilation", &params.dilation, nd)?;
    let output_padding = expand_param("output_padding", &params.output_padding, nd)?;
    if stride.iter().any(|&s| s <= 0) {
        return Err(Error::Runtime(
            "non-positive stride is not supported".into(),
        ));
    }
    if dilation.iter().any(|&d| d <= 0) {
        return Err(Error::Runtime(
            "dilation should be greater than zero".into(),
        ));
    }
    if output_padding.iter().any(|&p| p < 0) {
        return Err(Error::Runtime(
            "negative output_padding is not supported".into(),
        ));
    }
    let batched = is.len() == nd + 2;
    let full: Vec<usize> = if batched {
        is.to_vec()
    } else {
        std::iter::once(1).chain(is.iter().copied()).collect()
    };
    let in_sizes: Vec<usize> = full[2..].to_vec();
    let ksizes: Vec<usize> = ws[2..].to_vec();
    let dil_k: Vec<usize> = ksizes
        .iter()
        .zip(&dilation)
        .map(|(&k, &d)| (d as usize) * k.saturating_sub(1) + 1)
        .collect();
    // (lo, hi) padding per dim.
    let pads: Vec<(usize, usize)> = match &params.padding {
        ConvPadding::Explicit(p) => {
            let p = expand_param("padding", p, nd)?;
            if p.iter().any(|&x| x < 0) {
                return Err(Error::Runtime("negative padding is not supported".into()));
            }
            p.iter().map(|&x| (x as usize, x as usize)).collect()
        }
        ConvPadding::Valid => vec![(0, 0); nd],
        ConvPadding::Same => {
            if transposed {
                return Err(Error::Runtime(format!(
                    "{name}: padding='same' is not supported for transposed convolutions"
                )));
            }
            if stride.iter().any(|&s| s != 1) {
                return Err(Error::Runtime(
                    "padding='same' is not supported for strided convolutions".into(),
                ));
            }
            dil_k
                .iter()
                .map(|&dk| {
                    let total = dk - 1;
                    (total / 2, total - total / 2)
                })
                .collect()
        }
    };
    let c_in = full[1];
    let out_shape_spatial: Vec<usize>;
    let (big_c, small_c, big_sp, small_sp);
    if !transposed {
        if !ws[0].is_multiple_of(groups) {
            return Err(Error::Runtime(format!(
                "Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of size {ws:?} instead"
            )));
        }
        if c_in != ws[1] * groups {
            return Err(Error::Runtime(format!(
                "Given groups={groups}, weight of size {ws:?}, expected input{is:?} to have {} channels, but got {c_in} channels instead",
                ws[1] * groups
            )));
        }
        let padded: Vec<usize> = in_sizes
            .iter()
            .zip(&pads)
            .map(|(&s, &(lo, hi))| s + lo + hi)
            .collect();
        if padded.iter().zip(&dil_k).any(|(&p, &k)| p < k) {
            return Err(Error::Runtime(format!(
                "Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size",
                fmt_sizes(&padded),
                fmt_sizes(&dil_k)
            )));
        }
        out_shape_spatial = padded
            .iter()
            .zip(&dil_k)
            .zip(&stride)
            .map(|((&p, &k), &s)| (p - k) / s as usize + 1)
            .collect();
        big_c = c_in;
        small_c = ws[0];
        big_sp = in_sizes.clone();
        small_sp = out_shape_spatial.clone();
    } else {
        if c_in != ws[0] {
            return Err(Error::Runtime(format!(
                "Given transposed=1, weight of size {ws:?}, expected input{is:?} to have {} channels, but got {c_in} channels instead",
                ws[0]
            )));
        }
        if !ws[0].is_multiple_of(groups) {
            return Err(Error::Runtime(format!(
                "Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of size {ws:?} instead"
            )));
        }
        for i in 0..nd {
            let op = output_padding[i];
            if op >= stride[i] && op >= dilation[i] {
                let dims = if nd == 1 {
                    vec![""]
                } else {
                    vec!["_height", "_width"]
                };
                let part = |what: &str, v: &[i64]| {
                    dims.iter()
                        .zip(v)
                        .map(|(d, x)| format!("{what}{d}: {x}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                return Err(Error::Runtime(format!(
                    "output padding must be smaller than either stride or dilation, but got {} {} {}",
                    part("output_padding", &output_padding),
                    part("stride", &stride),
                    part("dilation", &dilation)
                )));
            }
        }
        let mut sizes = Vec::with_capacity(nd);
        let mut ok = true;
        for i in 0..nd {
            let v = (in_sizes[i] as i64 - 1) * stride[i] - (pads[i].0 + pads[i].1) as i64
                + dil_k[i] as i64
                + output_padding[i];
            if v <= 0 {
                ok = false;
            }
            sizes.push(v);
        }
        if !ok {
            return Err(Error::Runtime(format!(
                "Given input size per channel: ({}). Calculated output size per channel: ({}). Output size is too small",
                fmt_sizes(&in_sizes),
                sizes.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" x ")
            )));
        }
        out_shape_spatial = sizes.iter().map(|&x| x as usize).collect();
        big_c = ws[1] * groups;
        small_c = ws[0];
        big_sp = out_shape_spatial.clone();
        small_sp = in_sizes.clone();
    }
    let out_c = if transposed { big_c } else { small_c };
    if let Some(b) = bias {
        if b.ndim() != 1 || b.numel() != out_c {
            return Err(Error::Runtime(format!(
                "Given weight of size {ws:?}, expected bias to be 1-dimensional with {out_c} elements, but got bias of size {:?} instead",
                b.shape()
            )));
        }
    }
    // Lift to 2-d (1-d: height 1).
    let two = |v: &[usize], fill: usize| -> (usize, usize) {
        if nd == 1 {
            (fill, v[0])
        } else {
            (v[0], v[1])
        }
    };
    let lo: Vec<usize> = pads.iter().map(|p| p.0).collect();
    let s_u: Vec<usize> = stride.iter().map(|&x| x as usize).collect();
    let d_u: Vec<usize> = dilation.iter().map(|&x| x as usize).collect();
    let (h, w) = two(&big_sp, 1);
    let (oh, ow) = two(&small_sp, 1);
    let (kh, kw) = two(&ksizes, 1);
    let (sh, sw) = two(&s_u, 1);
    let (ph, pw) = two(&lo, 0);
    let (dh, dw) = two(&d_u, 1);
    let geom = Geom {
        n: full[0],
        groups,
        c: big_c,
        h,
        w,
        o: small_c,
        oh,
        ow,
        kh,
        kw,
        sh,
        sw,
        ph,
        pw,
        dh,
        dw,
    };
    let mut out_shape = Vec::with_capacity(nd + 2);
    if batched {
        out_shape.push(full[0]);
    }
    out_shape.push(out_c);
    out_shape.extend(out_shape_spatial);
    Ok(Plan { geom, out_shape })
}

// ------------------------------------------------------------------------------ dispatch

/// A contiguous copy (or the tensor itself) of `t` in dtype `T`.
fn contiguous_in<T: Element>(t: &Tensor) -> Result<Tensor> {
    if t.numel() > 1 && t.strides().iter().all(|&s| s == 0) {
        // An expanded scalar (e.g. the gradient of `sum()`): fill instead of a strided walk.
        let v: f64 = crate::with_dtype!(t.dtype(), S, {
            t.storage_slice::<S>()?[t.storage_offset()].to_f64()
        });
        return Ok(Tensor::from_vec_unchecked(
            vec![T::from_f64(v); t.numel()],
            t.shape(),
        ));
    }
    Ok(t.to_dtype(T::DTYPE).contiguous())
}

fn elems<T: Element>(t: &Tensor) -> Result<&[T]> {
    let s = t.storage_slice::<T>()?;
    let off = t.storage_offset();
    Ok(&s[off..off + t.numel()])
}

/// Output tensor from a compute-dtype buffer, cast back to `dt`.
fn finish<T: Element>(v: Vec<T>, shape: &[usize], dt: DType) -> Tensor {
    Tensor::from_vec_unchecked(v, shape).to_dtype(dt)
}

/// `small = conv(big, W) (+ bias)`: direct kernel, or im2col-free gemm for pointwise kernels.
fn conv_small<T: MatmulElement + DirectFloat>(
    g: &Geom,
    big: &[T],
    wt: &[T],
    bias: Option<&[T]>,
) -> Vec<T> {
    if g.pointwise() || g.rows() == 0 {
        small_from_big(g, big, wt, bias)
    } else {
        direct::forward(g, big, wt, bias)
    }
}

/// `big = conv_transpose(small, W) (+ bias)`: with unit stride, a direct forward convolution
/// with the flipped weight; otherwise gemm + col2im.
fn conv_big<T: MatmulElement + DirectFloat>(
    g: &Geom,
    small: &[T],
    wt: &[T],
    bias: Option<&[T]>,
) -> Vec<T> {
    if !g.pointwise() && g.rows() > 0 {
        if let Some(gt) = direct::transposed_geom(g) {
            let wf = direct::flip_weight(g, wt);
            return direct::forward(&gt, small, &wf, bias);
        }
    }
    big_from_small(g, small, wt, bias)
}

/// The weight gradient `sum_n small[n] @ im2col(big[n])^T`.
fn conv_weight<T: MatmulElement + DirectFloat>(g: &Geom, big: &[T], small: &[T]) -> Vec<T> {
    if g.pointwise() || g.rows() == 0 {
        weight_from_both(g, big, small)
    } else {
        direct::weight_grad(g, big, small)
    }
}

fn forward_typed<T: MatmulElement + FloatElement + DirectFloat>(
    p: &Plan,
    transposed: bool,
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
) -> Result<Tensor> {
    let x = contiguous_in::<T>(input)?;
    let w = contiguous_in::<T>(weight)?;
    let b = bias.map(contiguous_in::<T>).transpose()?;
    let bs = match &b {
        Some(b) => Some(elems::<T>(b)?),
        None => None,
    };
    let (xs, wsl) = (elems::<T>(&x)?, elems::<T>(&w)?);
    let out = if transposed {
        conv_big(&p.geom, xs, wsl, bs)
    } else {
        conv_small(&p.geom, xs, wsl, bs)
    };
    Ok(finish(out, &p.out_shape, input.dtype()))
}

/// Gradients w.r.t. (input, weight, bias) from `grad` (shaped like the output).
#[allow(clippy::too_many_arguments)]
fn backward_typed<T: MatmulElement + FloatElement + DirectFloat>(
    geom: &Geom,
    transposed: bool,
    grad: &Tensor,
    input: &Tensor,
    weight: &Tensor,
    need: [bool; 3],
) -> Result<[Option<Tensor>; 3]> {
    let dt = input.dtype();
    if geom.n > 1 && input.numel() > 0 && grad.numel() > 1 && grad.strides().iter().all(|&s| s == 0)
    {
        let v: f64 = crate::with_dtype!(grad.dtype(), S, {
            grad.storage_slice::<S>()?[grad.storage_offset()].to_f64()
        });
        return backward_const::<T>(
            geom,
            transposed,
            <T as Element>::from_f64(v),
            input,
            weight,
            need,
        );
    }
    let gy = contiguous_in::<T>(grad)?;
    let gys = elems::<T>(&gy)?;
    let gi = if need[0] {
        let w = contiguous_in::<T>(weight)?;
        let ws = elems::<T>(&w)?;
        let v = if transposed {
            conv_small(geom, gys, ws, None)
        } else {
            conv_big(geom, gys, ws, None)
        };
        Some(finish(v, input.shape(), dt))
    } else {
        None
    };
    let gw = if need[1] {
        let x = contiguous_in::<T>(input)?;
        let xs = elems::<T>(&x)?;
        let v = if transposed {
            conv_weight(geom, gys, xs)
        } else {
            conv_weight(geom, xs, gys)
        };
        Some(finish(v, weight.shape(), dt))
    } else {
        None
    };
    let gb = if need[2] {
        let (ch, sp) = if transposed {
            (geom.c, geom.hw())
        } else {
            (geom.o, geom.ohw())
        };
        let v = channel_sums(gys, geom.n, ch, sp);
        Some(finish(v, &[ch], dt))
    } else {
        None
    };
    Ok([gi, gw, gb])
}

/// Gradients for a gradient that holds one value everywhere (the expanded gradient of
/// `sum()` or `mean()`): every image gets the same input gradient, and since im2col is linear
/// the weight gradient only needs the batch sum of the input; both run on a single image.
fn backward_const<T: MatmulElement + FloatElement + DirectFloat>(
    geom: &Geom,
    transposed: bool,
    v: T,
    input: &Tensor,
    weight: &Tensor,
    need: [bool; 3],
) -> Result<[Option<Tensor>; 3]> {
    let dt = input.dtype();
    let n = geom.n;
    let g1 = Geom { n: 1, ..*geom };
    // Channels and spatial size of the gradient (the convolution's output).
    let (ch, sp) = if transposed {
        (geom.c, geom.hw())
    } else {
        (geom.o, geom.ohw())
    };
    let gy1 = vec![v; ch * sp];
    let gi = if need[0] {
        let w = contiguous_in::<T>(weight)?;
        let ws = elems::<T>(&w)?;
        let one = if transposed {
            conv_small(&g1, &gy1, ws, None)
        } else {
            conv_big(&g1, &gy1, ws, None)
        };
        let mut all = Vec::with_capacity(one.len() * n);
        for _ in 0..n {
            all.extend_from_slice(&one);
        }
        Some(finish(all, input.shape(), dt))
    } else {
        None
    };
    let gw = if need[1] {
        let x = contiguous_in::<T>(input)?;
        let xs = elems::<T>(&x)?;
        let per = xs.len() / n;
        let mut xsum = xs[..per].to_vec();
        for img in xs.chunks_exact(per).skip(1) {
            xsum.iter_mut().zip(img).for_each(|(a, b)| *a = *a + *b);
        }
        let v = if transposed {
            conv_weight(&g1, &gy1, &xsum)
        } else {
            conv_weight(&g1, &xsum, &gy1)
        };
        Some(finish(v, weight.shape(), dt))
    } else {
        None
    };
    let gb = if need[2] {
        let total = v * <T as Element>::from_f64((n * sp) as f64);
        Some(finish(vec![total; ch], &[ch], dt))
    } else {
        None
    };
    Ok([gi, gw, gb])
}

fn backward_dispatch(
    geom: &Geom,
    transposed: bool,
    grad: &Tensor,
    input: &Tensor,
    weight: &Tensor,
    need: [bool; 3],
) -> Result<[Option<Tensor>; 3]> {
    if input.device().is_cuda() {
        return cuda_backward(geom, transposed, grad, input, weight, need);
    }
    let cd = input.dtype().compute_dtype();
    crate::with_float_dtype!(
        cd,
        T,
        { backward_typed::<T>(geom, transposed, grad, input, weight, need) },
        Err(Error::UnsupportedDType {
            op: "convolution_backward",
            dtype: input.dtype()
        })
    )
}

/// Gradients w.r.t. (input, weight, bias) written with differentiable ops (`create_graph`).
#[allow(clippy::too_many_arguments)]
fn differentiable_backward(
    geom: Geom,
    shapes: &std::sync::Arc<ConvShapes>,
    transposed: bool,
    grad: &Tensor,
    input: &Tensor,
    weight: &Tensor,
    need: [bool; 3],
) -> Result<[Option<Tensor>; 3]> {
    let gi = need[0]
        .then(|| {
            let map = if transposed {
                ConvMap::Small
            } else {
                ConvMap::Big
            };
            bilinear::apply(map, geom, shapes, grad, weight)
        })
        .transpose()?;
    let gw = need[1]
        .then(|| {
            let (big, small) = if transposed {
                (grad, input)
            } else {
                (input, grad)
            };
            bilinear::apply(ConvMap::Weight, geom, shapes, big, small)
        })
        .transpose()?;
    let gb = need[2]
        .then(|| {
            // Sum over every dim but the channels (dim 1, or dim 0 when unbatched).
            let batched = shapes.weight.len() == grad.ndim();
            let ch = usize::from(batched);
            let dims: Vec<i64> = (0..grad.ndim() as i64)
                .filter(|&d| d != ch as i64)
                .collect();
            grad.sum(Some(&dims), false, None)
        })
        .transpose()?;
    Ok([gi, gw, gb])
}

/// The generic entry point: an `nd`-d (1 or 2) convolution or transposed convolution.
pub fn convolution(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    params: &ConvParams,
    transposed: bool,
    nd: usize,
) -> Result<Tensor> {
    if nd != 1 && nd != 2 {
        return Err(Error::Runtime(format!(
            "convolution: only 1-d and 2-d convolutions are implemented, got {nd}-d"
        )));
    }
    let p = plan(input, weight, bias, params, transposed, nd)?;
    for t in [Some(weight), bias].into_iter().flatten() {
        if t.device() != input.device() {
            return Err(Error::DeviceMismatch {
                op: "convolution",
                lhs: input.device(),
                rhs: t.device(),
            });
        }
    }
    let cd = input.dtype().compute_dtype();
    let out = crate::no_grad(|| {
        if input.device().is_cuda() {
            return cuda_forward(&p, transposed, input, weight, bias);
        }
        crate::with_float_dtype!(
            cd,
            T,
            { forward_typed::<T>(&p, transposed, input, weight, bias) },
            Err(Error::UnsupportedDType {
                op: "convolution",
                dtype: input.dtype()
            })
        )
    })?;
    let mut inputs: Vec<&Tensor> = vec![input, weight];
    if let Some(b) = bias {
        inputs.push(b);
    }
    if needs_grad(&inputs) {
        let need = [
            input.requires_grad(),
            weight.requires_grad(),
            bias.is_some_and(|b| b.requires_grad()),
        ];
        let has_bias = bias.is_some();
        let saved_x = SavedTensor::new(input, "ConvolutionBackward0");
        let saved_w = SavedTensor::new(weight, "ConvolutionBackward0");
        let geom = p.geom;
        let out_shape = p.out_shape.clone();
        let (big, small) = if transposed {
            (out_shape.clone(), input.shape().to_vec())
        } else {
            (input.shape().to_vec(), out_shape.clone())
        };
        let shapes = std::sync::Arc::new(ConvShapes {
            big,
            small,
            weight: weight.shape().to_vec(),
        });
        record(
            "ConvolutionBackward0",
            &inputs,
            &[&out],
            Box::new(move |grads| {
                let n_in = if has_bias { 3 } else { 2 };
                let Some(g) = &grads[0] else {
                    return Ok(vec![None; n_in]);
                };
                let x = saved_x.get()?;
                let w = saved_w.get()?;
                if g.shape() != out_shape.as_slice() {
                    return Err(Error::Runtime(format!(
                        "ConvolutionBackward0: expected a gradient of size {out_shape:?}, got {:?}",
                        g.shape()
                    )));
                }
                let [gi, gw, gb] = if crate::is_grad_enabled() {
                    differentiable_backward(geom, &shapes, transposed, g, x, w, need)?
                } else {
                    // Raw kernels: these gradients carry no history.
                    backward_dispatch(&geom, transposed, g, x, w, need)?
                };
                let mut v = vec![gi, gw];
                if has_bias {
                    v.push(gb);
                }
                Ok(v)
            }),
        );
    }
    Ok(out)
}

// ------------------------------------------------------------------------------ CUDA

/// The geometry as the CUDA launchers take it (`crate::cuda::nn_ops::ConvGeom`).
fn cuda_geom(g: &Geom) -> crate::cuda::nn_ops::ConvGeom {
    let i = |v: usize| v as i64;
    crate::cuda::nn_ops::ConvGeom {
        win: crate::cuda::nn_ops::Window2d {
            n: i(g.n),
            c: i(g.c),
            h: i(g.h),
            w: i(g.w),
            kh: i(g.kh),
            kw: i(g.kw),
            sh: i(g.sh),
            sw: i(g.sw),
            ph: i(g.ph),
            pw: i(g.pw),
            dh: i(g.dh),
            dw: i(g.dw),
            oh: i(g.oh),
            ow: i(g.ow),
        },
        o: g.o,
        groups: g.groups,
    }
}

/// Forward on CUDA tensors: im2col / col2im kernels and cuBLAS (in the input's dtype).
fn cuda_forward(
    p: &Plan,
    transposed: bool,
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
) -> Result<Tensor> {
    use crate::cuda::nn_ops as nn;
    let dt = input.dtype();
    let g = cuda_geom(&p.geom);
    let x = nn::contig(input, dt)?;
    let w = nn::contig(weight, dt)?;
    let b = bias.map(|b| nn::contig(b, dt)).transpose()?;
    let out = if transposed {
        nn::conv_big_from_small(&g, &x, &w, b.as_ref())?
    } else {
        nn::conv_small_from_big(&g, &x, &w, b.as_ref())?
    };
    Ok(out.reshape_contiguous(&p.out_shape))
}

/// [`backward_typed`] on CUDA tensors.
fn cuda_backward(
    geom: &Geom,
    transposed: bool,
    grad: &Tensor,
    input: &Tensor,
    weight: &Tensor,
    need: [bool; 3],
) -> Result<[Option<Tensor>; 3]> {
    use crate::cuda::nn_ops as nn;
    let dt = input.dtype();
    let g = cuda_geom(geom);
    let gy = nn::contig(grad, dt)?;
    let gi = if need[0] {
        let w = nn::contig(weight, dt)?;
        let v = if transposed {
            nn::conv_small_from_big(&g, &gy, &w, None)?
        } else {
            nn::conv_big_from_small(&g, &gy, &w, None)?
        };
        Some(v.reshape_contiguous(input.shape()))
    } else {
        None
    };
    let gw = if need[1] {
        let x = nn::contig(input, dt)?;
        let v = if transposed {
            nn::conv_weight_from_both(&g, &gy, &x)?
        } else {
            nn::conv_weight_from_both(&g, &x, &gy)?
        };
        Some(v.reshape_contiguous(weight.shape()))
    } else {
        None
    };
    let gb = if need[2] {
        let (ch, sp) = if transposed {
            (geom.c, geom.hw())
        } else {
            (geom.o, geom.ohw())
        };
        Some(nn::channel_sums(&gy, geom.n, ch, sp)?)
    } else {
        None
    };
    Ok([gi, gw, gb])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: Vec<f64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape).unwrap()
    }

    #[test]
    fn conv1d_matches_hand_computation() {
        // x = [1, 2, 3, 4], w = [1, -1], padding 1 -> [-1, -1, -1, -1, 4]
        let x = t(vec![1.0, 2.0, 3.0, 4.0], &[1, 1, 4]);
        let w = t(vec![1.0, -1.0], &[1, 1, 2]);
        let p = ConvParams {
            padding: ConvPadding::Explicit(vec![1]),
            ..Default::default()
        };
        let y = conv1d(&x, &w, None, &p).unwrap();
        assert_eq!(y.shape(), &[1, 1, 5]);
        assert_eq!(
            y.to_vec::<f64>().unwrap(),
            vec![-1.0, -1.0, -1.0, -1.0, 4.0]
        );
    }

    #[test]
    fn transposed_is_adjoint_of_conv() {
        // <conv(x), y> == <x, conv_transpose(y)> for the same weight.
        let x: Vec<f64> = (0..2 * 4 * 5 * 6)
            .map(|i| ((i * 7) % 11) as f64 - 5.0)
            .collect();
        let wv: Vec<f64> = (0..6 * 2 * 3 * 2)
            .map(|i| ((i * 5) % 7) as f64 - 3.0)
            .collect();
        let x = t(x, &[2, 4, 5, 6]);
        let w = t(wv, &[6, 2, 3, 2]);
        let p = ConvParams {
            stride: vec![2, 1],
            padding: ConvPadding::Explicit(vec![1, 0]),
            dilation: vec![1, 2],
            groups: 2,
            ..Default::default()
        };
        let y = conv2d(&x, &w, None, &p).unwrap();
        let yv: Vec<f64> = (0..y.numel()).map(|i| ((i * 3) % 5) as f64 - 2.0).collect();
        let yt = t(yv.clone(), y.shape());
        let xt = conv_transpose2d(&yt, &w, None, &p).unwrap();
        assert_eq!(xt.shape(), x.shape());
        let lhs: f64 = y
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .zip(&yv)
            .map(|(a, b)| a * b)
            .sum();
        let rhs: f64 = x
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .zip(xt.to_vec::<f64>().unwrap())
            .map(|(a, b)| a * b)
            .sum();
        assert!((lhs - rhs).abs() < 1e-9, "{lhs} vs {rhs}");
    }

    #[test]
    fn channel_mismatch_error() {
        let x = Tensor::zeros(&[16, 4, 32, 32], DType::F32);
        let w = Tensor::zeros(&[32, 3, 3, 3], DType::F32);
        let e = conv2d(&x, &w, None, &ConvParams::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Given groups=1, weight of size [32, 3, 3, 3], expected input[16, 4, 32, 32] to have 3 channels, but got 4 channels instead"
        );
    }
}
