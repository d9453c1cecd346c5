"""Helpers of the storage study's tests: its config section as the workflow sees it."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from repro import config as rc

REPO = Path(__file__).resolve().parents[4]


def section(local: bool = True, **overrides) -> dict:
    """config/config.yaml's storage section (merged with config/local.yaml's when `local`), defaults
    filled in by the study's schema, then `overrides` merged recursively."""
    cfg = yaml.safe_load((REPO / "config/config.yaml").read_text())["storage"]
    if local:
        cfg = rc.deep_merge(cfg, yaml.safe_load((REPO / "config/local.yaml").read_text())["storage"])
    cfg = rc.deep_merge(cfg, overrides)
    schema = {"type": "object", "properties": {"storage": rc.study_schema("storage")}}
    return copy.deepcopy(rc.validate({"storage": cfg}, schema=schema)["storage"])


def job_argv(cfg: dict, what: str, name: str, bench: str | None = None, rep: int = 0, launcher: str = "local",
             config: str | None = None, raw_dir: str | None = None) -> list[str]:
    """run.py's arguments for one job, as the run rules give them (the run contract): the experiment
    (the benchmark, or limit-<name>), --config (`config`, else `cfg` as JSON), --params, --rep and
    --out (every raw file of the job: layout.py's paths, under `raw_dir`)."""
    import json

    from studies.storage import layout

    raw = {} if raw_dir is None else {"raw_dir": raw_dir}
    if what == "stack":
        head, params = [bench], {"stack": name, "launcher": launcher}
        outs = layout.job_outputs(cfg, name, bench, rep, **raw)
    else:
        head, params = [f"limit-{name}"], {"launcher": launcher}
        outs = [layout.limit_path(name, rep, **raw)]
    return [*head, "--config", config or json.dumps(cfg), "--params", json.dumps(params), "--rep", str(rep),
            "--out", *outs]


def write_raw_tree(root, cfg: dict, failed=(), skip=()) -> list[str]:
    """Synthetic raw records of every configuration `cfg` plans (COSBench: throughput, bandwidth and
    response time of the main stage; mdtest: rate/max/min of each phase; fio's sequential bandwidth;
    the driver's ceiling per size, workers and operation), shaped like the paper (Lustre+MinIO ~1.3x
    Ceph, JuiceFS slower), each value a function of the configuration and repeat. Paths in `failed`
    get a failure record, paths in `skip` none. Returns the paths written."""
    from repro import paramspace, rawio

    from studies.storage import analysis, layout

    factor = {"ceph": 1.0, "lustre-minio": 1.3, "juicefs": 0.7}
    written = []
    for path in layout.expected_raw(cfg):
        if path in skip:
            continue
        p, rep = paramspace.parse_path(path), int(paramspace.parse_path(path)["rep"])
        jitter = 1 + 0.01 * rep
        if "stack" in p:
            stack, workers = p["stack"], int(p["workers"])
            rec = rawio.new_record(layout.STUDY, p["benchmark"],
                                   {"stack": stack, "benchmark": p["benchmark"], "size": p["size"],
                                    "workers": workers, "nodes": cfg["nodes"][0]},
                                   rep, layout.system_kind(cfg, stack, p["benchmark"]), {})
            if p["benchmark"] == "cosbench":
                mb = analysis.size_bytes(p["size"]) / 1e6
                tp = factor[stack] * 300 * workers / (1 + mb) * jitter
                rec["metrics"] = [rawio.metric("throughput", tp, "op/s", op="all"),
                                  rawio.metric("bandwidth", tp * mb * 1e6, "B/s", op="all"),
                                  rawio.metric("avg_res_time", 2.6 * (1 + mb) / factor[stack] * jitter, "ms", op="all")]
            else:
                rec["metrics"] = [rawio.metric(m, factor[stack] * 1000 * (i + 1) * workers * k * jitter, "op/s", op=op)
                                  for i, op in enumerate(analysis.MAJOR_OPS)
                                  for m, k in (("rate", 1.0), ("rate_max", 1.1), ("rate_min", 0.9))]
        elif p["limit"] == "fio":
            rec = rawio.new_record(layout.STUDY, "limit-fio", {"limit": "fio"}, rep, "real", {})
            rec["metrics"] = [rawio.metric("bandwidth", 2e9 * jitter if rw == "read" else 1e9 * jitter, "B/s",
                                           rw=rw, bs=bs, direct="True")
                              for rw in ("read", "write") for bs in cfg["limit"]["fio_sizes"]]
        else:
            rec = rawio.new_record(layout.STUDY, "limit-ceiling", {"limit": "ceiling"}, rep, "stand-in:memserver", {})
            rec["metrics"] = [rawio.metric("throughput", 5000 * w / (1 + analysis.size_bytes(z) / 1e6) * jitter, "op/s",
                                           op=op, size=z, workers=w)
                              for z in cfg["limit"]["ceiling_sizes"] for w in cfg["limit"]["ceiling_workers"]
                              for op in ("read", "write")]
        target = Path(root) / path
        if path in failed:
            rawio.write_failure(str(target), rec, "synthetic failure")
        else:
            rawio.write_json_atomic(target, rawio.finish(rec))
        written.append(path)
    return written
