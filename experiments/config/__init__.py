"""Experiment configs: a TOML file resolved once into an ExperimentSpec
(layout and keys: experiments/README.md, "Config")."""

from experiments.config.points import load_points
from experiments.config.resolve import load, load_raw, resolve
from experiments.config.schema import ConfigError
from experiments.config.spec import ExperimentSpec, JobConfig, RunnerParams, job_specs
from experiments.config.sweep import sweep_points

__all__ = ["ConfigError", "ExperimentSpec", "JobConfig", "RunnerParams", "job_specs", "load", "load_points", "load_raw",
           "resolve", "sweep_points"]
