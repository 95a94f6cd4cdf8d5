#!/bin/sh
# Installs the Debian packages qprobe needs to build, test and run its demo.
# Does nothing when all are present. As root it runs apt-get; otherwise it
# prints the apt-get line to run and fails.
set -eu

PKGS="build-essential pkg-config curl ca-certificates
libopenblas-dev liblapacke-dev libhdf5-dev hdf5-tools libcjson-dev libcsv-dev
libzip-dev zlib1g-dev gnuplot-nox
libpcre2-dev libutf8proc-dev
libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata
libgemmlowp-dev libxnnpack-dev libpthreadpool-dev
gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
nodejs"
PKGS="$PKGS parallel chromium" # qprobe sweep's GNU parallel example; report's browser test

missing=""
for p in $PKGS; do
    st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$st" in
        *"install ok installed"*) ;;
        *) missing="$missing $p" ;;
    esac
done

[ -z "$missing" ] && exit 0

echo "deps: missing Debian packages:$missing" >&2
if [ "$(id -u)" != 0 ]; then
    echo "deps: run as root: apt-get update && apt-get install -y$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
# shellcheck disable=SC2086
apt-get install -y --no-install-recommends $missing
