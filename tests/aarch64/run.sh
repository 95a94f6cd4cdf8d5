#!/bin/sh
# tests/aarch64/run.sh: runs the aarch64 kernel tests (make test-aarch64).
#
#   run.sh --check CC QEMU   exits 1 with the packages to install when the
#                            cross compiler or qemu (if QEMU is set) is missing
#   run.sh QEMU BIN...       runs each test binary and ends with the line
#                            "aarch64: N passed, N failed"; exits 1 on failure
#
# With QEMU (a cross build) each BIN runs on emulated CPUs, told through
# QP_A64_EXPECT which kernels the run-time dispatch must choose there:
#   -cpu max          has the dot product: every test, GEMM on neon-dot
#   -cpu cortex-a53   Armv8.0, no dot product: every test, GEMM on the
#                     reference, depthwise and requantization on NEON
#   -cpu max with QP_KERNELS=neon and QP_KERNELS=ref: the dispatch tests
# Without QEMU (on an aarch64 machine) each BIN runs once, natively.
pkgs="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"
if [ "$1" = "--check" ]; then
    for tool in "$2" "${3%% *}"; do
        [ -n "$tool" ] || continue
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "test-aarch64: '$tool' not found; on Debian/Ubuntu install" \
                 "it with: apt-get install $pkgs" >&2
            exit 1
        fi
    done
    exit 0
fi

QEMU=$1
shift
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
passed=0
failed=0

# run BIN EXPECT CPU [QP_KERNELS [FILTER]]
run() {
    bin=$1 expect=$2 cpu=$3 caps=$4 filter=$5
    if [ -n "$QEMU" ]; then
        # shellcheck disable=SC2086
        out=$(QP_A64_EXPECT="$expect" QP_KERNELS="$caps" \
              $QEMU -cpu "$cpu" "$bin" $filter)
    else
        # shellcheck disable=SC2086
        out=$(QP_KERNELS="$caps" "$bin" $filter)
    fi
    summary=$(printf '%s\n' "$out" | grep '^unit: ' | tail -n 1)
    p=$(printf '%s\n' "$summary" | sed -n 's/^unit: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
    f=$(printf '%s\n' "$summary" | sed -n 's/^unit: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
    label="$(basename "$bin") ${cpu:-native}${caps:+ QP_KERNELS=$caps}"
    if [ -z "$p" ]; then
        echo "aarch64 [$label]: the test binary died without a summary" >&2
        failed=$((failed + 1))
        return
    fi
    echo "aarch64 [$label]: $p passed, $f failed"
    passed=$((passed + p))
    failed=$((failed + f))
}

k="kernels: gemm-s8"
for bin in "$@"; do
    if [ -n "$QEMU" ]; then
        # quantize-act, the lookup tables, the float kernels and the diff
        # metrics have no NEON variants yet (conv-f32's portable path is
        # im2col + sgemm, "gemm")
        r="quantize-act=ref lut8=ref eltwise-f32=ref conv-f32=gemm metrics=ref"
        run "$bin" "$k=neon-dot depthwise-s8=neon requant=neon $r" max
        run "$bin" "$k=ref depthwise-s8=neon requant=neon $r" cortex-a53
        run "$bin" "$k=ref depthwise-s8=neon requant=neon $r" max neon aarch64_dispatch
        run "$bin" "$k=ref depthwise-s8=ref requant=ref $r" max ref aarch64_dispatch
    else
        run "$bin" "" ""
    fi
done
echo "aarch64: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
