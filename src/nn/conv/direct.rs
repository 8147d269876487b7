//! Direct convolution kernels (no im2col matrix, no gemm call) for f32/f64.
//!
//! Each image's big side is first copied into a zero-padded, *phase-split* buffer: for a
//! stride `(sh, sw)`, channel `c` gets `sh * sw` planes, plane `(py, px)` holding the padded
//! pixels `(Y * sh + py, X * sw + px)` in rows of `wq` elements. Output pixel `(oy, ox)` of
//! kernel tap `(ki, kj)` then reads plane `((ki*dh) % sh, (kj*dw) % sw)` at
//! `(oy + (ki*dh) / sh) * wq + ox + (kj*dw) / sw`: consecutive output pixels of a row read
//! consecutive elements for every stride and dilation, so a register tile of `NR` output
//! pixels x `M` output channels is a rank-1 update per kernel row `(c, ki, kj)` with one
//! contiguous vector load and `M` broadcast weights. Planes carry zeroed slack at the end,
//! so tiles may run past a row's end (those pixels are computed and dropped).
//!
//! * [`forward`]: `small = conv(big, W) (+ bias)`, any stride/dilation/padding/groups.
//! * [`weight_grad`]: `gW = sum_n gy[n] (x) im2col(big[n])`, vectorised along pixels.
//!
//! The transposed direction (conv grad_input, transposed-conv forward) with unit stride is a
//! forward convolution of the small side with the flipped, transposed weight ([`flip_weight`]).
//!
//! The inner kernels are generic code written for auto-vectorisation, compiled three times on
//! x86-64 (baseline, AVX2 + FMA, AVX-512F) and picked at run time ([`Isa`]). AVX-512's 32
//! registers of 16 floats take tiles of 8 channels x 32 pixels (16 accumulators), against
//! AVX2's 4 x 16 (8 of 16 registers).

use super::Geom;
use num_traits::Float;
use rayon::prelude::*;

/// Elements that have direct kernels.
pub(super) trait DirectFloat: Float + Default + Send + Sync + 'static {}
impl DirectFloat for f32 {}
impl DirectFloat for f64 {}

/// A raw pointer shared by threads that write disjoint elements.
#[derive(Clone, Copy)]
struct SyncPtr<T>(*mut T);
// SAFETY: only used for writes to disjoint positions (one thread per output block).
unsafe impl<T> Send for SyncPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SyncPtr<T> {}

/// The instruction set a kernel runs with (each compiles the same generic code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Isa {
    Baseline,
    Avx2,
    /// AVX-512F: 32 vector registers of 16 floats, so bigger register tiles.
    Avx512,
}

impl Isa {
    /// The best instruction set this CPU supports.
    fn detect() -> Isa {
        if crate::cpu::simd::has_avx512() {
            Isa::Avx512
        } else if crate::cpu::simd::has_avx2_fma() {
            Isa::Avx2
        } else {
            Isa::Baseline
        }
    }
}

