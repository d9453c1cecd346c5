#!/usr/bin/env python3
"""serverless: one job of paper 003's benchmark (the function director on the driver node).

The run contract (repro.runner), one experiment per workload:

  python3 -m studies.serverless.run image --config CFG --rep R --out RAW --input images=DIR
      --params '{"variant": "processing|null-processing", "platform": "openfaas|nuclio-cpp|baseline", "instances": N}'
  python3 -m studies.serverless.run bytes --config CFG --rep R --out RAW...       (every size of the config)
      --params '{"variant": "parallel|single", "platform": "openfaas|nuclio-cpp|nuclio-go", "instances": N}'
  python3 -m studies.serverless.run limit --config CFG --rep R --out RAW...
      --params '{"variant": "echo|iperf3"}'

--out is the job's raw files (Snakemake's {output}: layout.py's paths; a sweep's, one per size).
Locally (mode standin) the platform is `faas-standin up` on this host, one process per instance,
started at 1 instance and scaled to N by the director (the paper's step 1); in a Slurm job of n+1
nodes (mode standin) the director stays on the driver node and the platform runs on the system
nodes, bound to their addresses (placement.py); on a cluster (mode kubernetes)
systems/openfaas|nuclio/deploy.sh gives the URL and scales. Every record stores the measured
placement of both sides (extra.placement). Each run leaves the
director's raw file (repro.fdirector.run/1, every request) under results/serverless/director/ and
the study's raw file (repro.raw/1) under raw/; a run that fails leaves a failure record under
failed/ (the runner's) and the job exits non-zero; a cluster config with unedited site keys is
refused (exit 2, nothing recorded). Sizes the paper saw refused (bytes.refused_above, Nuclio Go
above 2 MiB) are sent too but are not outputs (ctx.beside): their refusal is a failure record, not
a job failure.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

from repro import allocation, procs, rawio, runner
from studies.serverless import layout
from studies.serverless import placement as place
from tools.fdirector import director as fd
from tools.fdirector import iperf, standin

MiB = 2**20

RUN = runner.Experiments(layout.STUDY)


def _versions() -> dict:
    return {"fdirector": fd.SCHEMA}


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


class Job:
    """One run job: where it runs, measured once (host_facts, the allocation: Slurm's inside a job, else
    this one host) and written into every record it leaves; its records and their raw files."""

    def __init__(self, ctx: runner.Context):
        problems = layout.site_problems(ctx.cfg)
        if problems:  # the site_check job stops a Snakemake run first; this guards a job run by hand
            raise runner.Refused("the cluster config needs site edits:\n  " + "\n  ".join(problems))
        self.ctx, self.cfg = ctx, ctx.cfg
        self.facts = host_facts(ctx.cfg)
        self.alloc = allocation.current()
        ctx.progress(f"driver {self.facts['director_host']}: {self.facts['director_cores']} cores"
                     + (f"; cluster shape: {'; '.join(self.facts['cluster_shape']['mismatch']) or 'as the paper'}"
                        if "cluster_shape" in self.facts else ""))

    def paths(self, configs: dict, outputs=None) -> dict:
        """The raw file of each configuration ({key: params}): layout.py's path under the raw directory
        of --out. Those of ``outputs`` (keys; default all) are --out itself, the others are run beside
        the outputs (ctx.beside)."""
        first = self.ctx.outs[0]
        if "/workload~" not in first:
            raise runner.RunFailed(f"--out {first} is not a serverless raw path (<raw dir>/workload~...)")
        raw_dir = first[: first.index("/workload~")]
        paths = {k: layout.raw_path(p, self.ctx.rep, raw_dir) for k, p in configs.items()}
        want = [paths[k] for k in configs if outputs is None or k in outputs]
        if sorted(want) != sorted(self.ctx.outs):
            raise runner.RunFailed(f"--out {self.ctx.outs} are not the raw files of this job's configurations {want}")
        self.ctx.beside.extend(p for p in paths.values() if p not in want)
        return paths

    def record(self, params: dict, kind_key: str, out: str) -> dict:
        rec = self.ctx.record(_versions(), layout.system_kind(self.cfg, kind_key), params=params, out=out)
        rec["extra"] = dict(self.facts)
        return self.stamp(rec)

    def stamp(self, rec: dict) -> dict:
        shape = self.facts.get("cluster_shape")
        if shape is not None:
            rec.setdefault("sanity", {})["cluster_shape_mismatch"] = shape["mismatch"]
        return rec

    def failed(self, rec: dict, why: str, expected: bool = False) -> runner.RunFailed:
        """One configuration's failure (its record, stamped), for the runner to record."""
        return runner.RunFailed(why, self.stamp(rec), expected=expected)

    def done(self, rec: dict, raw: str, director_raw: dict | None, where: dict | None = None) -> dict:
        """A measured configuration's record; the director's own raw file written beside ``raw``."""
        self.stamp(rec)
        if where is not None:
            rec.setdefault("extra", {})["placement"] = where
        if director_raw is not None:
            fd.save_raw(director_raw, layout.director_path(raw))
            rec.setdefault("extra", {}).update({"director_raw": layout.director_path(raw), "url": director_raw["url"],
                                                "director_system_kind": director_raw["system_kind"]})
        return rec


