#!/bin/sh
# scripts/llamacpp-setup.sh: makes llama.cpp's prebuilt CPU libraries (from
# npm's @node-llama-cpp/linux-x64) and the matching public headers (from the
# llama.cpp git bundle inside npm's node-llama-cpp) available under
# data/cache/, for the GGUF oracle driver (tests/oracle/llamacpp-driver.c,
# built by mk/gguf.mk as build/llamacpp-driver). Both tarballs are pinned by
# sha256 in scripts/llamacpp/llamacpp.lock and fetched, verified and unpacked
# by scripts/fetch-models.sh; the headers (include/llama.h, ggml/include/*.h)
# are read out of the bundle with git into data/cache/llamacpp-include-COMMIT/.
# Prints two lines: the library folder and the include folder. Idempotent;
# the network is used only the first time. linux-x64 only.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${QP_MODELS_CACHE:-$ROOT/data/cache}
LOCK=$ROOT/scripts/llamacpp/llamacpp.lock
COMMIT=de3ff815ea7d559ee917f063901b8986f038abc6
[ "$(uname -m)" = x86_64 ] || {
    echo "llamacpp-setup: node-llama-cpp's pinned CPU binaries are linux-x64 only" >&2
    exit 1
}
command -v git >/dev/null || { echo "llamacpp-setup: git is needed" >&2; exit 1; }
QP_MODELS_LOCK=$LOCK QP_MODELS_CACHE=$CACHE \
    sh "$ROOT/scripts/fetch-models.sh" llamacpp-bins llamacpp-src >/dev/null
ver=$(awk '$1 == "llamacpp-bins" { print $3 }' "$LOCK")
lib=$CACHE/linux-x64-$ver/bins/linux-x64
src=$CACHE/node-llama-cpp-$ver/llama/gitRelease.bundle
[ -f "$lib/libllama.v0.5.0.so" ] || {
    echo "llamacpp-setup: '$lib' lacks libllama.v0.5.0.so" >&2
    exit 1
}
inc=$CACHE/llamacpp-include-$COMMIT
if [ ! -f "$inc/.done" ]; then
    tmp=$(mktemp -d "$CACHE/.llamacpp-inc.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    git clone -q --bare "$src" "$tmp/src.git"
    [ "$(git -C "$tmp/src.git" rev-parse HEAD)" = "$COMMIT" ] || {
        echo "llamacpp-setup: the bundle's HEAD is not $COMMIT" >&2
        exit 1
    }
    mkdir "$tmp/inc"
    for f in include/llama.h ggml/include/ggml.h ggml/include/ggml-cpu.h \
        ggml/include/ggml-backend.h ggml/include/ggml-alloc.h \
        ggml/include/ggml-opt.h ggml/include/gguf.h; do
        git -C "$tmp/src.git" show "HEAD:$f" >"$tmp/inc/${f##*/}"
    done
    touch "$tmp/inc/.done"
    rm -rf "$inc"
    mv -T "$tmp/inc" "$inc"
fi
echo "$lib"
echo "$inc"
