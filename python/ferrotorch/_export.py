"""The one helper behind the modules that add top-level ``ferrotorch.*`` names."""

import ferrotorch as _ft


def exporter(module_all):
    """A decorator ``export(fn, name=None)`` that sets ``ferrotorch.<name> = fn`` unless the
    name exists already (a native op keeps priority) and lists it in ``module_all``."""

    def export(fn, name=None):
        name = name or fn.__name__
        if not hasattr(_ft, name):
            setattr(_ft, name, fn)
            module_all.append(name)
        return fn

    return export
