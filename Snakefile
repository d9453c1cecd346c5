# Repro: regenerate the tables and figures of a group of HPC/cloud systems papers.
#
#   ./repro run                                   # local, scaled-down reproduction of everything
#   snakemake -n --profile profiles/slurm --configfile config/config.yaml   # the full cluster plan
#
# The engine is workflow/rules/; each study is one folder workflow/studies/<study>/
# (its rules, schema, published values, scripts, README and tests). A study's
# rules.smk declares itself with register_study(...): the report, the image list
# and kick-the-tires are derived from those declarations. Adding a study = its
# folder + one include line below + its config section.

from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/experiment.smk"
include: "workflow/rules/model_study.smk"
include: "workflow/rules/uses.smk"
include: "workflow/studies/smoke/rules.smk"
include: "workflow/studies/tco/rules.smk"
include: "workflow/studies/cloudcost/rules.smk"
include: "workflow/studies/mpifuse/rules.smk"
include: "workflow/studies/fusespeed/rules.smk"
include: "workflow/studies/memfs/rules.smk"
include: "workflow/studies/storage/rules.smk"
include: "workflow/studies/serverless/rules.smk"
include: "workflow/studies/inference/rules.smk"
include: "workflow/rules/containers.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/selfcheck.smk"


rule all:
    default_target: True
    input:
        REPORT_OUTPUTS,


rule kick_the_tires:
    input:
        [f for study in STUDY_NAMES for f in STUDY_KICK.get(study, [])],


# `<study>_kick` for every study that does not write its own: its declared kick outputs
for _study in STUDY_NAMES:
    if f"{_study}_kick" not in {r.name for r in workflow.rules}:

        rule:
            name:
                f"{_study}_kick"
            input:
                STUDY_KICK.get(_study, []),


# `<study>` (the whole study) for every study that does not write its own: its declared claims,
# tidy table(s), figures and tables (register_study)
_DEFINED = {r.name for r in workflow.rules}
for _study, _entry in STUDY_REPORT.items():
    if _study not in _DEFINED:

        rule:
            name:
                _study
            input:
                declared_outputs(_entry),
