# The engine, shared by every study: the Python path, configuration validation,
# launchers, containers and the study registry. No study names in here: a study
# is a folder workflow/studies/<study>/ (rules.smk, schema.yaml, ...) that the
# Snakefile includes, and it declares itself with register_study(...).
import json
import os
import shlex
import sys

from snakemake.exceptions import WorkflowError

# The project's Python path (workflow/pythonpath.txt, the one list; workflow/README.md "Python: one
# package path"): this checkout's folders, first on PYTHONPATH for every job -- local, on a Slurm
# node (the job gets the submitting process's environment and re-reads this file), in an image
# (workflow/scripts/in-image.sh reads the same list).
with open(os.path.join(workflow.basedir, "workflow", "pythonpath.txt")) as _f:
    PYTHONPATH_DIRS = [
        os.path.normpath(os.path.join(workflow.basedir, _l.split()[0]))
        for _l in _f
        if _l.split() and not _l.startswith("#")
    ]
# One mechanism, PYTHONPATH, everywhere (no sys.path edits): a snakemake process whose PYTHONPATH
# does not begin with this checkout's list -- plain `snakemake` in a shell without `./repro env`, or a
# caller in another checkout (the rehearsal's and the tests' scratch copies) -- starts itself again,
# once, with it; the jobs it starts (local, Slurm, images) inherit it.
_PYTHONPATH = os.pathsep.join(
    PYTHONPATH_DIRS + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p not in PYTHONPATH_DIRS]
)
if os.environ.get("PYTHONPATH", "").split(os.pathsep)[: len(PYTHONPATH_DIRS)] != PYTHONPATH_DIRS:
    if os.environ.get("REPRO_PYTHONPATH_SET") == workflow.basedir:
        raise WorkflowError(f"PYTHONPATH does not begin with {PYTHONPATH_DIRS} after setting it: {os.environ.get('PYTHONPATH')}")
    os.environ.update(PYTHONPATH=_PYTHONPATH, REPRO_PYTHONPATH_SET=workflow.basedir)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "snakemake", *sys.argv[1:]])
from repro import config as repro_config
from repro import paramspace
from repro import provenance as repro_provenance

# The code every job runs, named once here and handed to the jobs (an image has no git, a copy of
# the artifact no .git): the raw records' git_sha and git_tree (repro.provenance.source).
os.environ.setdefault("REPRO_GIT_SHA", repro_provenance.git_sha())
os.environ.setdefault("REPRO_GIT_TREE", repro_provenance.git_tree())
from repro import study as repro_study

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
SCRIPTS = "workflow/scripts"  # the engine's shell scripts (set-up, Slurm, MPI environment)
STUDIES = "workflow/studies"
STUDY_NAMES = repro_config.study_names()  # every study folder, derived


def enabled(study):
    return bool(config.get(study, {}).get("enabled", False))


# the scale the claims are judged at (repro.claims.tol): local | rehearsal | cluster
JUDGING_SCALE = config.get("judging_scale") or {"local": "local"}.get(SCALE, "cluster")


def study_json(study):
    """A study's config section as a shell-quoted JSON argument (analysis rules: all of it, plus
    `judging_scale`, the scale its tolerances are read at)."""
    return shlex.quote(json.dumps({**config[study], "judging_scale": JUDGING_SCALE}, sort_keys=True))


_RUN_JSON = {}


def run_json(study):
    """What a benchmark rule gets: the section without the keys its schema marks x-judging
    (tolerances, captions, scores), so changing one never re-runs a benchmark. Computed once per
    study (the rules call it per job; the schema is read from disk)."""
    if study not in _RUN_JSON:
        section = repro_config.run_section(config[study], repro_config.study_schema(study))
        _RUN_JSON[study] = shlex.quote(json.dumps(section, sort_keys=True))
    return _RUN_JSON[study]


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
# what ./repro and every setup script cache under (models, venvs, built images): REPRO_CACHE
REPRO_CACHE = os.path.abspath(os.path.expanduser(os.environ.get("REPRO_CACHE") or "~/.cache/repro"))
# built images by content hash (containers.cache_dir, else $REPRO_CACHE/sif, where build-sif.sh keeps them)
IMAGE_CACHE = os.path.expanduser(config["containers"]["cache_dir"] or os.path.join(REPRO_CACHE, "sif"))


def sif(name):
    return f"{SIF_DIR}/{name}.sif"


# declared on every analysis rule; used only under --sdm apptainer
ANALYSIS_IMAGE = sif("analysis")


def analysis_image_input():
    """The analysis image is an input of the rules that run in it (built by a rule)."""
    return [sif("analysis")] if USE_APPTAINER else []


