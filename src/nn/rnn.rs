//! Fused pointwise parts of the LSTM and GRU cells (PyTorch's `_thnn_fused_lstm_cell` /
//! `_thnn_fused_gru_cell` without the biases, which the callers fold into the gate inputs).
//!
//! The matrix products (`x @ W_ih^T`, `h @ W_hh^T`) stay ordinary differentiable ops; these
//! kernels replace the dozen small elementwise ops per time step (chunk, sigmoid, tanh,
//! products, sums) with one forward pass and ONE autograd node whose backward is one fused
//! pass too. Both work on contiguous `(B, k*H)` buffers, parallel over the batch rows.
//!
//! Forward saves a small workspace (the activated gates) for backward; the gradients the
//! fused backward kernels return do not require grad. When backward runs with
//! `create_graph=True` (grad mode on inside backward), the gradients are instead built from
//! public differentiable tensor ops on the saved inputs, so double backward still works
//! (slower, but only taken for higher-order derivatives).

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::cpu::strided::PAR_THRESHOLD;
use crate::tensor::join::cat;
use crate::{
    is_grad_enabled, no_grad, with_float_dtype, BinaryOp, DType, Error, FloatElement, Result,
    Scalar, Tensor, UnaryOp,
};
use rayon::prelude::*;

#[inline]
fn sigmoid<T: FloatElement>(x: T) -> T {
    <T as num_traits::One>::one() / (<T as num_traits::One>::one() + (-x).exp())
}

/// Rows per rayon task so that small problems run on one thread.
fn min_rows(row_len: usize) -> usize {
    (PAR_THRESHOLD / row_len.max(1)).max(1)
}

/// `t` in the compute dtype, contiguous, with no autograd history.
fn compute_buf(t: &Tensor, cd: DType) -> Tensor {
    no_grad(|| t.to_dtype(cd).contiguous())
}

/// The `numel()` elements of a contiguous tensor.
fn elems<T: FloatElement>(t: &Tensor) -> Result<&[T]> {
    let off = t.layout().offset;
    Ok(&t.storage_slice::<T>()?[off..][..t.numel()])
}

fn check_float(op: &'static str, ts: &[&Tensor]) -> Result<DType> {
    let dt = ts[0].dtype();
    if !dt.is_floating_point() {
        return Err(Error::UnsupportedDType { op, dtype: dt });
    }
    for t in &ts[1..] {
        if t.dtype() != dt {
            return Err(Error::Runtime(format!(
                "{op}: expected all inputs to have the same dtype, got {} and {}",
                dt.torch_name(),
                t.dtype().torch_name()
            )));
        }
    }
    Ok(dt)
}

fn check_2d(op: &str, name: &str, t: &Tensor) -> Result<()> {
    if t.ndim() != 2 {
        return Err(Error::Runtime(format!(
            "{op}: expected {name} to be 2-D (batch, features), got shape {:?}",
            t.shape()
        )));
    }
    Ok(())
}

// ---------------------------------------------------- differentiable formulas (create_graph)

fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary(b, BinaryOp::Mul)
}

fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary(b, BinaryOp::Add)
}

fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary(b, BinaryOp::Sub)
}

/// `1 - t`.
fn one_minus(t: &Tensor) -> Result<Tensor> {
    t.binary_scalar(Scalar::Float(1.0), BinaryOp::Sub, true)
}

/// `t * (1 - t)`: the derivative of a sigmoid given its value.
fn dsig(t: &Tensor) -> Result<Tensor> {
    mul(t, &one_minus(t)?)
}

/// `1 - t^2`: the derivative of a tanh given its value.
fn dtanh(t: &Tensor) -> Result<Tensor> {
    one_minus(&mul(t, t)?)
}

/// Columns `[k*h, (k+1)*h)` of a `(B, m*h)` tensor.
fn part(t: &Tensor, k: usize, h: usize) -> Result<Tensor> {
    t.narrow(1, (k * h) as i64, h as i64)
}

fn or_zeros(g: Option<&Tensor>, like: &Tensor) -> Result<Tensor> {
    match g {
        Some(g) => Ok(g.clone()),
        None => Tensor::full_on(
            like.device(),
            like.shape(),
            crate::Scalar::Int(0),
            like.dtype(),
        ),
    }
}

