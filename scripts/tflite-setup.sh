#!/bin/sh
# scripts/tflite-setup.sh: makes TensorFlow Lite 2.9's C library available
# for the tests' oracle and prints the path of libtensorflowlite_c.so. The
# npm tarball of tfjs-tflite-node@0.0.2 is pinned by sha256 in
# scripts/tflite/tflite.lock and fetched, verified and unpacked into
# data/cache/ by scripts/fetch-models.sh (curl from the npm registry; npm
# is not needed). Idempotent: the network is used only the first time.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${QP_MODELS_CACHE:-$ROOT/data/cache}
case $(uname -m) in
    x86_64) ARCH=linux_amd64 ;;
    aarch64) ARCH=linux_arm64 ;;
    *) echo "tflite-setup: no TFLite C library for $(uname -m)" >&2; exit 1 ;;
esac
QP_MODELS_LOCK=$ROOT/scripts/tflite/tflite.lock QP_MODELS_CACHE=$CACHE \
    sh "$ROOT/scripts/fetch-models.sh" tflite-c >/dev/null
ver=$(awk '$1 == "tflite-c" { print $3 }' "$ROOT/scripts/tflite/tflite.lock")
lib=$CACHE/tfjs-tflite-node-$ver/cc_deps/$ARCH/libtensorflowlite_c.so
[ -f "$lib" ] || {
    echo "tflite-setup: tfjs-tflite-node $ver lacks $ARCH/libtensorflowlite_c.so" >&2
    exit 1
}
echo "$lib"
