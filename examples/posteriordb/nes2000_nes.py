"""posteriordb nes2000-nes: party identification in the 2000 National Election Study.

Stan (flat priors)::

    age30_44 = age_discrete == 2; age45_64 = age_discrete == 3; age65up = age_discrete == 4;
    vector[9] beta; real<lower=0> sigma;
    partyid7 ~ normal(beta[1] + beta[2] * real_ideo + beta[3] * race_adj + beta[4] * age30_44
                      + beta[5] * age45_64 + beta[6] * age65up + beta[7] * educ1
                      + beta[8] * gender + beta[9] * income, sigma);

Gelman & Hill (2007), ch. 4.
"""

import ppl
import ppl.distributions as dist
from ppl import ops
from ppl.distributions import constraints

try:  # imported as examples.posteriordb.<module>
    from ._posteriordb import load_data, main
except ImportError:  # loaded by file path (a script, or `python -m ppl compare FILE.py`)
    from _posteriordb import load_data, main

__all__ = ["POSTERIOR", "NUTS_KWARGS", "model", "data"]

POSTERIOR = "nes2000-nes"
NUTS_KWARGS = {}

_PREDICTORS = ("real_ideo", "race_adj", "age_discrete", "educ1", "gender", "income")


def model(N, partyid7, real_ideo, race_adj, age_discrete, educ1, gender, income):
    ones = ops.ones_like(real_ideo)
    design = ops.stack([
        ones, real_ideo, race_adj,
        ops.where(age_discrete == 2, ones, 0.0 * ones),
        ops.where(age_discrete == 3, ones, 0.0 * ones),
        ops.where(age_discrete == 4, ones, 0.0 * ones),
        educ1, gender, income,
    ], axis=-1)
    beta = ppl.sample("beta", dist.ImproperUniform(constraints.real, (), (9,)))
    sigma = ppl.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    with ppl.plate("N", N):
        ppl.sample("partyid7", dist.Normal((design @ beta[..., None])[..., 0], sigma),
                   obs=partyid7)


def data():
    d = load_data(POSTERIOR)
    out = {"N": d["N"], "partyid7": ops.asarray([float(v) for v in d["partyid7"]])}
    out.update({k: ops.asarray([float(v) for v in d[k]]) for k in _PREDICTORS})
    return out


if __name__ == "__main__":
    raise SystemExit(main(__import__(__name__)))