#[inline(always)]
fn fma<T: Float, const FMA: bool>(a: T, b: T, c: T) -> T {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// Layout of the phase-split padded copy of one image.
#[derive(Debug, Clone, Copy)]
struct Prep {
    hq: usize,
    wq: usize,
    /// Elements per (channel, phase) plane, slack included.
    plane: usize,
    /// Elements per image (`c * sh * sw * plane`).
    image: usize,
}

impl Prep {
    fn new(g: &Geom) -> Prep {
        let amax = (g.kh - 1) * g.dh / g.sh;
        let bmax = (g.kw - 1) * g.dw / g.sw;
        let hq = g.oh + amax;
        let wq = g.ow + bmax;
        // Reads reach at most (hq + 1) * wq + NR (tiles past the last row / row end).
        let plane = (hq + 1) * wq + 32;
        Prep {
            hq,
            wq,
            plane,
            image: g.c * g.sh * g.sw * plane,
        }
    }

    /// Offset (within an image) of kernel row `(c, ki, kj)` (`c` counted over all groups).
    fn row_offset(&self, g: &Geom, c: usize, ki: usize, kj: usize) -> usize {
        let (iy, ix) = (ki * g.dh, kj * g.dw);
        let (py, px) = (iy % g.sh, ix % g.sw);
        ((c * g.sh + py) * g.sw + px) * self.plane + (iy / g.sh) * self.wq + ix / g.sw
    }

    /// For each group, the offsets of its kernel rows `(c, ki, kj)` in weight order.
    fn group_row_offsets(&self, g: &Geom) -> Vec<Vec<usize>> {
        let cg = g.cg();
        (0..g.groups)
            .map(|gi| {
                let mut v = Vec::with_capacity(g.rows());
                for c in 0..cg {
                    for ki in 0..g.kh {
                        for kj in 0..g.kw {
                            v.push(self.row_offset(g, gi * cg + c, ki, kj));
                        }
                    }
                }
                v
            })
            .collect()
    }
}

/// Fill one image's phase-split padded buffer from `src` `(c, h, w)`.
fn prepare_image<T: DirectFloat>(g: &Geom, p: &Prep, src: &[T], dst: &mut [T]) {
    let zero = T::zero();
    let (h, w) = (g.h as isize, g.w as isize);
    for c in 0..g.c {
        let sp = &src[c * g.h * g.w..(c + 1) * g.h * g.w];
        for py in 0..g.sh {
            for px in 0..g.sw {
                let base = ((c * g.sh + py) * g.sw + px) * p.plane;
                let plane = &mut dst[base..base + p.plane];
                let rows_len = p.hq * p.wq;
                plane[rows_len..].fill(zero);
                // Padded column X*sw + px holds source column X*sw + px - pw.
                let x0 = px as isize - g.pw as isize;
                let s = g.sw as isize;
                // X in [xlo, xhi) have a source column in [0, w).
                let xlo = if x0 >= 0 {
                    0
                } else {
                    (((-x0 + s - 1) / s) as usize).min(p.wq)
                };
                let xhi = if w - 1 - x0 < 0 {
                    xlo
                } else {
                    (((w - 1 - x0) / s) as usize + 1).min(p.wq).max(xlo)
                };
                for (yq, row) in plane[..rows_len].chunks_exact_mut(p.wq).enumerate() {
                    let y = (yq * g.sh + py) as isize - g.ph as isize;
                    if y < 0 || y >= h || xlo >= xhi {
                        row.fill(zero);
                        continue;
                    }
                    let srow = &sp[y as usize * g.w..(y as usize + 1) * g.w];
                    row[..xlo].fill(zero);
                    row[xhi..].fill(zero);
                    let start = (xlo as isize * s + x0) as usize;
                    if g.sw == 1 {
                        row[xlo..xhi].copy_from_slice(&srow[start..start + (xhi - xlo)]);
                    } else {
                        for (d, v) in row[xlo..xhi]
                            .iter_mut()
                            .zip(srow[start..].iter().step_by(g.sw))
                        {
                            *d = *v;
                        }
                    }
                }
            }
        }
    }
}

/// All images' padded buffers (`n * p.image` elements), images in parallel.
fn prepare<T: DirectFloat>(g: &Geom, p: &Prep, big: &[T]) -> Vec<T> {
    let mut buf = crate::cpu::alloc::zeroed_vec(g.n * p.image);
    let img = g.c * g.h * g.w;
    if p.image == 0 {
        return buf;
    }
    let one = |(n, d): (usize, &mut [T])| prepare_image(g, p, &big[n * img..(n + 1) * img], d);
    if g.n > 1 && buf.len() >= 1 << 15 && rayon::current_num_threads() > 1 {
        buf.par_chunks_mut(p.image).enumerate().for_each(one);
    } else {
        buf.chunks_mut(p.image).enumerate().for_each(one);
    }
    buf
}

/// The register tiles covering one image's output: `(input q, output offset, length)` runs.
/// Either one tile list per output row (`ow` split in `nr` pieces), or the flattened
/// `oh * wq` pixels cut in `nr` pieces (fewer tiles when rows are short).
struct Tiles {
    /// Input position (`oy * wq + ox`) of each tile's first pixel.
    q: Vec<usize>,
    per_row: bool,
}

fn tiles(g: &Geom, p: &Prep, nr: usize) -> Tiles {
    let per_row_count = g.oh * g.ow.div_ceil(nr);
    let flat_count = (g.oh * p.wq).div_ceil(nr);
    if per_row_count <= flat_count {
        let mut q = Vec::with_capacity(per_row_count);
        for oy in 0..g.oh {
            for ox in (0..g.ow).step_by(nr) {
                q.push(oy * p.wq + ox);
            }
        }
        Tiles { q, per_row: true }
    } else {
        Tiles {
            q: (0..flat_count).map(|t| t * nr).collect(),
            per_row: false,
        }
    }
}

/// One forward register tile: `M` channels x `NR` pixels starting at input position `q`.
///
/// # Safety
/// `img + off + q + j` must be readable for every `off` in `offs` and `j < NR`.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // fixed-size index loops: they vectorise
unsafe fn fwd_tile<T: DirectFloat, const M: usize, const NR: usize, const FMA: bool>(
    img: *const T,
    offs: &[usize],
    wpack: &[T],
    q: usize,
    init: [T; M],
) -> [[T; NR]; M] {
    let mut acc = [[T::zero(); NR]; M];
    for m in 0..M {
        acc[m] = [init[m]; NR];
    }
    for (&off, w) in offs.iter().zip(wpack.chunks_exact(M)) {
        // SAFETY: the caller guarantees these NR elements are readable.
        let x: [T; NR] = unsafe { std::ptr::read_unaligned(img.add(off + q) as *const [T; NR]) };
        for m in 0..M {
            let wm = w[m];
            for j in 0..NR {
                acc[m][j] = fma::<T, FMA>(wm, x[j], acc[m][j]);
            }
        }
    }
    acc
}

/// What one forward work unit (image `n`, group `gi`, output-channel block `ob`) needs.
struct FwdCtx<'a, T> {
    g: &'a Geom,
    p: &'a Prep,
    prep: &'a [T],
    /// Per group: kernel-row offsets within an image.
    offs: &'a [Vec<usize>],
    /// Per group and block: `(rows, M)` packed weights (zero rows past `og`).
    wpack: &'a [T],
    bias: Option<&'a [T]>,
    tiles: &'a Tiles,
    out: SyncPtr<T>,
}

