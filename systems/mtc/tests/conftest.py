"""Fixtures of this folder's tests live in mtc_testlib.py; pytest finds them here."""

from mtc_testlib import *  # noqa: F401,F403
