"""Configuration validation at start-up, with errors that name the key.

The schema is JSON Schema (draft 7) in YAML: ``workflow/schemas/config.schema.yaml`` holds the
global keys, and every study folder ``workflow/studies/<study>/schema.yaml`` the schema of the
config section of the same name (found here, registered nowhere; a study schema may include
files beside it with ``$ref: <file>.yaml``).  Defaults in
the schema are filled in.  Beyond types, two project-specific keywords are
checked:

* ``x-layout: n+1`` on a list of node counts: each count ``n`` needs ``n + 1``
  nodes (the driver node plus ``n`` system nodes), which must fit in
  ``cluster.partition_nodes``;
* ``x-layout: n`` on a list of node counts: ``n`` nodes must fit.

A third keyword splits what runs from what judges: ``x-judging: true`` on a property (a claim's
tolerance, a caption, a usability score) means that only the analysis reads it.  A benchmark rule
gets ``run_section(...)`` of its study's section, which leaves those out, so changing one re-runs
the claims, figures or tables that read it, never a benchmark (Snakemake re-runs a job whose
params changed).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path

import jsonschema
import yaml

WORKFLOW = Path(__file__).resolve().parents[2]
SCHEMA_DIR = WORKFLOW / "schemas"
STUDIES_DIR = WORKFLOW / "studies"


class ConfigError(ValueError):
    """An invalid configuration; the message names the offending key."""


def _inline_refs(node, base: Path):
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            target = yaml.safe_load((base / ref).read_text())
            merged = {**_inline_refs(target, base), **{k: v for k, v in node.items() if k != "$ref"}}
            return merged
        return {k: _inline_refs(v, base) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline_refs(v, base) for v in node]
    return node


def study_names(studies_dir: Path = STUDIES_DIR) -> list[str]:
    """Every study folder (one with a rules.smk), sorted: the one list of studies there is."""
    return sorted(p.parent.name for p in studies_dir.glob("*/rules.smk"))


def study_schema(study: str, studies_dir: Path = STUDIES_DIR) -> dict:
    """The schema of one study's config section (its folder's schema.yaml, refs inlined)."""
    sub = studies_dir / study / "schema.yaml"
    return _inline_refs(yaml.safe_load(sub.read_text()), sub.parent)


def load_schema(path: str | Path | None = None, studies_dir: Path = STUDIES_DIR) -> dict:
    """The global schema plus, under ``properties.<study>``, each study folder's schema.yaml."""
    path = Path(path) if path else SCHEMA_DIR / "config.schema.yaml"
    schema = _inline_refs(yaml.safe_load(path.read_text()), path.parent)
    props = schema.setdefault("properties", {})
    for study in study_names(studies_dir):
        if (studies_dir / study / "schema.yaml").exists():
            props[study] = study_schema(study, studies_dir)
    return schema


def _with_defaults(cls):
    validate_props = cls.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if isinstance(sub, dict) and "default" in sub and name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
        yield from validate_props(validator, properties, instance, schema)

    return jsonschema.validators.extend(cls, {"properties": set_defaults})


_Validator = _with_defaults(jsonschema.Draft7Validator)


def key_path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "<top level>"


def _describe(err: jsonschema.ValidationError) -> str:
    where = key_path(err.absolute_path)
    if err.validator == "additionalProperties":
        allowed = sorted((err.schema.get("properties") or {}).keys())
        extra = sorted(set(err.instance) - set(allowed)) if isinstance(err.instance, dict) else []
        keys = ", ".join(f"{where}.{k}" if where != "<top level>" else k for k in extra)
        return f"{keys}: unknown key (allowed here: {', '.join(allowed)})"
    if err.validator == "required":
        return f"{where}: {err.message}"
    return f"{where}: {err.message}"


def _walk_layouts(schema, value, path, out):
    if isinstance(schema, dict):
        layout = schema.get("x-layout")
        if layout and isinstance(value, list):
            for i, n in enumerate(value):
                out.append((path + [i], layout, n))
        props = schema.get("properties") or {}
        if isinstance(value, dict):
            for k, sub in props.items():
                if k in value:
                    _walk_layouts(sub, value[k], path + [k], out)
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                for k, v in value.items():
                    if k not in props:
                        _walk_layouts(extra, v, path + [k], out)
        items = schema.get("items")
        if isinstance(items, dict) and isinstance(value, list):
            for i, v in enumerate(value):
                _walk_layouts(items, v, path + [i], out)


def validate(config: Mapping, schema: dict | None = None, source: str = "config") -> dict:
    """Return the config with defaults filled in, or raise ConfigError naming every bad key."""
    schema = schema or load_schema()
    cfg = copy.deepcopy(dict(config))
    errors = sorted(_Validator(schema).iter_errors(cfg), key=lambda e: list(map(str, e.absolute_path)))
    messages = [_describe(e) for e in errors]
    if not messages:
        limit = cfg.get("cluster", {}).get("partition_nodes")
        found: list = []
        _walk_layouts(schema, cfg, [], found)
        for path, layout, n in found:
            if not isinstance(n, int) or limit is None:
                continue
            need = n + 1 if layout == "n+1" else n
            if need > limit:
                extra = f"{n} system nodes + 1 driver node = {need}" if layout == "n+1" else f"{n} nodes"
                messages.append(
                    f"{key_path(path)}: impossible layout, {extra} exceeds "
                    f"cluster.partition_nodes = {limit}")
    if messages:
        raise ConfigError(f"invalid configuration ({source}):\n  " + "\n  ".join(messages))
    return cfg


def judging_paths(schema: Mapping, prefix: tuple = (), marker: str = "x-judging") -> list[tuple]:
    """The key paths of the properties a study's schema marks ``x-judging: true`` (analysis only);
    with marker="x-plan", those marked ``x-plan: true`` (read only when the plan is made: a Slurm
    time limit, the kick-the-tires choice)."""
    out: list[tuple] = []
    for name, sub in (schema.get("properties") or {}).items():
        if not isinstance(sub, Mapping):
            continue
        if sub.get(marker):
            out.append(prefix + (name,))
        else:
            out.extend(judging_paths(sub, prefix + (name,), marker))
    return out


def run_section(section: Mapping, schema: Mapping) -> dict:
    """A study's config section without its judging and plan-only keys: what a benchmark job is
    given (changing one of them never re-runs a benchmark)."""
    out = copy.deepcopy(dict(section))
    for path in judging_paths(schema) + judging_paths(schema, marker="x-plan"):
        node = out
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(path[-1], None)
    return out


def load(path: str | Path, overrides: Mapping | None = None) -> dict:
    cfg = yaml.safe_load(Path(path).read_text()) or {}
    if overrides:
        cfg = deep_merge(cfg, overrides)
    return validate(cfg, source=str(path))


def deep_merge(a: Mapping, b: Mapping) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


if __name__ == "__main__":  # python -m repro.config config/local.yaml
    import sys

    try:
        load(sys.argv[1])
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        sys.exit(2)
    print(f"{sys.argv[1]}: valid")
