"""The storage study's parameter space and raw-file paths (paper 002, Sec. 4).

Every configuration of a stack run is one raw file

    results/storage/raw/stack~<stack>/benchmark~<cosbench|mdtest>/size~<Z>/workers~<W>/rep~<i>.json

(COSBench: object size and workers of the main stage; mdtest: -w/-e bytes and MPI tasks), and the
limits measured in the same run are

    results/storage/raw/limit~<fio|ceiling>/rep~<i>.json

One job runs one stack x benchmark x repeat: the stack comes up once, every configuration of that
benchmark runs against it, the stack goes down. Everything takes the study's config section.
"""

from __future__ import annotations

from repro import paramspace
from studies.storage.declaration import STACKS  # noqa: F401 (the layout's name, declared once)
from studies.storage.declaration import STUDY as DECLARATION

STUDY = "storage"
RAW_DIR = "results/storage/raw"
DIMS = ("stack", "benchmark", "size", "workers")
BENCHMARKS = ("cosbench", "mdtest")
LIMITS = ("fio", "ceiling")
LABELS = {"ceph": "Ceph", "lustre-minio": "Lustre+MinIO", "juicefs": "JuiceFS+MinIO"}

# what runs where the paper's system cannot (locally) -- the label of every row
STAND_IN_LUSTRE_MINIO = "stand-in:minio-on-posix-dir (for Lustre+MinIO)"
STAND_IN_LUSTRE_DIR = "stand-in:posix-dir (for Lustre)"


def mdtest_size(cfg: dict) -> str:
    return f"{cfg['mdtest']['write_bytes']}B"


def configurations(cfg: dict, stack: str, benchmark: str) -> list[dict]:
    """The (size, workers) configurations one job of `stack` x `benchmark` runs."""
    if benchmark == "cosbench":
        c = cfg["cosbench"]
        return [{"size": s, "workers": w} for s in c["sizes"] for w in c["workers"]]
    if benchmark == "mdtest":
        return [{"size": mdtest_size(cfg), "workers": t} for t in cfg["mdtest"]["tasks"]]
    raise ValueError(f"unknown benchmark {benchmark!r}")


def raw_path(stack: str, benchmark: str, size: str, workers, rep, raw_dir: str = RAW_DIR) -> str:
    """One stack run's raw file (the declaration's experiment spells the path), under ``raw_dir``."""
    p = DECLARATION.raw_path(benchmark, stack=stack, size=size, workers=workers, rep=rep)
    return raw_dir + p[len(RAW_DIR):]


def limit_path(limit: str, rep, raw_dir: str = RAW_DIR) -> str:
    p = DECLARATION.raw_path("limit", limit=limit, rep=rep)
    return raw_dir + p[len(RAW_DIR):]


def tool_dir(raw: str) -> str:
    """The raw tool output (COSBench CSVs, mdtest summary, fio JSON) kept beside a raw record."""
    assert raw.endswith(".json")
    return raw[: -len(".json")] + ".out"


def lustre_not_run(cfg: dict, launcher: str) -> str | None:
    """Why Lustre+MinIO does not run, or None: on a cluster it runs on the Lustre directory the config
    names (paths.lustre_dir), never on a node-local directory under Lustre's name. Locally the
    labelled stand-in runs (a POSIX directory)."""
    if launcher == "slurm" and "lustre-minio" in cfg["stacks"] and not cfg["paths"].get("lustre_dir"):
        return ("not run: storage.paths.lustre_dir is null on the cluster -- Lustre+MinIO and mdtest's Lustre "
                "need a Lustre (or the site's parallel file system) directory; a node-local directory would "
                "run under Lustre's name")
    return None


def stacks_run(cfg: dict, launcher: str = "local") -> list[str]:
    """The stacks whose jobs are planned (Lustre+MinIO left out when lustre_not_run says why)."""
    return [s for s in cfg["stacks"] if not (s == "lustre-minio" and lustre_not_run(cfg, launcher))]


def jobs(cfg: dict, launcher: str = "local") -> list[dict]:
    """Every stack-run job: stack x benchmark x rep (of the stacks that run)."""
    return paramspace.expand({"stack": stacks_run(cfg, launcher), "benchmark": list(BENCHMARKS),
                              "rep": list(range(cfg["repeats"]))})


def job_outputs(cfg: dict, stack: str, benchmark: str, rep, raw_dir: str = RAW_DIR) -> list[str]:
    return [raw_path(stack, benchmark, c["size"], c["workers"], rep, raw_dir)
            for c in configurations(cfg, stack, benchmark)]


