"""Can an image be built here? Known before a build is tried (issue 27: the rehearsal's image step
ran 20 minutes for storage and inference before failing on images that fetch from outside the
package registries).

An Apptainer definition (``containers/<name>.def``) needs from the network:

* its base: ``Bootstrap: docker`` / ``oras`` / ``library`` / ``shub`` with a literal ``From:`` is a
  registry image (Docker Hub, nvcr.io, ...); ``Bootstrap: {{ BOOTSTRAP }}`` is the project's own
  (debootstrap from the Debian mirror by default) and ``localimage`` is a .sif built here;
* whatever its ``%post`` fetches: every ``http(s)://`` address on a line that is not a comment,
  except the package registries' own hosts. A fetch the section tolerates failing (``if curl ...``,
  ``... || true``, ``... || echo``) is optional and does not decide.

:func:`needs` lists the hosts a definition requires; :func:`unreachable` tries each (name lookup and a
TCP connect to port 443, a few seconds at most) and returns those that cannot be reached from here,
with the error. Nothing is assumed about this machine: on a cluster's login node that reaches
github.com the same definitions are buildable, and they are built.

    python3 -m repro.images check containers/cosbench.def [...]   # exit 1 naming what is unreachable
"""

from __future__ import annotations

import functools
import re
import socket
import sys
from pathlib import Path

# the package registries every image may use (Debian's mirror is passed in as MIRROR; PyPI for pip)
REGISTRY_HOSTS = ("deb.debian.org", "security.debian.org", "pypi.org", "files.pythonhosted.org",
                  "proxy.golang.org", "sum.golang.org", "index.crates.io", "static.crates.io",
                  "registry.npmjs.org", "repo.maven.apache.org", "repo1.maven.org")
REGISTRY_BOOTSTRAPS = {"docker": "registry-1.docker.io", "oras": "", "library": "cloud.apptainer.org",
                       "shub": "singularity-hub.org"}
URL = re.compile(r"https?://([A-Za-z0-9.-]+)")
OPTIONAL = re.compile(r"^\s*(if|elif|while)\b|\|\|\s*(true|echo|:)\b")


def _sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"header": []}
    cur = "header"
    for line in text.splitlines():
        m = re.match(r"^%(\w+)", line)
        if m:
            cur = m.group(1)
            out.setdefault(cur, [])
            continue
        out.setdefault(cur, []).append(line)
    return out


def needs(definition: str | Path, registries: tuple[str, ...] = REGISTRY_HOSTS) -> list[dict]:
    """The hosts outside the package registries that ``definition`` cannot be built without:
    ``[{"host", "why"}]`` (the base image's registry, a required fetch in %post)."""
    text = Path(definition).read_text()
    sec = _sections(text)
    head = {k.lower(): v.strip() for k, v in
            (ln.split(":", 1) for ln in sec["header"] if re.match(r"^\s*(Bootstrap|From)\s*:", ln, re.I))}
    out: list[dict] = []
    boot = head.get("bootstrap", "")
    if boot in REGISTRY_BOOTSTRAPS and "{{" not in boot:
        ref = head.get("from", "")
        first = ref.split("/", 1)[0]
        host = first if ("." in first or ":" in first) and "/" in ref else REGISTRY_BOOTSTRAPS[boot]
        if host:
            out.append({"host": host, "why": f"Bootstrap: {boot}, From: {ref}"})
    for name in ("post", "setup"):
        for line in sec.get(name, []):
            if line.lstrip().startswith("#") or OPTIONAL.search(line):
                continue
            for host in URL.findall(line):
                if host.lower() not in registries and not any(host.lower().endswith("." + r) for r in registries):
                    out.append({"host": host, "why": f"%{name} fetches {line.strip()[:120]}"})
    seen, uniq = set(), []
    for n in out:
        if n["host"] not in seen:
            seen.add(n["host"])
            uniq.append(n)
    return uniq


def _proxy_for(host: str) -> tuple[str, int] | None:
    """The HTTPS proxy the build's curl/apptainer would use for ``host`` (https_proxy, no_proxy)."""
    import os
    from urllib.parse import urlsplit

    proxy = os.environ.get("https_proxy") or os.environ.get("HTTPS_PROXY")
    skip = [d.strip().lstrip(".") for d in (os.environ.get("no_proxy") or os.environ.get("NO_PROXY") or "").split(",")
            if d.strip()]
    if not proxy or any(host == d or host.endswith("." + d) for d in skip):
        return None
    u = urlsplit(proxy if "://" in proxy else "http://" + proxy)
    return (u.hostname, u.port or 3128) if u.hostname else None


@functools.cache
def probe(host: str, port: int = 443, timeout: float = 4.0) -> str:
    """'' when ``host:port`` accepts a TCP connection from here (through the HTTPS proxy where one is
    set: then the proxy must accept one), else the error (one line)."""
    via = _proxy_for(host)
    if via:
        err = probe(via[0], via[1], timeout)
        return f"through the proxy {via[0]}:{via[1]}: {err}" if err else ""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as e:
        return f"name lookup failed ({e.strerror or e})"
    err = "no address"
    for family, kind, proto, _, addr in infos[:4]:
        try:
            with socket.socket(family, kind, proto) as s:
                s.settimeout(timeout)
                s.connect(addr)
                return ""
        except OSError as e:
            err = f"connect {addr[0]}:{port} failed ({e.strerror or e})"
    return err


def unreachable(definition: str | Path, probe_fn=probe) -> list[dict]:
    """The required hosts of ``definition`` that cannot be reached from here, each with its error."""
    return [{**n, "error": e} for n in needs(definition) if (e := probe_fn(n["host"]))]


def why_not(definition: str | Path, probe_fn=probe) -> str:
    """One line saying why ``definition`` cannot be built here, or '' when it can (as far as its
    fetches go)."""
    bad = unreachable(definition, probe_fn)
    return "; ".join(f"{b['host']} unreachable: {b['error']} ({b['why']})" for b in bad)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or argv[0] != "check":
        print("usage: python3 -m repro.images check DEF [DEF...]", file=sys.stderr)
        return 2
    rc = 0
    for d in argv[1:]:
        why = why_not(d)
        if why:
            rc = 1
            print(f"{d}: cannot be built from here, not trying: {why}", file=sys.stderr)
        else:
            print(f"{d}: every host it needs is reachable"
                  + (f" ({', '.join(n['host'] for n in needs(d))})" if needs(d) else " (package registries only)"))
    return rc


if __name__ == "__main__":
    sys.exit(main())
