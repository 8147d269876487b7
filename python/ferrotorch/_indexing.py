"""Module-level forms of the view, indexing and joining methods (``ferrotorch.reshape(x, s)``
is ``x.reshape(s)``...). Routing only: the work is done by the Rust methods."""

from ferrotorch import _C
from ferrotorch._functions import _forward

_NAMES = """
reshape flatten unflatten squeeze unsqueeze permute transpose swapaxes swapdims t adjoint narrow
select unbind split split_with_sizes chunk tensor_split movedim moveaxis diagonal as_strided
broadcast_to index_select gather scatter scatter_add scatter_reduce index_add index_copy
index_fill masked_fill masked_select masked_scatter nonzero argwhere take take_along_dim put
index_put flip fliplr flipud roll tile tril triu diag diag_embed ravel
""".split()  # noqa: SIM905

__all__ = []

for _name in _NAMES:
    if hasattr(_C.Tensor, _name) and not hasattr(_C, _name):
        globals()[_name] = _forward(_name)
        __all__.append(_name)
