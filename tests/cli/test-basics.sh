# CLI basics: version, command table, usage errors.

test_version_names_kernels() {
    out=$("$QPROBE" --version)
    assert_contains "$out" "qprobe 0."
    assert_contains "$out" "kernels:"
}

test_unknown_command_is_usage_error() {
    assert_exit 2 "$QPROBE" frobnicate
    assert_contains err "'frobnicate' is not a command"
}

test_help_lists_every_command() {
    out=$("$QPROBE" --help)
    for c in inspect quantize run diff ladder sensitivity recipe sweep report requant kernel demo; do
        assert_contains "$out" "  $c "
    done
}

test_kernels_env_caps_every_family() {
    out=$(QP_KERNELS=ref "$QPROBE" --version | grep kernels:)
    case "$out" in *=avx*|*=neon*) fail "QP_KERNELS=ref left a SIMD variant: $out" ;; esac
    assert_contains "$out" "requant=ref"
    if grep -qw avx2 /proc/cpuinfo; then
        out=$(QP_KERNELS=avx2 "$QPROBE" --version | grep kernels:)
        case "$out" in *avx512*|*vnni*) fail "QP_KERNELS=avx2 not honoured: $out" ;; esac
        assert_contains "$out" "requant=avx2"
        assert_contains "$out" "gemm-s8=avx2"
    fi
}
