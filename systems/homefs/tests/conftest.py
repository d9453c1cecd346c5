"""Fixtures of this folder's tests live in homefs_testlib.py; pytest finds them here."""

from homefs_testlib import *  # noqa: F401,F403