def _save_logs(state_dir: Path, logs: list) -> None:
    """Copy the stand-in platform's logs (its temporary state directory is removed on exit) into
    ``logs`` (ctx.logs), which every failure record written after it keeps (``rawio.keep_logs``)."""
    import shutil
    import tempfile

    found = sorted(state_dir.rglob("*.log")) if state_dir.exists() else []
    if found:
        keep = Path(tempfile.mkdtemp(prefix="serverless-logs-"))
        for f in found:
            shutil.copy2(f, keep / f.name)
        logs.append(keep)


class Platform:
    """The function's endpoint and the director's scaler, on this host or on the cluster."""

    def __init__(self, job: Job, platform: str, function: str):
        self.job, self.cfg, self.platform, self.function = job, job.cfg, platform, function
        self.local: standin.LocalPlatform | None = None
        self.plan = place.plan(job.alloc, self.cfg["mode"])
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
                _save_logs(Path(self._tmp.name), self.job.ctx.logs)
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
        return place.measured(self.job.alloc, self.url, side)

    def __exit__(self, *exc) -> None:
        if self.local is not None:
            self.local.stop()
        if self._tmp is not None:
            if exc[0] is not None:  # the platform's logs for the failure records (its state dir goes now)
                _save_logs(Path(self._tmp.name), self.job.ctx.logs)
            self._tmp.cleanup()


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
@RUN.experiment("image")
def run_image(ctx: runner.Context) -> dict:
    """params: variant, platform, instances; input: images (the test images' directory)."""
    job = Job(ctx)
    cfg, rep, raw = ctx.cfg, ctx.rep, ctx.out
    variant, platform, instances = ctx.params["variant"], ctx.params["platform"], int(ctx.params["instances"])
    if "images" not in ctx.inputs:
        raise runner.Refused("--input images=DIR is needed for the image workload")
    images = Path(ctx.inputs["images"])
    rec = job.record(layout.image_params(variant, platform, instances), platform, raw)
    im = cfg["images"]
    try:
        # the paper's director changed one pixel of every image before each run: seeded per run
        workload = fd.image_workload(sorted(images.glob("*.png")), im["count"],
                                     change_pixel=f"{variant}/{platform}/{instances}/rep{rep}")
        if len(workload.payloads) != im["count"]:
            raise fd.DirectorError(f"{len(workload.payloads)} test images in {images}, want {im['count']}")
        if platform == "baseline":
            have = job.facts.get("director_cores") or len(os.sched_getaffinity(0))
            if have < instances:  # the paper's baseline had the platform's cores to itself
                raise fd.DirectorError(f"the baseline runs {instances} at a time but this driver has {have} cores "
                                       "(serverless.director_cores; Slurm's cpus_per_task)")
            binary = standin.FUNCTIONS[layout.function_of("image", variant, platform)]
            spec = fd.RunSpec(f"exec:{binary}", instances, 1, "parallel", cfg["timeout_s"], cfg["max_retries"],
                              labels={"study": "serverless", "rep": str(rep)})
            d = fd.run(spec, workload, None, progress=True)
            where = place.measured(job.alloc, spec.url, {"kind": "baseline: the function run directly by the "
                                                                "director, on its node"})
        else:
            with Platform(job, platform, layout.function_of("image", variant, platform)) as plat:
                spec = fd.RunSpec(plat.url, instances, im["per_instance"], "parallel", cfg["timeout_s"],
                                  cfg["max_retries"], labels={"study": "serverless", "rep": str(rep)})
                d = fd.run(spec, workload, plat.scale, progress=True)
                where = plat.placement()
    except (fd.DirectorError, standin.StandInError, OSError) as exc:
        raise job.failed(rec, f"{type(exc).__name__}: {exc}") from exc
    problem = _check_instances(d, instances, platform)
    if problem:
        raise job.failed(rec, problem)
    rec["metrics"] = _run_metrics(d) + [
        rawio.metric("images_per_s", d["totals"]["requests_per_s"], "images/s"),
        rawio.metric("mean_image_size", d["totals"]["bytes_sent"] / d["totals"]["requests"] / MiB, "MiB")]
    rec["sanity"] = {"answers_checked": "PNG of the input's width", "requests": d["totals"]["requests"],
                     "retries": d["totals"]["retries"]}
    ctx.progress(f"{raw}: {d['totals']['requests_per_s']:.3f} images/s, {d['totals']['retries']} retries")
    return job.done(rec, raw, d, where)


