"""Which device a run asked for, which it measured itself on, and the GPU's load while it ran (stdlib only).

The study's ``inference.device`` is ``cuda`` (the paper's GPU: one Quadro RTX 5000) or ``cpu`` (this
development machine). ``require(device)`` is the first thing every GPU step does: asked for ``cuda``
where no GPU is visible it raises :class:`NoGPU`, naming the host and Slurm node, so a GPU job can never
run on the CPU and report it as the paper's experiment. ``describe(device)`` is what every record
carries (the device measured: name, driver, memory; ``cpu`` records the CPU model and say no GPU), and
:class:`GpuSampler` samples the GPU's utilisation and memory during a run (NVML via ``nvidia-ml-py``
when importable, else ``nvidia-smi``; on ``cpu`` it samples nothing).
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import statistics
import subprocess
import threading
import time

DEVICES = ("cuda", "cpu")


class NoGPU(RuntimeError):
    """Asked for cuda, no GPU visible: the job must fail, never fall back to the CPU."""


def where() -> str:
    node = os.environ.get("SLURMD_NODENAME", "")
    host = socket.gethostname()
    return f"node {node} (host {host})" if node else f"host {host}"


def _smi(query: str) -> list[list[str]]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run([smi, f"--query-gpu={query}", "--format=csv,noheader,nounits"], capture_output=True,
                             text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if out.returncode != 0:
        return []
    return [[f.strip() for f in line.split(",")] for line in out.stdout.strip().splitlines() if line.strip()]


def _visible(rows: list) -> list:
    """The GPUs this process may use: CUDA_VISIBLE_DEVICES by index or UUID; empty, -1 or NoDevFiles = none.
    Where Slurm's device cgroup renumbers (CUDA_VISIBLE_DEVICES=0 while nvidia-smi shows only the job's
    GPU under its physical index), the first as many GPUs nvidia-smi shows."""
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd is None:
        return rows
    want = [c.strip() for c in cvd.split(",") if c.strip() and c.strip() not in ("-1", "NoDevFiles")]
    if not want:
        return []
    match = [r for r in rows if r[0] in want or r[1] in want]
    return match or rows[:len(want)]


def gpus() -> list[dict]:
    """The visible GPUs as nvidia-smi reports them (index, uuid, name, driver, memory MiB); [] without one."""
    rows = _visible(_smi("index,uuid,name,driver_version,memory.total"))
    return [{"index": r[0], "uuid": r[1], "name": r[2], "driver": r[3], "memory_total_mib": _num(r[4])}
            for r in rows if len(r) >= 5]


def require(device: str, probe=None) -> None:
    """Fail loudly if ``device`` is cuda and no GPU is visible (``probe``: a framework's own check)."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")
    if device != "cuda":
        return
    found = gpus()
    seen = bool(found) if probe is None else bool(probe())
    if not seen:
        cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
        raise NoGPU(f"device cuda asked for, but no GPU is visible on {where()} "
                    f"(nvidia-smi: {'found' if shutil.which('nvidia-smi') else 'not found'}, "
                    f"{len(found)} GPU(s); CUDA_VISIBLE_DEVICES={cvd!r}"
                    + ("" if probe is None else "; the framework sees none") + "): refusing to run on the CPU")


def _cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe(device: str) -> dict:
    """The device measured (not the one planned): for cuda the first visible GPU's name, driver, memory."""
    base = {"device": device, "host": socket.gethostname(), "node": os.environ.get("SLURMD_NODENAME", ""),
            "cpu_model": _cpu_model(), "cpus": os.cpu_count()}
    if device != "cuda":
        return {**base, "gpu_name": "", "gpu_driver": "", "gpu_memory_total_mib": None, "gpus_visible": 0}
    found = gpus()
    first = found[0] if found else {}
    return {**base, "gpu_name": first.get("name", ""), "gpu_driver": first.get("driver", ""),
            "gpu_memory_total_mib": first.get("memory_total_mib"), "gpu_uuid": first.get("uuid", ""),
            "gpus_visible": len(found)}


def _num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


class GpuSampler:
    """Samples GPU utilisation (%) and memory used (MiB) every ``interval`` s in a thread, between start and stop.

    ``summary()``: samples, source (nvml | nvidia-smi | none), mean/max utilisation, max memory. On cpu: none.
    """

    def __init__(self, device: str, interval: float = 0.5):
        self.device, self.interval = device, interval
        self.samples: list[dict] = []
        self.source = "none"
        self._stop = threading.Event()
        self._thread = None
        self._nvml = None

    def _read_nvml(self):
        import pynvml  # nvidia-ml-py

        h = self._nvml
        u = pynvml.nvmlDeviceGetUtilizationRates(h)
        m = pynvml.nvmlDeviceGetMemoryInfo(h)
        return float(u.gpu), m.used / 2**20

    def _read_smi(self):
        rows = _visible(_smi("index,uuid,utilization.gpu,memory.used"))
        if not rows:
            return None
        return _num(rows[0][2]), _num(rows[0][3])

    def _open(self) -> None:
        if self.device != "cuda":
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            idx = 0
            cvd = os.environ.get("CUDA_VISIBLE_DEVICES", "")
            first = cvd.split(",")[0].strip() if cvd else ""
            if first.isdigit():
                idx = int(first)
            self._nvml = (pynvml.nvmlDeviceGetHandleByUUID(first) if first.startswith("GPU-")
                          else pynvml.nvmlDeviceGetHandleByIndex(idx))
            self.source = "nvml"
        except Exception:  # not importable or no driver: nvidia-smi
            self._nvml = None
            self.source = "nvidia-smi" if shutil.which("nvidia-smi") else "none"

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                v = self._read_nvml() if self._nvml is not None else self._read_smi()
            except Exception:
                v = None
            if v:
                self.samples.append({"t": time.time(), "util_pct": v[0], "mem_used_mib": v[1]})
            self._stop.wait(self.interval)

    def start(self) -> GpuSampler:
        self._open()
        if self.source != "none":
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> dict:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        return self.summary()

    def summary(self, t0: float | None = None, t1: float | None = None) -> dict:
        return summarise(self.samples, self.source, t0, t1)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def summarise(samples: list[dict], source: str, t0: float | None = None, t1: float | None = None) -> dict:
    """Samples between t0 and t1 (epoch s; None = all) -> counts, mean/max utilisation, max memory."""
    s = [x for x in samples if (t0 is None or x["t"] >= t0) and (t1 is None or x["t"] <= t1)]
    util = [x["util_pct"] for x in s if x.get("util_pct") is not None]
    mem = [x["mem_used_mib"] for x in s if x.get("mem_used_mib") is not None]
    return {"gpu_samples": len(s), "gpu_sample_source": source,
            "gpu_util_mean_pct": round(statistics.fmean(util), 1) if util else None,
            "gpu_util_max_pct": max(util) if util else None,
            "gpu_mem_used_max_mib": max(mem) if mem else None}
