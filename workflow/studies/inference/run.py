#!/usr/bin/env python3
"""inference: one job of the inference-framework paper's benchmark.

The run contract (repro.runner), one experiment per job kind:

  python3 -m studies.inference.run prepare --config CFG --out results/inference/models.json
  python3 -m studies.inference.run serve --config CFG --rep R --out RAW... --input models=models.json
      --params '{"server": S, "model": M, "server_exec": "<image prefix>", "driver_exec": "<image prefix>"}'
  python3 -m studies.inference.run raw_rate --config CFG --rep R --out RAW --input models=models.json
      --params '{"model": M, "framework": "torch|tf", "server_exec": "<image prefix>"}'
  python3 -m studies.inference.run ceiling --config CFG --rep R --out RAW... --params '{"driver_exec": "<prefix>"}'

--out is the job's raw files (Snakemake's {output}: layout.py's paths; a serve or ceiling job's, one
per user count). The exec prefixes (default: none, the host) run a side in its image on a cluster;
they are how the job runs, not what it measures: no record's params carry them (each record's params
are layout.py's serve_params / rawrate_params / ceiling_params of its configuration).

prepare: systems/inference's model preparation into the cache (keyed by the options), at the
config's sizes and weights; --out is not a raw record but the manifest of what was prepared (its
directory, command and specs), written here: a failed preparation exits non-zero and leaves neither
the manifest nor a failure record (there is no raw path to keep one at). serve: the n+1 layout --
`servers.py serve <kind>` alone (on Slurm with >= 2 nodes: an `srun --overlap` step on the server
node, bound to 0.0.0.0; else this host, 127.0.0.1) until its server.json appears in the shared work
dir, then `tools.locust.runner` against the URL it advertises (on the driver node: directly when the
batch step runs there, else an srun step) at every user count of the config, then the server step
is always stopped (SIGUSR1/SIGTERM, KILL, `servers.py stop`), also on a failure, a timeout or
SIGTERM (the runner's runner.Terminated unwinds through the job's finally); each user count's Locust
CSVs (results/inference/locust/...) become one raw file, with where each side ran (server_host/node
from server.json, driver_host/node from Locust's generator.json). srun runs on the host; on a
cluster each side's image (server_exec / driver_exec) comes after it, inside the step. A run with
any failed request, failed check or locustfile exception is a failed configuration (failure record,
job exits 1); a server that does not come up fails every user count with the server's own log; a
Locust runner that exits non-zero fails every user count (one it left complete included: its
numbers are not trusted). A server x model the paper could not run is refused (exit 2, no record).
raw_rate: the model's in-process forward loop (same threads and batch, no server), on the server
node: on Slurm (or with an image) this command repeats itself in an srun step there (its --params
with the placement added), whose own runner records; a step that exits without a record of this
run gets one here. ceiling: the same n+1 split as serve with tools/locust/trivial_server.py as the
server (an srun step on the server node, bound to 0.0.0.0, its URL and node in its ready file),
Locust on the driver node against it; each record says where each side ran (server_host/node,
driver_host/node), as a serve record does.

Device (config `device`: cuda | cpu): the server and the raw rate get `--device`; with cuda a side
that sees no GPU exits 3 naming its node and every record of the job is a failure record, never ok.
Every record says the device it measured (server.json's / the raw rate's `device`: GPU name,
driver, memory) and the GPU's utilisation and memory sampled during that run (`gpu`: for a serve
record the server node's samples inside that user count's Locust window); a cuda record whose
measured device is not a GPU is a failure.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from repro import allocation, procs, rawio, runner
from studies.inference import layout
from tools.locust import parser as lparse

GENERATOR_METRICS = ("throughput", "latency_median", "latency_mean", "latency_p95", "latency_p99",
                     "failures_per_s", "requests", "failures", "locustfile_exceptions", "generator_cpu_cores")

RUN = runner.Experiments(layout.STUDY)


def _env() -> dict:
    # the steps get this process's environment: the project's Python path (workflow/pythonpath.txt:
    # repro_inference, tools) is on PYTHONPATH already; no thread pinning here: servers.py and
    # raw_rate pin the config's threads (0: the frameworks' defaults)
    return dict(os.environ)


def _run_bounded(cmd: list[str], timeout: float, log: Path) -> tuple[int, str]:
    """Run cmd (output to log); past `timeout` send SIGTERM (servers.py then stops its server), KILL 60 s later."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_env(), start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            rc = 124
    text = log.read_text(errors="replace")
    return rc, text


def _versions() -> dict:
    return {"torchserve": "0.12.0", "tritonserver": "2.51.0 (nvidia-pytriton 0.7.0) / 24.10 image",
            "locust": "2.47.0", "tensorflow": "2.21.0", "torch": "2.5.1"}


