"""The function director of paper 003 (Decker, Kasprzak, Kunkel 2022), Sec. 2.4.

One benchmark run, as the paper lists it: (1) set the number of function instances, (2) prepare
the test data, (3) start the timer, (4) submit the data as function invocations until all of it
has been processed, keeping at most ``per_instance`` active requests per function instance
(2 for images, 4 for bytes: "The rate was set as active requests instead of requests per
second"), retrying every failed request until it succeeds ("If the processing of an image
failed ... then the image was retried until it could be processed"), (5) stop the timer,
(6) save the results: one JSON file per run with every request's start, end, bytes, status and
retry count, and the totals (recomputable from the requests: see ``recompute_totals``).

Plain threads and ``http.client`` with one keep-alive connection per active-request slot; its
ceiling is measured against a bare echo server (``python -m tools.fdirector ceiling``).
"""

from __future__ import annotations

import datetime as _dt
import http.client
import json
import os
import queue
import random
import subprocess
import threading
import time
import urllib.parse
import zlib
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SCHEMA = "repro.fdirector.run/1"
FAILED_SCHEMA = "repro.fdirector.failed/1"  # a run the platform refused for good (e.g. 413)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PER_INSTANCE = {"images": 2, "bytes": 4, "echo": 4}  # active requests per instance (paper Sec. 2.4)
RETRYABLE_STATUS = {429, 500, 502, 503, 504}


class DirectorError(RuntimeError):
    """A run that cannot complete: bad input, a permanent HTTP error, a wrong answer."""


class PermanentHTTPError(DirectorError):
    """The platform answered with a status that retrying cannot fix (e.g. 413 over a body limit)."""

    def __init__(self, status: int, reason: str, body: bytes, index: int):
        self.status = status
        self.body = body
        super().__init__(f"request {index}: HTTP {status} {reason} (not retried): "
                         f"{body[:300].decode('utf-8', 'replace').strip()}")


class WrongAnswer(DirectorError):
    pass


# --------------------------------------------------------------------------- workloads

Check = Callable[[bytes, bytes], "str | None"]


@dataclass
class Workload:
    """The prepared test data of one run: the payloads and how to check each answer."""

    name: str  # images | bytes | echo
    payloads: list[bytes]
    check: Check
    labels: list[str] = field(default_factory=list)  # e.g. image file names
    content_type: str = "application/octet-stream"
    prep: dict = field(default_factory=dict)  # how the data was prepared (step 2), copied into the raw file


def check_reversed(payload: bytes, answer: bytes) -> str | None:
    if answer != payload[::-1]:
        return f"answer of {len(answer)} bytes is not the reverse of the {len(payload)}-byte request"
    return None


def check_echo(payload: bytes, answer: bytes) -> str | None:
    if answer != payload:
        return f"echo answer of {len(answer)} bytes differs from the {len(payload)}-byte request"
    return None


def png_size(data: bytes) -> tuple[int, int] | None:
    if len(data) < 24 or not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def check_png(payload: bytes, answer: bytes) -> str | None:
    size_in, size_out = png_size(payload), png_size(answer)
    if size_out is None:
        return f"answer of {len(answer)} bytes is not a PNG image: {answer[:80]!r}"
    if size_in is not None and size_out[0] != size_in[0]:
        return f"answer is {size_out[0]}x{size_out[1]}, the request was {size_in[0]}x{size_in[1]}"
    return None


