"""Command line of the function director (paper 003): one benchmark run per call, one raw JSON file.

  python -m tools.fdirector images  --url URL --instances N --images DIR [--limit K] --out RUN.json
  python -m tools.fdirector bytes   --url URL --instances N --size B [--requests 100] [--variant single]
  python -m tools.fdirector sweep   --url URL --instances N [--min-exp 0] [--max-exp 24] [--requests 100]
                                    [--variant single] --out-dir DIR   (bytes 2^min..2^max, one raw file per size)
  python -m tools.fdirector ceiling --url ECHO_URL --size B [--requests 100] [--concurrency 4] --out RUN.json
  python -m tools.fdirector images  --url exec:systems/faas-functions/build/imageproc --instances P ...  (baseline:
                                    the function run directly, P at a time with --per-instance 1, no platform)
  python -m tools.fdirector iperf3  [--host 127.0.0.1] [--port P --no-server] [--seconds 5] --out IPERF.json

Instance count: --scale-url URL (POST {"replicas": N}) or --scale-cmd 'CMD ... {n} ...'; without
either the platform is assumed to run N instances already. --label key=value goes into the raw file.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from . import director as fd
from .iperf import IperfError, run_iperf3


def _labels(items: list[str]) -> dict:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise fd.DirectorError(f"--label {item!r}: want key=value")
        out[key] = value
    return out


def _scaler(args) -> fd.Scaler | None:
    if args.scale_url and args.scale_cmd:
        raise fd.DirectorError("give --scale-url or --scale-cmd, not both")
    if args.scale_url:
        return fd.url_scaler(args.scale_url)
    if args.scale_cmd:
        return fd.command_scaler(shlex.split(args.scale_cmd))
    return None


def _sweep(args, labels: dict) -> int:
    """Bytes 2^min..2^max, one run (and raw file) per size. A size the platform refuses for good
    (e.g. 413 over nuclio-go's limit) leaves size~<b>.failed.json and the sweep goes on."""
    if not 0 <= args.min_exp <= args.max_exp <= 30:
        raise fd.DirectorError(f"--min-exp {args.min_exp} --max-exp {args.max_exp}: want 0 <= min <= max <= 30")
    per = args.per_instance or fd.PER_INSTANCE["bytes"]
    scale = _scaler(args)
    failed = 0
    for exp in range(args.min_exp, args.max_exp + 1):
        size = 2**exp
        spec = fd.RunSpec(args.url, args.instances, per, args.variant, args.timeout, args.max_retries,
                          labels={**labels, "size": str(size)})
        try:
            raw = fd.run(spec, fd.bytes_workload(size, args.requests), scale if exp == args.min_exp else None)
        except fd.PermanentHTTPError as exc:
            failed += 1
            fd.save_raw({"schema": fd.FAILED_SCHEMA, "size": size, "status": exc.status, "error": str(exc),
                         "url": args.url, "instances": args.instances, "variant": args.variant, "labels": spec.labels},
                        args.out_dir / f"size~{size}.failed.json")
            print(f"fdirector: {size} B: failed, HTTP {exc.status}", flush=True)
            continue
        fd.save_raw(raw, args.out_dir / f"size~{size}.json")
        print(f"fdirector: {size} B: {raw['totals']['throughput_mib_s']:.3f} MiB/s, "
              f"{raw['totals']['retries']} retries", flush=True)
    print(f"fdirector: sweep done, {failed} size(s) failed -> {args.out_dir}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.fdirector", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("images", "bytes", "sweep", "ceiling"):
        s = sub.add_parser(name)
        s.add_argument("--url", required=True, help="the function's (or echo server's) HTTP endpoint")
        if name == "sweep":
            s.add_argument("--out-dir", required=True, type=Path, help="size~<bytes>.json per size")
            s.add_argument("--min-exp", type=int, default=0)
            s.add_argument("--max-exp", type=int, default=24)
        else:
            s.add_argument("--out", required=True, type=Path, help="raw JSON file of this run")
        s.add_argument("--label", action="append", default=[], help="key=value copied into the raw file")
        s.add_argument("--timeout", type=float, default=300.0, help="seconds per attempt")
        s.add_argument("--max-retries", type=int, default=100, help="per request, then the run fails")
        if name != "ceiling":
            s.add_argument("--instances", type=int, required=True)
            s.add_argument("--per-instance", type=int, default=None,
                           help="active requests per instance (default: 2 images, 4 bytes)")
            s.add_argument("--scale-url")
            s.add_argument("--scale-cmd")
        if name == "images":
            s.add_argument("--images", required=True, type=Path, help="directory of PNG test images")
            s.add_argument("--limit", type=int, default=None, help="use the first K images")
        else:
            if name != "sweep":
                s.add_argument("--size", type=int, required=True, help="bytes per request")
            s.add_argument("--requests", type=int, default=100)
        if name in ("bytes", "sweep"):
            s.add_argument("--variant", choices=("parallel", "single"), default="parallel")
        if name == "ceiling":
            s.add_argument("--concurrency", type=int, default=4)
    s = sub.add_parser("iperf3")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=None)
    s.add_argument("--no-server", action="store_true", help="an iperf3 server already listens on host:port")
    s.add_argument("--seconds", type=float, default=5.0)
    s.add_argument("--out", required=True, type=Path)
    args = p.parse_args(argv)
    try:
        if args.cmd == "iperf3":
            parsed, raw = run_iperf3(args.host, args.port, args.seconds, start_server=not args.no_server)
            parsed["raw"] = json.loads(raw)
            fd.save_raw(parsed, args.out)
            print(f"fdirector: iperf3 {parsed['mib_per_s']:.1f} MiB/s -> {args.out}")
            return 0
        labels = _labels(args.label)
        if args.cmd == "sweep":
            return _sweep(args, labels)
        if args.cmd == "images":
            workload = fd.image_workload(sorted(args.images.glob("*.png")), args.limit)
        else:
            workload = fd.bytes_workload(args.size, args.requests, echo=args.cmd == "ceiling")
        if args.cmd == "ceiling":
            spec = fd.RunSpec(args.url, 1, args.concurrency, timeout_s=args.timeout, max_retries=args.max_retries,
                              labels=labels)
            scale = None
        else:
            per = args.per_instance or fd.PER_INSTANCE[workload.name]
            spec = fd.RunSpec(args.url, args.instances, per, getattr(args, "variant", "parallel"),
                              args.timeout, args.max_retries, labels=labels)
            scale = _scaler(args)
        raw = fd.run(spec, workload, scale, progress=True)
        fd.save_raw(raw, args.out)
        t = raw["totals"]
        print(f"fdirector: {t['requests']} requests in {t['elapsed_s']:.3f} s, {t['requests_per_s']:.2f}/s, "
              f"{t['throughput_mib_s']:.2f} MiB/s, {t['retries']} retries [{raw['system_kind']}] -> {args.out}")
        return 0
    except (fd.DirectorError, IperfError, OSError) as exc:
        print(f"fdirector: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
