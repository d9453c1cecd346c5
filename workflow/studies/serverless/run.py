#!/usr/bin/env python3
"""serverless: one job of paper 003's benchmark (the function director on the driver node).

  python3 -m studies.serverless.run --config CFG --workload image --variant processing|null-processing
      --platform openfaas|nuclio-cpp|baseline --instances N --rep R --images DIR
  python3 -m studies.serverless.run --config CFG --workload bytes --variant parallel|single
      --platform openfaas|nuclio-cpp|nuclio-go --instances N --rep R        (every size of the config)
  python3 -m studies.serverless.run --config CFG --workload limit --variant echo|iperf3 --rep R

Locally (mode standin) the platform is `faas-standin up` on this host, one process per instance,
started at 1 instance and scaled to N by the director (the paper's step 1); in a Slurm job of n+1
nodes (mode standin) the director stays on the driver node and the platform runs on the system
nodes, bound to their addresses (placement.py); on a cluster (mode kubernetes)
systems/openfaas|nuclio/deploy.sh gives the URL and scales. Every record stores the measured
placement of both sides (extra.placement). Each run leaves the
director's raw file (repro.fdirector.run/1, every request) under results/serverless/director/ and
the study's raw file (repro.raw/1) under raw/; a run that fails leaves a failure record under
failed/ and the job exits non-zero. Sizes the paper saw refused (bytes.refused_above, Nuclio Go
above 2 MiB) are sent too; their refusal is a failure record, not a job failure.
"""

from __future__ import annotations

import math
import os
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

from repro import allocation, cli, procs, rawio
from studies.serverless import layout
from studies.serverless import placement as place
from tools.fdirector import director as fd
from tools.fdirector import iperf, standin

MiB = 2**20


def _progress(msg: str) -> None:
    print(f"serverless_run: {msg}", flush=True)


def _versions() -> dict:
    return {"fdirector": fd.SCHEMA}


