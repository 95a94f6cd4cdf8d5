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