/// # Safety
/// `ctx.out` must point to `n * o * oh * ow` writable elements, no other thread writing the
/// block `(n, gi, ob)`; `ctx.prep` must hold every image's buffer laid out as `ctx.p`.
#[inline(always)]
unsafe fn fwd_unit<T: DirectFloat, const M: usize, const NR: usize, const FMA: bool>(
    ctx: &FwdCtx<'_, T>,
    n: usize,
    gi: usize,
    ob: usize,
) {
    let g = ctx.g;
    let (og, rows, ohw) = (g.og(), g.rows(), g.ohw());
    let nblocks = og.div_ceil(M);
    let wpack = &ctx.wpack[(gi * nblocks + ob) * rows * M..(gi * nblocks + ob + 1) * rows * M];
    let offs = &ctx.offs[gi];
    let img = ctx.prep[n * ctx.p.image..(n + 1) * ctx.p.image].as_ptr();
    let o0 = ob * M;
    let mcount = M.min(og - o0);
    let mut init = [T::zero(); M];
    if let Some(b) = ctx.bias {
        for m in 0..mcount {
            init[m] = b[gi * og + o0 + m];
        }
    }
    // SAFETY: the caller guarantees `out` covers the whole output.
    let out = unsafe { ctx.out.0.add((n * g.o + gi * og + o0) * ohw) };
    let wq = ctx.p.wq;
    for &q in &ctx.tiles.q {
        // SAFETY: `forward` checked that every tile's reads stay inside the image buffer.
        let acc = unsafe { fwd_tile::<T, M, NR, FMA>(img, offs, wpack, q, init) };
        let (oy, ox) = (q / wq, q % wq);
        if ctx.tiles.per_row || (oy < g.oh && ox + NR <= g.ow) {
            let len = NR.min(g.ow - ox);
            let dst = oy * g.ow + ox;
            for (m, a) in acc.iter().enumerate().take(mcount) {
                // SAFETY: channel o0 + m < og, pixel run inside row oy < oh.
                unsafe { std::ptr::copy_nonoverlapping(a.as_ptr(), out.add(m * ohw + dst), len) };
            }
        } else {
            // Flattened tile: split at row ends, drop the padding columns.
            let mut j = 0;
            while j < NR {
                let (y, x) = ((q + j) / wq, (q + j) % wq);
                if y >= g.oh {
                    break;
                }
                if x >= g.ow {
                    j += wq - x;
                    continue;
                }
                let len = (g.ow - x).min(NR - j);
                for (m, a) in acc.iter().enumerate().take(mcount) {
                    // SAFETY: as above.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            a.as_ptr().add(j),
                            out.add(m * ohw + y * g.ow + x),
                            len,
                        )
                    };
                }
                j += len;
            }
        }
    }
}

/// # Safety
/// As [`fwd_unit`]; the CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fwd_unit_avx2<T: DirectFloat, const M: usize, const NR: usize>(
    ctx: &FwdCtx<'_, T>,
    n: usize,
    gi: usize,
    ob: usize,
) {
    // SAFETY: forwarded contract.
    unsafe { fwd_unit::<T, M, NR, true>(ctx, n, gi, ob) }
}

/// # Safety
/// As [`fwd_unit`]; the CPU must support AVX-512F (FMA comes with it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn fwd_unit_avx512<T: DirectFloat, const M: usize, const NR: usize>(
    ctx: &FwdCtx<'_, T>,
    n: usize,
    gi: usize,
    ob: usize,
) {
    // SAFETY: forwarded contract.
    unsafe { fwd_unit::<T, M, NR, true>(ctx, n, gi, ob) }
}

/// `small = conv(big, wt) (+ bias)` for the geometry `g`; `wt` is `(o, cg, kh, kw)`.
/// Returns `(n, o, oh, ow)` contiguous.
pub(super) fn forward<T: DirectFloat>(g: &Geom, big: &[T], wt: &[T], bias: Option<&[T]>) -> Vec<T> {
    forward_isa(Isa::detect(), g, big, wt, bias)
}

