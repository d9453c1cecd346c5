# Kick-the-tires check of the engine, not a paper: the n+1 launcher on this machine or on the cluster.
# Every rank reports the node it ran on; rank 0 checks that an n+1 job got n+1 distinct nodes (on
# Slurm) and times a broadcast.   ./repro snakemake smoke --profile profiles/slurm

from studies.smoke import declaration as smoke_declaration

SMOKE_STUDY = smoke_declaration.STUDY
SMOKE_MATRIX = [{"nodes": n, "rep": 0} for n in config["smoke"]["nodes"]]

experiment_rule(
    SMOKE_STUDY, "layout_probe", matrix=SMOKE_MATRIX, ranks=lambda wc: int(wc.nodes) + 1,
    resources=n_plus_1_resources(lambda wc: int(wc.nodes), runtime=10),
)
register_study(SMOKE_STUDY, kick=experiment_expected(SMOKE_STUDY), report=False)


rule smoke:
    input:
        experiment_expected(SMOKE_STUDY),
