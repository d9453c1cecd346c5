#!/usr/bin/env bash
# Builds MinIO from its Go module at the pinned pseudo-version (versions.env) and caches the
# static binary under ${REPRO_CACHE:-$HOME/.cache/repro}/minio-<version>/bin/minio.
# Cold: ≈12 min on 2 cores (at most 2 build jobs, GOFLAGS=-p=2). Warm: a no-op.
# Needs a Go >= 1.21 on PATH (or /usr/local/go/bin): it fetches the pinned toolchain
# (GO_TOOLCHAIN) itself through the module proxy.
#
#   setup.sh [--install DIR]    also copy the binary to DIR
#   setup.sh --image DIR        build with throw-away caches (Go modules, build cache, toolchain),
#                               install into DIR, remove the caches (the container images use this)
set -euo pipefail
install_to= eph= tmp=
case "${1:-}" in
    --install) install_to=${2:?--install needs a directory} ;;
    --image)
        install_to=${2:?--image needs a directory}
        eph=$(mktemp -d /tmp/minio-image-build.XXXXXX)
        export REPRO_CACHE=$eph/cache GOPATH=$eph/go GOMODCACHE=$eph/go/pkg/mod GOCACHE=$eph/go-build
        ;;
    "") ;;
    *) echo "minio setup: unknown option $1 (--install DIR | --image DIR)" >&2; exit 2 ;;
esac
cleanup() {
    if [ -n "$tmp" ]; then rm -rf "$tmp"; fi
    if [ -n "$eph" ]; then chmod -R u+w "$eph"; rm -rf "$eph"; fi
}
trap cleanup EXIT
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=/dev/null
. "$here/versions.env"
cache="${REPRO_CACHE:-$HOME/.cache/repro}/minio-$MINIO_VERSION"
say() { echo "minio setup: $*"; }

install_bin() {
    if [ -n "$install_to" ]; then
        install -D -m 0755 "$cache/bin/minio" "$install_to/minio"
        say "installed $install_to/minio"
    fi
}

if [ -f "$cache/.complete" ] && [ -x "$cache/bin/minio" ]; then
    say "cached: $cache/bin/minio"
    install_bin
    exit 0
fi

go=${GO:-$(command -v go || true)}
[ -n "$go" ] || go=/usr/local/go/bin/go
[ -x "$go" ] || { echo "minio setup: no Go found (need a go on PATH, /usr/local/go/bin/go, or GO=...)" >&2; exit 1; }

mkdir -p "$(dirname "$cache")"
tmp=$(mktemp -d "$(dirname "$cache")/.minio-build.XXXXXX")

# A Go older than 1.21 (Debian bookworm has 1.19) cannot switch toolchains itself: fetch the
# pinned one as the module golang.org/toolchain through the module proxy, once, into the cache.
minor=$("$go" env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
if [ "${minor:-0}" -lt 21 ]; then
    tc="$(dirname "$cache")/go-$GO_TOOLCHAIN"
    if [ ! -x "$tc/bin/go" ]; then
        say "$("$go" env GOVERSION) is older than go1.21: fetching $GO_TOOLCHAIN through the module proxy"
        mod="golang.org/toolchain@v0.0.1-$GO_TOOLCHAIN.$("$go" env GOOS)-$("$go" env GOARCH)"
        dir=$(cd "$tmp" && GOFLAGS= "$go" mod download -json "$mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
        [ -x "$dir/bin" ] || { echo "minio setup: could not download $mod" >&2; exit 1; }
        rm -rf "$tc.tmp"
        cp -r "$dir" "$tc.tmp"
        chmod -R u+w "$tc.tmp"
        chmod +x "$tc.tmp"/bin/* "$tc.tmp"/pkg/tool/*/*
        mv "$tc.tmp" "$tc"
    fi
    go=$tc/bin/go
    unset GOROOT
fi

# pseudo-version v0.0.0-YYYYMMDDhhmmss-<12 hex> -> the build constants MinIO's own ldflags set
stamp=${MINIO_VERSION#v0.0.0-}; commit=${stamp#*-}; stamp=${stamp%%-*}
rfc="${stamp:0:4}-${stamp:4:2}-${stamp:6:2}T${stamp:8:2}:${stamp:10:2}:${stamp:12:2}Z"
pkg=github.com/minio/minio/cmd
ldflags="-s -w -X $pkg.Version=$rfc -X $pkg.ReleaseTag=DEVELOPMENT.${rfc//:/-}"
ldflags+=" -X $pkg.CommitID=$commit -X $pkg.ShortCommitID=$commit -X $pkg.CopyrightYear=${stamp:0:4}"

say "building $MINIO_MODULE@$MINIO_VERSION with $GO_TOOLCHAIN (GOFLAGS=-p=2; ≈12 min cold on 2 cores)"
start=$(date +%s)
env GOFLAGS=-p=2 GOTOOLCHAIN="$GO_TOOLCHAIN" GOBIN="$tmp/bin" CGO_ENABLED=0 \
    "$go" install -trimpath -ldflags "$ldflags" "$MINIO_MODULE@$MINIO_VERSION"
"$tmp/bin/minio" --version >/dev/null
rm -rf "$cache"
mkdir -p "$cache"
mv "$tmp/bin" "$cache/bin"
echo "$MINIO_MODULE@$MINIO_VERSION $GO_TOOLCHAIN built in $(( $(date +%s) - start )) s" > "$cache/BUILD"
touch "$cache/.complete"
say "built $cache/bin/minio in $(( $(date +%s) - start )) s"
install_bin
