# Kick-the-tires check of the engine, not a paper (and the first study on the one run contract,
# repro.runner): the n+1 launcher on this
# machine or on the cluster. Every rank reports the node it ran on; rank 0
# checks that an n+1 job got n+1 distinct nodes (on Slurm) and times a broadcast.
#
#   ./repro snakemake smoke --profile profiles/slurm   # on the local Slurm cluster


register_study("smoke", kick=expand("results/smoke/raw/nodes~{n}/rep~0.json", n=config["smoke"]["nodes"]), report=False)


rule smoke_run:
    """One n+1 layout probe: `run.py layout_probe` on every rank (the run contract, repro.runner)."""
    input:
        code=study_code("smoke", "run"),
    output:
        "results/smoke/raw/nodes~{n}/rep~0.json",
    log:
        "results/smoke/log/nodes~{n}/rep~0.log",
    resources:
        **n_plus_1_resources(lambda wc: int(wc.n), runtime=10),
    params:
        launch=lambda wc: mpi_launch(int(wc.n) + 1),
        cfg=lambda wc: run_json("smoke"),
        run=lambda wc: shlex.quote(json.dumps({"nodes": int(wc.n)})),
        mpi_env=MPI_ENV,
    shell:
        "({params.mpi_env}; {params.launch} python3 -m studies.smoke.run layout_probe --config {params.cfg}"
        " --params {params.run} --rep 0 --out {output}) > {log} 2>&1"


rule smoke:
    input:
        expand("results/smoke/raw/nodes~{n}/rep~0.json", n=config["smoke"]["nodes"]),
