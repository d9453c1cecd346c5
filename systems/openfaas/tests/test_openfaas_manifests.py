"""The OpenFaaS cluster path, offline: every manifest deploy.sh would apply renders with Debian's
kubectl 1.20 and validates against Kubernetes 1.25's schemas; a broken one is rejected with the
field named; deploy.sh refuses bad arguments and fails clearly without a cluster."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

FOLDER = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(FOLDER))
import k8scheck  # noqa: E402

DEPLOY = FOLDER / "deploy.sh"
FUNCTIONS = ["imageproc", "imageproc-np", "reverse"]


@pytest.fixture(scope="module")
def docs():
    return k8scheck.render(DEPLOY)


def by_kind(docs, kind):
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def test_kubectl_is_the_papers_version():
    out = subprocess.run([k8scheck.kubectl(), "version", "--client"], capture_output=True, text=True).stdout
    assert 'GitVersion:"v1.20.' in out


def test_every_manifest_validates(docs):
    assert k8scheck.validate_all(docs) == []
    assert k8scheck.validate_all(k8scheck.render(DEPLOY, registry=None)) == []
    kinds = sorted({d["kind"] for d in docs})
    assert kinds == ["Deployment", "Namespace", "Role", "RoleBinding", "Service", "ServiceAccount"]


def test_versions_and_layout_follow_the_paper(docs):
    deps, svcs = by_kind(docs, "Deployment"), by_kind(docs, "Service")
    images = {c["name"]: c["image"] for c in deps["gateway"]["spec"]["template"]["spec"]["containers"]}
    assert images == {"gateway": "ghcr.io/openfaas/gateway:0.21.1", "faas-netes": "ghcr.io/openfaas/faas-netes:0.14.1"}
    assert deps["gateway"]["spec"]["replicas"] == 2, "two gateway instances (paper Sec. 2.2)"
    assert svcs["gateway-external"]["spec"]["type"] == "NodePort"
    for f in FUNCTIONS:
        dep = deps[f]
        assert dep["metadata"]["namespace"] == "openfaas-fn" and dep["metadata"]["labels"]["faas_function"] == f
        (c,) = dep["spec"]["template"]["spec"]["containers"]
        assert c["image"].startswith("registry.example:5000/repro/openfaas-") and c["image"].endswith(":0.21")
        assert {e["name"]: e["value"] for e in c["env"]}["fprocess"] == f"/usr/local/bin/{f}"
        assert svcs[f]["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]


def _no_resources(docs):
    """No per-instance CPU/memory requests or limits: the paper left the platforms "mostly in their
    default configurations" (Sec. 4.2), and faas-netes sets none unless the function asks."""
    deps = by_kind(docs, "Deployment")
    for f in FUNCTIONS:
        (c,) = deps[f]["spec"]["template"]["spec"]["containers"]
        assert "resources" not in c, f"{f}: {c.get('resources')}"


def test_functions_have_no_cpu_or_memory_limits(docs, tmp_path):
    _no_resources(docs)
    old = tmp_path / "functions"  # the manifests before issue 21 had a 1-CPU limit: seen
    shutil.copytree(FOLDER / "k8s" / "functions", old)
    text = (old / "reverse.yaml").read_text()
    (old / "reverse.yaml").write_text(text.replace("          readinessProbe:", "          resources:\n"
                                                   "            limits: {cpu: \"1\", memory: 1Gi}\n"
                                                   "          readinessProbe:"))
    out = subprocess.run([k8scheck.kubectl(), "kustomize", str(old)], capture_output=True, text=True, check=True)
    with pytest.raises(AssertionError, match="reverse"):
        _no_resources(list(yaml.safe_load_all(out.stdout)))


def test_a_broken_manifest_is_rejected_with_the_field_named(tmp_path):
    broken = tmp_path / "functions"
    shutil.copytree(FOLDER / "k8s" / "functions", broken)
    text = (broken / "reverse.yaml").read_text()
    (broken / "reverse.yaml").write_text(text.replace("  replicas: 1\n", "  replicas: two\n", 1))
    out = subprocess.run([k8scheck.kubectl(), "kustomize", str(broken)], capture_output=True, text=True, check=True)
    errs = k8scheck.validate_all(list(yaml.safe_load_all(out.stdout)))
    assert len(errs) == 1
    assert "Deployment openfaas-fn/reverse: spec.replicas" in errs[0] and "'two' is not of type 'integer'" in errs[0]
    doc = yaml.safe_load((FOLDER / "k8s" / "platform" / "namespaces.yaml").read_text().split("---")[0])
    doc["spec"] = {"finalizerz": []}
    assert "spec" in k8scheck.errors(doc)[0] and "finalizerz" in k8scheck.errors(doc)[0]


@pytest.mark.parametrize("args,message", [
    (["scale", "--function", "reverse", "--replicas", "2"], "--kubeconfig FILE is required"),
    (["scale", "--kubeconfig", "/nonexistent", "--function", "reverse"], "no such readable file"),
    (["scale", "--kubeconfig", "KC", "--function", "resize", "--replicas", "2"], "want one of: imageproc"),
    (["scale", "--kubeconfig", "KC", "--function", "reverse", "--replicas", "two"], "want a whole number"),
    (["scale", "--kubeconfig", "KC", "--function", "reverse", "--replicas", "0"], "at least 1"),
    (["render", "--registry", "bad registry!"], "want host[:port][/path]"),
    (["launch"], "unknown command 'launch'"),
    (["url", "--kubeconfig", "KC", "--function", "reverse"], "service openfaas/gateway-external not found"),
])
def test_deploy_script_names_what_is_wrong(tmp_path, args, message):
    k8scheck.assert_deploy_refuses(DEPLOY, tmp_path, args, message)
