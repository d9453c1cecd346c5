#!/usr/bin/env python3
"""inference: one job of the inference-framework paper's benchmark.

  python3 -m studies.inference.run --config CFG --what prepare --out results/inference/models.json
  python3 -m studies.inference.run --config CFG --what serve --server S --model M --rep R --models models.json
  python3 -m studies.inference.run --config CFG --what raw_rate --model M --framework torch|tf --rep R --models ...
  python3 -m studies.inference.run --config CFG --what ceiling --rep R

prepare: systems/inference's model preparation into the cache (keyed by the options), at the
config's sizes and weights. serve: the n+1 layout -- `servers.py serve <kind>` alone (on Slurm with
>= 2 nodes: an `srun --overlap` step on the server node, bound to 0.0.0.0; else this host,
127.0.0.1) until its server.json appears in the shared work dir, then `tools.locust.runner` against
the URL it advertises (on the driver node: directly when the batch step runs there, else an srun
step) at every user count of the config, then the server step is always stopped (SIGTERM, KILL,
`servers.py stop`), also on a failure or timeout; each user count's Locust CSVs
(results/inference/locust/...) become one raw file, with where each side ran (server_host/node from
server.json, driver_host/node from Locust's generator.json). srun runs on the host; on a cluster
each side's image (--server-exec / --driver-exec) comes after it, inside the step. A run with any
failed request, failed check or locustfile exception is a failed configuration (failure record,
job exits 1); a server that does not come up fails every user count with the server's own log.
raw_rate: the model's in-process forward loop (same threads and batch, no server), on the server
node (on Slurm this command repeats itself in an srun step there, --placement set). ceiling: the
same n+1 split as serve with tools/locust/trivial_server.py as the server (an srun step on the server
node, bound to 0.0.0.0, its URL and node in its ready file), Locust on the driver node against it;
each record says where each side ran (server_host/node, driver_host/node), as a serve record does.

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

from repro import allocation, cli, procs, rawio
from studies.inference import layout
from tools.locust import parser as lparse

GENERATOR_METRICS = ("throughput", "latency_median", "latency_mean", "latency_p95", "latency_p99",
                     "failures_per_s", "requests", "failures", "locustfile_exceptions", "generator_cpu_cores")


def _progress(msg: str) -> None:
    print(f"inference_run: {msg}", flush=True)


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


def _record(cfg: dict, params: dict, rep: int, kind: str) -> dict:
    return rawio.new_record(layout.STUDY, params["experiment"], params, rep, kind, _versions())


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


def run_prepare(cfg: dict, out: Path) -> int:
    cmd = prepare_command(cfg)
    _progress("prepare: " + shlex.join(cmd))
    done = subprocess.run(cmd, env=_env(), stdout=subprocess.PIPE, text=True)
    print(done.stdout, flush=True)
    if done.returncode != 0:
        _progress(f"FAILED: model preparation exited {done.returncode}")
        return done.returncode
    models_dir = Path(done.stdout.strip().splitlines()[-1])
    specs = {}
    for m in cfg["models"]:
        man = json.loads((models_dir / f"manifest-torch-{m}.json").read_text())
        specs[m] = man["spec"]
        if specs[m]["weights"] != cfg["weights"]:
            _progress(f"FAILED: {m} was prepared with weights {specs[m]['weights']}, the config asks {cfg['weights']}")
            return 1
    rawio.write_json_atomic(out, {"dir": str(models_dir), "command": cmd, "specs": specs})
    return 0


def _models(path: Path) -> dict:
    return json.loads(Path(path).read_text())


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


def _terminate(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through the finally that stops the server


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


def run_serve(cfg: dict, server: str, model: str, rep: int, models_file: Path,
              server_exec: list[str] = (), driver_exec: list[str] = ()) -> int:
    why_not = layout.by_design(server, model)
    if why_not:
        _progress(f"refused: {server} x {model} is {why_not}")
        return 2
    models = _models(models_file)
    weights = models["specs"][model]["weights"]
    kind = layout.system_kind(cfg, server)
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
    n_users = layout.users(cfg)
    per_run = cfg["run_time_s"] + cfg["locust"]["stop_timeout_s"] + 60
    cmd = serve_command(cfg, server, model, models["dir"], work / "server", ready, pl, server_exec, tag)
    _progress(f"{server} ({layout.kind_of(cfg, server)}, {kind}) x {model} rep {rep}, {pl['launcher']}: "
              f"driver {pl['driver_node'] or 'this host'}, server {pl['server_node'] or 'this host'}")
    _progress("server: " + shlex.join(cmd)[:600])
    previous = signal.signal(signal.SIGTERM, _terminate)  # a cancelled job unwinds through the finally
    t0, info, rc, text, dcmd = time.time(), {}, 0, "", []
    with open(server_log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_env(), start_new_session=True)
    try:
        info = wait_ready(proc, ready, cfg["server_start_timeout_s"] + 120, server_log)
        if info.get("system_kind") != kind:
            raise ServerNotUp(f"the server says it is {info.get('system_kind')!r}, the config's kind is {kind!r}")
        _progress(f"server ready at {info['url']} on {info.get('slurm_node') or info.get('host')} "
                  f"after {time.time() - t0:.0f} s")
        dcmd = driver_command(cfg, server, model, info["url"], info["system_kind"], out, pl, driver_exec, tag)
        _progress("driver: " + shlex.join(dcmd)[:600])
        rc, text = _run_bounded(dcmd, 60 + len(n_users) * per_run, out / "job.log")
        if rc:
            text += "\n--- the server step's output ---\n" + server_log.read_text(errors="replace")[-3000:]
    except ServerNotUp as err:
        rc, text = 1, f"the server did not come up: {err}"
        _progress(text[:3000])
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second TERM must not cut the stop short
        stopped = stop_server(proc, work / "server", pl, server_exec)
        _progress(stopped)
        gpu_samples = {}
        if (work / "gpu_samples.json").exists():
            gpu_samples = json.loads((work / "gpu_samples.json").read_text())
            shutil.copy2(work / "gpu_samples.json", out / "gpu_samples.json")
        _keep_server_logs(work, out / "server-logs")
        shutil.rmtree(work, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)
    _progress(f"server up to Locust done: {time.time() - t0:.0f} s, exit {rc}")
    bad = 0
    for u in n_users:
        params = layout.serve_params(server, model, u)
        raw = layout.raw_path(params, rep)
        rec = _record(cfg, params, rep, kind)
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
        if not (run_dir / "locust_stats.csv").exists():
            what = "timed out" if rc == 124 else f"the job {procs.exit_text(rc)}"
            rawio.write_failure(raw, rec, f"no Locust run at {u} user(s): {what}; the output (server log tail "
                                          f"included):\n{procs.text_tail(text, 3000)}",
                                "timeout" if rc == 124 else None, rc=rc)
            bad += 1
            continue
        metrics, why, sanity = metrics_of_run(run_dir, weights)
        for m in metrics:  # the device measured, in every row of the tidy table
            m["labels"]["device"] = device_label(info.get("device"))
        metrics += gpu_metrics(rec["extra"]["gpu"], weights=weights, device=device_label(info.get("device")))
        rec["metrics"], rec["sanity"] = metrics, sanity
        why = why or device_problem(cfg, info.get("device"))
        if why:
            rawio.write_failure(raw, rec, why)
            _progress(f"FAILED {raw}: {why}")
            bad += 1
            continue
        rawio.write_json_atomic(raw, rawio.finish(rec))
        rawio.clear_failure(raw)
        _progress(f"{raw}: {rawio.value(rec, 'throughput'):.2f} req/s, "
                  f"median {rawio.value(rec, 'latency_median'):.0f} ms")
    return 1 if bad or rc else 0


# ------------------------------------------------------------------ raw rate
def raw_rate_relay(argv: list[str], pl: dict, server_exec: list[str]) -> list[str] | None:
    """The raw rate belongs where the server runs: on Slurm with >= 2 nodes this same command again
    in an srun step on the server node, with the framework's image inside the step (--server-exec);
    without Slurm but with an image, in the image; else None (run here)."""
    if not (pl["launcher"] == "slurm" and pl["server_node"] != pl["batch_node"]) and not server_exec:
        return None
    tag = f"-{os.environ.get('SLURM_JOB_ID', os.getpid())}"
    return [*step_prefix(pl, "server", f"rinf-rawrate{tag}"), *server_exec, _python(server_exec), "-m",
            "studies.inference.run", *argv, "--placement", json.dumps(pl)]


def run_raw_rate(cfg: dict, model: str, framework: str, rep: int, models_file: Path, pl: dict | None = None) -> int:
    models = _models(models_file)
    params = layout.rawrate_params(model, framework)
    raw = layout.raw_path(params, rep)
    rec = _record(cfg, params, rep, "real")
    rec["extra"] = {"placement": pl or placement([], os.environ.get("SLURMD_NODENAME", ""))}
    out = Path(layout.RAWRATE_DIR) / f"model~{model}" / f"framework~{framework}" / f"rep~{rep}.json"
    from repro_inference.servers import venv

    try:
        py = venv(framework) / "bin" / "python"
    except (FileNotFoundError, subprocess.CalledProcessError) as exc:
        rawio.write_failure(raw, rec, f"the {framework} venv: {exc}")
        return 1
    cmd = [str(py), "-m", "repro_inference.raw_rate", "--framework", framework, "--models", models["dir"],
           "--model", model, "--threads", str(cfg["threads"]), "--batch", str(cfg["batch"]),
           "--seconds", str(cfg["raw_rate"]["seconds"]), "--warmup", str(cfg["raw_rate"]["warmup"]),
           "--text-words", str(cfg["sizes"]["text_words"]), "--device", cfg["device"], "--out", str(out)]
    _progress(shlex.join(cmd))
    rc, text = _run_bounded(cmd, cfg["raw_rate"]["seconds"] * 5 + 600, out.with_suffix(".log"))
    if rc != 0 or not out.exists():
        out.unlink(missing_ok=True)
        rawio.write_failure(raw, rec, procs.failure_message(
            "raw_rate", {"rc": rc, "stdout": text, "timed_out": rc == 124}, tail=3000)
            + ("" if rc else f"; it wrote no {out}"), "timeout" if rc == 124 else None, rc=rc)
        _progress(f"FAILED {raw}: " + text.strip().splitlines()[-1][:500] if text.strip() else f"FAILED {raw}")
        return 1
    r = json.loads(out.read_text())
    dl = device_label(r.get("device"))
    rec["extra"].update(device_asked=cfg["device"], device=r.get("device", {}), gpu=r.get("gpu", {}),
                        tokenizer=r.get("tokenizer"), bart=r.get("bart"))
    problem = device_problem(cfg, r.get("device"))
    if problem:
        rawio.write_failure(raw, rec, problem)
        _progress(f"FAILED {raw}: {problem}")
        return 1
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
    rawio.write_json_atomic(raw, rawio.finish(rec))
    rawio.clear_failure(raw)
    _progress(f"{raw}: {r['rate']:.2f} inferences/s")
    return 0


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


def run_ceiling(cfg: dict, rep: int, driver_exec: list[str] = ()) -> int:
    """Locust's own ceiling across the serve jobs' two nodes: the trivial endpoint where a server runs
    (the server node, an srun step), Locust where it drives a server (the driver node), so the
    ceiling crosses the same network path as the served rates it bounds; locally both on this host."""
    ce = cfg["ceiling"]
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
    _progress(f"ceiling rep {rep}, {pl['launcher']}: driver {pl['driver_node'] or 'this host'}, "
              f"trivial endpoint {pl['server_node'] or 'this host'}")
    _progress("endpoint: " + shlex.join(scmd)[:600])
    previous = signal.signal(signal.SIGTERM, _terminate)
    with open(server_log, "wb") as fh:
        proc = subprocess.Popen(scmd, stdout=fh, stderr=subprocess.STDOUT, env=_env(), start_new_session=True)
    try:
        info = wait_ready(proc, ready, 120, server_log)
        dcmd = ceiling_driver_command(cfg, info["url"], out, pl, driver_exec, tag)
        _progress("driver: " + shlex.join(dcmd)[:600])
        rc, text = _run_bounded(dcmd, len(ce["users"]) * (ce["run_time_s"] + 90), out / "job.log")
    except ServerNotUp as err:
        rc, text = 1, f"the trivial endpoint did not come up: {err}"
        _progress(text[:3000])
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stopped = stop_server(proc, work, pl, grace=20)
        _progress(stopped)
        shutil.rmtree(work, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)
    bad = 0
    for u in sorted(ce["users"]):
        params = layout.ceiling_params(u)
        raw = layout.raw_path(params, rep)
        rec = _record(cfg, params, rep, "real")
        run_dir = out / f"users~{u}"
        gen_file = run_dir / "generator.json"
        gen = json.loads(gen_file.read_text()) if gen_file.exists() else {}
        rec["extra"] = {"locust_dir": str(run_dir), **_where(info, gen), "placement": pl,
                        "server_url": info.get("url", ""), "server_command": scmd, "driver_command": dcmd,
                        "server_stop": stopped}
        if not (run_dir / "locust_stats.csv").exists():
            rawio.write_failure(raw, rec, f"no Locust run at {u} user(s) (the runner "
                                          f"{'timed out' if rc == 124 else procs.exit_text(rc)}):\n"
                                          + procs.text_tail(text, 2000), "timeout" if rc == 124 else None,
                                rc=rc)
            bad += 1
            continue
        metrics, why, sanity = metrics_of_run(run_dir, "none")
        rec["metrics"], rec["sanity"] = metrics, sanity
        if why:
            rawio.write_failure(raw, rec, why)
            bad += 1
            continue
        rawio.write_json_atomic(raw, rawio.finish(rec))
        rawio.clear_failure(raw)
        _progress(f"{raw}: ceiling {rawio.value(rec, 'throughput'):.0f} req/s")
    return 1 if bad or rc else 0


def main(argv=None) -> int:
    ap = cli.parser(__doc__)
    ap.add_argument("--what", required=True, choices=("prepare", "serve", "raw_rate", "ceiling"))
    ap.add_argument("--server", choices=layout.SERVERS)
    ap.add_argument("--model", choices=layout.MODELS)
    ap.add_argument("--framework", choices=("torch", "tf"))
    ap.add_argument("--rep", type=int, default=0)
    ap.add_argument("--models", type=Path, default=Path(layout.MODELS_FILE))
    ap.add_argument("--out", type=Path, default=Path(layout.MODELS_FILE))
    ap.add_argument("--server-exec", default="", help="prefix that runs the server in its image (cluster)")
    ap.add_argument("--driver-exec", default="", help="prefix that runs Locust (and the ceiling's trivial "
                    "endpoint) in its image (cluster)")
    ap.add_argument("--placement", help="raw_rate: already placed on the server node (JSON, set by the relay)")
    a, cfg = cli.finish(ap, argv)
    _progress(f"start: {shlex.join(sys.argv[1:]) if argv is None else shlex.join(argv)}"[:300])
    if a.what == "prepare":
        return run_prepare(cfg, a.out)
    if a.what == "serve":
        if not (a.server and a.model):
            ap.error("--server and --model are needed for serve")
        return run_serve(cfg, a.server, a.model, a.rep, a.models, shlex.split(a.server_exec),
                         shlex.split(a.driver_exec))
    if a.what == "raw_rate":
        if not (a.model and a.framework):
            ap.error("--model and --framework are needed for raw_rate")
        if a.placement:
            return run_raw_rate(cfg, a.model, a.framework, a.rep, a.models, json.loads(a.placement))
        nodes, cpus = slurm_job()
        pl = placement(nodes, os.environ.get("SLURMD_NODENAME", ""), cpus)
        relay = raw_rate_relay(list(sys.argv[1:] if argv is None else argv), pl, shlex.split(a.server_exec))
        if relay is None:
            return run_raw_rate(cfg, a.model, a.framework, a.rep, a.models, pl)
        _progress("raw rate on the server node: " + shlex.join(relay)[:600])
        return subprocess.run(relay, env=_env()).returncode
    return run_ceiling(cfg, a.rep, shlex.split(a.driver_exec))


if __name__ == "__main__":
    sys.exit(main())