def system_exec(name, gpu=False):
    """Prefix that runs a system's command in its image (cluster) or on the host (local);
    gpu=True adds --nv (the host's NVIDIA driver and devices inside the image).

    No --cleanenv: srun hands every task its PMIx/Slurm variables, which must reach
    the rank inside the image (with --cleanenv each rank starts as an MPI singleton).
    No --bind /dev/fuse: the host's /dev is visible inside, and a bound device node
    is mounted nodev.
    The command runs through workflow/scripts/in-image.sh, which appends the project's Python
    path (workflow/pythonpath.txt, of the checkout it lives in) to the image's own (an image's
    %environment cannot see the caller's; found by the rehearsal: every `python3 -m
    studies.<study>` in an image failed "No module named studies").
    """
    if in_image(name):
        # the cache too: prepared inputs live there (the inference models); Apptainer binds $HOME by
        # default, so under ~/.cache/repro this went unseen until a rehearsal with REPRO_CACHE
        # elsewhere failed every inference job in its image ("no such file .../manifest-torch-...")
        binds = ",".join(dict.fromkeys([os.getcwd(), workflow.basedir]
                                       + ([REPRO_CACHE] if os.path.isdir(REPRO_CACHE) else [])))
        return (
            f"apptainer exec{' --nv' if gpu else ''} --bind {binds}"
            f" {sif(name)} {os.path.join(workflow.basedir, SCRIPTS, 'in-image.sh')}"
        )
    return ""


def system_image_input(name):
    return [sif(name)] if in_image(name) else []


def in_image(name):
    """Whether a system's side runs in its image: containers.use_for_benchmarks, unless the image is
    one of containers.host_build (an image this site cannot build: that side alone runs from the
    host's build, and its records say so through the job's command)."""
    return (
        config["containers"]["use_for_benchmarks"]
        and name not in config["containers"]["host_build"]
    )


# ---------------------------------------------------------------------------
# Launchers: n+1 layouts. A configuration with n system nodes gets n+1 nodes;
# rank 0 (the first node) drives, ranks 1..n run the system under test.
# ---------------------------------------------------------------------------
MPI_ENV = (
    f"export REPRO_SINGLE_HOST={int(config['cluster']['single_host'])}; "
    f"source {SCRIPTS}/mpi-env.sh"
)


def mpi_launch(ranks):
    if LAUNCHER == "slurm":
        return f"srun --mpi=pmix --nodes={ranks} --ntasks={ranks} --ntasks-per-node=1 --kill-on-bad-exit=1"
    return f"mpirun --oversubscribe --bind-to none -n {ranks}"


def n_plus_1_resources(n, runtime=None, mem_mb=None):
    """Slurm resources of an n+1 job; locally `bench` serialises benchmarks and `host_share`
    keeps every other job off the machine while one runs.

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
        "host_share": 2,  # locally the whole machine (profiles/local); no meaning on Slurm
    }


def analysis_resources():
    return {"runtime": 20, "mem_mb": 2000}


# ---------------------------------------------------------------------------
# The study registry. Each study's rules.smk calls register_study(...) once; the
# report, `rule containers` (images), `rule kick_the_tires` and the tests' list of
# studies are derived from it -- nothing else to edit when a study is added.
#   title, paper, enabled, claims, measurements, figures [{path, caption}],
#   tables [{path, caption}], stand_ins [text], expected_times {...}, benchmarks [paths],
#   images [names of containers/<name>.def the study's jobs run in],
#   kick [outputs of the study's kick-the-tires target]
# ---------------------------------------------------------------------------
STUDY_REPORT = {}
STUDY_IMAGES = {}
STUDY_KICK = {}

_REPORT_KEYS = ("claims", "measurements", "figures", "tables", "stand_ins", "benchmarks")


def register_study(study, *, images=(), kick=(), report=True, **entry):
    """Declare a study: its report entry (unless report=False), images and kick targets.
    ``study`` is its name, or its declaration (repro.study.Study: title, paper, figures, tables,
    outputs, images and expected times come from it; ``entry`` adds what only the configuration
    knows: enabled, stand_ins, benchmarks)."""
    if isinstance(study, repro_study.Study):
        declaration, study = study, study.name
        images = images or declaration.images
        entry = declaration.report_entry(**entry)
    if study not in STUDY_NAMES:
        raise WorkflowError(f"register_study({study!r}): no folder {STUDIES}/{study}/rules.smk")
    STUDY_IMAGES[study] = list(images)
    STUDY_KICK[study] = list(kick)
    if report:
        # the benchmark files: those the study's analysis_rule and experiment_rule calls add (before or
        # after this call: the same list), and any it names itself
        entry["benchmarks"] = add_benchmarks(study, entry.get("benchmarks", []))
        entry.setdefault("enabled", enabled(study))
        for k in _REPORT_KEYS:
            entry.setdefault(k, [])
        entry.setdefault("expected_times", {})
        STUDY_REPORT[study] = entry
    return entry


def study_module(study, script):
    """`python3 -m studies.<study>.<script>` with the project's Python path."""
    return f"python3 -m studies.{study}.{script}"


