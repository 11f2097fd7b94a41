"""``init_params`` given to ``MCMC.run``: a model's ``{site: unconstrained value}`` or an array,
checked against the model's parameter layout and flattened to the ``(num_chains, D)`` starting
points of the chains."""

from __future__ import annotations

from collections.abc import Mapping

from ppl import ops

__all__ = ["checked_init_values", "flat_init"]


def checked_init_values(init_params, num_chains, layout) -> dict:
    """``init_params`` as a dict of backend arrays, or a ValueError naming the sites that are
    missing, unknown or of the wrong shape (unconstrained: a site's shape, or ``num_chains``
    and then its shape)."""
    expected = dict(zip(layout.names, layout.shapes))
    missing = [n for n in expected if n not in init_params]
    unknown = [n for n in init_params if n not in expected]
    if missing or unknown:
        raise ValueError(
            f"init_params: {'missing ' + str(missing) if missing else ''}"
            f"{'; ' if missing and unknown else ''}"
            f"{'not latent sites of the model: ' + str(unknown) if unknown else ''}. Give "
            f"every latent site, unconstrained: "
            f"{ {n: tuple(s) for n, s in expected.items()} } (each optionally with a leading "
            f"num_chains = {num_chains} axis).")
    values = {n: ops.asarray(init_params[n]) for n in expected}
    for n, v in values.items():
        shape, site = tuple(ops.shape(v)), tuple(expected[n])
        if shape not in (site, (num_chains,) + site):
            raise ValueError(
                f"init_params[{n!r}] has shape {shape}; the site's unconstrained shape is "
                f"{site} (or {(num_chains,) + site} with one value per chain).")
    batched = {len(ops.shape(v)) > len(expected[n]) for n, v in values.items()}
    if len(batched) > 1:
        values = {n: v if len(ops.shape(v)) > len(expected[n]) else
                  ops.broadcast_to(v, (num_chains,) + tuple(expected[n]))
                  for n, v in values.items()}
    return values


def flat_init(init_params, num_chains, layout):
    if isinstance(init_params, Mapping):
        if layout is None:
            raise TypeError("init_params must be an array when the kernel has a potential_fn.")
        z = layout.ravel(checked_init_values(init_params, num_chains, layout))
    else:
        z = ops.asarray(init_params)
    if ops.ndim(z) == 1:
        z = ops.broadcast_to(ops.expand_dims(z, 0), (num_chains,) + tuple(ops.shape(z)))
    if ops.ndim(z) != 2 or ops.shape(z)[0] != num_chains:
        raise ValueError(
            f"init_params must have shape (D,) or (num_chains, D) = ({num_chains}, D) in "
            f"unconstrained space, got shape {tuple(ops.shape(z))}.")
    if layout is not None and ops.shape(z)[1] != layout.size:
        raise ValueError(
            f"init_params give {ops.shape(z)[1]} unconstrained values, the model has "
            f"{layout.size} ({layout}).")
    return ops.asarray(z, ops.backend().dtype)
