"""Offline checks of the cluster manifests of systems/openfaas and systems/nuclio (paper 003).

No API server is reachable here, so ``kubectl --dry-run`` cannot run; instead the manifests a
deploy.sh would apply (``deploy.sh render``, i.e. ``kubectl kustomize`` with Debian's kubectl
1.20) are validated: core kinds with kubernetes-validate against the oldest schema it bundles
(1.25: it has none for the paper's 1.20), custom kinds (Nuclio's) against the JSON schemas in
systems/nuclio/schema/. Every error names the resource and the field.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path

import jsonschema
import kubernetes_validate
import yaml

HERE = Path(__file__).resolve().parent
SCHEMA_VERSION = "1.25.0"  # the oldest kubernetes-validate 1.37 bundles; the paper ran 1.20.8
CUSTOM_SCHEMAS = {("nuclio.io/v1beta1", "NuclioFunction"): HERE.parent / "nuclio" / "schema" / "nucliofunction.json",
                  ("nuclio.io/v1", "NuclioFunction"): HERE.parent / "nuclio" / "schema" / "nucliofunction.json"}


@functools.cache
def kubectl() -> str:
    """Debian's kubectl 1.20 (``$REPRO_KUBECTL``, else what systems/openfaas/setup.sh provides)."""
    if os.environ.get("REPRO_KUBECTL"):
        return os.environ["REPRO_KUBECTL"]
    out = subprocess.run([str(HERE / "setup.sh")], capture_output=True, text=True, check=True).stdout
    return out.strip().splitlines()[-1]


def render(deploy_sh: Path, registry: str | None = "registry.example:5000") -> list[dict]:
    """The manifests ``deploy.sh deploy`` would apply, parsed."""
    argv = [str(deploy_sh), "render"] + (["--registry", registry] if registry else [])
    done = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ, KUBECTL=kubectl()))
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr}")
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def name_of(doc: dict) -> str:
    meta = doc.get("metadata") or {}
    ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{doc.get('kind')} {ns}{meta.get('name')}"


def errors(doc: dict) -> list[str]:
    """Every problem of one manifest, each naming the resource and the field path."""
    key = (doc.get("apiVersion"), doc.get("kind"))
    if key in CUSTOM_SCHEMAS:
        schema = json.loads(CUSTOM_SCHEMAS[key].read_text())
        return [f"{name_of(doc)}: {'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
                for e in jsonschema.Draft7Validator(schema).iter_errors(doc)]
    try:
        kubernetes_validate.validate(doc, SCHEMA_VERSION, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{name_of(doc)}: {'.'.join(map(str, e.path)) or '(top)'}: {e.message}"]
    except kubernetes_validate.SchemaNotFoundError:
        return [f"{name_of(doc)}: no schema for {key[0]} {key[1]} (neither Kubernetes {SCHEMA_VERSION} nor ours)"]
    return []


def validate_all(docs: list[dict]) -> list[str]:
    return [e for d in docs for e in errors(d)]


def unreachable_kubeconfig(path: Path) -> Path:
    """A kubeconfig for a cluster nobody serves (127.0.0.1:1): commands that need the API fail fast."""
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "none",
        "clusters": [{"name": "none", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "none", "user": {"token": "none"}}],
        "contexts": [{"name": "none", "context": {"cluster": "none", "user": "none"}}]}))
    return path


def run_deploy(deploy_sh: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(deploy_sh), *args], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, KUBECTL=kubectl()))


def assert_deploy_refuses(deploy_sh: Path, tmp_path: Path, args: list[str], message: str) -> None:
    """deploy.sh with ARGS ("KC" = a kubeconfig of a cluster nobody serves) fails, saying MESSAGE."""
    kc = str(unreachable_kubeconfig(tmp_path / "kubeconfig"))
    done = run_deploy(deploy_sh, *[kc if a == "KC" else a for a in args])
    assert done.returncode != 0, done.stdout
    assert message in done.stderr, done.stderr
