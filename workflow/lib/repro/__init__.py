"""Shared helpers of the Repro artifact.

Every study writes one raw JSON file per run (see :mod:`repro.rawio`), an
aggregation step turns them into one tidy long table per study
(:mod:`repro.tidy`), and claims are checked against published values
(:mod:`repro.claims`).  Configuration is validated at start-up
(:mod:`repro.config`).
"""

__all__ = ["claims", "config", "paramspace", "provenance", "rawio", "tidy"]