/// [`forward`] with the instruction set chosen by the caller (tests compare them).
fn forward_isa<T: DirectFloat>(
    isa: Isa,
    g: &Geom,
    big: &[T],
    wt: &[T],
    bias: Option<&[T]>,
) -> Vec<T> {
    // Tiles of two vectors of pixels. With AVX-512's 32 registers, 6 channels (12
    // accumulators): measured 1.6-1.8x the AVX2 kernel on 3x3 convolutions; 7 or more
    // channels made LLVM spill the tile (20-40x slower), so keep M <= 6.
    let f32 = std::mem::size_of::<T>() == 4;
    match (isa, f32) {
        (Isa::Avx512, true) => forward_tiled::<T, 6, 32>(isa, g, big, wt, bias),
        (Isa::Avx512, false) => forward_tiled::<T, 6, 16>(isa, g, big, wt, bias),
        (_, true) => forward_tiled::<T, 4, 16>(isa, g, big, wt, bias),
        (_, false) => forward_tiled::<T, 4, 8>(isa, g, big, wt, bias),
    }
}

fn forward_tiled<T: DirectFloat, const M: usize, const NR: usize>(
    isa: Isa,
    g: &Geom,
    big: &[T],
    wt: &[T],
    bias: Option<&[T]>,
) -> Vec<T> {
    let total = g.n * g.o * g.ohw();
    if total == 0 {
        return Vec::new();
    }
    let p = Prep::new(g);
    let prep = prepare(g, &p, big);
    let (og, rows) = (g.og(), g.rows());
    let nblocks = og.div_ceil(M);
    let offs = p.group_row_offsets(g);
    let mut wpack = vec![T::zero(); g.groups * nblocks * rows * M];
    for gi in 0..g.groups {
        for o in 0..og {
            let (ob, m) = (o / M, o % M);
            let base = (gi * nblocks + ob) * rows * M;
            for r in 0..rows {
                wpack[base + r * M + m] = wt[(gi * og + o) * rows + r];
            }
        }
    }
    let t = tiles(g, &p, NR);
    // Every read is below the largest row offset + last tile start + NR.
    let max_off = offs.iter().flatten().copied().max().unwrap_or(0);
    let max_q = t.q.iter().copied().max().unwrap_or(0);
    assert!(
        max_off + max_q + NR <= p.image,
        "conv: direct kernel reads out of bounds"
    );
    // Every element is written below (a recycled buffer saves a fresh one's page faults).
    let mut out: Vec<T> = crate::cpu::alloc::output_vec_for_overwrite(total);
    let ctx = FwdCtx {
        g,
        p: &p,
        prep: &prep,
        offs: &offs,
        wpack: &wpack,
        bias,
        tiles: &t,
        out: SyncPtr(out.as_mut_ptr()),
    };
    let unit = |u: usize| {
        let ob = u % nblocks;
        let gi = (u / nblocks) % g.groups;
        let n = u / (nblocks * g.groups);
        // SAFETY (all arms): `isa` is supported by this CPU (`Isa::detect` / the tests check
        // `available`); units write disjoint blocks of `out`, which holds `total` elements;
        // reads were bounds-checked above.
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { fwd_unit_avx512::<T, M, NR>(&ctx, n, gi, ob) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { fwd_unit_avx2::<T, M, NR>(&ctx, n, gi, ob) },
            _ => unsafe { fwd_unit::<T, M, NR, false>(&ctx, n, gi, ob) },
        }
    };
    let units = g.n * g.groups * nblocks;
    let work = total * rows;
    if units > 1 && work >= 1 << 16 && rayon::current_num_threads() > 1 {
        (0..units).into_par_iter().for_each(unit);
    } else {
        (0..units).for_each(unit);
    }
    // The units together wrote every element of every (n, o) output plane: each output
    // row's pixels [0, ow) are covered by the tiles.
    out
}

/// The weight of the equivalent unit-stride forward convolution computing the transposed
/// direction: `(o, cg, kh, kw)` -> `(c, og, kh, kw)` with the taps reversed.
pub(super) fn flip_weight<T: Copy>(g: &Geom, wt: &[T]) -> Vec<T> {
    let (cg, og, kh, kw) = (g.cg(), g.og(), g.kh, g.kw);
    let mut out = Vec::with_capacity(wt.len());
    for gi in 0..g.groups {
        for c in 0..cg {
            for o in 0..og {
                for ki in 0..kh {
                    for kj in 0..kw {
                        let src =
                            (((gi * og + o) * cg + c) * kh + (kh - 1 - ki)) * kw + (kw - 1 - kj);
                        out.push(wt[src]);
                    }
                }
            }
        }
    }
    out
}

