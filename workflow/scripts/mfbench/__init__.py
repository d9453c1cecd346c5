"""The mpifuse study's benchmark and analysis helpers (paper 001).

Named ``mfbench`` (not ``mpifuse``) so that it never shadows the file
system's own ctypes wrapper ``systems/mpifuse/python/mpifuse.py``.

* :mod:`mfbench.layout`   -- variants, sources, paths of raw files, system kinds
* :mod:`mfbench.procs`    -- child processes with their /proc/<pid>/io, watchdog
* :mod:`mfbench.analysis` -- the tidy table, Table I, Figure 4 split, ratios
"""
