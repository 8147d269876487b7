//! Convolutions (1-d/2-d, transposed), computed as im2col + gemm.