def study_code(study, *scripts):
    """The files a rule's code consists of (inputs, so a change re-runs it)."""
    return [f"{STUDIES}/{study}/{s}.py" for s in scripts]


def bench_log(study, name):
    """Snakemake benchmark file of one rule (the report sums them into measured run times)."""
    return f"results/{study}/benchmarks/{name}.tsv"


STUDY_BENCHMARKS = {}  # study -> its jobs' benchmark files (the report's measured run time)


def add_benchmarks(study, files):
    """Add benchmark files to a study's list (once each); the list, which register_study's entry holds."""
    have = STUDY_BENCHMARKS.setdefault(study, [])
    have.extend(f for f in files if f not in have)
    return have


# ---------------------------------------------------------------------------
# Analysis rules (aggregate, tables, figures, claims): one shape for every study.
# ---------------------------------------------------------------------------
def analysis_rule(study, name, *, script, output, args, lib=(), inputs=None, raw=(), names=None, cfg=None, log=None, bench=None):
    """Define one analysis rule of a study: `python3 -m studies.<study>.<script> --config <section> <args>`
    in the analysis image, its log, benchmark file and resources derived from the study and script.

    name     the rule's name (`<study>_<what>`)
    script   the study's module; with ``names``, one rule for many scripts: a {name} wildcard
             (constrained to ``names``) is the module, and the outputs use {name} too
    output   named outputs {key: path}
    args     the script's arguments: a str.format template over input, output and wildcards,
             e.g. "--table {output.table} --out {output.figure}"
    lib      the study's other modules the script imports (inputs: a change re-runs the rule)
    inputs   named inputs {key: path} (the tidy table, the published values, ...)
    raw      unnamed inputs (a function of the wildcards giving the raw files)
    cfg      the --config argument (default: the whole section, study_json)
    log      the log file (default results/<study>/log/<script or {name}>.log)
    bench    the benchmark file's name (default <study>_<script or {name}>)

    Made in a function, never in a bare loop: Snakemake evaluates `shell:` again when a job runs,
    so a loop's rules would all run its last command (workflow/README.md).
    """
    stem = "{name}" if names else script
    entry = "{wildcards.name}" if names else script
    bench_file = bench_log(study, bench or f"{study}_{stem}")
    add_benchmarks(study, [bench_file.format(name=n) for n in names] if names else [bench_file])

    rule:
        name:
            name
        input:
            analysis_image_input(),
            raw,
            code=f"{STUDIES}/{study}/{stem}.py",
            lib=study_code(study, *lib),
            **(inputs or {}),
        output:
            **output,
        log:
            log or f"results/{study}/log/{stem}.log",
        benchmark:
            bench_file
        wildcard_constraints:
            **({"name": "|".join(names)} if names else {}),
        container:
            ANALYSIS_IMAGE
        resources:
            **analysis_resources(),
        params:
            cfg=cfg or (lambda wc: study_json(study)),
            args=lambda wc, input, output: args.format(input=input, output=output, wildcards=wc),
        shell:
            f"python3 -m studies.{study}.{entry} --config {{params.cfg}} {{params.args}} > {{log}} 2>&1"


# ---------------------------------------------------------------------------
# The report's inputs (workflow/rules/report.smk)
# ---------------------------------------------------------------------------
REPORT_PDF = ["paper/report.pdf"] if config["report"]["pdf"] else []
REPORT_OUTPUTS = ["paper/index.html", "paper/claims.csv"] + REPORT_PDF
if config["report"]["check"]:
    REPORT_OUTPUTS.append("paper/render-check.json")


def as_list(x):
    return [] if not x else ([x] if isinstance(x, str) else list(x))


def declared_outputs(entry):
    """A registered study's outputs: its claims, tidy table(s), figures and tables (the report's
    inputs, and the derived `<study>` target)."""
    return (
        as_list(entry.get("claims"))
        + as_list(entry.get("measurements"))
        + [f["path"] for f in entry.get("figures", [])]
        + [t["path"] for t in entry.get("tables", [])]
    )


def report_inputs(wildcards):
    files = []
    for st in STUDY_REPORT.values():
        if not st["enabled"] or not st.get("claims"):
            continue
        files += declared_outputs(st)
        # benchmark files only feed the measured times; a report built from what exists
        # (allow_incomplete) must not wait for, or re-run, a job that failed
        files += [b for b in st.get("benchmarks", []) if not ALLOW_INCOMPLETE or os.path.exists(b)]
    return files
