//! `linear(input, weight, bias) = input @ weight.T + bias` as one fused op.
//!
//! For a 2-d floating-point input it computes `bias` broadcast into the output buffer and the
//! product accumulated on top of it in one `gemm` call (the transposed weight is read through
//! its strides, never copied), and records PyTorch's nodes: `AddmmBackward0` (or
//! `MmBackward0` without bias) with edges to `bias`, `input` and a `TBackward0` of the
//! weight. Its backward produces each gradient in its final layout: `grad_input = g @ W`,
//! `grad_weight = g.T @ x` (contiguous `(out, in)`, so no transposing copy is needed when it
//! is accumulated into `weight.grad`) and `grad_bias = g.sum(0)`. The formulas are public
//! differentiable ops, so double backward (`create_graph=True`) works.
//!
//! Inputs with more than 2 dims are folded to 2-d (`reshape`, a view when possible) and the
//! result unfolded, as PyTorch does; other cases (1-d input, integer dtypes, mixed dtypes,
//! unusual bias shapes) go through the composite `matmul(weight.t()) + bias`, which gives
//! PyTorch's errors.

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::{no_grad, BinaryOp, Result, Scalar, Tensor};

/// `input @ weight.T + bias` (PyTorch's `torch.nn.functional.linear`).
pub fn linear(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    let dt = input.dtype();
    let fusable = dt.is_floating_point()
        && input.ndim() >= 2
        && weight.ndim() == 2
        && weight.dtype() == dt
        && input.shape()[input.ndim() - 1] == weight.shape()[1]
        && bias
            .is_none_or(|b| b.dtype() == dt && b.ndim() == 1 && b.shape()[0] == weight.shape()[0]);
    if !fusable {
        let (nd, w) = (input.ndim(), weight.shape());
        if nd >= 2 && w.len() == 2 && input.shape()[nd - 1] != w[1] {
            // PyTorch's message for the one (add)mm of the flattened input and weight.T
            let rows: usize = input.shape()[..nd - 1].iter().product();
            let op = if bias.is_some() { "addmm" } else { "mm" };
            return Err(crate::tensor::linalg::mm_shape_error(
                op,
                &[rows, input.shape()[nd - 1]],
                &[w[1], w[0]],
            ));
        }
        let out = input.matmul(&weight.t()?)?;
        return match bias {
            Some(b) => out.binary(b, BinaryOp::Add),
            None => Ok(out),
        };
    }
    if input.ndim() == 2 {
        return linear_2d(input, weight, bias);
    }
    let nd = input.ndim();
    let k = input.shape()[nd - 1] as i64;
    let x2 = input.reshape(&[-1, k])?;
    let out = linear_2d(&x2, weight, bias)?;
    let mut shape: Vec<i64> = input.shape()[..nd - 1].iter().map(|&s| s as i64).collect();
    shape.push(weight.shape()[0] as i64);
    out.reshape(&shape)
}

/// The fused 2-d case (shapes and dtypes already checked by [`linear`]).
///
/// The graph has PyTorch's shape: `AddmmBackward0(bias, input, TBackward0(weight))` (or
/// `MmBackward0(input, TBackward0(weight))`), so graph walks (torchviz) see the same nodes.
/// The gradient handed to `TBackward0` is the transposed view of a contiguous `g.T @ x`, so
/// the weight still receives a contiguous `(out, in)` gradient with no copy.
fn linear_2d(x: &Tensor, w: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    let one = Scalar::Int(1);
    // Records TBackward0 when the weight needs a gradient (a view: nothing is copied).
    let wt = w.t()?;
    let out = no_grad(|| -> Result<Tensor> {
        match bias {
            Some(b) => b.addmm(x, &wt, one, one),
            None => x.mm(&wt),
        }
    })?;
    let mut inputs = Vec::with_capacity(3);
    if let Some(b) = bias {
        inputs.push(b);
    }
    inputs.push(x);
    inputs.push(&wt);
    if !needs_grad(&inputs) {
        return Ok(out);
    }
    let name = if bias.is_some() {
        "AddmmBackward0"
    } else {
        "MmBackward0"
    };
    let (need_x, need_w) = (x.requires_grad(), wt.requires_grad());
    let need_b = bias.is_some_and(|b| b.requires_grad());
    let has_bias = bias.is_some();
    // Only what the requested gradients read is kept alive.
    let saved_x = need_w.then(|| SavedTensor::new(x, name));
    let saved_w = need_x.then(|| SavedTensor::new(w, name));
    record(
        name,
        &inputs,
        &[&out],
        Box::new(move |grads| {
            let n_in = if has_bias { 3 } else { 2 };
            let Some(g) = &grads[0] else {
                return Ok(vec![None; n_in]);
            };
            let mut res = Vec::with_capacity(n_in);
            if has_bias {
                res.push(if need_b {
                    Some(g.sum(Some(&[0i64][..]), false, None)?)
                } else {
                    None
                });
            }
            res.push(match &saved_w {
                Some(sw) => Some(g.mm(sw.get()?)?),
                None => None,
            });
            // d(x @ W.T)/d(W.T) = x.T @ g, produced as (g.T @ x).T so that TBackward0 turns
            // it back into the contiguous (out, in) buffer.
            res.push(match &saved_x {
                Some(sx) => Some(g.t()?.mm(sx.get()?)?.t()?),
                None => None,
            });
            Ok(res)
        }),
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: Vec<f64>, s: &[usize]) -> Tensor {
        Tensor::from_vec(v, s).unwrap()
    }

    #[test]
    fn forward_and_backward_match_formulas() {
        let x = t(vec![1., 2., 3., 4., 5., 6.], &[2, 3]);
        let w = t(vec![1., 0., -1., 2., 1., 0.5], &[2, 3]);
        let b = t(vec![0.5, -1.], &[2]);
        for tt in [&x, &w, &b] {
            tt.set_requires_grad(true).unwrap();
        }
        let y = linear(&x, &w, Some(&b)).unwrap();
        assert_eq!(y.to_vec::<f64>().unwrap(), vec![-1.5, 4.5, -1.5, 15.]);
        assert_eq!(y.grad_fn().unwrap().name(), "AddmmBackward0");
        let s = y.sum(None, false, None).unwrap();
        crate::autograd::backward(&[s], vec![None], None, false, None).unwrap();
        // d/dx = ones(2,2) @ w ; d/dw = ones(2,2).T @ x ; d/db = 2
        assert_eq!(
            x.grad().unwrap().to_vec::<f64>().unwrap(),
            vec![3., 1., -0.5, 3., 1., -0.5]
        );
        assert_eq!(
            w.grad().unwrap().to_vec::<f64>().unwrap(),
            vec![5., 7., 9., 5., 7., 9.]
        );
        assert!(w.grad().unwrap().is_contiguous());
        assert_eq!(b.grad().unwrap().to_vec::<f64>().unwrap(), vec![2., 2.]);
    }
}