/// The geometry of the unit-stride forward convolution that computes `big` from `small`
/// (the transposed direction of `g`), if its padding is non-negative.
pub(super) fn transposed_geom(g: &Geom) -> Option<Geom> {
    if g.sh != 1 || g.sw != 1 {
        return None;
    }
    let ph = (g.dh * (g.kh - 1)).checked_sub(g.ph)?;
    let pw = (g.dw * (g.kw - 1)).checked_sub(g.pw)?;
    Some(Geom {
        n: g.n,
        groups: g.groups,
        c: g.o,
        h: g.oh,
        w: g.ow,
        o: g.c,
        oh: g.h,
        ow: g.w,
        kh: g.kh,
        kw: g.kw,
        sh: 1,
        sw: 1,
        ph,
        pw,
        dh: g.dh,
        dw: g.dw,
    })
}

// ------------------------------------------------------------------------ weight gradient

/// One weight-gradient register tile: `M` channels of `gy` x `R` kernel rows, summed over
/// the pixel vectors `(gy position, input position)` of `runs`.
///
/// # Safety
/// `gy + goffs[m] + gpos + j` and `img + roffs[b] + qpos + j` must be readable for every run
/// and `j < NV`.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // fixed-size index loops: they vectorise
unsafe fn gw_tile<
    T: DirectFloat,
    const M: usize,
    const R: usize,
    const NV: usize,
    const FMA: bool,
>(
    gy: *const T,
    goffs: [usize; M],
    img: *const T,
    roffs: [usize; R],
    runs: &[(usize, usize)],
) -> [[T; R]; M] {
    let mut acc = [[[T::zero(); NV]; R]; M];
    for &(gp, qp) in runs {
        // SAFETY: guaranteed readable by the caller.
        let gv: [[T; NV]; M] = std::array::from_fn(|m| unsafe {
            std::ptr::read_unaligned(gy.add(goffs[m] + gp) as *const [T; NV])
        });
        // SAFETY: as above.
        let xv: [[T; NV]; R] = std::array::from_fn(|b| unsafe {
            std::ptr::read_unaligned(img.add(roffs[b] + qp) as *const [T; NV])
        });
        for m in 0..M {
            for b in 0..R {
                for j in 0..NV {
                    acc[m][b][j] = fma::<T, FMA>(gv[m][j], xv[b][j], acc[m][b][j]);
                }
            }
        }
    }
    let mut res = [[T::zero(); R]; M];
    for m in 0..M {
        for b in 0..R {
            let mut s = T::zero();
            for j in 0..NV {
                s = s + acc[m][b][j];
            }
            res[m][b] = s;
        }
    }
    res
}

/// [`gw_tile`] for f32 with explicit AVX-512 vectors of 16 pixels. (LLVM's AVX-512 build of
/// the generic tile packs the accumulators into shuffled registers: 2x slower than AVX2.)
///
/// # Safety
/// As [`gw_tile`] with `NV = 16`; the CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn gw_tile_avx512<const M: usize, const R: usize>(
    gy: *const f32,
    goffs: [usize; M],
    img: *const f32,
    roffs: [usize; R],
    runs: &[(usize, usize)],
) -> [[f32; R]; M] {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_ps(); R]; M];
    for &(gp, qp) in runs {
        // SAFETY: the caller guarantees 16 readable elements at every offset of every run.
        let xv: [__m512; R] =
            std::array::from_fn(|b| unsafe { _mm512_loadu_ps(img.add(roffs[b] + qp)) });
        for (m, accm) in acc.iter_mut().enumerate() {
            // SAFETY: as above.
            let gv = unsafe { _mm512_loadu_ps(gy.add(goffs[m] + gp)) };
            for (a, x) in accm.iter_mut().zip(&xv) {
                *a = _mm512_fmadd_ps(gv, *x, *a);
            }
        }
    }
    std::array::from_fn(|m| std::array::from_fn(|b| _mm512_reduce_add_ps(acc[m][b])))
}

struct GwCtx<'a, T> {
    g: &'a Geom,
    p: &'a Prep,
    prep: &'a [T],
    small: &'a [T],
    offs: &'a [Vec<usize>],
}

/// Add the contribution of image `n`, group `gi`, channel block `ob` to `acc` (`(o, rows)`);
/// `scratch` is a reusable buffer for a row-padded copy of the block's `gy` channels.
///
/// # Safety
/// `ctx.prep` must hold every image's buffer laid out as `ctx.p`.
#[inline(always)]
unsafe fn gw_unit<
    T: DirectFloat,
    const M: usize,
    const R: usize,
    const NV: usize,
    const FMA: bool,
    const WIDE: bool,
