//! Normalisation layers: batch, layer, group and RMS norm (fused forward and backward).