/// LSTM cell gradients from differentiable ops (for double backward).
fn lstm_backward_graph(
    gates: &Tensor,
    c: &Tensor,
    gh: Option<&Tensor>,
    gc: Option<&Tensor>,
) -> Result<(Tensor, Tensor)> {
    let h = c.shape()[1];
    let si = part(gates, 0, h)?.unary(UnaryOp::Sigmoid)?;
    let sf = part(gates, 1, h)?.unary(UnaryOp::Sigmoid)?;
    let tg = part(gates, 2, h)?.unary(UnaryOp::Tanh)?;
    let so = part(gates, 3, h)?.unary(UnaryOp::Sigmoid)?;
    let tc = add(&mul(&sf, c)?, &mul(&si, &tg)?)?.unary(UnaryOp::Tanh)?;
    let gh = or_zeros(gh, c)?;
    let gc = or_zeros(gc, c)?;
    let dcy = add(&gc, &mul(&mul(&gh, &so)?, &dtanh(&tc)?)?)?;
    let di = mul(&mul(&dcy, &tg)?, &dsig(&si)?)?;
    let df = mul(&mul(&dcy, c)?, &dsig(&sf)?)?;
    let dg = mul(&mul(&dcy, &si)?, &dtanh(&tg)?)?;
    let d_o = mul(&mul(&gh, &tc)?, &dsig(&so)?)?;
    Ok((cat(&[di, df, dg, d_o], 1)?, mul(&dcy, &sf)?))
}

/// GRU cell gradients from differentiable ops (for double backward).
fn gru_backward_graph(ig: &Tensor, hg: &Tensor, hx: &Tensor, gy: &Tensor) -> Result<[Tensor; 3]> {
    let h = hx.shape()[1];
    let r = add(&part(ig, 0, h)?, &part(hg, 0, h)?)?.unary(UnaryOp::Sigmoid)?;
    let z = add(&part(ig, 1, h)?, &part(hg, 1, h)?)?.unary(UnaryOp::Sigmoid)?;
    let hn = part(hg, 2, h)?;
    let nn = add(&part(ig, 2, h)?, &mul(&r, &hn)?)?.unary(UnaryOp::Tanh)?;
    let dz = mul(&mul(gy, &sub(hx, &nn)?)?, &dsig(&z)?)?;
    let dn = mul(&mul(gy, &one_minus(&z)?)?, &dtanh(&nn)?)?;
    let dr = mul(&mul(&dn, &hn)?, &dsig(&r)?)?;
    let di = cat(&[dr.clone(), dz.clone(), dn.clone()], 1)?;
    let dhg = cat(&[dr, dz, mul(&dn, &r)?], 1)?;
    Ok([di, dhg, mul(gy, &z)?])
}

// ------------------------------------------------------------------------------- LSTM

/// Per row: `ws = [sig(i), sig(f), tanh(g), sig(o)]`, `c' = sig(f)*c + sig(i)*tanh(g)`,
/// `tc = tanh(c')`, `h' = sig(o)*tc`.
fn lstm_forward<T: FloatElement>(
    gates: &[T],
    c: &[T],
    h: usize,
    hy: &mut [T],
    cy: &mut [T],
    tcy: &mut [T],
    ws: &mut [T],
) {
    hy.par_chunks_mut(h)
        .zip(cy.par_chunks_mut(h))
        .zip(tcy.par_chunks_mut(h))
        .zip(ws.par_chunks_mut(4 * h))
        .enumerate()
        .with_min_len(min_rows(4 * h))
        .for_each(|(b, (((hr, cr), tr), wr))| {
            let g = &gates[b * 4 * h..][..4 * h];
            let cx = &c[b * h..][..h];
            for j in 0..h {
                let si = sigmoid(g[j]);
                let sf = sigmoid(g[h + j]);
                let tg = g[2 * h + j].tanh();
                let so = sigmoid(g[3 * h + j]);
                let cn = sf * cx[j] + si * tg;
                let tc = cn.tanh();
                wr[j] = si;
                wr[h + j] = sf;
                wr[2 * h + j] = tg;
                wr[3 * h + j] = so;
                cr[j] = cn;
                tr[j] = tc;
                hr[j] = so * tc;
            }
        });
}

