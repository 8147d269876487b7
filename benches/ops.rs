//! Criterion benchmarks of core CPU ops: f32 matmul, elementwise add, transpose + contiguous.
//! Run with `cargo bench --bench ops` (add `-- matmul` to filter).
//! (A reduction benchmark belongs here once `sum` lands in the crate.)

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ferrotorch::{BinaryOp, Tensor};

/// Deterministic pseudo-random f32s in [-1, 1) (no RNG dependency needed).
fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn tensor(shape: &[usize], seed: u64) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_vec(data(n, seed), shape).expect("shape matches data")
}

fn bench_matmul(c: &mut Criterion) {
    let mut g = c.benchmark_group("matmul_f32");
    g.sample_size(10);
    for n in [256usize, 1024] {
        let a = tensor(&[n, n], 1);
        let b = tensor(&[n, n], 2);
        g.throughput(Throughput::Elements((2 * n * n * n) as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |bench, _| {
            bench.iter(|| black_box(a.matmul(&b).expect("matmul")))
        });
    }
    g.finish();
}

fn bench_add(c: &mut Criterion) {
    let n = 1 << 20;
    let a = tensor(&[n], 3);
    let b = tensor(&[n], 4);
    let mut g = c.benchmark_group("add_f32");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("1M", |bench| {
        bench.iter(|| black_box(a.binary(&b, BinaryOp::Add).expect("add")))
    });
    g.finish();
}

fn bench_transpose_contiguous(c: &mut Criterion) {
    let n = 1024;
    let a = tensor(&[n, n], 5);
    let mut g = c.benchmark_group("transpose_contiguous_f32");
    g.throughput(Throughput::Bytes((n * n * 4) as u64));
    g.bench_function("1024x1024", |bench| {
        bench.iter(|| black_box(a.transpose(0, 1).expect("transpose").contiguous()))
    });
    g.finish();
}

criterion_group!(benches, bench_matmul, bench_add, bench_transpose_contiguous);
criterion_main!(benches);
