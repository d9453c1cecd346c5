#!/usr/bin/env bash
# Debian's kubectl 1.20 (package kubernetes-client, the paper's Kubernetes version) for the offline
# manifest checks, unpacked into the cache rather than installed: a machine may already have
# another package's /usr/bin/kubectl, which kubernetes-client would conflict with. Idempotent;
# prints the kubectl path last. Uses /usr/bin/kubectl directly where that already is 1.20.
set -euo pipefail
VERSION_RE='v1\.20\.'
if /usr/bin/kubectl version --client 2>/dev/null | grep -q "GitVersion:\"$VERSION_RE"; then
    echo /usr/bin/kubectl
    exit 0
fi
CACHE=${REPRO_CACHE:-$HOME/.cache/repro}
candidate=$(apt-cache policy kubernetes-client 2>/dev/null | awk '/Candidate:/ {print $2}')
[ -n "$candidate" ] && [ "$candidate" != "(none)" ] || { echo "setup: no kubernetes-client in apt (apt-get update?)" >&2; exit 1; }
dir="$CACHE/kubectl-$(echo "$candidate" | sha256sum | cut -c1-12)"
if [ ! -f "$dir/.complete" ]; then
    echo "setup: unpacking kubernetes-client $candidate into $dir" >&2
    rm -rf "$dir"
    mkdir -p "$dir/deb"
    (cd "$dir/deb" && apt-get download "kubernetes-client=$candidate" >&2)
    dpkg -x "$dir"/deb/kubernetes-client_*.deb "$dir/root"
    ln -s root/usr/bin/kubectl "$dir/kubectl"
    "$dir/kubectl" version --client | grep -q "GitVersion:\"$VERSION_RE" || { echo "setup: not kubectl 1.20" >&2; exit 1; }
    rm -rf "$dir/deb"
    touch "$dir/.complete"
fi
echo "$dir/kubectl"
