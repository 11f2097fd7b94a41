"""The twelve posteriordb posteriors of ``shared/posteriordb`` written as ppl models.

One module per posterior; each defines ``POSTERIOR`` (the posteriordb name), ``model(...)``,
``data()`` (the model's keyword arguments, as arrays of the active backend) and
``NUTS_KWARGS`` (sampler options the posterior needs, e.g. ``dense_mass=True`` for diamonds).
Any of them runs with ``python -m ppl compare examples/posteriordb/<module>.py`` -- add
``--reference shared/posteriordb/<posterior>/reference.json`` to judge every backend against
posteriordb's reference means and sds too (the module's ``ALLOW_DIVERGENCES`` is honoured) -- or
as a script (``python examples/posteriordb/garch11.py --backend jax``), which checks the draws
against the reference.

The helpers (data location, reference loading, Stan-name mapping, the reference check) live in
:mod:`_posteriordb` and are re-exported here, plus :func:`load_module`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from ._posteriordb import (
    POSTERIORS,
    compare_to_reference,
    data_dir,
    format_rows,
    load_data,
    load_reference,
    main,
    passes,
    run,
    stan_to_site,
)

__all__ = ["POSTERIORS", "compare_to_reference", "data_dir", "format_rows", "load_data",
           "load_reference", "main", "passes", "run", "stan_to_site", "load_module"]

_HERE = Path(__file__).resolve().parent


def load_module(posterior: str):
    """Import the module of ``posterior`` (a posteriordb name or a module name) by file path."""
    name = POSTERIORS.get(posterior, posterior)
    path = _HERE / f"{name}.py"
    if not path.is_file():
        raise ValueError(f"no posteriordb example {posterior!r}; known: {sorted(POSTERIORS)}")
    if str(_HERE) not in sys.path:
        sys.path.insert(0, str(_HERE))
    spec = importlib.util.spec_from_file_location(f"ppl_posteriordb_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