>(
    ctx: &GwCtx<'_, T>,
    n: usize,
    gi: usize,
    ob: usize,
    acc: &mut [T],
    scratch: &mut Vec<T>,
    runs: &mut Vec<(usize, usize)>,
) {
    let (g, p) = (ctx.g, ctx.p);
    let (og, rows, ohw) = (g.og(), g.rows(), g.ohw());
    let o0 = ob * M;
    let mcount = M.min(og - o0);
    let img = &ctx.prep[n * p.image..(n + 1) * p.image];
    let gy_img =
        &ctx.small[(n * g.o + gi * og + o0) * ohw..(n * g.o + gi * og + o0 + mcount) * ohw];
    // Pixel vectors: straight from gy when rows split evenly into vectors, else from a copy of
    // gy in `wq`-wide rows with zeros in the padding columns and the tail.
    runs.clear();
    let (gy, gstride): (&[T], usize) = if g.ow.is_multiple_of(NV) {
        for oy in 0..g.oh {
            for ox in (0..g.ow).step_by(NV) {
                runs.push((oy * g.ow + ox, oy * p.wq + ox));
            }
        }
        (gy_img, ohw)
    } else {
        let len = (g.oh * p.wq).div_ceil(NV) * NV;
        scratch.clear();
        scratch.resize(mcount * len, T::zero());
        for m in 0..mcount {
            for oy in 0..g.oh {
                let s = &gy_img[m * ohw + oy * g.ow..m * ohw + (oy + 1) * g.ow];
                scratch[m * len + oy * p.wq..m * len + oy * p.wq + g.ow].copy_from_slice(s);
            }
        }
        runs.extend((0..len).step_by(NV).map(|q| (q, q)));
        (&scratch[..], len)
    };
    let goffs: [usize; M] = std::array::from_fn(|m| m.min(mcount - 1) * gstride);
    // Bounds of every read (checked once per unit, not per vector).
    let (gmax, qmax) = runs
        .iter()
        .fold((0, 0), |(a, b), &(x, y)| (a.max(x), b.max(y)));
    let offs = &ctx.offs[gi];
    let max_off = offs.iter().copied().max().unwrap_or(0);
    assert!(
        goffs[M - 1] + gmax + NV <= gy.len() && max_off + qmax + NV <= img.len(),
        "conv: weight-gradient kernel reads out of bounds"
    );
    for r0 in (0..rows).step_by(R) {
        let bcount = R.min(rows - r0);
        let roffs: [usize; R] = std::array::from_fn(|b| offs[r0 + b.min(bcount - 1)]);
        #[cfg(target_arch = "x86_64")]
        let res: [[T; R]; M] = if WIDE && std::mem::size_of::<T>() == 4 && NV == 16 {
            // SAFETY: `T` is f32 (the only 4-byte DirectFloat); bounds asserted above; the
            // caller runs WIDE units only on AVX-512 CPUs.
            let r = unsafe {
                gw_tile_avx512::<M, R>(
                    gy.as_ptr() as *const f32,
                    goffs,
                    img.as_ptr() as *const f32,
                    roffs,
                    runs,
                )
            };
            r.map(|row| row.map(|v| T::from(v).unwrap_or_else(T::zero)))
        } else {
            // SAFETY: bounds asserted above for every offset and run.
            unsafe { gw_tile::<T, M, R, NV, FMA>(gy.as_ptr(), goffs, img.as_ptr(), roffs, runs) }
        };
        #[cfg(not(target_arch = "x86_64"))]
        // SAFETY: bounds asserted above for every offset and run.
        let res =
            unsafe { gw_tile::<T, M, R, NV, FMA>(gy.as_ptr(), goffs, img.as_ptr(), roffs, runs) };
        for (m, row) in res.iter().enumerate().take(mcount) {
            let dst = &mut acc[(gi * og + o0 + m) * rows + r0..];
            for (d, v) in dst.iter_mut().zip(row).take(bcount) {
                *d = *d + *v;
            }
        }
    }
}

/// # Safety
/// As [`gw_unit`]; the CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn gw_unit_avx2<T: DirectFloat, const M: usize, const R: usize, const NV: usize>(
    ctx: &GwCtx<'_, T>,
    n: usize,
    gi: usize,
    ob: usize,
    acc: &mut [T],
    scratch: &mut Vec<T>,
    runs: &mut Vec<(usize, usize)>,
) {
    // SAFETY: forwarded contract.
    unsafe { gw_unit::<T, M, R, NV, true, false>(ctx, n, gi, ob, acc, scratch, runs) }
}

/// # Safety
/// As [`gw_unit`]; the CPU must support AVX-512F (the explicit f32 tile).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn gw_unit_avx512<T: DirectFloat, const M: usize, const R: usize, const NV: usize>(
    ctx: &GwCtx<'_, T>,
    n: usize,
    gi: usize,
    ob: usize,
    acc: &mut [T],
    scratch: &mut Vec<T>,
    runs: &mut Vec<(usize, usize)>,
) {
    // SAFETY: forwarded contract.
    unsafe { gw_unit::<T, M, R, NV, true, true>(ctx, n, gi, ob, acc, scratch, runs) }
}

