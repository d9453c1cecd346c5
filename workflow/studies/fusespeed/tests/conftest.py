"""Fixtures and helpers of this folder's tests live in fusespeed_testlib.py (importable by name from the
test modules); pytest finds them here."""

from fusespeed_testlib import *  # noqa: F401,F403
