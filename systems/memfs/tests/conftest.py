"""Fixtures and hooks of this folder's tests live in memfs_testlib.py (importable by name from the
test modules); pytest finds them here."""

from memfs_testlib import *  # noqa: F401,F403
