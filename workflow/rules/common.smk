# Shared by every study: configuration validation, launchers, containers.
import json
import os
import shlex
import sys

from snakemake.exceptions import WorkflowError

sys.path.insert(0, os.path.join(workflow.basedir, "workflow", "scripts"))
from repro import config as repro_config  # noqa: E402
from repro import paramspace  # noqa: E402

# ---------------------------------------------------------------------------
# Configuration: validated at start-up (unknown keys, wrong types, impossible
# n+1 layouts all fail here, naming the key).
# ---------------------------------------------------------------------------
_CONFIG_SOURCES = ", ".join(str(f) for f in (workflow.configfiles or [])) or "config"
try:
    _validated = repro_config.validate(config, source=_CONFIG_SOURCES)
except repro_config.ConfigError as _exc:
    raise WorkflowError(str(_exc)) from None
config.clear()
config.update(_validated)

SCALE = config["scale"]
LAUNCHER = config["launcher"]  # local | slurm
ALLOW_INCOMPLETE = config["allow_incomplete"]
SCRIPTS = "workflow/scripts"
STUDY_NAMES = ["tco", "cloudcost", "mpifuse", "memfs"]


def enabled(study):
    return bool(config.get(study, {}).get("enabled", False))


def study_json(study):
    """A study's config section as a shell-quoted JSON argument."""
    return shlex.quote(json.dumps(config[study], sort_keys=True))


# ---------------------------------------------------------------------------
# Containers: analysis rules run in the analysis image under --sdm apptainer.
# ---------------------------------------------------------------------------
def _sdm_apptainer():
    try:
        methods = workflow.deployment_settings.deployment_method
    except AttributeError:
        return False
    return any(str(m).lower().endswith("apptainer") for m in methods)


USE_APPTAINER = _sdm_apptainer()
SIF_DIR = config["containers"]["sif_dir"]


def sif(name):
    return f"{SIF_DIR}/{name}.sif"


# declared on every analysis rule; used only under --sdm apptainer
ANALYSIS_IMAGE = sif("analysis")


def analysis_image_input():
    """The analysis image is an input of the rules that run in it (built by a rule)."""
    return [sif("analysis")] if USE_APPTAINER else []


def system_exec(name):
    """Prefix that runs a system's command in its image (cluster) or on the host (local).

    No --cleanenv: srun hands every task its PMIx/Slurm variables, which must reach
    the rank inside the image (with --cleanenv each rank starts as an MPI singleton).
    No --bind /dev/fuse: the host's /dev is visible inside, and a bound device node
    is mounted nodev.
    """
    if config["containers"]["use_for_benchmarks"]:
        return f"apptainer exec --bind {os.getcwd()} {sif(name)}"
    return ""


def system_image_input(name):
    return [sif(name)] if config["containers"]["use_for_benchmarks"] else []


# ---------------------------------------------------------------------------
# Launchers: n+1 layouts. A configuration with n system nodes gets n+1 nodes;
# rank 0 (the first node) drives, ranks 1..n run the system under test.
# ---------------------------------------------------------------------------
MPI_ENV = (
    f"export REPRO_SINGLE_HOST={int(config['cluster']['single_host'])}; "
    "source workflow/scripts/mpi-env.sh"
)


def mpi_launch(ranks):
    if LAUNCHER == "slurm":
        return f"srun --mpi=pmix --nodes={ranks} --ntasks={ranks} --ntasks-per-node=1 --kill-on-bad-exit=1"
    return f"mpirun --oversubscribe --bind-to none -n {ranks}"


def n_plus_1_resources(n, runtime=None, mem_mb=None):
    """Slurm resources of an n+1 job; locally `bench` serialises benchmarks.

    ``n`` (system nodes) is an int or a function of the wildcards.
    """

    def ranks(wc):
        return (n(wc) if callable(n) else int(n)) + 1

    return {
        "nodes": ranks,
        "tasks": ranks,
        "mpi": "srun" if LAUNCHER == "slurm" else "mpirun",
        "runtime": runtime or config["cluster"]["runtime_minutes"],
        "mem_mb": mem_mb or min(config["cluster"]["mem_mb_per_node"], 4000),
        "slurm_extra": "--exclusive",
        "bench": 1,
    }


def analysis_resources():
    return {"runtime": 20, "mem_mb": 2000}


# ---------------------------------------------------------------------------
# The report: every study registers what the report shows (rule files fill
# STUDY_REPORT[<study>]); workflow/rules/report.smk collects the enabled ones.
#   title, paper, enabled, claims, measurements, figures [{path, caption}],
#   tables [{path, caption}], stand_ins [text], expected_times {...}, benchmarks [paths]
# ---------------------------------------------------------------------------
STUDY_REPORT = {}


def bench_log(study, name):
    """Snakemake benchmark file of one rule (the report sums them into measured run times)."""
    return f"results/{study}/benchmarks/{name}.tsv"
