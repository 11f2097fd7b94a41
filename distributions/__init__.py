"""Probability distributions, constraints and bijective transforms, written once over
``ppl.ops`` for every backend. Names and parameter conventions follow NumPyro.

>>> import ppl
>>> import ppl.distributions as dist
>>> with ppl.use_backend("numpy", dtype="float64"):
...     round(float(dist.Normal(0.0, 1.0).log_prob(0.0)), 6)
-0.918939

Where things live:

``distribution``  the :class:`Distribution` contract and the wrappers its methods return
                  (``Independent``, ``ExpandedDistribution``, ``MaskedDistribution``)
``validation``    argument checks shared by every family, and ``validate_args``
``parametrization``  storing parameters, alternative parametrizations (``probs``/``logits``)
``util``          array helpers (dtypes, masking out-of-support entries)
``locscale``      Normal, Cauchy, Laplace, Logistic, StudentT
``positive``      HalfNormal, HalfCauchy, Exponential, Gamma, Chi2, InverseGamma, LogNormal,
                  Weibull
``bounded``       Beta, Kumaraswamy, Uniform;  ``truncated``: TruncatedNormal;
                  ``truncation``: TruncatedDistribution, TruncatedCauchy
``discrete``      Bernoulli, Binomial, Poisson, NegativeBinomial, Geometric;
                  ``uniform_discrete``: DiscreteUniform
``categorical``   Categorical, Multinomial;  ``ordinal``: OrderedLogistic
``counts``        GammaPoisson, NegativeBinomial2, BetaBinomial, DirichletMultinomial
``zero_inflated``  ZeroInflatedDistribution, ZeroInflatedPoisson,
                  ZeroInflatedNegativeBinomial2
``multivariate``  Dirichlet, MultivariateNormal, LKJCholesky;  ``low_rank``:
                  LowRankMultivariateNormal;  ``multivariate_t``: MultivariateStudentT;
                  ``lkj``: LKJ;  ``zero_sum``: ZeroSumNormal;  ``wishart``: Wishart,
                  WishartCholesky
``folded``        FoldedDistribution, HalfStudentT;  ``circular``: VonMises
``extreme``       Gumbel, Pareto
``time_series``   GaussianRandomWalk
``mixtures``      MixtureSameFamily, MixtureGeneral;  ``transformed``: TransformedDistribution
``special``       Delta, ImproperUniform, Unit
``constraints``   supports and parameter sets (the base class in ``constraint_base``, matrices
                  in ``matrix_constraints``);  ``transforms``: bijections and ``biject_to``
                  (by kind in ``transform``, ``elementwise_transforms``, ``vector_transforms``,
                  ``matrix_transforms``)
"""

from ppl.distributions import constraints, transforms
from ppl.distributions.bounded import Beta, Kumaraswamy, Uniform
from ppl.distributions.categorical import Categorical, Multinomial
from ppl.distributions.circular import VonMises
from ppl.distributions.counts import (
    BetaBinomial,
    DirichletMultinomial,
    GammaPoisson,
    NegativeBinomial2,
)
from ppl.distributions.discrete import Bernoulli, Binomial, Geometric, NegativeBinomial, Poisson
from ppl.distributions.distribution import (
    Distribution,
    ExpandedDistribution,
    Independent,
    MaskedDistribution,
)
from ppl.distributions.extreme import Gumbel, Pareto
from ppl.distributions.folded import FoldedDistribution, HalfStudentT
from ppl.distributions.lkj import LKJ
from ppl.distributions.locscale import Cauchy, Laplace, Logistic, Normal, StudentT
from ppl.distributions.low_rank import LowRankMultivariateNormal
from ppl.distributions.mixtures import MixtureGeneral, MixtureSameFamily
from ppl.distributions.multivariate import Dirichlet, LKJCholesky, MultivariateNormal
from ppl.distributions.multivariate_t import MultivariateStudentT
from ppl.distributions.ordinal import OrderedLogistic
from ppl.distributions.positive import (
    Chi2,
    Exponential,
    Gamma,
    HalfCauchy,
    HalfNormal,
    InverseGamma,
    LogNormal,
    Weibull,
)
from ppl.distributions.special import Delta, ImproperUniform, Unit
from ppl.distributions.time_series import GaussianRandomWalk
from ppl.distributions.transformed import TransformedDistribution
from ppl.distributions.transforms import biject_to
from ppl.distributions.truncated import TruncatedNormal
from ppl.distributions.truncation import TruncatedCauchy, TruncatedDistribution
from ppl.distributions.uniform_discrete import DiscreteUniform
from ppl.distributions.validation import enable_validation, is_validation_enabled, validate_sample
from ppl.distributions.wishart import Wishart, WishartCholesky
from ppl.distributions.zero_inflated import (
    ZeroInflatedDistribution,
    ZeroInflatedNegativeBinomial2,
    ZeroInflatedPoisson,
)
from ppl.distributions.zero_sum import ZeroSumNormal

__all__ = [
    "constraints",
    "transforms",
    "biject_to",
    "enable_validation",
    "is_validation_enabled",
    "validate_sample",
    "Bernoulli",
    "Beta",
    "BetaBinomial",
    "Binomial",
    "Categorical",
    "Cauchy",
    "Chi2",
    "Delta",
    "Dirichlet",
    "DirichletMultinomial",
    "DiscreteUniform",
    "Distribution",
    "ExpandedDistribution",
    "Exponential",
    "FoldedDistribution",
    "Gamma",
    "GammaPoisson",
    "GaussianRandomWalk",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "HalfStudentT",
    "ImproperUniform",
    "Independent",
    "InverseGamma",
    "Kumaraswamy",
    "LKJ",
    "LKJCholesky",
    "Laplace",
    "LogNormal",
    "Logistic",
    "LowRankMultivariateNormal",
    "MaskedDistribution",
    "MixtureSameFamily",
    "MixtureGeneral",
    "Wishart",
    "WishartCholesky",
    "Multinomial",
    "MultivariateNormal",
    "MultivariateStudentT",
    "NegativeBinomial",
    "NegativeBinomial2",
    "Normal",
    "OrderedLogistic",
    "Pareto",
    "Poisson",
    "StudentT",
    "TransformedDistribution",
    "TruncatedCauchy",
    "TruncatedDistribution",
    "TruncatedNormal",
    "Uniform",
    "Unit",
    "VonMises",
    "Weibull",
    "ZeroInflatedDistribution",
    "ZeroInflatedNegativeBinomial2",
    "ZeroInflatedPoisson",
    "ZeroSumNormal",
]
