"""The oracle: a flow-level model of ring AllReduce jobs that predicts, for a
scenario, each job's CCT with max-min fair sharing (baseline) and with
Symphony's per-switch priority for the flows that are not ahead.  Pure: no
sockets, clock or files.  The model (inputs, sharing, flowmodel, results,
prediction) knows nothing of the experiment config; ``scenario`` is the
adapter (ExperimentSpec + a repeat's jitter schedule -> ModelInput, and the
mean over a config's repeats), ``export`` the oracle file the runner writes.

    from experiments.oracle import ModelInput, predict, simulate
    result = simulate(model_input, "symphony", threshold=1)   # one variant, with its timeline
    per_job = predict(model_input, threshold=1).jobs          # both, side by side

    from experiments.oracle.scenario import predict_repeats, scenario
    sc = scenario(spec, events)                     # one repeat's schedule, as applied
    per_job = predict_repeats(spec, {1: events}).jobs
"""

from .flowmodel import EPS_T, simulate
from .inputs import CapacityChange, CrossDemand, Link, ModelError, ModelInput, RingJob, Straggle, check
from .prediction import JobPrediction, Prediction, predict
from .results import VARIANTS, JobResult, ModelResult, StepRecord, Transfer

__all__ = [
    "EPS_T", "VARIANTS", "CapacityChange", "CrossDemand", "JobPrediction", "JobResult", "Link", "ModelError",
    "ModelInput", "ModelResult", "Prediction", "RingJob", "StepRecord", "Straggle", "Transfer", "check", "predict",
    "simulate",
]
