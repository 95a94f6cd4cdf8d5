# qprobe inspect: statistics against hand-computed values, quantization
# parameters, CSV fields, bad input. Tensors are written with build/mkdemo.

MKDEMO=$(dirname "$QPROBE")/mkdemo
mkt() { "$MKDEMO" tensor "$@"; }

# d/: a = {1,2,3,4}; q = int8 {3,5,7,9} with scale 0.5, zero point 1 (its
# dequantized values are {1,2,3,4} too); c = constant; n = {1,nan,3,inf}
make_dump() {
    mkdir -p d
    mkt d/a.npy f32 4 1,2,3,4
    mkt d/q.npy i8 2x2 3,5,7,9
    mkt d/q.scale.npy f32 1 0.5
    mkt d/q.zero_point.npy i32 1 1
    mkt d/c.npy f64 3 2.5,2.5,2.5
    mkt d/n.npy f32 4 1,nan,3,inf
}

test_inspect_csv_hand_computed() {
    make_dump
    "$QPROBE" inspect d --csv s.csv >table.txt
    assert_eq "$(head -n 1 s.csv)" "name,dtype,shape,numel,min,max,mean,std,absmax,kurtosis,outlier_ratio,nonfinite,q_bits,q_granularity,q_scale_min,q_scale_max,q_zero_point_min,q_zero_point_max"
    # {1,2,3,4}: mean 2.5, population std sqrt(1.25), excess kurtosis -1.36
    for t in a q; do
        assert_near "$(csv_field s.csv $t mean)" 2.5 1e-9
        assert_near "$(csv_field s.csv $t std)" 1.118033989 1e-8
        assert_near "$(csv_field s.csv $t kurtosis)" -1.36 1e-9
        assert_eq "$(csv_field s.csv $t min)" 1
        assert_eq "$(csv_field s.csv $t max)" 4
        assert_eq "$(csv_field s.csv $t absmax)" 4
        assert_eq "$(csv_field s.csv $t outlier_ratio)" 0
        assert_eq "$(csv_field s.csv $t numel)" 4
    done
    assert_eq "$(csv_field s.csv a shape)" 4
    assert_eq "$(csv_field s.csv a dtype)" f32
    assert_eq "$(csv_field s.csv a q_bits)" ""
    assert_eq "$(csv_field s.csv q shape)" 2x2
    assert_eq "$(csv_field s.csv q dtype)" i8
    assert_eq "$(csv_field s.csv q q_bits)" 8
    assert_eq "$(csv_field s.csv q q_granularity)" per-tensor
    assert_eq "$(csv_field s.csv q q_scale_min)" 0.5
    assert_eq "$(csv_field s.csv q q_zero_point_max)" 1
    # the companions are attached, not listed
    assert_eq "$(grep -c '^q\.' s.csv || true)" 0
    assert_eq "$(csv_field s.csv c std)" 0
    assert_eq "$(csv_field s.csv c kurtosis)" nan
    # non-finite values are counted apart: stats of {1,3}
    assert_eq "$(csv_field s.csv n nonfinite)" 2
    assert_eq "$(csv_field s.csv n mean)" 2
    assert_eq "$(csv_field s.csv n max)" 3
    # the table shows the same and the quantization parameters
    assert_contains table.txt "8-bit per-tensor s=0.5 zp=1"
    assert_contains table.txt "kurtosis"
    grep -q '^a  *f32  *\[4\]  *1  *4  *2.5  *1.118  *4  *-1.36 ' table.txt ||
        fail "row of a: $(grep '^a ' table.txt)"
}

test_inspect_outlier_share() {
    mkdir d
    # 99 zeros and one 10: the 10 lies sqrt(99) > 6 std from the mean;
    # with 29 zeros it lies sqrt(29) < 6 std away
    mkt d/o.npy f32 100 "$(printf '0,%.0s' $(seq 99))10"
    mkt d/p.npy f32 30 "$(printf '0,%.0s' $(seq 29))10"
    "$QPROBE" inspect d --csv - >out.txt
    assert_eq "$(csv_field out.txt o outlier_ratio)" 0.01
    assert_eq "$(csv_field out.txt p outlier_ratio)" 0
    assert_near "$(csv_field out.txt o mean)" 0.1 1e-12
}

test_inspect_per_axis_quantized_single_file() {
    mkdir d
    mkt d/w.npy i8 2x3 1,2,3,-1,-2,-3
    mkt d/w.scale.npy f32 2 0.5,0.25
    "$QPROBE" inspect d --csv s.csv -o table.txt
    assert_eq "$(csv_field s.csv w q_granularity)" "per-axis 0"
    assert_eq "$(csv_field s.csv w q_scale_min)" 0.25
    assert_eq "$(csv_field s.csv w q_scale_max)" 0.5
    assert_eq "$(csv_field s.csv w q_zero_point_min)" 0
    # dequantized: {0.5,1,1.5,-0.25,-0.5,-0.75}
    assert_eq "$(csv_field s.csv w min)" -0.75
    assert_eq "$(csv_field s.csv w max)" 1.5
    assert_near "$(csv_field s.csv w mean)" 0.25 1e-12
    assert_contains table.txt "8-bit per-axis 0 s=[0.25,0.5] zp=[0,0]"
    # a single .npy is a dump of one tensor
    "$QPROBE" inspect d/w.npy --csv one.csv >/dev/null
    assert_eq "$(csv_field one.csv w max)" 3
}

test_inspect_help_says_excess_kurtosis() {
    out=$("$QPROBE" inspect --help)
    assert_contains "$out" "EXCESS kurtosis"
    assert_contains "$out" "|x - mean| > 6 std"
    assert_contains "$out" "--csv FILE"
}

test_inspect_bad_input_exit_1_no_partial_csv() {
    assert_exit 1 "$QPROBE" inspect nope.npy --csv s.csv
    assert_contains err "qprobe: error: 'nope.npy'"
    mkdir d
    mkt d/a.npy f32 4 1,2,3,4
    head -c 136 d/a.npy >d/b.npy   # 8 of the 16 data bytes
    assert_exit 1 "$QPROBE" inspect d --csv s.csv
    assert_contains err "qprobe: error:"
    assert_contains err "b.npy"
    [ ! -e s.csv ] || fail "partial CSV written"
    no_tmp_left .
}

test_inspect_usage_errors() {
    assert_exit 2 "$QPROBE" inspect
    assert_contains err "expected one FILE"
    assert_exit 2 "$QPROBE" inspect a b
    assert_exit 2 "$QPROBE" inspect --format zip x
    assert_contains err "unknown format 'zip'"
    assert_exit 2 "$QPROBE" inspect --bogus x
}
