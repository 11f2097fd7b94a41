"""ppl.inference: MCMC samplers (NUTS, HMC), adaptation, the MCMC driver, predictive draws and
the model utilities they rest on (log-density, parameter layout, initialisation), discrete
latent sites by enumeration (config_enumerate, infer_discrete) and reparameterizers
(ppl.inference.reparam).

>>> from ppl.inference import Predictive, log_density, log_likelihood, init_to_uniform
"""

from ppl.inference.discrete import config_enumerate, infer_discrete
from ppl.inference.hmc import HMCInfo, HMCState
from ppl.inference.initialization import (
    init_to_feasible,
    init_to_mean,
    init_to_median,
    init_to_sample,
    init_to_uniform,
    init_to_value,
)
from ppl.inference.kernels import HMC, NUTS
from ppl.inference.log_likelihood import log_likelihood
from ppl.inference.mcmc import MCMC, MCMCState
from ppl.inference.model_setup import ModelInfo, initialize_model
from ppl.inference.nuts import NUTSInfo
from ppl.inference.predictive import Predictive
from ppl.inference.util import ParamLayout, log_density

__all__ = [
    "MCMC",
    "NUTS",
    "HMC",
    "MCMCState",
    "HMCState",
    "HMCInfo",
    "NUTSInfo",
    "Predictive",
    "log_density",
    "log_likelihood",
    "initialize_model",
    "ModelInfo",
    "ParamLayout",
    "init_to_uniform",
    "init_to_median",
    "init_to_mean",
    "init_to_sample",
    "init_to_feasible",
    "init_to_value",
    "config_enumerate",
    "infer_discrete",
]