def _exec(ctx: runner.Context, key: str) -> list[str]:
    """An image prefix from --params (server_exec / driver_exec): none = this host."""
    return shlex.split(ctx.params.get(key) or "")


def _outs(ctx: runner.Context, expected: list[str]) -> list[str]:
    """--out in the order of ``expected`` (layout.py's paths of this job's configurations); --out
    that are not exactly those fail the job, naming both."""
    given = {os.path.abspath(p): p for p in ctx.outs}
    if sorted(given) != sorted(os.path.abspath(p) for p in expected):
        raise runner.RunFailed(f"--out {ctx.outs} are not the raw files of this job's configurations {expected}")
    return [given[os.path.abspath(p)] for p in expected]


def _models(ctx: runner.Context) -> dict:
    return json.loads(Path(ctx.inputs.get("models", layout.MODELS_FILE)).read_text())


def _exit_unrecorded(ctx: runner.Context, why: str, rc: int) -> None:
    """Leave the runner without a failure record (SystemExit passes through its recording block):
    prepare's --out is not a raw file (no failed/ path exists for it), and a raw rate relayed to the
    server node was recorded there, under this same path."""
    ctx.progress(f"FAILED: {why}")
    print(f"{layout.STUDY} {ctx.experiment}: FAILED: {why}", file=sys.stderr, flush=True)
    raise SystemExit(rc or 1)


# ------------------------------------------------------------------ prepare
def prepare_command(cfg: dict) -> list[str]:
    """systems/inference's preparation at the config's sizes; only options that differ from its defaults
    are passed where the defaults are the paper's (so equal configs share one cache directory)."""
    sz = cfg["sizes"]
    cmd = [sys.executable, "-m", "repro_inference.prepare", "--cached", "--models", ",".join(cfg["models"]),
           f"--image-size={sz['image_size']}", f"--audio-samples={sz['audio_samples']}",
           f"--max-new-tokens={sz['max_new_tokens']}", f"--num-beams={sz['num_beams']}"]
    if "wav2vec2" in cfg["models"]:
        cmd.append(f"--audio-samples-full={sz['audio_samples_full']}")
    if cfg["weights"] != "random-from-config":
        cmd.append(f"--weights={cfg['weights']}")
    if cfg["torchscript"]:
        cmd.append("--torchscript")
    return cmd


@RUN.experiment("prepare")
def prepare(ctx: runner.Context) -> None:
    """The models of the config into the cache; --out: the manifest (where, the command, each spec)."""
    cfg = ctx.cfg
    cmd = prepare_command(cfg)
    ctx.progress("prepare: " + shlex.join(cmd))
    done = subprocess.run(cmd, env=_env(), stdout=subprocess.PIPE, text=True)
    print(done.stdout, flush=True)
    if done.returncode != 0:
        _exit_unrecorded(ctx, f"model preparation exited {done.returncode}", done.returncode)
    models_dir = Path(done.stdout.strip().splitlines()[-1])
    specs = {}
    for m in cfg["models"]:
        man = json.loads((models_dir / f"manifest-torch-{m}.json").read_text())
        specs[m] = man["spec"]
        if specs[m]["weights"] != cfg["weights"]:
            _exit_unrecorded(ctx, f"{m} was prepared with weights {specs[m]['weights']}, the config asks "
                             f"{cfg['weights']}", 1)
    rawio.write_json_atomic(ctx.out, {"dir": str(models_dir), "command": cmd, "specs": specs})
    return None


# ------------------------------------------------------------------ serve
# ------------------------------------------------------------------ placement (n+1)
def slurm_job() -> tuple[list[str], str]:
    """(nodes as Slurm names them, CPUs per node) of the Slurm job this runs in; ([], "") outside one.
    From repro.allocation, the one place that reads a job's allocation (`scontrol show job/node`: Snakemake's
    jobstep plugin strips SLURM_JOB_NODELIST and SLURM_CPUS_ON_NODE, it keeps SLURM_JOB_ID)."""
    if not shutil.which("srun"):
        return [], ""
    alloc = allocation.current()
    if alloc.launcher != "slurm":
        return [], ""
    return [n.name for n in alloc.nodes], str(alloc.nodes[0].cpus or "")


