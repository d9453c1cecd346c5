#!/usr/bin/env bash
# Build Apptainer from its Go module source into the user cache (idempotent).
#
# Apptainer is in no Debian or PyPI package and `go install` of it is refused,
# but the module zip can be downloaded. Two fixes make it work here:
#   * the module zip drops the exec bit of its scripts (mconfig, makeit/*) -> restore it;
#   * root in this sandbox lacks CAP_SYS_RESOURCE while the starter requests every
#     capability -> mask the requested sets with the permitted set.
# Output: $REPRO_CACHE/apptainer-$VERSION/bin/apptainer (≈7 min on 2 idle cores).
set -euo pipefail
VERSION=${APPTAINER_VERSION:-1.4.2}
CACHE=${REPRO_CACHE:-$HOME/.cache/repro}
PREFIX=$CACHE/apptainer-$VERSION
if [ -x "$PREFIX/bin/apptainer" ] && "$PREFIX/bin/apptainer" --version >/dev/null 2>&1; then
    echo "[apptainer] $("$PREFIX/bin/apptainer" --version) already in $PREFIX"
    exit 0
fi
command -v go >/dev/null || { echo "[apptainer] ERROR: go is not installed" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/apptainer-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
export GOPATH=$work/gopath GOFLAGS=-modcacherw GONOSUMDB=github.com/apptainer/apptainer GOTOOLCHAIN=local
echo "[apptainer] downloading module source v$VERSION"
src=$(go mod download -json "github.com/apptainer/apptainer@v$VERSION" |
      python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(d["Error"]) if "Error" in d else print(d["Dir"])')
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
cd "$work/src"
# restore the exec bit on every file that starts with a shebang
find . -type f -print0 | while IFS= read -r -d '' f; do
    if head -c2 "$f" 2>/dev/null | grep -q '^#!'; then chmod +x "$f"; fi
done
echo "$VERSION" > VERSION
python3 - <<'PY'
import pathlib
p = pathlib.Path("cmd/starter/c/starter.c")
s = p.read_text()
anchor = "    /* compare requested effective set with the current permitted set */\n"
assert anchor in s, "starter.c changed: capability anchor not found"
fix = "".join(f"    privileges->capabilities.{c} &= current->permitted;\n"
              for c in ("effective", "permitted", "inheritable", "ambient"))
p.write_text(s.replace(anchor, "    /* repro: never ask for capabilities this process does not hold */\n" + fix + anchor, 1))
PY
echo "[apptainer] configuring and building (this takes several minutes)"
./mconfig --without-suid -b builddir --prefix="$PREFIX" >"$work/mconfig.log" 2>&1 ||
    { tail -30 "$work/mconfig.log" >&2; exit 1; }
make -C builddir -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -40 "$work/make.log" >&2; exit 1; }
make -C builddir install >"$work/install.log" 2>&1 || { tail -40 "$work/install.log" >&2; exit 1; }
"$PREFIX/bin/apptainer" --version