/// Gradients w.r.t. the gate pre-activations and `c` from those of `h'` and `c'`.
#[allow(clippy::too_many_arguments)]
fn lstm_backward<T: FloatElement>(
    ws: &[T],
    tcy: &[T],
    c: &[T],
    gh: Option<&[T]>,
    gc: Option<&[T]>,
    h: usize,
    dgates: &mut [T],
    dc: &mut [T],
) {
    let one = <T as num_traits::One>::one();
    dgates
        .par_chunks_mut(4 * h)
        .zip(dc.par_chunks_mut(h))
        .enumerate()
        .with_min_len(min_rows(4 * h))
        .for_each(|(b, (dg, dcr))| {
            let w = &ws[b * 4 * h..][..4 * h];
            for j in 0..h {
                let k = b * h + j;
                let (si, sf, tg, so) = (w[j], w[h + j], w[2 * h + j], w[3 * h + j]);
                let tc = tcy[k];
                let ghv = gh.map_or(<T as num_traits::Zero>::zero(), |g| g[k]);
                let gcv = gc.map_or(<T as num_traits::Zero>::zero(), |g| g[k]);
                let dcy = gcv + ghv * so * (one - tc * tc);
                dg[j] = dcy * tg * si * (one - si);
                dg[h + j] = dcy * c[k] * sf * (one - sf);
                dg[2 * h + j] = dcy * si * (one - tg * tg);
                dg[3 * h + j] = ghv * tc * so * (one - so);
                dcr[j] = dcy * sf;
            }
        });
}

/// The pointwise part of an LSTM cell. `gates`: `(B, 4H)` pre-activations
/// (`x @ W_ih^T + h @ W_hh^T` plus biases) in PyTorch's `i, f, g, o` order; `c`: `(B, H)`.
/// Returns `(h', c')` with `c' = sig(f)*c + sig(i)*tanh(g)` and `h' = sig(o)*tanh(c')`,
/// recording one `ThnnFusedLstmCellBackward0` node.
pub fn lstm_cell_pointwise(gates: &Tensor, c: &Tensor) -> Result<(Tensor, Tensor)> {
    const OP: &str = "lstm_cell_pointwise";
    let dt = check_float(OP, &[gates, c])?;
    check_2d(OP, "gates", gates)?;
    check_2d(OP, "c", c)?;
    let (b, h) = (c.shape()[0], c.shape()[1]);
    if gates.shape() != [b, 4 * h] {
        return Err(Error::Runtime(format!(
            "{OP}: expected gates of shape [{b}, {}] (batch, 4 * hidden_size) for c of shape {:?}, got {:?}",
            4 * h,
            c.shape(),
            gates.shape()
        )));
    }
    let cd = dt.compute_dtype();
    let n = b * h;
    let (hy, cy, tcy, ws) = with_float_dtype!(
        cd,
        T,
        {
            let mut hy = vec![T::default(); n];
            let mut cy = vec![T::default(); n];
            let mut tcy = vec![T::default(); n];
            let mut ws = vec![T::default(); 4 * n];
            if n > 0 {
                let g = compute_buf(gates, cd);
                let cx = compute_buf(c, cd);
                lstm_forward(
                    elems::<T>(&g)?,
                    elems::<T>(&cx)?,
                    h,
                    &mut hy,
                    &mut cy,
                    &mut tcy,
                    &mut ws,
                );
            }
            (
                Tensor::from_vec_unchecked(hy, &[b, h]),
                Tensor::from_vec_unchecked(cy, &[b, h]),
                Tensor::from_vec_unchecked(tcy, &[b, h]),
                Tensor::from_vec_unchecked(ws, &[b, 4 * h]),
            )
        },
        unreachable!()
    );
    let (hy, cy) = no_grad(|| (hy.to_dtype(dt), cy.to_dtype(dt)));
    if needs_grad(&[gates, c]) {
        const NAME: &str = "ThnnFusedLstmCellBackward0";
        // `ws` and `tcy` are private buffers (never handed out), so they cannot change.
        let saved_c = SavedTensor::new(c, NAME);
        let saved_gates = SavedTensor::new(gates, NAME);
        let need_c = c.requires_grad();
        let need_gates = gates.requires_grad();
        record(
            NAME,
            &[gates, c],
            &[&hy, &cy],
            Box::new(move |grads| {
                if grads[0].is_none() && grads[1].is_none() {
                    return Ok(vec![None, None]);
                }
                if is_grad_enabled() {
                    // create_graph: differentiable formulas (double backward works).
                    let (dg, dc) = lstm_backward_graph(
                        saved_gates.get()?,
                        saved_c.get()?,
                        grads[0].as_ref(),
                        grads[1].as_ref(),
                    )?;
                    return Ok(vec![need_gates.then_some(dg), need_c.then_some(dc)]);
                }
                // Fused kernel: the returned gradients do not require grad.
                let cx = compute_buf(saved_c.get()?, cd);
                let gh = grads[0].as_ref().map(|g| compute_buf(g, cd));
                let gc = grads[1].as_ref().map(|g| compute_buf(g, cd));
                let (dg, dc) = with_float_dtype!(
                    cd,
                    T,
                    {
                        let mut dg = vec![T::default(); 4 * n];
                        let mut dc = vec![T::default(); n];
                        if n > 0 {
                            let ghs = match &gh {
                                Some(t) => Some(elems::<T>(t)?),
                                None => None,
                            };
                            let gcs = match &gc {
                                Some(t) => Some(elems::<T>(t)?),
                                None => None,
                            };
                            lstm_backward(
                                elems::<T>(&ws)?,
                                elems::<T>(&tcy)?,
                                elems::<T>(&cx)?,
                                ghs,
                                gcs,
                                h,
                                &mut dg,
                                &mut dc,
                            );
                        }
                        (
                            Tensor::from_vec_unchecked(dg, &[b, 4 * h]),
                            Tensor::from_vec_unchecked(dc, &[b, h]),
                        )
                    },
                    unreachable!()
                );
                let (dg, dc) = no_grad(|| (dg.to_dtype(dt), dc.to_dtype(dt)));
                Ok(vec![need_gates.then_some(dg), need_c.then_some(dc)])
            }),
        );
    }
    Ok((hy, cy))
}