def placement(nodes: list[str], here: str = "", cpus: str = "") -> dict:
    """Where the server and Locust run. Slurm with >= 2 nodes: the server in an srun step on the
    server node (bound to 0.0.0.0), Locust on the driver node (directly when this batch step runs
    there, else an srun step). Otherwise both on this host, the server on 127.0.0.1."""
    if len(nodes) >= 2:
        driver, server = layout.node_roles(nodes)
        return {"launcher": "slurm", "nodes": nodes, "driver_node": driver, "server_node": server,
                "batch_node": here, "cpus_per_node": cpus, "bind": "0.0.0.0"}
    return {"launcher": "local", "nodes": nodes, "driver_node": here, "server_node": here, "batch_node": here,
            "cpus_per_node": cpus, "bind": "127.0.0.1"}


def step_prefix(pl: dict, role: str, name: str) -> list[str]:
    """The launcher of one role ("server" or "driver"): an srun step on its node inside the job's
    allocation (--overlap: the batch step keeps its share), nothing locally or for a driver that is
    the batch step's own node. srun runs on the host; the image (if any) goes after it."""
    node = pl[f"{role}_node"]
    if pl["launcher"] != "slurm" or (role == "driver" and node == pl["batch_node"]):
        return []
    cmd = ["srun", "--overlap", "--nodes=1", "--ntasks=1", f"--nodelist={node}", "--mpi=none",
           "--kill-on-bad-exit=0", f"--job-name={name}"]
    if pl["cpus_per_node"]:
        cmd.append(f"--cpus-per-task={pl['cpus_per_node']}")  # every core of the node, not one per task
    return cmd


def _python(exec_prefix: list[str]) -> str:
    return "python3" if exec_prefix else sys.executable  # inside an image: its python3


def locust_env(cfg: dict, model: str) -> list[str]:
    sz = cfg["sizes"]
    env = {"REPRO_MODEL": model, "REPRO_IMAGE_SIZE": sz["image_size"], "REPRO_TEXT_WORDS": sz["text_words"],
           "REPRO_AUDIO_SAMPLES": sz["audio_samples"] if model == "wav2vec2_truncated" else sz["audio_samples_full"]}
    if model == "bart" and cfg["weights"] == "random-from-config":  # every answer must carry the fixed length
        env["REPRO_BART_NEW_TOKENS"] = sz["max_new_tokens"]
    return [a for k, v in env.items() for a in ("--env", f"{k}={v}")]


def serve_command(cfg: dict, server: str, model: str, models_dir: str, workdir: Path, ready: Path, pl: dict,
                  server_exec: list[str] = (), tag: str = "") -> list[str]:
    """The server alone (servers.py serve, until SIGTERM), on the server node, on the config's device."""
    server_exec = list(server_exec)
    return [*step_prefix(pl, "server", f"rinf-server{tag}"), *server_exec, _python(server_exec), "-m",
            "repro_inference.servers", "serve", layout.kind_of(cfg, server), "--models", models_dir, "--model",
            model, "--workdir", str(workdir), "--threads", str(cfg["threads"]), "--device", cfg["device"],
            "--timeout", str(cfg["server_start_timeout_s"]), "--bind", pl["bind"], "--ready-file", str(ready)]


def device_problem(cfg: dict, measured: dict | None) -> str | None:
    """Why a record may not be ok for its device: cuda asked and the side measured no GPU."""
    if cfg["device"] != "cuda":
        return None
    measured = measured or {}
    if measured.get("device") != "cuda" or not measured.get("gpu_name"):
        return (f"device cuda asked for, but the run measured {measured.get('device', 'nothing')!r} "
                f"(GPU {measured.get('gpu_name') or 'none'}) on {measured.get('node') or measured.get('host') or '?'}")
    return None


def device_label(measured: dict | None) -> str:
    """'cuda:NVIDIA H200' / 'cpu' (what the side measured), for the tidy table's device column."""
    measured = measured or {}
    if measured.get("device") == "cuda":
        return f"cuda:{measured.get('gpu_name') or '?'}"
    return measured.get("device") or "unknown"


def gpu_metrics(gpu: dict, **labels) -> list[dict]:
    """The GPU's sampled utilisation and memory as metrics beside the CPU figures (none without samples)."""
    out = []
    for name, key, unit in (("gpu_util_mean", "gpu_util_mean_pct", "%"), ("gpu_util_max", "gpu_util_max_pct", "%"),
                            ("gpu_mem_used_max", "gpu_mem_used_max_mib", "MiB")):
        if (gpu or {}).get("gpu_samples") and gpu.get(key) is not None:
            out.append(rawio.metric(name, gpu[key], unit, **labels))
    return out


def gpu_window(samples: dict, gen: dict) -> dict:
    """The server node's GPU samples inside one Locust run's window (generator.json started_at/ended_at)."""
    from repro_inference.device import summarise

    if not samples:
        return summarise([], "none")
    return summarise(samples.get("samples", []), samples.get("source", "none"), gen.get("started_at"),
                     gen.get("ended_at"))


