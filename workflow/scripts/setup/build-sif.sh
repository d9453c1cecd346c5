#!/usr/bin/env bash
# Build containers/<name>.def into a .sif, reusing a cached image when the
# definition (and every file it copies in, and the build arguments) is unchanged.
#
#   build-sif.sh DEF OUT [--bootstrap debootstrap|docker] [--mirror URL|auto] [--cache DIR] [--build-arg K=V]...
#
# --build-arg K=V: a further %arguments value (e.g. BASE=containers/sif/ceph.sif for an image
# layered on another with Bootstrap: localimage); a file value is hashed into the cache key.
#
# The cache key is a hash of the .def, the files named in its %files section and
# the build arguments, so a changed pin rebuilds and an unchanged one is a copy.
set -euo pipefail
def=$1 out=$2
shift 2
bootstrap=debootstrap mirror=auto cache=${REPRO_CACHE:-$HOME/.cache/repro}/sif
extra=()
while [ $# -gt 0 ]; do
    case $1 in
        --bootstrap) bootstrap=$2; shift 2 ;;
        --mirror) mirror=$2; shift 2 ;;
        --cache) cache=$2; shift 2 ;;
        --build-arg) extra+=(--build-arg "$2"); shift 2 ;;
        *) echo "build-sif: unknown option $1" >&2; exit 2 ;;
    esac
done
cache=${cache/#\~/$HOME}
[ "${REPRO_SIF_KEY_ONLY:-}" = 1 ] || command -v apptainer >/dev/null || { echo "build-sif: apptainer not on PATH (run ./repro setup)" >&2; exit 1; }

if [ "$mirror" = auto ]; then
    mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
    [ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
    [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
fi

# The host's CA bundle goes into the build, so that pip inside the image trusts
# what the host trusts (a site proxy, or this sandbox's egress CA).
# Several images build at once (one Snakemake job each): stage under a private name, then
# rename, so no build sees a half-written bundle and no cp races another one.
stage=$(dirname "$def")/.build
mkdir -p "$stage"
staged="$stage/host-ca.crt.$$"
: >"$staged"
for ca in "${SSL_CERT_FILE:-}" /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do
    if [ -n "$ca" ] && [ -s "$ca" ]; then cat "$ca" >"$staged"; break; fi
done
mv -f "$staged" "$stage/host-ca.crt"

name=$(basename "$out" .sif)
files=$(awk '/^%files/{f=1;next} /^%/{f=0} f && NF {print $1}' "$def")
# a %files entry is a file or a directory: a directory counts by every file in it (sorted, without
# Python's caches), so a changed source inside it rebuilds the image (issue 27: sha256sum of a
# directory hashed nothing, and an image kept a stale repro_inference/servers.py)
hash_entry() {
    if [ -d "$1" ]; then
        find "$1" -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
    else
        sha256sum "$1"
    fi
}
key=$( { cat "$def"; for f in $files; do hash_entry "$f"; done; echo "$bootstrap $mirror"
         for a in "${extra[@]}"; do echo "$a"; v=${a#*=}; if [ -f "$v" ]; then sha256sum "$v"; fi; done; } |
       sha256sum | cut -c1-16)
if [ "${REPRO_SIF_KEY_ONLY:-}" = 1 ]; then echo "$key"; exit 0; fi
cached=$cache/$name-$key.sif
mkdir -p "$cache" "$(dirname "$out")"
if [ -s "$cached" ]; then
    echo "build-sif: $name unchanged (key $key), reusing $cached"
else
    echo "build-sif: building $name (key $key, bootstrap $bootstrap, mirror $mirror)"
    tmp=$cached.tmp.$$
    trap 'rm -f "$tmp"' EXIT
    # BOOTSTRAP and MIRROR only for a definition that uses them: apptainer refuses an unused
    # build argument, and a layer (Bootstrap: localimage on a stack's .sif) names neither
    base_args=()
    grep -q '{{ *BOOTSTRAP *}}' "$def" && base_args+=(--build-arg "BOOTSTRAP=$bootstrap")
    grep -q '{{ *MIRROR *}}' "$def" && base_args+=(--build-arg "MIRROR=$mirror")
    apptainer build --force "${base_args[@]}" "${extra[@]}" "$tmp" "$def"
    mv "$tmp" "$cached"
fi
cp --reflink=auto "$cached" "$out.tmp.$$"
mv "$out.tmp.$$" "$out"
apptainer inspect --labels "$out" | sed 's/^/build-sif: /'
