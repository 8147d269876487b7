//! Rust-level tests of the tensor core: layouts, views, promotion, elementwise kernels.

use ferrotorch::{promote_types, BinaryOp, DType, Error, Scalar, Tensor, UnaryOp};

fn t32(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

#[test]
fn broadcasting_add_matches_hand_computation() {
    let a = t32(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = t32(&[10.0, 20.0], &[2, 1]);
    let c = a.binary(&b, BinaryOp::Add).unwrap();
    assert_eq!(c.shape(), &[2, 3]);
    assert_eq!(
        c.to_vec::<f32>().unwrap(),
        vec![11.0, 12.0, 13.0, 24.0, 25.0, 26.0]
    );
}

#[test]
fn broadcast_mismatch_names_both_shapes() {
    let a = t32(&[1.0, 2.0], &[2]);
    let b = t32(&[1.0, 2.0, 3.0], &[3]);
    let e = a.binary(&b, BinaryOp::Mul).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }));
    let msg = e.to_string();
    assert!(
        msg.contains("[2]") && msg.contains("[3]") && msg.contains("mul"),
        "{msg}"
    );
}

#[test]
fn transposed_views_share_storage_and_compute_correctly() {
    let a = t32(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let at = a.transpose(0, 1).unwrap();
    assert!(!at.is_contiguous());
    assert!(at.shares_storage(&a));
    assert_eq!(at.strides(), &[1, 3]);
    assert_eq!(
        at.contiguous().to_vec::<f32>().unwrap(),
        vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
    );
    let s = at.binary(&at, BinaryOp::Add).unwrap();
    assert_eq!(
        s.to_vec::<f32>().unwrap(),
        vec![2.0, 8.0, 4.0, 10.0, 6.0, 12.0]
    );
}

#[test]
fn view_and_reshape_follow_pytorch_rules() {
    let a = t32(&(0..24).map(|x| x as f32).collect::<Vec<_>>(), &[2, 3, 4]);
    let v = a.view(&[6, -1]).unwrap();
    assert_eq!(v.shape(), &[6, 4]);
    assert!(v.shares_storage(&a));
    let t = a.transpose(1, 2).unwrap();
    assert!(t.view(&[24]).is_err());
    let r = t.reshape(&[24]).unwrap();
    assert!(!r.shares_storage(&a));
    assert_eq!(r.to_vec::<f32>().unwrap()[..4], [0.0, 4.0, 8.0, 1.0]);
    assert!(a.view(&[5, -1]).is_err());
}

#[test]
fn type_promotion_table() {
    use DType::*;
    assert_eq!(promote_types(U8, I8), I16);
    assert_eq!(promote_types(I32, F16), F16);
    assert_eq!(promote_types(F16, BF16), F32);
    assert_eq!(promote_types(Bool, I8), I8);
    assert_eq!(promote_types(I64, F32), F32);
    // Weak scalars: int32 tensor + 2.5 -> float32, float16 tensor * 2.0 stays float16.
    let i = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
    let r = i
        .binary_scalar(Scalar::Float(2.5), BinaryOp::Add, false)
        .unwrap();
    assert_eq!(r.dtype(), F32);
    let h = Tensor::ones(&[2], F16);
    assert_eq!(
        h.binary_scalar(Scalar::Float(2.0), BinaryOp::Mul, false)
            .unwrap()
            .dtype(),
        F16
    );
    // 0-d tensors don't upgrade a dimensioned tensor of the same category.
    let d = Tensor::scalar(Scalar::Float(1.0), F64);
    let f = Tensor::ones(&[3], F32);
    assert_eq!(f.binary(&d, BinaryOp::Add).unwrap().dtype(), F32);
    // ...but do raise the category.
    assert_eq!(i.binary(&d, BinaryOp::Add).unwrap().dtype(), F64);
}

#[test]
fn integer_division_semantics() {
    let a = Tensor::from_vec(vec![7i64, -7, 7, -7], &[4]).unwrap();
    let b = Tensor::from_vec(vec![2i64, 2, -2, -2], &[4]).unwrap();
    let fd = a.binary(&b, BinaryOp::FloorDiv).unwrap();
    assert_eq!(fd.to_vec::<i64>().unwrap(), vec![3, -4, -4, 3]);
    let rem = a.binary(&b, BinaryOp::Remainder).unwrap();
    assert_eq!(rem.to_vec::<i64>().unwrap(), vec![1, 1, -1, -1]);
    let div = a.binary(&b, BinaryOp::Div).unwrap();
    assert_eq!(div.dtype(), DType::F32);
    assert_eq!(div.to_vec::<f32>().unwrap(), vec![3.5, -3.5, -3.5, 3.5]);
}

#[test]
fn unary_ops_in_f16_compute_in_f32() {
    let x = Tensor::from_vec(vec![half::f16::from_f32(0.5)], &[1]).unwrap();
    let y = x.unary(UnaryOp::Exp).unwrap();
    assert_eq!(y.dtype(), DType::F16);
    let v = y.to_dtype(DType::F32).to_vec::<f32>().unwrap()[0];
    assert!((v - 0.5f32.exp()).abs() < 1e-3);
}

#[test]
fn large_strided_map_is_parallel_and_correct() {
    let n = 300_000usize;
    let a = Tensor::from_vec((0..n).map(|x| x as f64).collect(), &[600, 500]).unwrap();
    let t = a.transpose(0, 1).unwrap();
    let s = t
        .binary_scalar(Scalar::Int(1), BinaryOp::Add, false)
        .unwrap();
    let v = s.to_vec::<f64>().unwrap();
    // s[i, j] = a[j, i] + 1 = j * 500 + i + 1
    for (i, j) in [(0usize, 0usize), (3, 7), (499, 599), (250, 1)] {
        assert_eq!(v[i * 600 + j], (j * 500 + i + 1) as f64);
    }
}

#[test]
fn inplace_downcast_is_an_error() {
    let a = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    let e = a
        .binary_scalar_(Scalar::Float(1.5), BinaryOp::Add)
        .unwrap_err();
    assert!(e.to_string().contains("can't be cast"), "{e}");
    a.binary_scalar_(Scalar::Int(2), BinaryOp::Mul).unwrap();
    assert_eq!(a.to_vec::<i64>().unwrap(), vec![2, 4]);
    assert_eq!(a.storage().version(), 1);
}

#[test]
fn select_narrow_slice_views() {
    let a = Tensor::from_vec((0..12i32).collect(), &[3, 4]).unwrap();
    assert_eq!(
        a.select(0, -1).unwrap().to_vec::<i32>().unwrap(),
        vec![8, 9, 10, 11]
    );
    assert_eq!(
        a.narrow(1, 1, 2).unwrap().to_vec::<i32>().unwrap(),
        vec![1, 2, 5, 6, 9, 10]
    );
    assert_eq!(
        a.slice(1, None, None, 3).unwrap().to_vec::<i32>().unwrap(),
        vec![0, 3, 4, 7, 8, 11]
    );
    assert!(matches!(a.select(0, 3), Err(Error::Index(_))));
    assert!(matches!(a.select(2, 0), Err(Error::DimOutOfRange { .. })));
}