def image_workload(images: Sequence[Path | str], limit: int | None = None, change_pixel: str | None = None) -> Workload:
    """Reads the PNG test images into memory (step 2, before the timer). With ``change_pixel`` (a seed,
    one per run) one pixel of every image is changed first, as the paper's director did before each run
    (its ``randomize_images``: a random pixel set to 0 or 255, the image saved again), so no run sends
    the bytes of an earlier one."""
    paths = sorted(Path(p) for p in images)
    if limit is not None:
        paths = paths[:limit]
    if not paths:
        raise DirectorError("no test images given")
    payloads = []
    for p in paths:
        data = p.read_bytes()
        if png_size(data) is None:
            raise DirectorError(f"{p}: not a PNG image")
        payloads.append(data)
    w = Workload("images", payloads, check_png, [p.name for p in paths], "image/png")
    if change_pixel is not None:
        def one(i: int) -> tuple[bytes, int]:
            return change_one_pixel(payloads[i], random.Random(f"{change_pixel}:{paths[i].name}"))

        with ThreadPoolExecutor(max_workers=max(1, min(16, os.cpu_count() or 1))) as pool:  # zlib frees the GIL
            done = list(pool.map(one, range(len(payloads))))
        w.payloads = [d for d, _ in done]
        w.prep = {"pixel_changed": True, "seed": change_pixel, "columns": [x for _, x in done],
                  "bytes_original": sum(len(d) for d in payloads), "bytes_sent": sum(len(d) for d, _ in done)}
    return w


_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # PNG colour type -> samples per pixel


def _unfilter(kind: int, row: bytearray, prior: bytes, bpp: int) -> bytearray:
    out = bytearray(row)
    for i in range(len(out)):
        a = out[i - bpp] if i >= bpp else 0
        b = prior[i]
        c = prior[i - bpp] if i >= bpp else 0
        if kind == 1:
            out[i] = (out[i] + a) & 0xFF
        elif kind == 2:
            out[i] = (out[i] + b) & 0xFF
        elif kind == 3:
            out[i] = (out[i] + ((a + b) >> 1)) & 0xFF
        elif kind == 4:
            pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
            pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            out[i] = (out[i] + pred) & 0xFF
        elif kind != 0:
            raise DirectorError(f"PNG row filter {kind} unknown")
    return out