/// `gW = sum_n small[n] @ im2col(big[n])^T` per group; returns `(o, cg, kh, kw)` contiguous.
pub(super) fn weight_grad<T: DirectFloat>(g: &Geom, big: &[T], small: &[T]) -> Vec<T> {
    weight_grad_isa(Isa::detect(), g, big, small)
}

/// [`weight_grad`] with the instruction set chosen by the caller (tests compare them).
fn weight_grad_isa<T: DirectFloat>(isa: Isa, g: &Geom, big: &[T], small: &[T]) -> Vec<T> {
    // One vector of pixels per (channel, kernel row) accumulator.
    let f32 = std::mem::size_of::<T>() == 4;
    match (isa, f32) {
        // Explicit AVX-512 tile (gw_tile_avx512): 4 channels x 3 rows of 16 pixels measured
        // 10-15% faster than the AVX2 build; more rows per tile (5, 6) measured slower.
        (Isa::Avx512, true) => weight_grad_tiled::<T, 4, 3, 16>(isa, g, big, small),
        // The generic AVX-512 build is slower than the AVX2 one for f64 too.
        (Isa::Avx512, false) => weight_grad_tiled::<T, 4, 3, 4>(Isa::Avx2, g, big, small),
        (_, true) => weight_grad_tiled::<T, 4, 3, 8>(isa, g, big, small),
        (_, false) => weight_grad_tiled::<T, 4, 3, 4>(isa, g, big, small),
    }
}

