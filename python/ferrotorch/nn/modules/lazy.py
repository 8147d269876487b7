"""``LazyModuleMixin``: modules whose parameter shapes are inferred from the first input
(PyTorch's ``torch/nn/modules/lazy.py``)."""

import itertools
import warnings

from ferrotorch.autograd.grad_mode import no_grad
from ferrotorch.nn.parameter import _MaterializedTensor, is_lazy

__all__ = ["LazyModuleMixin"]


def _unwrap_materialized_buffers(module):
    # A materialised UninitializedBuffer cannot become exactly ``Tensor`` in place (see
    # ``UninitializedTensorMixin.materialize``): store the plain tensor (same storage).
    for name, buf in list(module._buffers.items()):
        if isinstance(buf, _MaterializedTensor):
            module._buffers[name] = buf.data


class LazyModuleMixin:
    r"""Mixin for modules that infer their parameter shapes from the first input.

    The ``Lazy*`` modules start with :class:`~ferrotorch.nn.parameter.UninitializedParameter`
    placeholders. On the first call, a forward pre-hook runs ``initialize_parameters(*args)``,
    which materialises them (in place, so references such as an optimizer's stay valid) with
    the shapes read from the input and initialises them like the ordinary module; the module
    then turns into ``cls_to_become`` (e.g. ``LazyLinear`` into ``Linear``). Loading a state
    dict into an uninitialised module materialises it with the checkpoint's shapes.

    Create optimizers after a dry-run forward (or a ``load_state_dict``), as in PyTorch.
    """

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)
        warnings.warn("Lazy modules are a new feature under heavy development "
                      "so changes to the API or functionality can happen at any moment.",
                      stacklevel=2)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                if not (is_lazy(param) or keep_vars):
                    param = param.detach()
                destination[prefix + name] = param
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                if not (is_lazy(buf) or keep_vars):
                    buf = buf.detach()
                destination[prefix + name] = buf

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs):
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None:
                input_param = state_dict[key]
                if is_lazy(param) and not is_lazy(input_param):
                    # Materialise the placeholder with the checkpoint's shape.
                    with no_grad():
                        param.materialize(input_param.shape)
        _unwrap_materialized_buffers(self)

    def initialize_parameters(self, *args, **kwargs):
        r"""Materialise the parameters from the first input (implemented by each lazy
        module)."""
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self):
        r"""Whether any parameter or buffer is still an uninitialised placeholder."""
        for param in itertools.chain(self._parameters.values(), self._buffers.values()):
            if is_lazy(param):
                return True
        return False

    def _infer_parameters(self, module, args, kwargs=None):
        kwargs = kwargs if kwargs else {}
        module.initialize_parameters(*args, **kwargs)
        _unwrap_materialized_buffers(module)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with "
                           "`DataParallel`. Run a dummy forward pass to correctly initialize "
                           "the modules")