# ------------------------------------------------------------------ bytes sweeps
@RUN.experiment("bytes")
def run_bytes(ctx: runner.Context) -> dict:
    """params: variant, platform, instances; every size of the config, one raw file each (--out: the
    declared sizes; those above bytes.refused_above are sent beside them)."""
    job = Job(ctx)
    cfg, rep = ctx.cfg, ctx.rep
    variant, platform, instances = ctx.params["variant"], ctx.params["platform"], int(ctx.params["instances"])
    by = cfg["bytes"]
    requests = by[variant]["requests"]
    declared = set(layout.declared_sizes(cfg, platform))
    sizes = layout.bytes_sizes(cfg)
    params = {s: layout.bytes_params(variant, platform, instances, s) for s in sizes}
    paths = job.paths(params, declared)
    for s in sizes:  # each size's record from the start: a failure of the whole job records each at its path
        job.record(params[s], platform, paths[s])
    out: dict = {}
    try:
        with Platform(job, platform, layout.function_of("bytes", variant, platform)) as plat:
            plat.scale(instances)
            where = plat.placement()
            ctx.progress(f"placement: director {where['director']['node']}, platform "
                         f"{where['platform'].get('node', where['platform'].get('kind'))} at {plat.url}")
            for k, size in enumerate(sizes):
                raw = paths[size]
                rec = job.record(params[size], platform, raw)
                rec["extra"]["placement"] = where  # failure records too
                ctx.progress(f"{platform} {variant} n={instances} rep={rep}: {size} B ({k + 1}/{len(sizes)})")
                spec = fd.RunSpec(plat.url, instances, by["per_instance"], variant, cfg["timeout_s"],
                                  cfg["max_retries"], labels={"study": "serverless", "rep": str(rep),
                                                              "size": str(size)})
                try:
                    d = fd.run(spec, fd.bytes_workload(size, requests))
                except fd.PermanentHTTPError as exc:
                    rec["sanity"] = {"http_status": exc.status, "expected_refusal": size not in declared}
                    out[raw] = job.failed(rec, f"HTTP {exc.status}: {exc}", expected=size not in declared)
                    continue
                except fd.DirectorError as exc:
                    out[raw] = job.failed(rec, f"{type(exc).__name__}: {exc}")
                    continue
                problem = _check_instances(d, instances, platform)
                if problem:
                    out[raw] = job.failed(rec, problem)
                    continue
                rec["metrics"] = _run_metrics(d)
                if variant == "single":
                    st = single_stats(d)
                    rec["metrics"] += [rawio.metric(f"single_{k2}", v, "MiB/s") for k2, v in st.items() if k2 != "n"]
                rec["sanity"] = {"answers_checked": "exact reverse", "requests": d["totals"]["requests"],
                                 "retries": d["totals"]["retries"]}
                out[raw] = job.done(rec, raw, d)
    except (fd.DirectorError, standin.StandInError, OSError) as exc:
        raise runner.RunFailed(f"the platform: {type(exc).__name__}: {exc}") from exc
    bad = sum(isinstance(r, runner.RunFailed) and not r.expected for r in out.values())
    ctx.progress(f"{platform} {variant} n={instances} rep={rep}: done, {bad} size(s) failed unexpectedly")
    return out