def driver_command(cfg: dict, server: str, model: str, url: str, system_kind: str, out: Path, pl: dict,
                   driver_exec: list[str] = (), tag: str = "") -> list[str]:
    """Locust alone against the server's advertised URL, on the driver node."""
    driver_exec = list(driver_exec)
    users = ",".join(str(u) for u in layout.users(cfg))
    return [*step_prefix(pl, "driver", f"rinf-driver{tag}"), *driver_exec, _python(driver_exec), "-m",
            "tools.locust.runner", "--protocol", layout.PROTOCOL[server], "--host", url,
            "--system-kind", system_kind, "--users", users, "--run-time", f"{cfg['run_time_s']}s",
            "--out", str(out), "--processes", str(cfg["locust"]["processes"]), *locust_env(cfg, model),
            "--label", f"server={server}", "--label", f"model={model}"]


class ServerNotUp(RuntimeError):
    pass


def wait_ready(proc: subprocess.Popen, ready: Path, timeout: float, log: Path) -> dict:
    """server.json once the server step writes it; the step's exit or the timeout raise with its log."""
    t0 = time.time()
    while True:
        if ready.exists():
            try:
                return json.loads(ready.read_text())
            except json.JSONDecodeError:
                pass  # a shared file system may show the rename before the bytes; read again
        rc = proc.poll()
        if rc is not None:
            raise ServerNotUp(f"the server step {procs.exit_text(rc)} before it was ready; its output:\n"
                              + procs.text_tail(log.read_text(errors="replace"), 4000))
        if time.time() - t0 > timeout:
            raise ServerNotUp(f"timed out: no {ready.name} after {timeout:.0f} s ({procs.load_text()}); the server "
                              "step's output:\n" + procs.text_tail(log.read_text(errors="replace"), 4000))
        time.sleep(0.5)


def stop_server(proc: subprocess.Popen, workdir: Path, pl: dict, server_exec: list[str] = (), grace: float = 60) -> str:
    """Always: SIGUSR1 to the server step (srun forwards it to servers.py, which stops the server's
    process group and exits; srun's own SIGTERM would cancel the step with SIGKILL), SIGTERM then
    SIGKILL if it is still there; if the server's pid file is left, `servers.py stop` on the server
    node. Locally servers.py gets SIGTERM. Returns what happened (for the log and the record)."""
    what = []
    if proc.poll() is None:
        for sig, wait in ((signal.SIGUSR1 if pl["launcher"] == "slurm" else signal.SIGTERM, grace),
                          (signal.SIGTERM, 20), (signal.SIGKILL, 20)):
            try:
                os.killpg(proc.pid, sig) if sig == signal.SIGKILL else proc.send_signal(sig)
                proc.wait(timeout=wait)
                what.append(f"server step stopped by {signal.Signals(sig).name} (exit {proc.returncode})")
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            what.append("server step still there after SIGKILL")
    else:
        what.append(f"server step had exited ({proc.returncode})")
    if (workdir / "server.pid").exists():
        server_exec = list(server_exec)
        cmd = [*step_prefix(pl, "server", "rinf-stop"), *server_exec, _python(server_exec), "-m",
               "repro_inference.servers", "stop", "--workdir", str(workdir)]
        r = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=120)
        what.append(f"left-over server group stopped by servers.py stop (exit {r.returncode})")
    return "; ".join(what)




def metrics_of_run(run_dir: Path, weights: str) -> tuple[list[dict], str | None, dict]:
    """One users~U directory -> (metrics, why it failed or None, sanity). Locust's numbers as written."""
    rows = {r["metric"]: r for r in lparse.tidy_run(run_dir)}
    missing = [m for m in GENERATOR_METRICS if m not in rows or rows[m]["value"] is None]
    if missing:
        return [], f"Locust's CSVs lack {missing} ({run_dir})", {}
    metrics = [rawio.metric(m, rows[m]["value"], rows[m]["unit"], weights=weights) for m in GENERATOR_METRICS]
    fails, exc, reqs = rows["failures"]["value"], rows["locustfile_exceptions"]["value"], rows["requests"]["value"]
    sanity = {"requests": int(reqs), "failures": int(fails), "locustfile_exceptions": int(exc),
              "answers_checked": "HTTP 200, output shape, system kind (tools/locust/common.py)"}
    why = None
    if fails or exc:
        errs = lparse.failures(run_dir / "locust_failures.csv")
        first = "; ".join(f"{e['occurrences']}x {e['error'][:200]}" for e in errs[:3])
        why = f"{int(fails)} of {int(reqs)} requests failed, {int(exc)} locustfile exception(s): {first}"
    elif not reqs:
        why = "no request completed in the run time"
    return metrics, why, sanity