// -------------------------------------------------------------------------------- GRU

/// Per row: `r = sig(i_r + h_r)`, `z = sig(i_z + h_z)`, `n = tanh(i_n + r*h_n)`,
/// `h' = n + z*(h - n)`; `ws = [r, z, n, h_n]`.
fn gru_forward<T: FloatElement>(
    ig: &[T],
    hg: &[T],
    hx: &[T],
    h: usize,
    hy: &mut [T],
    ws: &mut [T],
) {
    hy.par_chunks_mut(h)
        .zip(ws.par_chunks_mut(4 * h))
        .enumerate()
        .with_min_len(min_rows(3 * h))
        .for_each(|(b, (hr, wr))| {
            let ir = &ig[b * 3 * h..][..3 * h];
            let hh = &hg[b * 3 * h..][..3 * h];
            let hp = &hx[b * h..][..h];
            for j in 0..h {
                let r = sigmoid(ir[j] + hh[j]);
                let z = sigmoid(ir[h + j] + hh[h + j]);
                let hn = hh[2 * h + j];
                let nn = (ir[2 * h + j] + r * hn).tanh();
                wr[j] = r;
                wr[h + j] = z;
                wr[2 * h + j] = nn;
                wr[3 * h + j] = hn;
                hr[j] = nn + z * (hp[j] - nn);
            }
        });
}

/// Gradients w.r.t. the input gates, the hidden gates and `h` from that of `h'`.
fn gru_backward<T: FloatElement>(
    ws: &[T],
    hx: &[T],
    gy: &[T],
    h: usize,
    di: &mut [T],
    dhg: &mut [T],
    dh: &mut [T],
) {
    let one = <T as num_traits::One>::one();
    di.par_chunks_mut(3 * h)
        .zip(dhg.par_chunks_mut(3 * h))
        .zip(dh.par_chunks_mut(h))
        .enumerate()
        .with_min_len(min_rows(3 * h))
        .for_each(|(b, ((dir, dhr), dhp))| {
            let w = &ws[b * 4 * h..][..4 * h];
            for j in 0..h {
                let k = b * h + j;
                let (r, z, nn, hn) = (w[j], w[h + j], w[2 * h + j], w[3 * h + j]);
                let g = gy[k];
                let dz = g * (hx[k] - nn) * z * (one - z);
                let dn = g * (one - z) * (one - nn * nn);
                let dr = dn * hn * r * (one - r);
                dir[j] = dr;
                dir[h + j] = dz;
                dir[2 * h + j] = dn;
                dhr[j] = dr;
                dhr[h + j] = dz;
                dhr[2 * h + j] = dn * r;
                dhp[j] = g * z;
            }
        });
}

