"""Block-diagonal and given inverse mass matrices (NumPyro's ``dense_mass`` as site groups and
``inverse_mass_matrix``): the plan's blocks against hand-written matrices, the adapted matrix
against a Gaussian target's known covariance, and a given matrix against what it must do to
the trajectories of a correlated Gaussian."""

import numpy as np
import pytest

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.inference import HMC, MCMC, NUTS
from ppl.inference.mass_matrix import check_mass_arguments, plan_mass_matrix
from ppl.inference.util import ParamLayout

LAYOUT = ParamLayout(["a", "b", "c"], [(2,), (), (3,)])     # a: 0-1, b: 2, c: 3-5


def _plan(dense_mass, inverse_mass_matrix=None):
    dm, inv = check_mass_arguments(dense_mass, inverse_mass_matrix, has_model=True)
    return plan_mass_matrix(dm, inv, LAYOUT, 6)


def test_groups_make_a_block_pattern():
    plan = _plan([("c", "a")])
    pattern = np.zeros((6, 6), int)
    for idx in ([3, 4, 5, 0, 1], [2]):
        pattern[np.ix_(idx, idx)] = 1
    assert plan.dense
    np.testing.assert_array_equal(plan.structure, pattern)
    np.testing.assert_array_equal(plan.initial, np.eye(6))


def test_dict_blocks_are_placed_in_the_key_order():
    m = np.array([[4.0, 1.0, 0.0, 0.0, 0.5], [1.0, 3.0, 0.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0, 0.0],
                  [0.0, 0.0, 0.0, 1.0, 0.0], [0.5, 0.0, 0.0, 0.0, 5.0]])    # over (c0-c2, a0-a1)
    plan = _plan(False, {("c", "a"): m, ("b",): [7.0]})
    want = np.eye(6)
    order = [3, 4, 5, 0, 1]
    want[np.ix_(order, order)] = m
    want[2, 2] = 7.0
    np.testing.assert_array_equal(plan.initial, want)
    assert plan.dense and plan.structure[2].tolist() == [0, 0, 1, 0, 0, 0]
    # diagonal blocks only: a diagonal matrix, identity where no block is given
    diag = _plan(False, {("b",): [7.0], ("a",): [2.0, 3.0]})
    assert not diag.dense and diag.structure is None
    np.testing.assert_array_equal(diag.initial, [2.0, 3.0, 7.0, 1.0, 1.0, 1.0])


def test_one_group_of_every_site_is_a_full_matrix():
    plan = _plan([("a", "b", "c")])
    assert plan.dense and plan.structure is None
    full = _plan(True, np.arange(1.0, 7.0))
    assert full.dense and full.structure is None
    np.testing.assert_array_equal(full.initial, np.diag(np.arange(1.0, 7.0)))


def test_an_array_starts_the_blocks_of_the_groups():
    # the array is over the whole vector; the groups keep its blocks and drop the rest
    rng = np.random.default_rng(0)
    root = rng.normal(size=(6, 6))
    m = root @ root.T + 6.0 * np.eye(6)
    plan = _plan([("c", "a")], m)
    keep = np.zeros((6, 6), bool)
    keep[np.ix_([0, 1, 3, 4, 5], [0, 1, 3, 4, 5])] = True
    keep[2, 2] = True
    np.testing.assert_array_equal(plan.initial, np.where(keep, m, 0.0))
    np.testing.assert_array_equal(plan.structure, keep)
    assert np.all(np.linalg.eigvalsh(plan.initial) > 0)
    diagonal = _plan([("b", "c")], np.arange(1.0, 7.0))
    np.testing.assert_array_equal(diagonal.initial, np.diag(np.arange(1.0, 7.0)))
    every = _plan([("a", "b", "c")], m)
    assert every.structure is None
    np.testing.assert_array_equal(every.initial, m)


@pytest.mark.parametrize("dense_mass, inv, error, match", [
    ([("a", "d")], None, ValueError, r"\['d'\] is not a latent site.*\['a', 'b', 'c'\]"),
    ([("a", "b"), ("b",)], None, ValueError, "'b' is in two blocks"),
    ([("a",)], {("a",): np.ones(3)}, ValueError, r"has shape \(3,\).*2 unconstrained"),
    (False, {("a",): [[1.0, 2.0], [2.0, 1.0]]}, ValueError, "positive definite"),
    (False, np.ones(5), ValueError, r"shape \(5,\); this model has 6"),
    ("a", None, TypeError, "list of tuples of site names"),
    ([("a", 3)], None, TypeError, "tuple of site names"),
    (False, {("a",): [0.0, 1.0]}, ValueError, "positive"),
])
def test_bad_mass_arguments_are_named(dense_mass, inv, error, match):
    with pytest.raises(error, match=match):
        _plan(dense_mass, inv)


def test_mass_arguments_that_need_a_model_or_a_diagonal():
    with pytest.raises(ValueError, match="needs a model"):
        NUTS(potential_fn=lambda z: 0.5 * ops.sum(z * z), dense_mass=[("x",)])
    with pytest.raises(ValueError, match="needs a model"):
        HMC(potential_fn=lambda z: 0.5 * ops.sum(z * z), inverse_mass_matrix={("x",): [1.0]})
    with pytest.raises(ValueError, match="diagonal mass"):
        NUTS(lambda: None, dense_mass=[("x",)], mass_matrix_estimator="gradients")


