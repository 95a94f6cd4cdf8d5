# The demo (scripts/demo.sh): runs end to end on generated data, finds the
# damaged layer, writes every report file; the generator is deterministic.

MKDEMO=$(dirname "$QPROBE")/mkdemo

run_demo() {
    QP_MKDEMO=$MKDEMO QP_DEMO_DATA=$PWD/data QP_DEMO_OUT=$PWD/rep \
        sh "$ROOT/scripts/demo.sh" "$(dirname "$QPROBE")" >demo.out 2>demo.err
}

test_demo_finds_the_damaged_layer() {
    run_demo
    for f in diff.csv align.csv inspect-ref.csv inspect-device.csv sqnr.png sqnr.gp sqnr.dat; do
        [ -s "rep/$f" ] || fail "rep/$f missing"
    done
    # block2.conv1 saturates on the device: ranked first, far below the rest
    assert_eq "$(csv_field rep/diff.csv 1 name)" block2.conv1
    assert_eq "$(csv_field rep/diff.csv 1 test_name)" b2_c1
    sq=$(csv_field rep/diff.csv 1 sqnr_db)
    awk -v s="$sq" 'BEGIN { exit !(s < 10) }' || fail "damaged layer at $sq dB"
    next=$(csv_field rep/diff.csv 2 sqnr_db)
    awk -v s="$next" 'BEGIN { exit !(s > 30) }' || fail "healthy layer at $next dB"
    assert_eq "$(grep -c '^' rep/diff.csv)" 10   # header + 9 pairs
    assert_contains demo.err "threshold crossed: sqnr_db<20: 'block2.conv1'"
    # the alignment needed every stage and the layout conversion
    assert_eq "$(csv_field rep/align.csv stem.relu how)" normalised
    assert_eq "$(csv_field rep/align.csv block2.conv1 detail)" "rule 0; layout NHWC->NCHW"
    assert_eq "$(csv_field rep/align.csv pool how)" map-pair
    assert_eq "$(csv_field rep/align.csv debug.block1_in how)" ref-only
    # logits: a healthy int8 output keeps every argmax
    assert_eq "$(csv_field rep/diff.csv logits top1)" 1
    # inspect shows the device's quantization
    assert_eq "$(csv_field rep/inspect-device.csv b1_c2 q_granularity)" "per-axis 3"
    assert_eq "$(csv_field rep/inspect-device.csv Stem_Relu_output_0 q_zero_point_min)" -128
    assert_eq "$(csv_field rep/inspect-ref.csv logits shape)" 4x10
}

test_demo_data_is_deterministic() {
    "$MKDEMO" demo a
    "$MKDEMO" demo b
    cmp -s a/ref.h5 b/ref.h5 || "$QPROBE" diff a/ref.h5 b/ref.h5 --fail-if 'sqnr_db<inf' -q >/dev/null ||
        fail "two runs of mkdemo differ (ref.h5)"
    diff -r a/device b/device >/dev/null || fail "two runs of mkdemo differ (device)"
    # and regenerating over an existing folder replaces it
    "$MKDEMO" demo a
    diff -r a/device b/device >/dev/null || fail "regenerated data differs"
}