/// The pointwise part of a GRU cell. `input_gates`: `(B, 3H)` = `x @ W_ih^T + b_ih`,
/// `hidden_gates`: `(B, 3H)` = `h @ W_hh^T + b_hh` (gates `r, z, n`), `h`: `(B, H)`.
/// Returns `h' = (1 - z)*n + z*h` with `r = sig(i_r + h_r)`, `z = sig(i_z + h_z)`,
/// `n = tanh(i_n + r*h_n)`, recording one `ThnnFusedGruCellBackward0` node.
pub fn gru_cell_pointwise(
    input_gates: &Tensor,
    hidden_gates: &Tensor,
    h: &Tensor,
) -> Result<Tensor> {
    const OP: &str = "gru_cell_pointwise";
    let dt = check_float(OP, &[input_gates, hidden_gates, h])?;
    check_2d(OP, "input_gates", input_gates)?;
    check_2d(OP, "hidden_gates", hidden_gates)?;
    check_2d(OP, "h", h)?;
    let (b, hs) = (h.shape()[0], h.shape()[1]);
    for (name, t) in [("input_gates", input_gates), ("hidden_gates", hidden_gates)] {
        if t.shape() != [b, 3 * hs] {
            return Err(Error::Runtime(format!(
                "{OP}: expected {name} of shape [{b}, {}] (batch, 3 * hidden_size) for h of shape {:?}, got {:?}",
                3 * hs,
                h.shape(),
                t.shape()
            )));
        }
    }
    let cd = dt.compute_dtype();
    let n = b * hs;
    let (hy, ws) = with_float_dtype!(
        cd,
        T,
        {
            let mut hy = vec![T::default(); n];
            let mut ws = vec![T::default(); 4 * n];
            if n > 0 {
                let ig = compute_buf(input_gates, cd);
                let hg = compute_buf(hidden_gates, cd);
                let hx = compute_buf(h, cd);
                gru_forward(
                    elems::<T>(&ig)?,
                    elems::<T>(&hg)?,
                    elems::<T>(&hx)?,
                    hs,
                    &mut hy,
                    &mut ws,
                );
            }
            (
                Tensor::from_vec_unchecked(hy, &[b, hs]),
                Tensor::from_vec_unchecked(ws, &[b, 4 * hs]),
            )
        },
        unreachable!()
    );
    let hy = no_grad(|| hy.to_dtype(dt));
    if needs_grad(&[input_gates, hidden_gates, h]) {
        const NAME: &str = "ThnnFusedGruCellBackward0";
        let saved_h = SavedTensor::new(h, NAME);
        let saved_ig = SavedTensor::new(input_gates, NAME);
        let saved_hg = SavedTensor::new(hidden_gates, NAME);
        let need = [
            input_gates.requires_grad(),
            hidden_gates.requires_grad(),
            h.requires_grad(),
        ];
        record(
            NAME,
            &[input_gates, hidden_gates, h],
            &[&hy],
            Box::new(move |grads| {
                let Some(gy) = &grads[0] else {
                    return Ok(vec![None, None, None]);
                };
                let zip_need = |gs: [Tensor; 3]| -> Vec<Option<Tensor>> {
                    gs.into_iter()
                        .zip(need)
                        .map(|(g, nd)| nd.then_some(g))
                        .collect()
                };
                if is_grad_enabled() {
                    // create_graph: differentiable formulas (double backward works).
                    let gs =
                        gru_backward_graph(saved_ig.get()?, saved_hg.get()?, saved_h.get()?, gy)?;
                    return Ok(zip_need(gs));
                }
                // Fused kernel: the returned gradients do not require grad.
                let hx = compute_buf(saved_h.get()?, cd);
                let gy = compute_buf(gy, cd);
                let (di, dhg, dh) = with_float_dtype!(
                    cd,
                    T,
                    {
                        let mut di = vec![T::default(); 3 * n];
                        let mut dhg = vec![T::default(); 3 * n];
                        let mut dh = vec![T::default(); n];
                        if n > 0 {
                            gru_backward(
                                elems::<T>(&ws)?,
                                elems::<T>(&hx)?,
                                elems::<T>(&gy)?,
                                hs,
                                &mut di,
                                &mut dhg,
                                &mut dh,
                            );
                        }
                        (
                            Tensor::from_vec_unchecked(di, &[b, 3 * hs]),
                            Tensor::from_vec_unchecked(dhg, &[b, 3 * hs]),
                            Tensor::from_vec_unchecked(dh, &[b, hs]),
                        )
                    },
                    unreachable!()
                );
                let out = no_grad(|| [di.to_dtype(dt), dhg.to_dtype(dt), dh.to_dtype(dt)]);
                Ok(zip_need(out))
            }),
        );
    }
    Ok(hy)
}
