"""The oracle: a flow-level model of ring AllReduce jobs that predicts, for a
scenario, each job's CCT with max-min fair sharing (baseline) and with
Symphony's per-switch priority for the flows that are not ahead.  Pure: no
sockets, clock or files; building a ModelInput from an experiment config
is the adapter's job, not this package's.

    from experiments.oracle import ModelInput, predict, simulate
    result = simulate(model_input, "symphony", threshold=1)   # one variant, with its timeline
    per_job = predict(model_input, threshold=1).jobs          # both, side by side
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
