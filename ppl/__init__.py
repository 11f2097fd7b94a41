"""ppl: write a Bayesian model once, run NUTS on numpy, JAX, torch or TensorFlow, and compare.

>>> import ppl
>>> ppl.get_backend().name in ppl.available_backends()
True
"""

from __future__ import annotations

from ppl import diagnostics, handlers, ops, random
from ppl._state import available_backends, enable_x64, get_backend, set_backend, use_backend
from ppl.backends import set_host_device_count
from ppl.comparison import ComparisonReport, compare
from ppl.primitives import (
    deterministic,
    factor,
    markov,
    param,
    plate,
    plate_stack,
    prng_key,
    sample,
    subsample,
)

__version__ = "0.1.0"

__all__ = ["available_backends", "get_backend", "set_backend", "use_backend", "enable_x64",
           "set_host_device_count", "ops", "random",
           "diagnostics", "__version__", "sample", "param", "deterministic", "factor", "plate",
           "plate_stack", "markov", "prng_key", "subsample",
           "handlers", "compare", "ComparisonReport"]
