"""Internals of ``ferrotorch.utils.data``: collation and the worker loop."""

from ferrotorch.utils.data._utils import collate, worker  # noqa: F401
