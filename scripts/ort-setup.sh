#!/bin/sh
# scripts/ort-setup.sh: makes the onnxruntime-node that
# scripts/ort-reference.js drives available and prints the folder to pass
# as QP_ORT_DIR. The two npm tarballs (onnxruntime-node and its
# onnxruntime-common) are pinned by sha256 in scripts/ort/ort.lock and
# fetched, verified and unpacked into data/cache/ by scripts/fetch-models.sh
# (curl; npm is not needed and no install script runs); this script then
# links them as data/cache/node_modules/ (where node's resolution from
# inside the unpacked onnxruntime-node finds onnxruntime-common) and
# prints data/cache. Idempotent; the network is used only the first time.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${QP_MODELS_CACHE:-$ROOT/data/cache}
DEST=$CACHE
case $(uname -m) in
    x86_64) ARCH=x64 ;;
    aarch64) ARCH=arm64 ;;
    *) echo "ort-setup: no onnxruntime-node binary for $(uname -m)" >&2; exit 1 ;;
esac
QP_MODELS_LOCK=$ROOT/scripts/ort/ort.lock QP_MODELS_CACHE=$CACHE \
    sh "$ROOT/scripts/fetch-models.sh" ort-node ort-common >/dev/null
ver=$(awk '$1 == "ort-node" { print $3 }' "$ROOT/scripts/ort/ort.lock")
node_pkg=$CACHE/onnxruntime-node-$ver
common_pkg=$CACHE/onnxruntime-common-$ver
[ -f "$node_pkg/bin/napi-v3/linux/$ARCH/onnxruntime_binding.node" ] || {
    echo "ort-setup: onnxruntime-node $ver lacks the linux-$ARCH CPU binary" >&2
    exit 1
}
mkdir -p "$DEST/node_modules"
ln -sfn "$node_pkg" "$DEST/node_modules/onnxruntime-node"
ln -sfn "$common_pkg" "$DEST/node_modules/onnxruntime-common"
echo "$DEST"
