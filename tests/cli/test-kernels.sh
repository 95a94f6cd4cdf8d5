# The kernel dispatch table, the BLAS core and the environment variables
# that steer them (kernels/dispatch.h, kernels/blas.h, kernels/startup.h),
# through the real binary.

test_version_names_every_family_and_the_blas() {
    out=$("$QPROBE" --version)
    for f in gemm-s8 depthwise-s8 requant quantize-act lut8 eltwise-f32 \
             conv-f32 metrics; do
        assert_contains "$out" " $f="
    done
    assert_contains "$out" "blas: OpenBLAS"
    assert_contains "$out" "; core "
    # one line per part: version, kernels, blas
    assert_eq "$(printf '%s\n' "$out" | wc -l | tr -d ' ')" 3 "lines"
}

test_malformed_qp_kernels_is_a_usage_error() {
    for v in bogus REF "avx2 " sse4; do
        assert_exit 2 env QP_KERNELS="$v" "$QPROBE" --version
        assert_contains "$(cat err)" "QP_KERNELS='$v'"
        assert_contains "$(cat err)" "use one of: ref, auto"
        [ ! -s out ] || fail "output despite the error: $(cat out)"
    done
    # the same for a command, before it reads anything
    assert_exit 2 env QP_KERNELS=bogus "$QPROBE" inspect /no/such/file
    assert_contains "$(cat err)" "QP_KERNELS"
    # accepted: empty (unset), auto, ref
    for v in "" auto ref; do
        assert_exit 0 env QP_KERNELS="$v" "$QPROBE" --version
    done
}

test_malformed_qp_threads_is_a_usage_error() {
    for v in 0 -2 257 4x two; do
        assert_exit 2 env QP_THREADS="$v" "$QPROBE" --version
        assert_contains "$(cat err)" "QP_THREADS='$v'"
        assert_contains "$(cat err)" "from 1 to 256"
    done
    assert_exit 0 env QP_THREADS=3 "$QPROBE" --version
    assert_exit 0 env QP_THREADS= "$QPROBE" --version
}

# The library's fallback cannot be produced on a CPU it knows, so
# QP_BLAS_ASSUME_CORE makes qprobe act as if OpenBLAS had picked Prescott:
# qprobe re-executes itself with its own core, keeping the arguments, the
# exit code and the output (printed once).
test_blas_fallback_is_replaced_by_the_cpus_core() {
    # (|| true: a failed grep must not end the test under set -e)
    want=$(grep -qw avx512f /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo &&
           grep -qw avx512vl /proc/cpuinfo && grep -qw avx512dq /proc/cpuinfo &&
           grep -qw avx512cd /proc/cpuinfo && echo SkylakeX || true)
    if [ -z "$want" ]; then
        grep -qw avx2 /proc/cpuinfo || return 0 # nothing to replace
        want=$(grep -q AuthenticAMD /proc/cpuinfo && echo Zen || echo Haswell)
    fi
    # as on a machine that sets no core (some set one: it is kept, below)
    out=$(env -u OPENBLAS_CORETYPE QP_BLAS_ASSUME_CORE=Prescott "$QPROBE" --version |
          grep '^blas:')
    assert_contains "$out" "set by qprobe: OpenBLAS chose Prescott"
    assert_contains "$out" "core $want ("
    assert_exit 1 env -u OPENBLAS_CORETYPE QP_BLAS_ASSUME_CORE=Prescott "$QPROBE" inspect /no/such/file
    assert_eq "$(grep -c 'qprobe: error' err)" 1 "error lines"
    assert_contains "$(cat err)" "/no/such/file"
    assert_exit 2 env -u OPENBLAS_CORETYPE QP_BLAS_ASSUME_CORE=Prescott "$QPROBE" inspect --bogus-option
}

# A value the user or the machine set is never changed, whatever the
# library or qprobe would pick.
test_blas_coretype_from_the_environment_is_kept() {
    out=$(OPENBLAS_CORETYPE=Haswell QP_BLAS_ASSUME_CORE=Prescott "$QPROBE" --version)
    assert_contains "$out" "core Haswell (OPENBLAS_CORETYPE=Haswell from the environment)"
    out=$(OPENBLAS_CORETYPE=Prescott OPENBLAS_L2_SIZE=1048576 "$QPROBE" --version)
    assert_contains "$out" "core Prescott (OPENBLAS_CORETYPE=Prescott from the environment)"
    # unset: the library's choice, or qprobe's over a fallback
    out=$(env -u OPENBLAS_CORETYPE "$QPROBE" --version | grep '^blas:')
    case "$out" in
    *"OpenBLAS's own choice"* | *"set by qprobe: OpenBLAS chose"*) ;;
    *) fail "no reason for the core: $out" ;;
    esac
}

# kernels/ref/ is the portable specification: its objects call nothing but
# each other, the C library and core/'s error and dtype helpers (no
# dispatch table, no BLAS, no threads, no environment).
test_kernels_ref_calls_nothing_outside_ref() {
    obj=$(dirname "$QPROBE")/obj/kernels/ref
    objs=""
    for c in "$ROOT"/kernels/ref/*.c; do # the sources there now, not stale objects
        o="$obj/$(basename "${c%.c}").o"
        [ -f "$o" ] || fail "no object $o"
        objs="$objs $o"
    done
    # shellcheck disable=SC2086
    nm --defined-only $objs | awk '$2 ~ /[TDRB]/ {print $3}' | sort -u >defined
    allowed="qp_fail qp_error_prefix qp_dtype_traits qp_dtype_name"
    for o in $objs; do
        for s in $(nm -u "$o" | awk '{print $2}'); do
            case "$s" in
            qp_*)
                grep -qx "$s" defined && continue
                case " $allowed " in *" $s "*) continue ;; esac
                fail "$(basename "$o") calls $s (outside kernels/ref/)" ;;
            getenv|secure_getenv|pthread_*|sched_*|cblas_*|openblas_*|*sgemm*)
                fail "$(basename "$o") calls $s" ;;
            esac
        done
    done
}
