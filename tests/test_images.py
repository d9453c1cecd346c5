"""repro.images: an image whose definition fetches from outside the package registries is named at
once, with the host and the error, before any build is tried (issue 27); the project's own images
(debootstrap from Debian's mirror, pip from PyPI) are not."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

from repro import images, provenance

REPO = provenance.REPO_ROOT


def test_registry_images_and_fetches_are_found_in_the_definitions():
    needs = {d.stem: [n["host"] for n in images.needs(d)] for d in sorted((REPO / "containers").glob("*.def"))}
    assert needs["triton"] == ["nvcr.io"] and needs["tfserving"] == ["registry-1.docker.io"]
    assert needs["cosbench"] == ["github.com"] and needs["mdtest"] == ["github.com"]
    # memfs.def fetches IOR optionally (`if curl ...; then`): it does not decide
    for own in ("analysis", "mpifuse", "memfs", "ceph", "minio", "juicefs", "torchserve", "locust", "faas-functions"):
        assert needs[own] == [], (own, needs[own])


def test_needs_reads_bootstrap_from_and_required_fetches(tmp_path):
    d = tmp_path / "x.def"
    d.write_text("Bootstrap: docker\nFrom: ghcr.io/org/img:1\n%post\n    # curl https://comment.example\n"
                 "    curl -o a https://downloads.example.org/a.tgz\n"
                 "    if curl -o b https://optional.example; then :; fi\n"
                 "    wget https://example.org/c || true\n    pip install x -i https://pypi.org/simple\n")
    assert [n["host"] for n in images.needs(d)] == ["ghcr.io", "downloads.example.org"]
    d.write_text("Bootstrap: {{ BOOTSTRAP }}\nFrom: {{ FROM }}\n%post\n    apt-get install -y curl\n")
    assert images.needs(d) == []


def test_why_not_uses_a_real_probe(tmp_path):
    """A host that answers is reachable; a name that does not resolve is not, with the error."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    threading.Thread(target=lambda: srv.accept(), daemon=True).start()
    try:
        assert images.probe("127.0.0.1", port, 2.0) == ""
    finally:
        srv.close()
    err = images.probe("no-such-host.invalid", 443, 2.0)
    assert "name lookup failed" in err
    d = tmp_path / "y.def"
    d.write_text("Bootstrap: docker\nFrom: no-such-host.invalid/img:1\n")
    why = images.why_not(d)
    assert why.startswith("no-such-host.invalid unreachable: name lookup failed") and "Bootstrap: docker" in why


def test_the_build_rule_refuses_an_unbuildable_definition_at_once(tmp_path):
    """`python3 -m repro.images check` (the first command of rule build_container): exit 1 in well under
    a second of work, naming the host, and no apptainer run."""
    d = tmp_path / "z.def"
    d.write_text("Bootstrap: docker\nFrom: no-such-host.invalid/img:1\n")
    r = subprocess.run([sys.executable, "-m", "repro.images", "check", str(d)], capture_output=True, text=True,
                       timeout=60, cwd=REPO)
    assert r.returncode == 1 and "no-such-host.invalid unreachable" in r.stderr and "not trying" in r.stderr
    ok = subprocess.run([sys.executable, "-m", "repro.images", "check", str(REPO / "containers" / "mpifuse.def")],
                        capture_output=True, text=True, timeout=60, cwd=REPO)
    assert ok.returncode == 0 and "package registries only" in ok.stdout
