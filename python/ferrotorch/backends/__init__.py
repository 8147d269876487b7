"""ferrotorch.backends: switches of the compute backends (PyTorch's torch.backends).

``backends.cuda.matmul.allow_tf32`` (default False) lets cuBLAS use TF32 tensor cores for
float32 matmuls. ``backends.cudnn`` exists so that scripts setting its flags run unchanged;
ferrotorch does not use cuDNN, so they have no effect. ``backends.mps`` reports no device.
"""

from types import SimpleNamespace

from ferrotorch import _C


class _CudaMatmul:
    @property
    def allow_tf32(self):
        return _C._cuda_allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, value):
        _C._cuda_set_allow_tf32(bool(value))

    # PyTorch also has this switch; ferrotorch's half-precision matmuls accumulate in f32.
    allow_fp16_reduced_precision_reduction = False
    allow_bf16_reduced_precision_reduction = False


class _Cuda:
    matmul = _CudaMatmul()

    @staticmethod
    def is_built():
        return bool(_C._cuda_built)


cuda = _Cuda()
cudnn = SimpleNamespace(enabled=True, benchmark=False, deterministic=False, allow_tf32=True,
                        is_available=lambda: False, version=lambda: None)
mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)

__all__ = ["cuda", "cudnn", "mps"]
