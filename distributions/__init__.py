"""Probability distributions, constraints and bijective transforms, written once over
``ppl.ops`` for every backend. Names and parameter conventions follow NumPyro.

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     round(float(dist.Normal(0.0, 1.0).log_prob(0.0)), 6)
-0.918939
"""

from ppl.distributions import constraints, transforms
from ppl.distributions.categorical import Categorical, Multinomial
from ppl.distributions.continuous import (
    Beta,
    Cauchy,
    Chi2,
    Exponential,
    Gamma,
    HalfCauchy,
    HalfNormal,
    InverseGamma,
    Laplace,
    Logistic,
    LogNormal,
    Normal,
    StudentT,
    Uniform,
    Weibull,
)
from ppl.distributions.discrete import (
    Bernoulli,
    Binomial,
    Geometric,
    NegativeBinomial,
    Poisson,
)
from ppl.distributions.distribution import (
    Delta,
    Distribution,
    ExpandedDistribution,
    ImproperUniform,
    Independent,
    MaskedDistribution,
    enable_validation,
    is_validation_enabled,
    validate_sample,
)
from ppl.distributions.mixtures import MixtureSameFamily
from ppl.distributions.multivariate import Dirichlet, LKJCholesky, MultivariateNormal
from ppl.distributions.transformed import TransformedDistribution
from ppl.distributions.transforms import biject_to
from ppl.distributions.truncated import TruncatedNormal

__all__ = [
    "constraints",
    "transforms",
    "biject_to",
    "enable_validation",
    "is_validation_enabled",
    "validate_sample",
    "Distribution",
    "Delta",
    "ExpandedDistribution",
    "ImproperUniform",
    "Independent",
    "MaskedDistribution",
    "TransformedDistribution",
    "Beta",
    "Cauchy",
    "Chi2",
    "Exponential",
    "Gamma",
    "HalfCauchy",
    "HalfNormal",
    "InverseGamma",
    "Laplace",
    "Logistic",
    "LogNormal",
    "Normal",
    "StudentT",
    "TruncatedNormal",
    "Uniform",
    "Weibull",
    "Bernoulli",
    "Binomial",
    "Categorical",
    "Geometric",
    "Multinomial",
    "NegativeBinomial",
    "Poisson",
    "Dirichlet",
    "LKJCholesky",
    "MultivariateNormal",
    "MixtureSameFamily",
]