def job_output_patterns(cfg: dict, benchmark: str, raw_dir: str = RAW_DIR) -> list[str]:
    """A job's outputs with Snakemake wildcards {stack} and {rep} (the rule's output list)."""
    return [f"{raw_dir}/stack~{{stack}}/benchmark~{benchmark}/size~{paramspace.fmt_value(c['size'])}/"
            f"workers~{paramspace.fmt_value(c['workers'])}/rep~{{rep}}.json"
            for c in configurations(cfg, "-", benchmark)]


def expected_raw(cfg: dict, raw_dir: str = RAW_DIR, launcher: str = "local") -> list[str]:
    """The raw files the planned jobs write (what the aggregate waits for)."""
    out = [p for j in jobs(cfg, launcher) for p in job_outputs(cfg, j["stack"], j["benchmark"], j["rep"], raw_dir)]
    out += [limit_path(lim, r, raw_dir) for r in range(cfg["repeats"]) for lim in LIMITS]
    return out


def not_run_raw(cfg: dict, launcher: str, raw_dir: str = RAW_DIR) -> dict[str, str]:
    """The raw files of configurations not planned, each with its reason (tidy rows 'not-run')."""
    why = lustre_not_run(cfg, launcher)
    if not why:
        return {}
    return {p: why for b in BENCHMARKS for r in range(cfg["repeats"])
            for p in job_outputs(cfg, "lustre-minio", b, r, raw_dir)}


def system_kind(cfg: dict, stack: str, benchmark: str) -> str:
    """real, or the stand-in that ran: MinIO on a POSIX directory (object side) and the POSIX
    directory itself (metadata side) stand in for Lustre where no Lustre directory is configured."""
    if stack == "lustre-minio" and not cfg["paths"].get("lustre_dir"):
        return STAND_IN_LUSTRE_MINIO if benchmark == "cosbench" else STAND_IN_LUSTRE_DIR
    return "real"


def system_kind_of_path(cfg: dict):
    def of(path: str) -> str:
        p = paramspace.parse_path(path)
        if "stack" in p:
            return system_kind(cfg, p["stack"], p["benchmark"])
        return "real" if p.get("limit") == "fio" else "stand-in:memserver"
    return of


def experiment_of(path: str) -> str:
    p = paramspace.parse_path(path)
    return p.get("benchmark") or f"limit-{p.get('limit')}"


def stand_ins(cfg: dict, launcher: str, single_host: bool) -> list[str]:
    """What stands in for the paper's systems in this configuration (the report's rows)."""
    not_run = lustre_not_run(cfg, launcher)
    out = []
    if not cfg["paths"].get("lustre_dir") and not not_run:
        out.append("Lustre+MinIO: MinIO (the real server, pinned build) serving a POSIX directory on this "
                   "machine's disk, and mdtest on a POSIX directory, stand in for MinIO on Lustre and for "
                   "Lustre itself (no Lustre can exist here); rows say "
                   f"'{STAND_IN_LUSTRE_MINIO}' / '{STAND_IN_LUSTRE_DIR}'")
    if not_run:
        out.append(f"Lustre+MinIO and mdtest on Lustre: {not_run}")
    out.append("COSBench: tools/cosbench's cosbench-driver runs the generated COSBench 0.4.2 workload XMLs "
               "and writes COSBench's CSV columns (COSBench itself cannot be fetched here); its own ceiling "
               "against an in-memory S3 endpoint is measured in the same run")
    out.append("mdtest: tools/mdtest's mdbench (mdtest-compatible: create/stat/read/remove of files and, "
               "with --dirs, create/stat/read/rename/remove of directories; no file rename, and a directory "
               "read row mdtest 4 lacks) where the real mdtest is not on PATH")
    if single_host:
        out.append("nodes: every stack runs on this one host (127.0.0.1), Ceph with "
                   f"{cfg['ceph']['osds']} OSD(s) on a sparse file; the driver shares the same cores")
    return out


def kick(cfg: dict, launcher: str) -> list[str]:
    """The kick-the-tires job's raw files: the kick stack (or the first that runs), cosbench, one repeat."""
    run = stacks_run(cfg, launcher)
    return job_outputs(cfg, cfg["kick"]["stack"] if cfg["kick"]["stack"] in run else run[0], "cosbench", 0)
