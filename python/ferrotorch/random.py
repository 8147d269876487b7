"""``ferrotorch.random``: seeding and RNG-state helpers, as in ``torch.random``.

The generators themselves are native (``ferrotorch.Generator``); this module only re-exports the
functions and adds :func:`fork_rng`.
"""

import contextlib

from ferrotorch._C import (  # noqa: F401
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
           "manual_seed", "seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """Run a block with the default generator's state saved and restored afterwards.

    >>> import ferrotorch as torch
    >>> with torch.random.fork_rng():
    ...     _ = torch.rand(3)
    """
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
