//! Neural-network kernels: the heavy layers of `ferrotorch.nn` (convolution, pooling,
//! normalisation, fused losses), each a Rust forward kernel plus a recorded backward.

pub mod conv;
pub mod linear;
pub mod loss;
pub mod norm;
pub mod pool;
pub mod rnn;
