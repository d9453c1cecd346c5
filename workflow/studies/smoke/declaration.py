"""The smoke study, declared once (repro.study): the engine's own kick-the-tires check, not a paper --
the n+1 launcher on this machine or on the cluster (no report entry)."""

from repro.study import Experiment, Study

STUDY = Study(
    name="smoke",
    title="n+1 layout probe: every rank reports its node, rank 0 checks n+1 distinct nodes on Slurm",
    paper="none (the engine's check)",
    experiments=(Experiment("layout_probe", "nodes~{nodes}/rep~{rep}.json", rule="smoke_run",
                            constraints={"nodes": r"[0-9]+"}),),
)