# ------------------------------------------------------------------ limits
@RUN.experiment("limit")
def run_limit(ctx: runner.Context) -> dict:
    """params: variant (iperf3: one raw file; echo: the director's ceiling at every size of the config)."""
    job = Job(ctx)
    cfg, li = ctx.cfg, ctx.cfg["limit"]
    pl = place.plan(job.alloc, cfg["mode"])
    if ctx.params["variant"] == "iperf3":
        raw = ctx.out
        rec = job.record(layout.limit_iperf_params(), "iperf3", raw)
        host = li["iperf_host"]
        local_server = host in ("127.0.0.1", "localhost")
        if local_server and pl["multi_host"]:  # the stand-in path: the server on the platform's node
            host = pl["listen"]
        try:
            parsed, _text = iperf.run_iperf3(host, None, li["iperf_seconds"], start_server=local_server,
                                             server_prefix=pl["launch"] if local_server else ())
        except (iperf.IperfError, OSError) as exc:
            # labelled by the path the director measured to the server's address (no server side known)
            where = place.measured(job.alloc, f"tcp://{host}/", {"node": None, "hostname": None, "listen": host})
            rec["system_kind"] = place.limit_kind(cfg["mode"], "iperf3", where)
            rec["extra"]["placement"] = where
            raise job.failed(rec, f"iperf3: {exc}") from exc
        rec["metrics"] = [rawio.metric("throughput", parsed["mib_per_s"], "MiB/s")]
        rec["extra"].update({k: v for k, v in parsed.items() if k != "raw"})
        server = {"node": parsed.get("server_node", pl["platform_node"] if local_server else None),
                  "hostname": parsed.get("server_hostname"), "listen": host,
                  "note": "iperf3 -s started on this node" if local_server else "limit.iperf_host"}
        where = place.measured(job.alloc, f"tcp://{host}/", server)
        rec["system_kind"] = place.limit_kind(cfg["mode"], "iperf3", where)  # loopback only on one host
        ctx.progress(f"{raw}: iperf3 {parsed['mib_per_s']:.1f} MiB/s")
        return job.done(rec, raw, None, where)
    sizes = layout.limit_sizes(cfg)
    params = {s: layout.limit_echo_params(s) for s in sizes}
    paths = job.paths(params)
    for s in sizes:
        job.record(params[s], "echo", paths[s])
    out: dict = {}
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
            where = place.measured(job.alloc, url, server)
            for size in sizes:
                raw = paths[size]
                rec = job.record(params[size], "echo", raw)
                rec["system_kind"] = place.limit_kind(cfg["mode"], "echo", where)  # loopback only on one host
                rec["extra"]["placement"] = where
                spec = fd.RunSpec(url, 1, li["concurrency"], "parallel", cfg["timeout_s"], cfg["max_retries"],
                                  labels={"study": "serverless", "rep": str(ctx.rep), "size": str(size)})
                try:
                    d = fd.run(spec, fd.bytes_workload(size, li["requests"], echo=True))
                except fd.DirectorError as exc:
                    out[raw] = job.failed(rec, f"{type(exc).__name__}: {exc}")
                    continue
                rec["metrics"] = _run_metrics(d)
                rec["sanity"] = {"answers_checked": "echo equals request"}
                out[raw] = job.done(rec, raw, d)
                ctx.progress(f"{raw}: ceiling {d['totals']['throughput_mib_s']:.1f} MiB/s")
        except (standin.StandInError, OSError) as exc:
            raise runner.RunFailed(f"the echo server: {type(exc).__name__}: {exc}") from exc
        finally:
            if echo is not None:
                echo.stop()
    return out


if __name__ == "__main__":
    sys.exit(RUN.main())
