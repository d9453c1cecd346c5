"""Harness of the MemFS study's tests (the 2.4.1 benchmark and its analysis, the n+1 rules on
Slurm): the systems/mtc fixtures (`built`, `iozone`, `clusters`: real network namespaces,
memcached, MemFS FUSE mounts, iozone, MPI; every cluster checked clean afterwards).
"""

from systems.mtc.tests.mtc_testlib import *  # noqa: F401,F403