def _chunk(kind: bytes, data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + kind + data + (zlib.crc32(kind + data) & 0xFFFFFFFF).to_bytes(4, "big")


def change_one_pixel(png: bytes, rng: random.Random) -> tuple[bytes, int]:
    """The PNG with one pixel of its first row changed (set to 0, or to the maximum where it already is
    0), and that pixel's column. The first row is the one a pixel can be changed in without decoding
    the rows above it: rows 0 and 1 are unfiltered and stored unfiltered (row 1's filter referred to
    row 0), the rest of the stream stays as it was; the image data is compressed again with the settings
    libpng uses under ImageMagick 6 (zlib level 7, memLevel 9, Z_FILTERED: an mkimages image comes back
    within a few bytes of its size)."""
    if not png.startswith(PNG_SIGNATURE):
        raise DirectorError("not a PNG image")
    pos, chunks = len(PNG_SIGNATURE), []
    while pos < len(png):
        n = int.from_bytes(png[pos:pos + 4], "big")
        chunks.append((png[pos + 4:pos + 8], png[pos + 8:pos + 8 + n]))
        pos += 12 + n
    ihdr = chunks[0][1]
    width, height, depth, ctype, interlace = (int.from_bytes(ihdr[0:4], "big"), int.from_bytes(ihdr[4:8], "big"),
                                              ihdr[8], ihdr[9], ihdr[12])
    if chunks[0][0] != b"IHDR" or interlace or depth < 8 or ctype not in _CHANNELS:
        raise DirectorError(f"PNG not supported for the pixel change (depth {depth}, colour type {ctype}, "
                            f"interlace {interlace})")
    bpp = _CHANNELS[ctype] * depth // 8
    stride = width * bpp
    raw = bytearray(zlib.decompress(b"".join(d for k, d in chunks if k == b"IDAT")))
    if len(raw) != height * (stride + 1):
        raise DirectorError(f"PNG image data of {len(raw)} bytes, want {height * (stride + 1)}")
    row0 = _unfilter(raw[0], raw[1:1 + stride], bytes(stride), bpp)
    x = rng.randrange(width)
    px = row0[x * bpp:(x + 1) * bpp]
    row0[x * bpp:(x + 1) * bpp] = (b"\xff" if not any(px) else b"\x00") * bpp
    if height > 1:
        old0 = _unfilter(raw[0], raw[1:1 + stride], bytes(stride), bpp)
        row1 = _unfilter(raw[1 + stride], raw[2 + stride:2 + 2 * stride], old0, bpp)
        raw[1 + stride:2 + 2 * stride] = b"\x00" + row1
    raw[0:1 + stride] = b"\x00" + row0
    co = zlib.compressobj(7, zlib.DEFLATED, 15, 9, zlib.Z_FILTERED)  # libpng's settings under ImageMagick 6
    idat = co.compress(bytes(raw)) + co.flush()
    out, placed = [png[:len(PNG_SIGNATURE)]], False
    for k, d in chunks:
        if k == b"IDAT":
            if not placed:
                out.append(_chunk(b"IDAT", idat))
                placed = True
            continue
        out.append(_chunk(k, d))
    return b"".join(out), x


def byte_payload(size: int, seed: int = 3) -> bytes:
    if size < 0:
        raise DirectorError(f"request size {size} < 0")
    return random.Random(seed * 1_000_003 + size).randbytes(size)


def bytes_workload(size: int, count: int, echo: bool = False, seed: int = 3) -> Workload:
    """``count`` requests of ``size`` pseudo-random bytes (one payload object, sent ``count`` times)."""
    if count < 1:
        raise DirectorError(f"request count {count} < 1")
    payload = byte_payload(size, seed)
    if echo:
        return Workload("echo", [payload] * count, check_echo)
    expected = payload[::-1]  # computed once, before the timer

    def check(sent: bytes, answer: bytes) -> str | None:
        if sent is payload and answer == expected:
            return None
        return check_reversed(sent, answer)

    return Workload("bytes", [payload] * count, check)


# --------------------------------------------------------------------------- scaling

Scaler = Callable[[int], None]


def url_scaler(scale_url: str, timeout: float = 60.0) -> Scaler:
    """Sets the instance count with POST {"replicas": N} (the stand-ins' /system/scale; OpenFaaS's
    /system/scale-function/<name> takes the same body) and checks the answer's replica count."""

    def scale(n: int) -> None:
        status, body = _post_json(scale_url, {"replicas": n}, timeout)
        if status != 200:
            raise DirectorError(f"scaling to {n} via {scale_url}: HTTP {status}: {body[:300]!r}")
        try:
            replicas = json.loads(body).get("replicas")
        except ValueError:
            replicas = n  # a platform that answers without a body
        if replicas != n:
            raise DirectorError(f"scaling to {n} via {scale_url}: platform reports {replicas} replicas")

    return scale


def command_scaler(argv_template: Sequence[str]) -> Scaler:
    """Sets the instance count by running a command; ``{n}`` in any argument is the count
    (e.g. ``systems/openfaas/deploy.sh scale --kubeconfig K --replicas {n}``)."""

    def scale(n: int) -> None:
        argv = [a.replace("{n}", str(n)) for a in argv_template]
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            raise DirectorError(f"scale command {argv} failed ({done.returncode}): {done.stderr.strip()[-500:]}")

    return scale


def _post_json(url: str, obj: dict, timeout: float) -> tuple[int, bytes]:
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout)
    try:
        conn.request("POST", u.path or "/", body=json.dumps(obj).encode(), headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


# --------------------------------------------------------------------------- the run


@dataclass
class RunSpec:
    url: str  # the function's endpoint
    instances: int
    per_instance: int
    variant: str = "parallel"  # parallel | single
    timeout_s: float = 300.0  # per attempt
    max_retries: int = 100  # per request: a safety stop (the paper retried without bound); then the run fails
    labels: dict = field(default_factory=dict)  # study, system, repeat ... copied into the raw file

    @property
    def concurrency(self) -> int:
        return 1 if self.variant == "single" else self.instances * self.per_instance


class _Client:
    """One active-request slot: a keep-alive connection, reopened after any failure."""

    def __init__(self, url: str, timeout: float):
        u = urllib.parse.urlsplit(url)
        if u.scheme != "http" or not u.hostname:
            raise DirectorError(f"function URL {url!r}: want http://host:port/path")
        self.host, self.port = u.hostname, u.port or 80
        self.path = (u.path or "/") + (f"?{u.query}" if u.query else "")
        self.timeout = timeout
        self.conn: http.client.HTTPConnection | None = None

    def post(self, body: bytes, content_type: str) -> tuple[int, str, dict, bytes]:
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            self.conn.request("POST", self.path, body=body,
                              headers={"Content-Type": content_type, "Content-Length": str(len(body))})
            resp = self.conn.getresponse()
            data = resp.read()
        except BaseException:
            self.close()
            raise
        if resp.will_close:
            self.close()
        return resp.status, resp.reason, {k.lower(): v for k, v in resp.getheaders()}, data

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class _ProcessClient:
    """The paper's single-host baseline (Sec. 2.1): the function run directly, no platform. A URL
    ``exec:/path/to/binary`` makes the director fork the binary per request with the body on stdin."""

    def __init__(self, url: str, timeout: float):
        self.argv = [url.removeprefix("exec:")]
        if not os.access(self.argv[0], os.X_OK):
            raise DirectorError(f"{url}: not an executable file")
        self.timeout = timeout

    def post(self, body: bytes, content_type: str) -> tuple[int, str, dict, bytes]:
        done = subprocess.run(self.argv, input=body, capture_output=True, timeout=self.timeout)
        status = 200 if done.returncode == 0 else 500
        headers = {"x-repro-system-kind": "none:direct-exec", "x-repro-instance": "local"}
        return status, done.stderr.decode("utf-8", "replace")[-300:], headers, done.stdout

    def close(self) -> None:
        pass


def run(spec: RunSpec, workload: Workload, scale: Scaler | None = None, progress: bool = False) -> dict:
    """One benchmark run (paper Sec. 2.4 steps 1-5); returns the raw record (step 6: ``save_raw``)."""
    if spec.instances < 1 or spec.per_instance < 1:
        raise DirectorError(f"instances={spec.instances}, per_instance={spec.per_instance}: both must be >= 1")
    if spec.variant not in ("parallel", "single"):
        raise DirectorError(f"variant {spec.variant!r}: want parallel or single")
    if scale is not None:  # (1) set the number of function instances
        scale(spec.instances)
    payloads = workload.payloads  # (2) the data was prepared by the workload constructor
    n = len(payloads)
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(n):
        todo.put(i)
    records: list[dict | None] = [None] * n
    abort: list[BaseException] = []
    done_count = [0]
    lock = threading.Lock()
    client_type = _ProcessClient if spec.url.startswith("exec:") else _Client
    clients = [client_type(spec.url, spec.timeout_s) for _ in range(min(spec.concurrency, n))]
    t0 = time.perf_counter()  # (3) start the timer
    wall0 = time.time()

    def worker(client: _Client) -> None:
        while not abort:
            try:
                i = todo.get_nowait()
            except queue.Empty:
                return
            try:
                records[i] = _one_request(client, i, payloads[i], workload, spec, t0)
            except BaseException as exc:  # noqa: BLE001 - reported to the caller below
                abort.append(exc)
                return
            with lock:
                done_count[0] += 1
                if progress and (done_count[0] % max(1, n // 10) == 0 or done_count[0] == n):
                    print(f"fdirector: {done_count[0]}/{n} requests done", flush=True)

    threads = [threading.Thread(target=worker, args=(c,), daemon=True) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0  # (5) stop the timer
    for c in clients:
        c.close()
    if abort:
        raise abort[0]
    reqs = [r for r in records if r is not None]
    raw = {
        "schema": SCHEMA,
        "workload": workload.name,
        "variant": spec.variant,
        "url": spec.url,
        "instances": spec.instances,
        "per_instance": spec.per_instance,
        "concurrency": spec.concurrency,
        "system_kind": _system_kind(reqs),
        "started_at": _dt.datetime.fromtimestamp(wall0, _dt.UTC).isoformat(timespec="milliseconds"),
        "elapsed_s": elapsed,
        "labels": dict(spec.labels),
        "requests": reqs,
    }
    if workload.prep:
        raw["prepared"] = workload.prep
    raw["totals"] = recompute_totals(raw)
    return raw


def _one_request(client: _Client, i: int, payload: bytes, workload: Workload, spec: RunSpec, t0: float) -> dict:
    retries = 0
    errors: list[str] = []
    start = time.perf_counter() - t0
    while True:
        attempt_start = time.perf_counter() - t0
        try:
            status, reason, headers, data = client.post(payload, workload.content_type)
        except (OSError, http.client.HTTPException) as exc:
            status, reason, headers, data = None, f"{type(exc).__name__}: {exc}", {}, b""
        if status == 200:
            problem = workload.check(payload, data)
            if problem:
                raise WrongAnswer(f"request {i} ({_label(workload, i)}): {problem} "
                                  f"[{headers.get('x-repro-system-kind', '?')} {headers.get('x-repro-instance', '')}]")
            end = time.perf_counter() - t0
            return {"index": i, "label": _label(workload, i), "start": start, "end": end,
                    "last_attempt_start": attempt_start, "bytes_sent": len(payload), "bytes_received": len(data),
                    "status": status, "retries": retries, "errors": errors[-5:],
                    "instance": headers.get("x-repro-instance"), "system_kind": headers.get("x-repro-system-kind")}
        if status is not None and status not in RETRYABLE_STATUS:
            raise PermanentHTTPError(status, reason, data, i)
        retries += 1
        errors.append(f"{status or 'no status'}: {reason if status is None else data[:200].decode('utf-8', 'replace')}"
                      .strip())
        if retries > spec.max_retries:
            raise DirectorError(f"request {i}: still failing after {spec.max_retries} retries: {errors[-1]}")
        time.sleep(min(1.0, 0.02 * 2 ** min(retries, 6)))


def _label(workload: Workload, i: int) -> str:
    return workload.labels[i] if workload.labels else str(i)


def _system_kind(reqs: list[dict]) -> str:
    kinds = sorted({r["system_kind"] or "unlabelled" for r in reqs})
    return "+".join(kinds) if kinds else "none"


def recompute_totals(raw: dict) -> dict:
    """The run's totals from its per-request records and elapsed time (throughput as the paper
    computes it: input bytes over the time for all requests, y = n*b/t; images/s = n/t)."""
    reqs = raw["requests"]
    t = raw["elapsed_s"]
    sent = sum(r["bytes_sent"] for r in reqs)
    totals = {
        "requests": len(reqs),
        "retries": sum(r["retries"] for r in reqs),
        "bytes_sent": sent,
        "bytes_received": sum(r["bytes_received"] for r in reqs),
        "elapsed_s": t,
        "requests_per_s": len(reqs) / t if t > 0 else None,
        "throughput_mib_s": sent / t / 2**20 if t > 0 else None,
        "instances_seen": len({r["instance"] for r in reqs if r["instance"]}),
    }
    if raw.get("variant") == "single":
        per = [r["bytes_sent"] / (r["end"] - r["last_attempt_start"]) / 2**20 for r in reqs
               if r["end"] > r["last_attempt_start"]]
        totals["single_mean_mib_s"] = sum(per) / len(per) if per else None
    return totals


def save_raw(raw: dict, path: Path | str) -> Path:
    """Writes the raw record atomically (a crash never leaves a partial file under the final name)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)
    return path


def load_raw(path: Path | str) -> dict:
    raw = json.loads(Path(path).read_text())
    if raw.get("schema") != SCHEMA:
        raise DirectorError(f"{path}: schema {raw.get('schema')!r}, want {SCHEMA}")
    return raw
