#!/usr/bin/env bash
# kpassthrough set-up (the network step; the Makefile then builds offline):
#  1. a Rust toolchain >= 1.85 (fuser 0.16 is edition 2024): the one on PATH or in ~/.cargo/bin,
#     else rustup installs RUST_TOOLCHAIN (minimal profile) -- Debian bookworm's rustc 1.63 is
#     too old;
#  2. `cargo fetch --locked`: the crates named in Cargo.lock, from crates.io, into cargo's cache.
# Warm (toolchain present, crates cached): a no-op, offline.
set -euo pipefail
RUST_TOOLCHAIN=${RUST_TOOLCHAIN:-1.95.0}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
say() { echo "kpassthrough setup: $*"; }
export PATH="$PATH:$HOME/.cargo/bin"

rust_ok() {
    command -v cargo >/dev/null 2>&1 && command -v rustc >/dev/null 2>&1 || return 1
    local v
    v=$(rustc --version | awk '{print $2}')
    [ "$(printf '%s\n1.85.0\n' "$v" | sort -V | head -1)" = 1.85.0 ]
}

if rust_ok; then
    say "toolchain: $(rustc --version)"
else
    say "no Rust >= 1.85 found; installing $RUST_TOOLCHAIN with rustup into ~/.cargo"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs -o "$tmp/rustup-init.sh"
    sh "$tmp/rustup-init.sh" -y --no-modify-path --profile minimal --default-toolchain "$RUST_TOOLCHAIN"
    rust_ok || { say "rustup install did not give a Rust >= 1.85" >&2; exit 1; }
    say "toolchain: $(rustc --version)"
fi
cd "$here"
# warm: everything already cached, no network; cold: fetch the locked crates by name
if cargo fetch --locked --offline >/dev/null 2>&1; then
    say "crates already cached (Cargo.lock)"
else
    cargo fetch --locked
    say "crates fetched (Cargo.lock)"
fi