def _keep_server_logs(workdir: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for f in list(workdir.rglob("*.log")) + list(workdir.glob("server.json")):
        if f.is_file() and f.stat().st_size < 20 * 2**20:
            shutil.copy2(f, dest / f.relative_to(workdir).as_posix().replace("/", "__"))


def _where(info: dict, gen: dict) -> dict:
    """Which host/Slurm node ran the server (its server.json) and Locust (its generator.json): measured."""
    return {"server_host": info.get("host", ""), "server_node": info.get("slurm_node", ""),
            "driver_host": gen.get("hostname", ""), "driver_node": gen.get("slurm_node", "")}




@RUN.experiment("serve")
def serve(ctx: runner.Context) -> dict:
    """One server x model x repeat: one raw file per user count of the config."""
    cfg, rep = ctx.cfg, ctx.rep
    server, model = ctx.params["server"], ctx.params["model"]
    server_exec, driver_exec = _exec(ctx, "server_exec"), _exec(ctx, "driver_exec")
    why_not = layout.by_design(server, model)
    if why_not:
        raise runner.Refused(f"{server} x {model} is {why_not}")
    kind = layout.system_kind(cfg, server)
    n_users = layout.users(cfg)
    raws = _outs(ctx, layout.serve_outputs(cfg, server, model, rep))
    recs = {u: ctx.record(_versions(), kind, params=layout.serve_params(server, model, u), out=raw)
            for u, raw in zip(n_users, raws)}
    models = _models(ctx)
    weights = models["specs"][model]["weights"]
    out = Path(layout.locust_dir(server, model, rep)).resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    work = Path(layout.work_dir(server, model, rep)).resolve()  # shared by both nodes
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ready, server_log = work / "server.json", out / "server-step.log"
    nodes, cpus = slurm_job()
    pl = placement(nodes, os.environ.get("SLURMD_NODENAME", ""), cpus)
    tag = f"-{os.environ.get('SLURM_JOB_ID', os.getpid())}"
    per_run = cfg["run_time_s"] + cfg["locust"]["stop_timeout_s"] + 60
    cmd = serve_command(cfg, server, model, models["dir"], work / "server", ready, pl, server_exec, tag)
    ctx.progress(f"{server} ({layout.kind_of(cfg, server)}, {kind}) x {model} rep {rep}, {pl['launcher']}: "
                 f"driver {pl['driver_node'] or 'this host'}, server {pl['server_node'] or 'this host'}")
    ctx.progress("server: " + shlex.join(cmd)[:600])
    previous = signal.getsignal(signal.SIGTERM)  # the runner's: a cancelled job unwinds through the finally
    t0, info, rc, text, dcmd = time.time(), {}, 0, "", []
    with open(server_log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_env(), start_new_session=True)
    try:
        info = wait_ready(proc, ready, cfg["server_start_timeout_s"] + 120, server_log)
        if info.get("system_kind") != kind:
            raise ServerNotUp(f"the server says it is {info.get('system_kind')!r}, the config's kind is {kind!r}")
        ctx.progress(f"server ready at {info['url']} on {info.get('slurm_node') or info.get('host')} "
                     f"after {time.time() - t0:.0f} s")
        dcmd = driver_command(cfg, server, model, info["url"], info["system_kind"], out, pl, driver_exec, tag)
        ctx.progress("driver: " + shlex.join(dcmd)[:600])
        rc, text = _run_bounded(dcmd, 60 + len(n_users) * per_run, out / "job.log")
        if rc:
            text += "\n--- the server step's output ---\n" + server_log.read_text(errors="replace")[-3000:]
    except ServerNotUp as err:
        rc, text = 1, f"the server did not come up: {err}"
        ctx.progress(text[:3000])
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second TERM must not cut the stop short
        stopped = stop_server(proc, work / "server", pl, server_exec)
        ctx.progress(stopped)
        gpu_samples = {}
        if (work / "gpu_samples.json").exists():
            gpu_samples = json.loads((work / "gpu_samples.json").read_text())
            shutil.copy2(work / "gpu_samples.json", out / "gpu_samples.json")
        _keep_server_logs(work, out / "server-logs")
        shutil.rmtree(work, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)
    ctx.progress(f"server up to Locust done: {time.time() - t0:.0f} s, exit {rc}")
    results = {}
    for u, raw in zip(n_users, raws):
        rec = recs[u]
        run_dir = out / f"users~{u}"
        gen_file = run_dir / "generator.json"
        gen = json.loads(gen_file.read_text()) if gen_file.exists() else {}
        rec["extra"] = {"locust_dir": str(run_dir), "kind": layout.kind_of(cfg, server), "weights": weights,
                        "tokenizer": models["specs"][model].get("tokenizer"), "spec": models["specs"][model],
                        "device_asked": cfg["device"], "device": info.get("device", {}),
                        "gpu": gpu_window(gpu_samples, gen), "input_encoding": layout.input_encoding(server, model),
                        "generated_tokens": layout.generated_tokens(models["specs"][model]),
                        **_where(info, gen), "placement": pl, "server_url": info.get("url", ""),
                        "server_command": cmd, "driver_command": dcmd, "server_stop": stopped}
        what = "timed out" if rc == 124 else f"the job {procs.exit_text(rc)}"
        if not (run_dir / "locust_stats.csv").exists():
            results[raw] = runner.RunFailed(f"no Locust run at {u} user(s): {what}; the output (server log tail "
                                            f"included):\n{procs.text_tail(text, 3000)}", rec,
                                            kind="timeout" if rc == 124 else None, rc=rc)
            continue
        metrics, why, sanity = metrics_of_run(run_dir, weights)
        for m in metrics:  # the device measured, in every row of the tidy table
            m["labels"]["device"] = device_label(info.get("device"))
        metrics += gpu_metrics(rec["extra"]["gpu"], weights=weights, device=device_label(info.get("device")))
        rec["metrics"], rec["sanity"] = metrics, sanity
        why = why or device_problem(cfg, info.get("device"))
        if why:
            results[raw] = runner.RunFailed(why, rec)
            continue
        if rc:  # the Locust runner failed after this run: a job that fails leaves no result standing
            results[raw] = runner.RunFailed(f"Locust ran at {u} user(s), but {what} (its numbers are not trusted); "
                                            f"the output:\n{procs.text_tail(text, 3000)}", rec,
                                            kind="timeout" if rc == 124 else None, rc=rc)
            continue
        results[raw] = rec
        ctx.progress(f"{raw}: {rawio.value(rec, 'throughput'):.2f} req/s, "
                     f"median {rawio.value(rec, 'latency_median'):.0f} ms")
    return results


# ------------------------------------------------------------------ raw rate
def run_argv(ctx: runner.Context) -> list[str]:
    """This job's command line (the run contract) without --params: to run it again elsewhere."""
    argv = [ctx.experiment, "--config", json.dumps(ctx.cfg), "--rep", str(ctx.rep), "--out", *ctx.outs]
    return argv + (["--input", *[f"{k}={v}" for k, v in ctx.inputs.items()]] if ctx.inputs else [])


def raw_rate_relay(argv: list[str], params: dict, pl: dict, server_exec: list[str]) -> list[str] | None:
    """The raw rate belongs where the server runs: on Slurm with >= 2 nodes this same command again
    in an srun step on the server node, with the framework's image inside the step (server_exec),
    its --params with the placement (which the step runs at, never relaying again); without Slurm
    but with an image, in the image; else None (run here)."""
    if not (pl["launcher"] == "slurm" and pl["server_node"] != pl["batch_node"]) and not server_exec:
        return None
    tag = f"-{os.environ.get('SLURM_JOB_ID', os.getpid())}"
    return [*step_prefix(pl, "server", f"rinf-rawrate{tag}"), *server_exec, _python(server_exec), "-m",
            "studies.inference.run", *argv, "--params", json.dumps({**params, "placement": pl})]


def _relayed(ctx: runner.Context, relay: list[str]) -> None:
    """Run the raw rate as the relayed step; its runner records at --out (a shared path). Its exit
    is this job's; a step that left no record of this run (srun or the image failed) gets one here."""
    ctx.progress("raw rate on the server node: " + shlex.join(relay)[:600])
    t0 = time.time() - 5  # the step's files, not an earlier run's (a little clock slack)
    rc = subprocess.run(relay, env=_env()).returncode
    raw, failed = Path(ctx.out), rawio.failure_path(ctx.out)
    if rc == 0 and raw.exists() and raw.stat().st_mtime >= t0:
        ctx.progress(f"the step on the server node wrote {raw}")
        return None
    if rc and failed.exists() and failed.stat().st_mtime >= t0:
        _exit_unrecorded(ctx, f"the raw rate step on the server node exited {rc}; its failure record: {failed}", rc)
    raise runner.RunFailed(f"the raw rate step on the server node {procs.exit_text(rc)} and left no record of "
                           f"this run at {raw}", rc=rc or None)


@RUN.experiment("raw_rate")
def raw_rate(ctx: runner.Context) -> dict | None:
    """The model's raw in-process rate on the server node (relayed there on Slurm or into an image)."""
    cfg, rep = ctx.cfg, ctx.rep
    model, framework = ctx.params["model"], ctx.params["framework"]
    params = layout.rawrate_params(model, framework)
    pl = ctx.params.get("placement")
    rec = ctx.record(_versions(), "real", params=params, out=ctx.out)
    if pl is None:  # not relayed yet
        nodes, cpus = slurm_job()
        pl = placement(nodes, os.environ.get("SLURMD_NODENAME", ""), cpus)
        relay = raw_rate_relay(run_argv(ctx), dict(ctx.params), pl, _exec(ctx, "server_exec"))
        if relay is not None:
            rec["extra"] = {"placement": pl}
            return _relayed(ctx, relay)
    rec["extra"] = {"placement": pl}
    models = _models(ctx)
    out = Path(layout.RAWRATE_DIR) / f"model~{model}" / f"framework~{framework}" / f"rep~{rep}.json"
    from repro_inference.servers import venv

    try:
        py = venv(framework) / "bin" / "python"
    except (FileNotFoundError, subprocess.CalledProcessError) as exc:
        raise runner.RunFailed(f"the {framework} venv: {exc}", rec) from None
    cmd = [str(py), "-m", "repro_inference.raw_rate", "--framework", framework, "--models", models["dir"],
           "--model", model, "--threads", str(cfg["threads"]), "--batch", str(cfg["batch"]),
           "--seconds", str(cfg["raw_rate"]["seconds"]), "--warmup", str(cfg["raw_rate"]["warmup"]),
           "--text-words", str(cfg["sizes"]["text_words"]), "--device", cfg["device"], "--out", str(out)]
    ctx.progress(shlex.join(cmd))
    rc, text = _run_bounded(cmd, cfg["raw_rate"]["seconds"] * 5 + 600, out.with_suffix(".log"))
    if rc != 0 or not out.exists():
        out.unlink(missing_ok=True)
        raise runner.RunFailed(procs.failure_message(
            "raw_rate", {"rc": rc, "stdout": text, "timed_out": rc == 124}, tail=3000)
            + ("" if rc else f"; it wrote no {out}"), rec, kind="timeout" if rc == 124 else None, rc=rc)
    r = json.loads(out.read_text())
    dl = device_label(r.get("device"))
    rec["extra"].update(device_asked=cfg["device"], device=r.get("device", {}), gpu=r.get("gpu", {}),
                        tokenizer=r.get("tokenizer"), bart=r.get("bart"))
    problem = device_problem(cfg, r.get("device"))
    if problem:
        raise runner.RunFailed(problem, rec)
    w = r["weights"]
    rec["metrics"] = [rawio.metric("raw_rate", r["rate"], r["unit"], weights=w, device=dl),
                      rawio.metric("iterations", r["iterations"], "count", weights=w, device=dl),
                      rawio.metric("latency_median", r["latency_ms"]["median"], "ms", weights=w, device=dl),
                      rawio.metric("latency_mean", r["latency_ms"]["mean"], "ms", weights=w, device=dl)]
    if r.get("bart", {}).get("bart_new_tokens"):
        toks = r["bart"]["bart_new_tokens"]
        rec["metrics"].append(rawio.metric("new_tokens_per_request", sum(toks) / len(toks), "tokens", weights=w,
                                           device=dl))
    rec["metrics"] += gpu_metrics(r.get("gpu", {}), weights=w, device=dl)
    rec["sanity"] = {"iterations": r["iterations"], "seconds": r["seconds"]}
    rec["extra"].update(raw_rate_file=str(out), threads=r["threads"], batch=r["batch"], spec=r["spec"],
                        node=os.environ.get("SLURMD_NODENAME", ""))
    ctx.progress(f"{ctx.out}: {r['rate']:.2f} inferences/s")
    return rec


# ------------------------------------------------------------------ ceiling
def ceiling_server_command(pl: dict, ready: Path, driver_exec: list[str] = (), tag: str = "") -> list[str]:
    """tools/locust/trivial_server.py alone on the server node, bound as a server is (on Slurm 0.0.0.0,
    a free port, its URL and where it ran in `ready`); in Locust's image (stdlib only)."""
    driver_exec = list(driver_exec)
    return [*step_prefix(pl, "server", f"rinf-ceiling-server{tag}"), *driver_exec, _python(driver_exec), "-m",
            "tools.locust.trivial_server", "--host", pl["bind"], "--port", "0", "--ready-file", str(ready)]


def ceiling_driver_command(cfg: dict, url: str, out: Path, pl: dict, driver_exec: list[str] = (),
                           tag: str = "") -> list[str]:
    """Locust (the serve jobs' user class settings: processes) against the trivial endpoint, on the driver node."""
    ce, driver_exec = cfg["ceiling"], list(driver_exec)
    return [*step_prefix(pl, "driver", f"rinf-ceiling-driver{tag}"), *driver_exec, _python(driver_exec), "-m",
            "tools.locust.runner", "--protocol", "trivial", "--host", url,
            "--users", ",".join(str(u) for u in sorted(ce["users"])), "--run-time", f"{ce['run_time_s']}s",
            "--out", str(out), "--processes", str(cfg["locust"]["processes"]), "--system-kind", "real"]



@RUN.experiment("ceiling")
def ceiling(ctx: runner.Context) -> dict:
    """Locust's own ceiling across the serve jobs' two nodes: the trivial endpoint where a server runs
    (the server node, an srun step), Locust where it drives a server (the driver node), so the
    ceiling crosses the same network path as the served rates it bounds; locally both on this host."""
    cfg, rep = ctx.cfg, ctx.rep
    ce, driver_exec = cfg["ceiling"], _exec(ctx, "driver_exec")
    n_users = sorted(ce["users"])
    raws = _outs(ctx, layout.ceiling_outputs(cfg, rep))
    recs = {u: ctx.record(_versions(), "real", params=layout.ceiling_params(u), out=raw)
            for u, raw in zip(n_users, raws)}
    out = Path(layout.LOCUST_DIR) / "ceiling" / f"rep~{rep}"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    work = Path(layout.WORK_DIR).resolve() / "ceiling" / f"rep~{rep}"  # shared by both nodes
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    ready, server_log = work / "server.json", out / "server-step.log"
    nodes, cpus = slurm_job()
    pl = placement(nodes, os.environ.get("SLURMD_NODENAME", ""), cpus)
    tag = f"-{os.environ.get('SLURM_JOB_ID', os.getpid())}"
    scmd, dcmd, info, rc, text = ceiling_server_command(pl, ready, driver_exec, tag), [], {}, 0, ""
    ctx.progress(f"ceiling rep {rep}, {pl['launcher']}: driver {pl['driver_node'] or 'this host'}, "
                 f"trivial endpoint {pl['server_node'] or 'this host'}")
    ctx.progress("endpoint: " + shlex.join(scmd)[:600])
    previous = signal.getsignal(signal.SIGTERM)  # the runner's
    with open(server_log, "wb") as fh:
        proc = subprocess.Popen(scmd, stdout=fh, stderr=subprocess.STDOUT, env=_env(), start_new_session=True)
    try:
        info = wait_ready(proc, ready, 120, server_log)
        dcmd = ceiling_driver_command(cfg, info["url"], out, pl, driver_exec, tag)
        ctx.progress("driver: " + shlex.join(dcmd)[:600])
        rc, text = _run_bounded(dcmd, len(ce["users"]) * (ce["run_time_s"] + 90), out / "job.log")
    except ServerNotUp as err:
        rc, text = 1, f"the trivial endpoint did not come up: {err}"
        ctx.progress(text[:3000])
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stopped = stop_server(proc, work, pl, grace=20)
        ctx.progress(stopped)
        shutil.rmtree(work, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)
    results = {}
    for u, raw in zip(n_users, raws):
        rec = recs[u]
        run_dir = out / f"users~{u}"
        gen_file = run_dir / "generator.json"
        gen = json.loads(gen_file.read_text()) if gen_file.exists() else {}
        rec["extra"] = {"locust_dir": str(run_dir), **_where(info, gen), "placement": pl,
                        "server_url": info.get("url", ""), "server_command": scmd, "driver_command": dcmd,
                        "server_stop": stopped}
        what = "timed out" if rc == 124 else procs.exit_text(rc)
        if not (run_dir / "locust_stats.csv").exists():
            results[raw] = runner.RunFailed(f"no Locust run at {u} user(s) (the runner {what}):\n"
                                            + procs.text_tail(text, 2000), rec,
                                            kind="timeout" if rc == 124 else None, rc=rc)
            continue
        metrics, why, sanity = metrics_of_run(run_dir, "none")
        rec["metrics"], rec["sanity"] = metrics, sanity
        if why:
            results[raw] = runner.RunFailed(why, rec)
            continue
        if rc:  # the Locust runner failed after this run: a job that fails leaves no result standing
            results[raw] = runner.RunFailed(f"Locust ran at {u} user(s), but the runner {what} (its numbers are "
                                            f"not trusted):\n" + procs.text_tail(text, 2000), rec,
                                            kind="timeout" if rc == 124 else None, rc=rc)
            continue
        results[raw] = rec
        ctx.progress(f"{raw}: ceiling {rawio.value(rec, 'throughput'):.0f} req/s")
    return results


if __name__ == "__main__":
    sys.exit(RUN.main())