SCALES = np.array([1.0, 2.0, 3.0])
COV = np.array([[1.0, 0.9, 0.5], [0.9, 1.0, 0.45], [0.5, 0.45, 1.0]]) * np.outer(SCALES, SCALES)


def gaussian():
    """``ab`` correlated (covariance ``COV``), ``c`` independent with sd 5."""
    ppl.sample("ab", dist.MultivariateNormal(np.zeros(3), COV))
    ppl.sample("c", dist.Normal(0.0, 5.0).expand([2]).to_event(1))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.dtypes("float64")
def test_a_group_adapts_its_block_only(backend):
    """``dense_mass=[("ab",)]``: the adapted inverse mass matrix holds ``ab``'s covariance in
    its block and ``c``'s variance on the diagonal (Stan's estimate of the last window, ~150
    autocorrelated draws: over 8 seeds on JAX and torch the largest error per run was 15-38 %
    of ``COV``'s scales, so within 55 % here; a diagonal block is 90 % off, an identity one
    89 %), and exact zeros between blocks; the draws have the target's moments."""
    mcmc = MCMC(NUTS(gaussian, dense_mass=[("ab",)]), num_warmup=400, num_samples=300,
                num_chains=2, progress_bar=False)
    mcmc.run(0)
    inv = ops.to_numpy(mcmc.last_state.adapt_state.inverse_mass_matrix)
    assert inv.shape == (2, 5, 5)
    for m in inv:
        np.testing.assert_array_equal(m[:3, 3:], 0.0)
        np.testing.assert_array_equal(m[3, 4], 0.0)
        np.testing.assert_array_less(np.abs(m[:3, :3] - COV), 0.55 * np.outer(SCALES, SCALES))
        np.testing.assert_allclose(np.diag(m)[3:], 25.0, rtol=0.55)
    ab = ops.to_numpy(mcmc.get_samples()["ab"])
    np.testing.assert_allclose(np.cov(ab.T), COV, atol=0.25 * SCALES.max() ** 2)
    np.testing.assert_array_less(np.abs(ab.mean(0)), 4 * SCALES / np.sqrt(150))


def correlated():
    """A 2-D Gaussian with correlation 0.99 and scales 1 and 10: hard without its covariance."""
    cov = np.array([[1.0, 9.9], [9.9, 100.0]])
    ppl.sample("x", dist.MultivariateNormal(np.zeros(2), cov))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.dtypes("float64")
def test_a_given_matrix_is_the_metric(backend):
    """With ``adapt_mass_matrix=False`` the given matrix is kept and used: the target's own
    covariance makes the target isotropic, so NUTS needs few leapfrog steps per draw (a
    standard normal in 2-D: ~3-7), where the identity needs many (~20-60 at this
    conditioning; the tree's depth is capped at 6); the draws have the target's covariance."""
    cov = np.array([[1.0, 9.9], [9.9, 100.0]])
    steps = {}
    for name, inv in (("given", {("x",): cov}), ("identity", None)):
        mcmc = MCMC(NUTS(correlated, adapt_mass_matrix=False, inverse_mass_matrix=inv,
                         max_tree_depth=6), num_warmup=60, num_samples=150, num_chains=2,
                    progress_bar=False)
        mcmc.run(1, extra_fields=("num_steps",))
        steps[name] = float(np.mean(ops.to_numpy(mcmc.get_extra_fields()["num_steps"])))
        if name == "given":
            kept = ops.to_numpy(mcmc.last_state.adapt_state.inverse_mass_matrix)
            np.testing.assert_allclose(kept, np.broadcast_to(cov, (2, 2, 2)), rtol=1e-12)
            x = ops.to_numpy(mcmc.get_samples()["x"])
            np.testing.assert_allclose(np.cov(x.T), cov, rtol=0.25)
    assert steps["given"] < 8 < 15 < steps["identity"], steps


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.dtypes("float64")
def test_a_potential_function_takes_a_dense_start(backend):
    """``potential_fn`` with a ``(D, D)`` starting matrix: a dense metric, adapted from it."""
    prec = np.linalg.inv(np.array([[1.0, 0.8], [0.8, 1.0]]))
    p = ops.asarray(prec)

    def potential(z):
        return 0.5 * ops.sum(z * ops.squeeze(ops.matmul(p, ops.expand_dims(z, -1)), -1))

    mcmc = MCMC(HMC(potential_fn=potential, num_steps=4, inverse_mass_matrix=np.eye(2) * 2.0),
                num_warmup=300, num_samples=400, num_chains=2, progress_bar=False)
    mcmc.run(0, init_params=np.zeros((2, 2)))
    inv = ops.to_numpy(mcmc.last_state.adapt_state.inverse_mass_matrix)
    assert inv.shape == (2, 2, 2)
    np.testing.assert_allclose(inv[:, 0, 1], 0.8, atol=0.3)
    z = ops.to_numpy(mcmc.get_samples())
    np.testing.assert_allclose(np.corrcoef(z.T)[0, 1], 0.8, atol=0.1)
