"""The oracle: a flow-level model of ring AllReduce jobs that predicts, for a
scenario, each job's CCT with max-min fair sharing (baseline) and with
Symphony's per-switch priority for the flows that are not ahead.  Pure: the
adapter from the experiment config lives elsewhere.

    from experiments.oracle import ModelInput, simulate
    result = simulate(model_input, "symphony", threshold=1)
"""

from .flowmodel import EPS_T, simulate
from .inputs import CapacityChange, CrossDemand, Link, ModelError, ModelInput, RingJob, Straggle, check
from .results import VARIANTS, JobResult, ModelResult, StepRecord, Transfer

__all__ = [
    "EPS_T", "VARIANTS", "CapacityChange", "CrossDemand", "JobResult", "Link", "ModelError", "ModelInput",
    "ModelResult", "RingJob", "StepRecord", "Straggle", "Transfer", "check", "simulate",
]
