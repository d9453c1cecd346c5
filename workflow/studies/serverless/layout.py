"""The serverless study's parameter space and raw-file paths (paper 003).

Everything takes the study's config section (``config["serverless"]``); the matrix is in the
config, never here. Raw files (``repro.raw/1``), one per run:

  results/serverless/raw/workload~image/variant~<processing|null-processing>/platform~<p>/instances~<n>/rep~<i>.json
  results/serverless/raw/workload~bytes/variant~<parallel|single>/platform~<p>/instances~<n>/size~<b>/rep~<i>.json
  results/serverless/raw/workload~limit/variant~echo/size~<b>/rep~<i>.json
  results/serverless/raw/workload~limit/variant~iperf3/rep~<i>.json

One job writes one image run, one bytes sweep (every size of one platform x variant x instances
x repeat) or one limit measurement (every ceiling size, or iperf3) of one repeat. The director's
own raw file (``repro.fdirector.run/1``, every request) lies beside each, under director/.
"""

from __future__ import annotations

from repro import paramspace
from studies.serverless.declaration import STUDY as DECLARATION

STUDY = "serverless"
RAW_DIR = "results/serverless/raw"
DIRECTOR_DIR = "results/serverless/director"
PLATFORMS = ("openfaas", "nuclio-cpp", "nuclio-go")
LABELS = {"openfaas": "OpenFaaS", "nuclio-cpp": "Nuclio", "nuclio-go": "Nuclio Go", "baseline": "Baseline"}
# the mechanism each local stand-in reproduces (systems/faas-standin/README.md)
STANDIN_KIND = {
    "openfaas": "stand-in:openfaas-watchdog",
    "nuclio-cpp": "stand-in:nuclio-cpp-shell",
    "nuclio-go": "stand-in:nuclio-go-inprocess",
    "baseline": "stand-in:baseline-direct-exec",
    "echo": "stand-in:echo-loopback",
    "iperf3": "stand-in:iperf3-loopback",
}
# the limits' stand-ins where their two ends ran on different hosts (a Slurm job of n+1 nodes: the
# director on the driver, the echo / iperf3 server on the first system node): the path between nodes,
# not loopback (placement.limit_kind decides from what the sides measured)
STANDIN_KIND_BETWEEN_NODES = {
    "echo": "stand-in:echo-between-nodes",
    "iperf3": "stand-in:iperf3-between-nodes",
}
# function per (platform, workload/variant); the stand-in kind of `faas-standin up`
FUNCTION = {
    ("image", "processing"): "imageproc",
    ("image", "null-processing"): "imageproc-np",
    ("bytes", "openfaas"): "reverse",
    ("bytes", "nuclio-cpp"): "reverse",
    ("bytes", "nuclio-go"): "reverse-go",
}
DEPLOY = {"openfaas": "systems/openfaas/deploy.sh", "nuclio-cpp": "systems/nuclio/deploy.sh",
          "nuclio-go": "systems/nuclio/deploy.sh"}


LOOPBACK = ("", "127.0.0.1", "localhost", "::1", "0.0.0.0")
SITE_CHECK = "results/serverless/site_check.json"


def site_problems(cfg: dict, cores_per_node: int | None = None) -> list[str]:
    """The site edits a cluster run (mode kubernetes) needs, each named by its key; [] when none is
    missing or when the stand-ins run (mode standin). config.yaml ships these keys unedited:

    * serverless.kubeconfig -- the kubeconfig of the cluster deploy.sh deploy set up: must be a file;
    * serverless.limit.iperf_host -- an iperf3 -s on the platform's path (a pod or a system node):
      loopback would measure the driver's own loopback, not the path the requests take;
    * serverless.limit.echo_url -- a bare echo server on the platform's path (http://host:port/):
      empty would start one on the driver (loopback again).

    serverless.registry is not checked: the run jobs only call deploy.sh url/scale on functions
    that deploy.sh build/deploy (which need --registry themselves) put there beforehand.

    The driver node must have the cores the baseline uses: images.baseline.parallel <=
    director_cores, and (with ``cores_per_node``, the global cluster.cores_per_node) director_cores
    <= the partition's cores per node."""
    import os
    from urllib.parse import urlparse

    if cfg.get("mode", "standin") != "kubernetes":
        return []
    out = []
    kube = os.path.expandvars(os.path.expanduser(cfg.get("kubeconfig", "")))
    if not kube or "$" in kube:
        out.append(f"serverless.kubeconfig = {cfg.get('kubeconfig', '')!r}: set the kubeconfig of the cluster "
                   "that systems/{openfaas,nuclio}/deploy.sh deploy set up")
    elif not os.path.isfile(kube):
        out.append(f"serverless.kubeconfig = {cfg['kubeconfig']!r}: {kube} is not a file (edit it to the "
                   "kubeconfig of the cluster that deploy.sh deploy set up)")
    li = cfg.get("limit", {})
    if str(li.get("iperf_host", "")).strip() in LOOPBACK:
        out.append(f"serverless.limit.iperf_host = {li.get('iperf_host', '')!r}: set a host on the platform's "
                   "path running iperf3 -s (a pod or a system node), not this host's loopback")
    url = str(li.get("echo_url", "")).strip()
    u = urlparse(url)
    if u.scheme not in ("http", "https") or not u.hostname or u.hostname in LOOPBACK:
        out.append(f"serverless.limit.echo_url = {url!r}: set the URL of a bare echo server on the platform's "
                   "path (http://host:port/), not empty and not loopback")
    base = cfg.get("images", {}).get("baseline", {})
    need = int(cfg.get("director_cores", 16))
    if cfg.get("images", {}).get("enabled", True) and base.get("enabled", True) and base.get("parallel", 16) > need:
        out.append(f"serverless.images.baseline.parallel = {base.get('parallel')}: more than serverless.director_cores "
                   f"= {need}; the baseline runs that many at a time on the driver node alone")
    if cores_per_node is not None and need > cores_per_node:
        out.append(f"serverless.director_cores = {need}: the driver node must have {need} cores (the baseline runs "
                   f"images.baseline.parallel at a time; the paper's FD VM had 32 vCPUs), but cluster.cores_per_node "
                   f"= {cores_per_node}: run the study on a partition whose nodes have them (and set "
                   "cluster.cores_per_node), or lower both keys and say so")
    return out


