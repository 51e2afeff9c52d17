"""The testbed's compiled packet engine: what runs per packet in the
simulation, in C++ (engine/src/), seen from Python through nanobind.  It
imports nothing of the project; experiments/sim composes it."""

from symphony_engine._engine import *  # noqa: F403
