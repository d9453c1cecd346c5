# Repro: regenerate the tables and figures of a group of HPC/cloud systems papers.
#
#   ./repro run                                   # local, scaled-down reproduction of everything
#   snakemake -n --profile profiles/slurm --configfile config/config.yaml   # the full cluster plan
#
# One rule file per study under workflow/rules/; every study ends in
# results/<study>/claims.csv, and the report under paper/ collects them.

from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/containers.smk"
include: "workflow/rules/smoke.smk"
include: "workflow/rules/tco.smk"
include: "workflow/rules/cloudcost.smk"
include: "workflow/rules/mpifuse.smk"
include: "workflow/rules/memfs.smk"
include: "workflow/rules/memfs_workflows.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        REPORT_OUTPUTS,


rule kick_the_tires:
    input:
        rules.smoke.input,
        TCO_OUT["claims"],
        CLOUDCOST_OUT["claims"],
        rules.mpifuse_kick.input,
        rules.memfs_kick.input,
        rules.memfs_workflows_kick.input,
