"""Fixtures and hooks of this folder's tests live in mpifuse_study_testlib.py (importable by name from the
test modules); pytest finds them here."""

from mpifuse_study_testlib import *  # noqa: F401,F403