def function_of(workload: str, variant: str, platform: str) -> str:
    return FUNCTION[(workload, variant)] if workload == "image" else FUNCTION[("bytes", platform)]


def system_kind(cfg: dict, platform: str) -> str:
    """stand-in:<what> locally; real on the cluster path (the baseline and limits run on the driver)."""
    if cfg.get("mode", "standin") == "standin":
        return STANDIN_KIND[platform]
    return "real"


def raw_path(params: dict, rep, raw_dir: str = RAW_DIR) -> str:
    """One raw file: ``params`` holds the workload and its fields (the declaration spells the path)."""
    fields = {k: v for k, v in params.items() if k != "workload"}
    experiment = params["workload"] if params["workload"] != "limit" else f"limit_{fields.pop('variant')}"
    p = DECLARATION.raw_path(experiment, **fields, rep=rep)
    return raw_dir + p[len(RAW_DIR):]


def director_path(raw: str) -> str:
    """The director's raw file of a run, beside the study's raw file."""
    return raw.replace(f"/{RAW_DIR.rsplit('/', 1)[-1]}/", "/director/", 1)


def size_of(exp: int) -> int:
    return 2 ** int(exp)


def _reps(cfg: dict) -> list[int]:
    return list(range(cfg["repeats"]))


# ------------------------------------------------------------------ images
def image_params(variant: str, platform: str, instances) -> dict:
    return {"workload": "image", "variant": variant, "platform": platform, "instances": int(instances)}


def image_runs(cfg: dict) -> list[dict]:
    """Every image run (one job each): params + rep. The baseline: processing only (as the paper)."""
    im = cfg["images"]
    if not im["enabled"]:
        return []
    runs = [{**image_params(v, p, n), "rep": r}
            for v in im["variants"] for p in im["platforms"] for n in im["instances"] for r in _reps(cfg)]
    if im["baseline"]["enabled"] and "processing" in im["variants"]:
        runs += [{**image_params("processing", "baseline", im["baseline"]["parallel"]), "rep": r} for r in _reps(cfg)]
    return runs


# ------------------------------------------------------------------ bytes
def bytes_params(variant: str, platform: str, instances, size) -> dict:
    return {"workload": "bytes", "variant": variant, "platform": platform, "instances": int(instances),
            "size": int(size)}


def bytes_sizes(cfg: dict) -> list[int]:
    return [size_of(e) for e in sorted(cfg["bytes"]["exponents"])]


def refused_above(cfg: dict, platform: str) -> int | None:
    return cfg["bytes"].get("refused_above", {}).get(platform)


def declared_sizes(cfg: dict, platform: str) -> list[int]:
    """Sizes whose raw file a sweep job must write (those the paper saw refused are not outputs)."""
    limit = refused_above(cfg, platform)
    return [s for s in bytes_sizes(cfg) if limit is None or s <= limit]


def bytes_jobs(cfg: dict) -> list[dict]:
    """Every bytes sweep job: variant, platform, instances, rep."""
    by = cfg["bytes"]
    if not by["enabled"]:
        return []
    return [{"variant": v, "platform": p, "instances": int(n), "rep": r}
            for v in ("parallel", "single") for p in by["platforms"] for n in by[v]["instances"] for r in _reps(cfg)]


