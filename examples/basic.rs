//! A tour of the Rust API: build tensors, broadcast, multiply matrices, solve a system.
//! Run with `cargo run --example basic`.

use ferrotorch::{BinaryOp, DType, Tensor};

fn main() -> ferrotorch::Result<()> {
    // A 2x3 matrix and a length-3 row: `+` broadcasts the row over every row of the matrix.
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    let row = Tensor::from_vec(vec![10.0f32, 20.0, 30.0], &[3])?;
    let sum = a.binary(&row, BinaryOp::Add)?;
    println!(
        "a + row  (shape {:?}): {:?}",
        sum.shape(),
        sum.to_vec::<f32>()?
    );

    // Matrix product: (2x3) @ (3x2). `t()` is a view; matmul reads the transposed strides
    // directly, without copying.
    let prod = a.matmul(&a.t()?)?;
    println!(
        "a @ a^T  (shape {:?}): {:?}",
        prod.shape(),
        prod.to_vec::<f32>()?
    );

    // Batched matmul broadcasts leading dims: (4, 2, 3) @ (3,) -> (4, 2).
    let batch = Tensor::ones(&[4, 2, 3], DType::F32);
    let v = Tensor::from_vec(vec![1.0f32, 0.5, 0.25], &[3])?;
    let bv = batch.matmul(&v)?;
    println!(
        "batch @ v (shape {:?}): {:?}",
        bv.shape(),
        bv.to_vec::<f32>()?
    );

    // einsum: the trace and a bilinear form.
    let m = Tensor::from_vec(vec![2.0f64, 1.0, 1.0, 3.0], &[2, 2])?;
    let tr = Tensor::einsum("ii", std::slice::from_ref(&m))?;
    println!("trace(m) = {:?}", tr.item()?);

    // Solve m x = b and check the residual.
    let b = Tensor::from_vec(vec![3.0f64, 5.0], &[2])?;
    let x = m.linalg_solve(&b, true)?;
    let check = m.matmul(&x)?;
    println!(
        "solve: x = {:?}, m @ x = {:?}",
        x.to_vec::<f64>()?,
        check.to_vec::<f64>()?
    );

    // Mismatched shapes are errors, not panics.
    match a.matmul(&a) {
        Ok(_) => println!("unexpected success"),
        Err(e) => println!("a @ a fails as expected: {e}"),
    }
    Ok(())
}
