"""Fixtures and hooks of this folder's tests live in mtcwf_testlib.py (importable by name from the
test modules); pytest finds them here."""

from mtcwf_testlib import *  # noqa: F401,F403