def bytes_job_outputs(cfg: dict, variant: str, platform: str, instances, rep) -> list[str]:
    return [raw_path(bytes_params(variant, platform, instances, s), rep) for s in declared_sizes(cfg, platform)]


# ------------------------------------------------------------------ limits
def limit_echo_params(size) -> dict:
    return {"workload": "limit", "variant": "echo", "size": int(size)}


def limit_iperf_params() -> dict:
    return {"workload": "limit", "variant": "iperf3"}


def limit_sizes(cfg: dict) -> list[int]:
    return [size_of(e) for e in sorted(cfg["limit"]["exponents"])]


def limit_outputs(cfg: dict, variant: str, rep) -> list[str]:
    if variant == "iperf3":
        return [raw_path(limit_iperf_params(), rep)]
    return [raw_path(limit_echo_params(s), rep) for s in limit_sizes(cfg)]


# ------------------------------------------------------------------ everything
def expected_raw(cfg: dict) -> list[str]:
    """Every raw file the configuration asks for (the aggregation's rows: ok, failed or not-run)."""
    out = [raw_path({k: v for k, v in r.items() if k != "rep"}, r["rep"]) for r in image_runs(cfg)]
    for j in bytes_jobs(cfg):
        out += [raw_path(bytes_params(j["variant"], j["platform"], j["instances"], s), j["rep"])
                for s in bytes_sizes(cfg)]
    if cfg["limit"]["enabled"]:
        for r in _reps(cfg):
            out += limit_outputs(cfg, "echo", r) + limit_outputs(cfg, "iperf3", r)
    return out


def job_outputs(cfg: dict) -> list[str]:
    """What the run jobs must write (expected_raw minus the sizes refused by design)."""
    out = [raw_path({k: v for k, v in r.items() if k != "rep"}, r["rep"]) for r in image_runs(cfg)]
    for j in bytes_jobs(cfg):
        out += bytes_job_outputs(cfg, j["variant"], j["platform"], j["instances"], j["rep"])
    if cfg["limit"]["enabled"]:
        for r in _reps(cfg):
            out += limit_outputs(cfg, "echo", r) + limit_outputs(cfg, "iperf3", r)
    return out


def system_kind_of_path(cfg: dict, path: str) -> str:
    p = paramspace.parse_path(path)
    if p.get("workload") == "limit":
        return system_kind(cfg, p["variant"]) if cfg.get("mode", "standin") == "standin" else "real"
    return system_kind(cfg, p.get("platform", "baseline"))


STAND_INS = (
    "OpenFaaS 0.21 on Kubernetes: systems/faas-standin kind openfaas (stand-in:openfaas-watchdog) -- a "
    "gateway routing each request straight to an instance, round robin, no queue; the classic watchdog "
    "forks the C++ function per request and pipes the body through stdin/stdout (Sec. 2.3, 3.1)",
    "Nuclio 1.6 with the C++ functions: kind nuclio-cpp (stand-in:nuclio-cpp-shell) -- the same fork and "
    "pipe per request, behind one queue that hands each request to the next free worker (Sec. 3.1)",
    "Nuclio 1.6 Go runtime: kind nuclio-go (stand-in:nuclio-go-inprocess) -- the Go handler compiled into "
    "the runtime works on the request body in place, no fork, no copy; bodies over 2 MiB get HTTP 413 "
    "(the paper: every request above 2 MiB failed)",
    "the single-host baseline: the function forked directly by the director on this 2-core host "
    "(stand-in:baseline-direct-exec; the paper's FD VM had 32 vCPUs)",
    "the network between the FD VM and the cluster (700 MiB/s by iPerf): loopback on one host; "
    "iperf3 and the director's ceiling against faas-standin echo measure that path "
    "(stand-in:iperf3-loopback, stand-in:echo-loopback); in a Slurm job of n+1 nodes the servers run "
    "on a system node and the path is the one between nodes (stand-in:iperf3-between-nodes, "
    "stand-in:echo-between-nodes: the label follows where both ends measured they ran)",
    "test images: 16-bit RGB PNGs generated by systems/faas-functions' mkimages (the paper's "
    "TESTIMAGES mix of 800x800 and 600x600, here smaller), not the TESTIMAGES archive",
)


def stand_ins(cfg: dict) -> list[str]:
    """What stands in for the paper's systems (the report's rows): all of STAND_INS in mode standin."""
    return list(STAND_INS) if cfg["mode"] == "standin" else []


def kick(cfg: dict) -> list[str]:
    """The kick-the-tires target: the first declared size of the kick platform's sweep, one repeat."""
    k = cfg["kick"]
    sizes = declared_sizes(cfg, k["platform"])
    return [raw_path(bytes_params(k["variant"], k["platform"], k["instances"], sizes[0]), 0)] if sizes else []
