#!/usr/bin/env bash
# Fetch iozone (Debian non-free, package iozone3) without touching the system's
# apt configuration: a private source list and state directory, `apt-get
# download`, then `dpkg -x` into the cache.  Idempotent: a second call only
# prints where the binary is.
#
#   tools/iozone/setup.sh                             # -> $REPRO_CACHE/iozone/usr/bin/iozone
#   IOZONE_VERSION=3.429-3 tools/iozone/setup.sh      # pin another Debian version
#
# Prints the path of the iozone binary on its last line.
set -euo pipefail
CACHE=${REPRO_CACHE:-$HOME/.cache/repro}
DEST=$CACHE/iozone
# the version Debian 12 (bookworm) non-free carries; pinned so every run uses the same build
VERSION=${IOZONE_VERSION:-489-1}
# sha256 of iozone3_489-1_amd64.deb (checked when that file is what we got)
SHA256_489_1_AMD64=131fcc86dd4cdca5c278b184d6d82e14ce047658ac4690e09161f001f52870b2
BIN=$DEST/usr/bin/iozone
STAMP=$DEST/.complete-$VERSION

if [ -x "$BIN" ] && [ -f "$STAMP" ]; then
    echo "fetch-iozone: present ($(cat "$STAMP"))" >&2
    echo "$BIN"
    exit 0
fi

mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
[ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
suite=${IOZONE_SUITE:-bookworm}

work=$(mktemp -d "${TMPDIR:-/tmp}/fetch-iozone.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/pkg"
echo "deb $mirror $suite non-free" >"$work/sources.list"
APT=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
     -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/archives"
     -o "Dir::Cache::pkgcache=$work/pkgcache.bin" -o "Dir::Cache::srcpkgcache=$work/srcpkgcache.bin"
     -o "APT::Get::List-Cleanup=0" -o "Debug::NoLocking=1")
echo "fetch-iozone: apt-get update (private list: $mirror $suite non-free)" >&2
apt-get "${APT[@]}" update -qq >"$work/update.log" 2>&1 || { cat "$work/update.log" >&2; exit 1; }
echo "fetch-iozone: apt-get download iozone3=$VERSION" >&2
(cd "$work/pkg" && apt-get "${APT[@]}" download "iozone3=$VERSION") >"$work/download.log" 2>&1 ||
    { cat "$work/download.log" >&2
      echo "fetch-iozone: versions available:" >&2
      apt-cache "${APT[@]}" policy iozone3 >&2 || true
      exit 1; }
deb=$(ls "$work"/pkg/iozone3_*.deb)
sha=$(sha256sum "$deb" | cut -d' ' -f1)
if [ "$(basename "$deb")" = iozone3_489-1_amd64.deb ] && [ "$sha" != "$SHA256_489_1_AMD64" ]; then
    echo "fetch-iozone: $(basename "$deb") has sha256 $sha, expected $SHA256_489_1_AMD64" >&2
    exit 1
fi
rm -rf "$DEST.tmp"
mkdir -p "$DEST.tmp"
dpkg -x "$deb" "$DEST.tmp"
[ -x "$DEST.tmp/usr/bin/iozone" ] || { echo "fetch-iozone: no usr/bin/iozone in $deb" >&2; exit 1; }
rm -rf "$DEST"
mv "$DEST.tmp" "$DEST"
echo "iozone3 $VERSION $(basename "$deb") sha256=$sha" >"$DEST/.complete-$VERSION"
echo "fetch-iozone: installed $(basename "$deb") into $DEST" >&2
echo "$BIN"
