//! Pooling: max/average/adaptive pooling and resampling.
