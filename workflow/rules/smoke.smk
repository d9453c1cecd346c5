# Kick-the-tires: the n+1 launcher on this machine or on the cluster.


rule smoke_layout_probe:
    input:
        code=f"{SCRIPTS}/layout_probe.py",
    output:
        "results/smoke/raw/nodes~{n}/rep~0.json",
    log:
        "results/smoke/log/nodes~{n}/rep~0.log",
    resources:
        **n_plus_1_resources(lambda wc: int(wc.n), runtime=10),
    params:
        launch=lambda wc: mpi_launch(int(wc.n) + 1),
        bcast=config["smoke"]["bcast_mib"],
        fault=lambda wc: config["smoke"]["fail_if_exists"].replace("{n}", wc.n),
        mpi_env=MPI_ENV,
        launcher_kind=LAUNCHER,
    shell:
        "({params.mpi_env}; {params.launch} python3 workflow/scripts/layout_probe.py --nodes {wildcards.n}"
        " --bcast-mib {params.bcast} --launcher {params.launcher_kind} --fail-if-exists={params.fault:q}"
        " --out {output}) > {log} 2>&1"


rule smoke:
    input:
        expand("results/smoke/raw/nodes~{n}/rep~0.json", n=config["smoke"]["nodes"]),
