"""Helpers the test folders share: fixtures, probe programs, harnesses."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
