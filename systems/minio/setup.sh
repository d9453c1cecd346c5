#!/usr/bin/env bash
# Builds MinIO from its Go module at the pinned pseudo-version (versions.env) and caches the
# static binary under ${REPRO_CACHE:-$HOME/.cache/repro}/minio-<version>/bin/minio.
# Cold: ≈12 min on 2 cores (at most 2 build jobs, GOFLAGS=-p=2). Warm: a no-op.
# Needs a Go >= 1.21 on PATH (or /usr/local/go/bin): it fetches the pinned toolchain
# (GO_TOOLCHAIN) itself through the module proxy.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=/dev/null
. "$here/versions.env"
cache="${REPRO_CACHE:-$HOME/.cache/repro}/minio-$MINIO_VERSION"
say() { echo "minio setup: $*"; }

if [ -f "$cache/.complete" ] && [ -x "$cache/bin/minio" ]; then
    say "cached: $cache/bin/minio"
    exit 0
fi

go=$(command -v go || true)
[ -n "$go" ] || go=/usr/local/go/bin/go
[ -x "$go" ] || { echo "minio setup: no Go found (need go >= 1.21 on PATH or /usr/local/go/bin/go)" >&2; exit 1; }

mkdir -p "$(dirname "$cache")"
tmp=$(mktemp -d "$(dirname "$cache")/.minio-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

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
