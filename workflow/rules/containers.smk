# Apptainer images: containers/<name>.def -> containers/sif/<name>.sif (pinned
# inside the .def; a content-hash cache under $REPRO_CACHE/sif makes an
# unchanged image a copy). Runs on the host, never inside a container.
# `rule containers` builds the analysis image and every image a study declares
# (register_study(..., images=[...])).

# Built where Snakemake runs (the head/login node, which reaches the package mirror), never submitted
# to a compute node: under profiles/slurm a compute node often cannot reach any mirror (issue 19's
# rehearsal found it submitted).
localrules:
    build_container,


rule build_container:
    input:
        definition="containers/{name}.def",
        builder=f"{SCRIPTS}/setup/build-sif.sh",
    output:
        f"{SIF_DIR}/{{name}}.sif",
    log:
        "results/containers/log/{name}.log",
    resources:
        runtime=90,
        mem_mb=4000,
    params:
        bootstrap=config["containers"]["bootstrap"],
        mirror=config["containers"]["debian_mirror"],
        cache=IMAGE_CACHE,
    shell:
        # a definition that fetches from a host this site cannot reach fails at once, naming it
        # (repro.images), instead of after a long build
        "python3 -m repro.images check {input.definition} > {log} 2>&1 &&"
        " {input.builder} {input.definition} {output} --bootstrap {params.bootstrap}"
        " --mirror {params.mirror} --cache {params.cache} >> {log} 2>&1"


rule containers:
    input:
        expand(
            f"{SIF_DIR}/{{name}}.sif",
            name=sorted(
                {"analysis"} | {i for imgs in STUDY_IMAGES.values() for i in imgs}
            ),
        ),