class Platform:
    """The function's endpoint and the director's scaler, on this host or on the cluster."""

    def __init__(self, cfg: dict, platform: str, function: str):
        self.cfg, self.platform, self.function = cfg, platform, function
        self.local: standin.LocalPlatform | None = None
        self.plan = place.plan(_ALLOC[0], cfg["mode"])
        self._tmp = None

    def __enter__(self):
        if self.cfg["mode"] == "standin":
            sc, pl = self.cfg["standin"], self.plan
            self._tmp = place.state_dir(pl)
            self.local = standin.LocalPlatform(
                self.platform, self.function, instances=1, workers=sc["workers"],
                max_body=sc["max_body"] if self.platform == "nuclio-go" else None, state_dir=Path(self._tmp.name),
                launch=pl["launch"], listen=pl["listen"] if pl["multi_host"] else None,
                instance_hosts=pl["instance_hosts"])
            try:
                self.local.start()
            except BaseException:
                _save_logs(Path(self._tmp.name))
                self._tmp.cleanup()
                raise
            self.url = self.local.url
            self.scale = fd.url_scaler(self.local.scale_url)
        else:
            deploy = layout.DEPLOY[self.platform]
            kube = os.path.expandvars(os.path.expanduser(self.cfg["kubeconfig"]))
            if not kube:
                raise fd.DirectorError("serverless.kubeconfig is empty (mode kubernetes)")
            done = subprocess.run([deploy, "url", "--kubeconfig", kube, "--function", self.function],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise fd.DirectorError(procs.failure_message(f"{deploy} url", done, tail=500))
            self.url = done.stdout.strip().splitlines()[-1]
            self.scale = fd.command_scaler([deploy, "scale", "--kubeconfig", kube, "--function", self.function,
                                            "--replicas", "{n}"])
        return self

    def placement(self) -> dict:
        """Both sides as measured now (the stand-in's /system/status; a Kubernetes platform: its URL)."""
        if self.local is not None:
            side = place.platform_side(self.local.status(), self.local.base_url)
        else:
            side = {"kind": "kubernetes (the kubeconfig's cluster)", "listen": self.url}
        return place.measured(_ALLOC[0], self.url, side)

    def __exit__(self, *exc) -> None:
        if self.local is not None:
            self.local.stop()
        if self._tmp is not None:
            if exc[0] is not None:  # the platform's logs for the failure records (its state dir goes now)
                _save_logs(Path(self._tmp.name))
            self._tmp.cleanup()


# where this job ran, measured once per job (host_facts) and written into every record it leaves
_FACTS: dict = {}
_ALLOC: list = [None]  # the job's allocation (repro.allocation), read once in main


def host_facts(cfg: dict) -> dict:
    """The driver's host and the cores this job may use; on a cluster (mode kubernetes) also the
    kubeconfig's nodes against the paper's cluster shape (cluster_shape.check): a mismatch is reported
    in every record (sanity.cluster_shape_mismatch), not refused."""
    import socket

    facts = {"director_host": socket.gethostname(), "director_cores": len(os.sched_getaffinity(0))}
    if cfg["mode"] == "kubernetes":
        from studies.serverless import cluster_shape

        facts["cluster_shape"] = cluster_shape.check(cfg)
    return facts


def _record(cfg: dict, params: dict, rep: int, kind_key: str) -> dict:
    rec = rawio.new_record(layout.STUDY, params["workload"], params, rep, layout.system_kind(cfg, kind_key),
                           _versions())
    rec["extra"] = dict(_FACTS)
    return rec


def _stamp(rec: dict) -> None:
    shape = _FACTS.get("cluster_shape")
    if shape is not None:
        rec.setdefault("sanity", {})["cluster_shape_mismatch"] = shape["mismatch"]


_SAVED_LOGS: list[Path] = []  # copies of the stand-in platform's logs of a failed start or run


def _save_logs(state_dir: Path) -> None:
    """Copy the stand-in platform's logs (its temporary state directory is removed on exit) so that
    the failure records written after it keep them (``rawio.keep_logs``)."""
    import shutil
    import tempfile

    logs = sorted(state_dir.rglob("*.log")) if state_dir.exists() else []
    if logs:
        keep = Path(tempfile.mkdtemp(prefix="serverless-logs-"))
        for f in logs:
            shutil.copy2(f, keep / f.name)
        _SAVED_LOGS.append(keep)


def _fail(raw: str, rec: dict, why: str) -> None:
    _stamp(rec)
    rawio.write_failure(raw, rec, why)
    kept = rawio.keep_logs(raw, _SAVED_LOGS) if _SAVED_LOGS else None
    _progress(f"FAILED {raw}: {why}" + (f" (logs: {kept})" if kept else ""))


def _ok(raw: str, rec: dict, director_raw: dict | None, where: dict | None = None) -> None:
    _stamp(rec)
    if where is not None:
        rec.setdefault("extra", {})["placement"] = where
    if director_raw is not None:
        fd.save_raw(director_raw, layout.director_path(raw))
        rec.setdefault("extra", {}).update({"director_raw": layout.director_path(raw), "url": director_raw["url"],
                                            "director_system_kind": director_raw["system_kind"]})
    rawio.write_json_atomic(raw, rawio.finish(rec))
    rawio.clear_failure(raw)


def _run_metrics(raw: dict) -> list[dict]:
    t = raw["totals"]
    return [rawio.metric("elapsed", t["elapsed_s"], "s"),
            rawio.metric("requests", t["requests"], "requests"),
            rawio.metric("retries", t["retries"], "requests"),
            rawio.metric("throughput", t["throughput_mib_s"], "MiB/s"),
            rawio.metric("request_rate", t["requests_per_s"], "requests/s"),
            rawio.metric("instances_seen", t["instances_seen"], "instances")]


def single_stats(raw: dict) -> dict:
    """Per-request throughputs of a single-variant run (bytes / time of the successful attempt, MiB/s):
    arithmetic, geometric and harmonic mean and the box-plot quantiles (Table 3, Figure 3a,c,e)."""
    per = sorted(r["bytes_sent"] / (r["end"] - r["last_attempt_start"]) / MiB for r in raw["requests"]
                 if r["end"] > r["last_attempt_start"] and r["bytes_sent"] > 0)
    if not per:
        raise fd.DirectorError("no per-request throughput (zero-length requests?)")
    q = statistics.quantiles(per, n=20, method="inclusive") if len(per) > 1 else [per[0]] * 19
    return {"mean": statistics.fmean(per), "gmean": math.exp(statistics.fmean(math.log(x) for x in per)),
            "hmean": len(per) / sum(1 / x for x in per), "min": per[0], "p05": q[0], "q1": q[4],
            "median": statistics.median(per), "q3": q[14], "p95": q[18], "max": per[-1], "n": len(per)}


def _check_instances(raw: dict, want: int, platform: str) -> str | None:
    if platform == "baseline" or raw["variant"] == "single":
        return None
    seen = raw["totals"]["instances_seen"]
    if raw["totals"]["requests"] >= 2 * want and seen != want:
        return f"requests reached {seen} instance(s), the platform was scaled to {want}"
    return None


# ------------------------------------------------------------------ image runs
def run_image(cfg: dict, variant: str, platform: str, instances: int, rep: int, images: Path) -> int:
    params = layout.image_params(variant, platform, instances)
    raw = layout.raw_path(params, rep)
    rec = _record(cfg, params, rep, platform)
    im = cfg["images"]
    try:
        # the paper's director changed one pixel of every image before each run: seeded per run
        workload = fd.image_workload(sorted(images.glob("*.png")), im["count"],
                                     change_pixel=f"{variant}/{platform}/{instances}/rep{rep}")
        if len(workload.payloads) != im["count"]:
            raise fd.DirectorError(f"{len(workload.payloads)} test images in {images}, want {im['count']}")
        if platform == "baseline":
            have = _FACTS.get("director_cores") or len(os.sched_getaffinity(0))
            if have < instances:  # the paper's baseline had the platform's cores to itself
                raise fd.DirectorError(f"the baseline runs {instances} at a time but this driver has {have} cores "
                                       "(serverless.director_cores; Slurm's cpus_per_task)")
            binary = standin.FUNCTIONS[layout.function_of("image", variant, platform)]
            spec = fd.RunSpec(f"exec:{binary}", instances, 1, "parallel", cfg["timeout_s"], cfg["max_retries"],
                              labels={"study": "serverless", "rep": str(rep)})
            d = fd.run(spec, workload, None, progress=True)
            where = place.measured(_ALLOC[0], spec.url, {"kind": "baseline: the function run directly by the "
                                                                 "director, on its node"})
        else:
            with Platform(cfg, platform, layout.function_of("image", variant, platform)) as plat:
                spec = fd.RunSpec(plat.url, instances, im["per_instance"], "parallel", cfg["timeout_s"],
                                  cfg["max_retries"], labels={"study": "serverless", "rep": str(rep)})
                d = fd.run(spec, workload, plat.scale, progress=True)
                where = plat.placement()
    except (fd.DirectorError, standin.StandInError, OSError) as exc:
        _fail(raw, rec, f"{type(exc).__name__}: {exc}")
        return 1
    problem = _check_instances(d, instances, platform)
    if problem:
        _fail(raw, rec, problem)
        return 1
    rec["metrics"] = _run_metrics(d) + [
        rawio.metric("images_per_s", d["totals"]["requests_per_s"], "images/s"),
        rawio.metric("mean_image_size", d["totals"]["bytes_sent"] / d["totals"]["requests"] / MiB, "MiB")]
    rec["sanity"] = {"answers_checked": "PNG of the input's width", "requests": d["totals"]["requests"],
                     "retries": d["totals"]["retries"]}
    _ok(raw, rec, d, where)
    _progress(f"{raw}: {d['totals']['requests_per_s']:.3f} images/s, {d['totals']['retries']} retries")
    return 0


# ------------------------------------------------------------------ bytes sweeps
def run_bytes(cfg: dict, variant: str, platform: str, instances: int, rep: int) -> int:
    by = cfg["bytes"]
    requests = by[variant]["requests"]
    declared = set(layout.declared_sizes(cfg, platform))
    sizes = layout.bytes_sizes(cfg)
    bad = 0
    try:
        with Platform(cfg, platform, layout.function_of("bytes", variant, platform)) as plat:
            plat.scale(instances)
            where = plat.placement()
            _progress(f"placement: director {where['director']['node']}, platform "
                      f"{where['platform'].get('node', where['platform'].get('kind'))} at {plat.url}")
            for k, size in enumerate(sizes):
                params = layout.bytes_params(variant, platform, instances, size)
                raw = layout.raw_path(params, rep)
                rec = _record(cfg, params, rep, platform)
                rec["extra"]["placement"] = where  # failure records too
                _progress(f"{platform} {variant} n={instances} rep={rep}: {size} B ({k + 1}/{len(sizes)})")
                spec = fd.RunSpec(plat.url, instances, by["per_instance"], variant, cfg["timeout_s"],
                                  cfg["max_retries"], labels={"study": "serverless", "rep": str(rep),
                                                              "size": str(size)})
                try:
                    d = fd.run(spec, fd.bytes_workload(size, requests))
                except fd.PermanentHTTPError as exc:
                    rec["sanity"] = {"http_status": exc.status, "expected_refusal": size not in declared}
                    _fail(raw, rec, f"HTTP {exc.status}: {exc}")
                    bad += size in declared
                    continue
                except fd.DirectorError as exc:
                    _fail(raw, rec, f"{type(exc).__name__}: {exc}")
                    bad += 1
                    continue
                problem = _check_instances(d, instances, platform)
                if problem:
                    _fail(raw, rec, problem)
                    bad += 1
                    continue
                rec["metrics"] = _run_metrics(d)
                if variant == "single":
                    st = single_stats(d)
                    rec["metrics"] += [rawio.metric(f"single_{k2}", v, "MiB/s") for k2, v in st.items() if k2 != "n"]
                rec["sanity"] = {"answers_checked": "exact reverse", "requests": d["totals"]["requests"],
                                 "retries": d["totals"]["retries"]}
                _ok(raw, rec, d)
    except (fd.DirectorError, standin.StandInError, OSError) as exc:
        _progress(f"FAILED: the platform: {type(exc).__name__}: {exc}")
        return 1
    _progress(f"{platform} {variant} n={instances} rep={rep}: done, {bad} size(s) failed unexpectedly")
    return 1 if bad else 0


# ------------------------------------------------------------------ limits
def run_limit(cfg: dict, variant: str, rep: int) -> int:
    li = cfg["limit"]
    if variant == "iperf3":
        params = layout.limit_iperf_params()
        raw = layout.raw_path(params, rep)
        rec = _record(cfg, params, rep, "iperf3")
        host = li["iperf_host"]
        pl = place.plan(_ALLOC[0], cfg["mode"])
        local_server = host in ("127.0.0.1", "localhost")
        if local_server and pl["multi_host"]:  # the stand-in path: the server on the platform's node
            host = pl["listen"]
        try:
            parsed, _text = iperf.run_iperf3(host, None, li["iperf_seconds"], start_server=local_server,
                                             server_prefix=pl["launch"] if local_server else ())
        except (iperf.IperfError, OSError) as exc:
            # labelled by the path the director measured to the server's address (no server side known)
            where = place.measured(_ALLOC[0], f"tcp://{host}/", {"node": None, "hostname": None, "listen": host})
            rec["system_kind"] = place.limit_kind(cfg["mode"], "iperf3", where)
            rec["extra"]["placement"] = where
            _fail(raw, rec, f"iperf3: {exc}")
            return 1
        rec["metrics"] = [rawio.metric("throughput", parsed["mib_per_s"], "MiB/s")]
        rec["extra"].update({k: v for k, v in parsed.items() if k != "raw"})
        server = {"node": parsed.get("server_node", pl["platform_node"] if local_server else None),
                  "hostname": parsed.get("server_hostname"), "listen": host,
                  "note": "iperf3 -s started on this node" if local_server else "limit.iperf_host"}
        where = place.measured(_ALLOC[0], f"tcp://{host}/", server)
        rec["system_kind"] = place.limit_kind(cfg["mode"], "iperf3", where)  # loopback only on one host
        _ok(raw, rec, None, where)
        _progress(f"{raw}: iperf3 {parsed['mib_per_s']:.1f} MiB/s")
        return 0
    bad = 0
    pl = place.plan(_ALLOC[0], cfg["mode"])
    with place.state_dir(pl) as tmp:
        echo = None
        try:
            if li["echo_url"]:
                url = li["echo_url"]
                server = {"kind": "limit.echo_url", "listen": url}
            else:
                echo = standin.EchoServer(Path(tmp), launch=pl["launch"], listen=pl["listen"]).start()
                url = echo.url
                server = echo.where()
            where = place.measured(_ALLOC[0], url, server)
            for size in layout.limit_sizes(cfg):
                params = layout.limit_echo_params(size)
                raw = layout.raw_path(params, rep)
                rec = _record(cfg, params, rep, "echo")
                rec["system_kind"] = place.limit_kind(cfg["mode"], "echo", where)  # loopback only on one host
                rec["extra"]["placement"] = where
                spec = fd.RunSpec(url, 1, li["concurrency"], "parallel", cfg["timeout_s"], cfg["max_retries"],
                                  labels={"study": "serverless", "rep": str(rep), "size": str(size)})
                try:
                    d = fd.run(spec, fd.bytes_workload(size, li["requests"], echo=True))
                except fd.DirectorError as exc:
                    _fail(raw, rec, f"{type(exc).__name__}: {exc}")
                    bad += 1
                    continue
                rec["metrics"] = _run_metrics(d)
                rec["sanity"] = {"answers_checked": "echo equals request"}
                _ok(raw, rec, d)
                _progress(f"{raw}: ceiling {d['totals']['throughput_mib_s']:.1f} MiB/s")
        except (standin.StandInError, OSError) as exc:
            _progress(f"FAILED: echo server: {exc}")
            return 1
        finally:
            if echo is not None:
                echo.stop()
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = cli.parser(__doc__)
    ap.add_argument("--workload", required=True, choices=("image", "bytes", "limit"))
    ap.add_argument("--variant", required=True)
    ap.add_argument("--platform", default="")
    ap.add_argument("--instances", type=int, default=1)
    ap.add_argument("--rep", type=int, required=True)
    ap.add_argument("--images", type=Path, default=None)
    a, cfg = cli.finish(ap, argv)
    problems = layout.site_problems(cfg)
    if problems:  # the site_check job stops a Snakemake run first; this guards a job run by hand
        print("serverless: the cluster config needs site edits:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 2
    _progress(f"start: {shlex.join(sys.argv[1:]) if argv is None else shlex.join(argv)}"[:400])
    _FACTS.clear()
    _FACTS.update(host_facts(cfg))
    _ALLOC[0] = allocation.current()  # Slurm's (scontrol) inside a job, else this one host
    _progress(f"driver {_FACTS['director_host']}: {_FACTS['director_cores']} cores"
              + (f"; cluster shape: {'; '.join(_FACTS['cluster_shape']['mismatch']) or 'as the paper'}"
                 if "cluster_shape" in _FACTS else ""))
    if a.workload == "image":
        if a.images is None:
            ap.error("--images DIR is needed for the image workload")
        return run_image(cfg, a.variant, a.platform, a.instances, a.rep, a.images)
    if a.workload == "bytes":
        return run_bytes(cfg, a.variant, a.platform, a.instances, a.rep)
    return run_limit(cfg, a.variant, a.rep)


if __name__ == "__main__":
    sys.exit(main())
