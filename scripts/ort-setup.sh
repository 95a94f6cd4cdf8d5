#!/bin/sh
# scripts/ort-setup.sh: installs the onnxruntime-node that
# scripts/ort-reference.js drives, pinned (with integrity hashes) by
# scripts/ort/package-lock.json, into data/cache/ort (or $QP_ORT_DIR), and
# prints that directory. Does nothing when the pinned version is there.
#
# npm runs with --ignore-scripts: the package's install script would try
# to download GPU binaries, while its npm tarball already ships the CPU
# library for linux-x64 and linux-arm64 (checked below).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=${QP_ORT_DIR:-$ROOT/data/cache/ort}
case $(uname -m) in
    x86_64) ARCH=x64 ;;
    aarch64) ARCH=arm64 ;;
    *) echo "ort-setup: no onnxruntime-node binary for $(uname -m)" >&2; exit 1 ;;
esac
BIN=node_modules/onnxruntime-node/bin/napi-v3/linux/$ARCH/onnxruntime_binding.node

if [ -f "$DEST/$BIN" ] && cmp -s "$ROOT/scripts/ort/package-lock.json" "$DEST/package-lock.json"; then
    echo "$DEST"
    exit 0
fi
command -v node >/dev/null && command -v npm >/dev/null || {
    echo "ort-setup: node and npm are needed (Debian: apt-get install nodejs npm)" >&2
    exit 1
}
TMP="$DEST.tmp.$$"
rm -rf "$TMP"
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
cp "$ROOT/scripts/ort/package.json" "$ROOT/scripts/ort/package-lock.json" "$TMP/"
(cd "$TMP" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
[ -f "$TMP/$BIN" ] || {
    echo "ort-setup: the pinned onnxruntime-node lacks $BIN" >&2
    exit 1
}
rm -rf "$DEST"
mv "$TMP" "$DEST"
trap - EXIT
echo "$DEST"
