"""python3 -m experiments: the command line (experiments/cli.py), loaded
once SIGINT and SIGTERM are taken care of (experiments.signals.guarded): a
signal while Mininet and the rest are still being imported is one line and
exit 130, not a traceback."""

import importlib
import sys

from experiments.signals import guarded

sys.exit(guarded(lambda: importlib.import_module("experiments.cli").main()))