fn weight_grad_tiled<T: DirectFloat, const M: usize, const R: usize, const NV: usize>(
    isa: Isa,
    g: &Geom,
    big: &[T],
    small: &[T],
) -> Vec<T> {
    let (og, rows) = (g.og(), g.rows());
    let size = g.o * rows;
    if size == 0 || g.n == 0 || g.ohw() == 0 {
        return vec![T::zero(); size];
    }
    let p = Prep::new(g);
    let prep = prepare(g, &p, big);
    let offs = p.group_row_offsets(g);
    let ctx = GwCtx {
        g,
        p: &p,
        prep: &prep,
        small,
        offs: &offs,
    };
    let nblocks = og.div_ceil(M);
    let units = g.n * g.groups * nblocks;
    type State<T> = (Vec<T>, Vec<T>, Vec<(usize, usize)>);
    let zeros = || -> State<T> { (vec![T::zero(); size], Vec::new(), Vec::new()) };
    let step = |mut st: State<T>, u: usize| -> State<T> {
        let ob = u % nblocks;
        let gi = (u / nblocks) % g.groups;
        let n = u / (nblocks * g.groups);
        let (acc, scratch, runs) = (&mut st.0, &mut st.1, &mut st.2);
        // SAFETY (all arms): `isa` is supported by this CPU; `prep` laid out as `p`.
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe {
                gw_unit_avx512::<T, M, R, NV>(&ctx, n, gi, ob, acc, scratch, runs)
            },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe {
                gw_unit_avx2::<T, M, R, NV>(&ctx, n, gi, ob, acc, scratch, runs)
            },
            _ => unsafe {
                gw_unit::<T, M, R, NV, false, false>(&ctx, n, gi, ob, acc, scratch, runs)
            },
        }
        st
    };
    let work = g.n * g.o * g.ohw() * rows;
    if units > 1 && work >= 1 << 16 && rayon::current_num_threads() > 1 {
        (0..units)
            .into_par_iter()
            .fold(zeros, step)
            .map(|s| s.0)
            .reduce(
                || vec![T::zero(); size],
                |mut a, b| {
                    a.iter_mut().zip(&b).for_each(|(x, y)| *x = *x + *y);
                    a
                },
            )
    } else {
        (0..units).fold(zeros(), step).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The instruction sets this CPU can run.
    fn isas() -> Vec<Isa> {
        let mut v = vec![Isa::Baseline];
        if crate::cpu::simd::has_avx2_fma() {
            v.push(Isa::Avx2);
        }
        if crate::cpu::simd::has_avx512() {
            v.push(Isa::Avx512);
        }
        v
    }

    #[allow(clippy::too_many_arguments)]
    fn geom(
        n: usize,
        groups: usize,
        (c, h, w): (usize, usize, usize),
        o: usize,
        (kh, kw): (usize, usize),
        (sh, sw): (usize, usize),
        (ph, pw): (usize, usize),
        (dh, dw): (usize, usize),
    ) -> Geom {
        let oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1;
        let ow = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
        Geom {
            n,
            groups,
            c,
            h,
            w,
            o,
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
        }
    }

    /// Geometries that exercise partial channel blocks, row tails, flattened tiles, strides,
    /// dilation, groups and padding.
    fn geoms() -> Vec<Geom> {
        vec![
            geom(2, 1, (3, 9, 11), 5, (3, 3), (1, 1), (1, 1), (1, 1)),
            geom(1, 1, (8, 40, 37), 13, (3, 3), (1, 1), (1, 1), (1, 1)),
            geom(3, 2, (4, 7, 5), 14, (2, 3), (2, 1), (0, 1), (1, 2)),
            geom(2, 1, (5, 12, 33), 7, (5, 5), (2, 2), (2, 2), (1, 1)),
            geom(1, 4, (8, 6, 70), 8, (3, 1), (1, 3), (1, 0), (2, 1)),
        ]
    }

    fn values(len: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..len)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 33) % 1000) as f64 / 250.0 - 2.0
            })
            .collect()
    }

    /// `small[n, o, y, x] = sum_{c, i, j} W[o, c, i, j] big[n, g*cg + c, y*sh + i*dh - ph, ...]`.
    fn naive_forward(g: &Geom, big: &[f64], wt: &[f64]) -> Vec<f64> {
        let (cg, og) = (g.cg(), g.og());
        let mut out = vec![0.0; g.n * g.o * g.oh * g.ow];
        for n in 0..g.n {
            for o in 0..g.o {
                let gi = o / og;
                for y in 0..g.oh {
                    for x in 0..g.ow {
                        let mut s = 0.0;
                        for c in 0..cg {
                            for i in 0..g.kh {
                                for j in 0..g.kw {
                                    if let Some(p) = tap(g, y, x, i, j) {
                                        let b = big[(n * g.c + gi * cg + c) * g.h * g.w + p];
                                        s += wt[((o * cg + c) * g.kh + i) * g.kw + j] * b;
                                    }
                                }
                            }
                        }
                        out[((n * g.o + o) * g.oh + y) * g.ow + x] = s;
                    }
                }
            }
        }
        out
    }

    /// The input pixel tap `(i, j)` of output pixel `(y, x)` reads, if inside the image.
    fn tap(g: &Geom, y: usize, x: usize, i: usize, j: usize) -> Option<usize> {
        let iy = (y * g.sh + i * g.dh) as isize - g.ph as isize;
        let ix = (x * g.sw + j * g.dw) as isize - g.pw as isize;
        let inside = iy >= 0 && ix >= 0 && iy < g.h as isize && ix < g.w as isize;
        inside.then(|| iy as usize * g.w + ix as usize)
    }

    /// `gW[o, c, i, j] = sum_{n, y, x} small[n, o, y, x] big[n, g*cg + c, tap(y, x, i, j)]`.
    fn naive_weight_grad(g: &Geom, big: &[f64], small: &[f64]) -> Vec<f64> {
        let (cg, og) = (g.cg(), g.og());
        let mut out = vec![0.0; g.o * g.rows()];
        for o in 0..g.o {
            let gi = o / og;
            for c in 0..cg {
                for i in 0..g.kh {
                    for j in 0..g.kw {
                        let mut s = 0.0;
                        for n in 0..g.n {
                            let plane = (n * g.c + gi * cg + c) * g.h * g.w;
                            for y in 0..g.oh {
                                for x in 0..g.ow {
                                    if let Some(p) = tap(g, y, x, i, j) {
                                        s += small[((n * g.o + o) * g.oh + y) * g.ow + x]
                                            * big[plane + p];
                                    }
                                }
                            }
                        }
                        out[((o * cg + c) * g.kh + i) * g.kw + j] = s;
                    }
                }
            }
        }
        out
    }

    fn close<T: DirectFloat>(got: &[T], want: &[f64], tol: f64) {
        assert_eq!(got.len(), want.len());
        for (i, (a, b)) in got.iter().zip(want).enumerate() {
            let a = a.to_f64().unwrap();
            assert!(
                (a - b).abs() <= tol * (1.0 + b.abs()),
                "element {i}: {a} vs {b}"
            );
        }
    }

    fn check_every_isa<T: DirectFloat>(tol: f64) {
        for (k, g) in geoms().iter().enumerate() {
            let big = values(g.n * g.c * g.h * g.w, k as u64 + 1);
            let wt = values(g.o * g.rows(), k as u64 + 100);
            let small = values(g.n * g.o * g.oh * g.ow, k as u64 + 200);
            let fwd = naive_forward(g, &big, &wt);
            let gw = naive_weight_grad(g, &big, &small);
            let cast = |v: &[f64]| -> Vec<T> { v.iter().map(|&x| T::from(x).unwrap()).collect() };
            let (bt, wtt, st) = (cast(&big), cast(&wt), cast(&small));
            for isa in isas() {
                close(&forward_isa(isa, g, &bt, &wtt, None), &fwd, tol);
                close(&weight_grad_isa(isa, g, &bt, &st), &gw, tol);
            }
        }
    }

    #[test]
    fn every_instruction_set_matches_the_naive_convolution_f32() {
        check_every_isa::<f32>(1e-4);
    }

    #[test]
    fn every_instruction_set_matches_the_naive_convolution_f64() {
        check_every_isa::<f64>(1e-12);
    }
}
