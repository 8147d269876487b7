"""ferrotorch.distributed: ferrotorch has no collective-communication backend, so
``is_available()`` is False (as a PyTorch built without distributed support) and
``is_initialized()`` is False, which lets libraries that probe ``torch.distributed`` take
their single-process path."""

__all__ = ["is_available", "is_initialized"]


def is_available():
    """False: ferrotorch is built without distributed support."""
    return False


def is_initialized():
    """False: no default process group can exist."""
    return False
