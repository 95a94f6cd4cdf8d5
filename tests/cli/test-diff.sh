# qprobe diff: metrics CSV checked field by field against hand-computed
# values, alignment, layouts, logits, ranking, --fail-if, plots, and bad
# input. Tensors are written with build/mkdemo.

MKDEMO=$(dirname "$QPROBE")/mkdemo
mkt() { "$MKDEMO" tensor "$@"; }

# ref/x = {1,2,3,4}, test/x = {1,2,3,5}: sum ref^2 30, error 1 at one
# element: sqnr 10 lg 30, cosine 34/sqrt(30*39), mae 1/4, rel_l2 1/sqrt 30
# ref/same = test/same: no error
make_pair() {
    mkdir -p ref test
    mkt ref/x.npy f32 2x2 1,2,3,4
    mkt test/x.npy f32 2x2 1,2,3,5
    mkt ref/same.npy f32 3 -1,0.5,7
    mkt test/same.npy f32 3 -1,0.5,7
}

# ref/act: NCHW [1,2,1,3] = {1,2,3, 4,5,6}; test/act holds it NHWC
# [1,1,3,2] = {1,4, 2,5, 3,6} as int8 with scale 0.5, zero point -2
# (q = x/0.5 - 2), its last element LAST (10: exact, 11: 0.5 too large)
make_act() {
    mkdir -p ref test
    mkt ref/act.npy f32 1x2x1x3 1,2,3,4,5,6
    mkt test/act.npy i8 1x1x3x2 "0,6,2,8,4,$1"
    mkt test/act.scale.npy f32 1 0.5
    mkt test/act.zero_point.npy i32 1 -2
}

test_diff_csv_hand_computed() {
    make_pair
    "$QPROBE" diff ref test --csv m.csv >table.txt 2>err
    assert_eq "$(head -n 1 m.csv)" "rank,name,shape,numel,sqnr_db,cosine,mae,max_abs,rel_l2,ref_absmax,nonfinite,kl,top1,test_name,mae_lsb,max_lsb,rmse_lsb,mismatches,order"
    assert_eq "$(csv_field m.csv x rank)" 1
    assert_eq "$(csv_field m.csv x shape)" 2x2
    assert_eq "$(csv_field m.csv x numel)" 4
    assert_near "$(csv_field m.csv x sqnr_db)" 14.7712125472 1e-7
    assert_near "$(csv_field m.csv x cosine)" 0.993999088548 1e-8
    assert_eq "$(csv_field m.csv x mae)" 0.25
    assert_eq "$(csv_field m.csv x max_abs)" 1
    assert_near "$(csv_field m.csv x rel_l2)" 0.182574185835 1e-8
    assert_eq "$(csv_field m.csv x ref_absmax)" 4
    assert_eq "$(csv_field m.csv x nonfinite)" 0
    assert_eq "$(csv_field m.csv x kl)" ""
    assert_eq "$(csv_field m.csv x test_name)" x
    assert_eq "$(csv_field m.csv same rank)" 2
    assert_eq "$(csv_field m.csv same sqnr_db)" inf
    assert_eq "$(csv_field m.csv same cosine)" 1
    assert_eq "$(csv_field m.csv same rel_l2)" 0
    assert_eq "$(csv_field m.csv same ref_absmax)" 7
    assert_contains table.txt "ref vs test: 2 tensors compared, worst first by sqnr_db"
    grep -q '^ *1  x  *\[2,2\]  *14.77  *0.993999  *0.25  *1 ' table.txt ||
        fail "table row: $(grep ' x ' table.txt)"
    assert_contains err "alignment: 2 pairs (2 exact), 0 refused"
}

test_diff_zero_tensors_and_nonfinite_rank_first() {
    mkdir ref test
    mkt ref/zero.npy f32 3 0,0,0
    mkt test/zero.npy f32 3 0,0,0
    mkt ref/ztest.npy f32 2 1,-1
    mkt test/ztest.npy f32 2 0,0
    # ref 0, test not: sqnr -inf, rel_l2 inf, cosine 0
    mkt ref/zref.npy f32 2 0,0
    mkt test/zref.npy f32 2 3,4
    # excellent except a NaN and an inf: ranks first all the same
    mkt ref/nan.npy f32 4 1,2,3,4
    mkt test/nan.npy f32 4 1,nan,3,-inf
    "$QPROBE" diff ref test --csv m.csv -q >/dev/null
    assert_eq "$(csv_field m.csv nan rank)" 1
    assert_eq "$(csv_field m.csv nan nonfinite)" 2
    # NaN is never a pass: no error figure, so -inf SQNR and NaN cosine
    assert_eq "$(csv_field m.csv nan sqnr_db)" -inf
    assert_eq "$(csv_field m.csv nan cosine)" nan
    assert_eq "$(csv_field m.csv zref rank)" 2
    assert_eq "$(csv_field m.csv zref sqnr_db)" -inf
    assert_eq "$(csv_field m.csv zref rel_l2)" inf
    assert_eq "$(csv_field m.csv zref cosine)" 0
    assert_eq "$(csv_field m.csv zref mae)" 3.5
    assert_eq "$(csv_field m.csv ztest rank)" 3
    assert_eq "$(csv_field m.csv ztest sqnr_db)" 0
    assert_eq "$(csv_field m.csv ztest rel_l2)" 1
    assert_eq "$(csv_field m.csv zero rank)" 4
    assert_eq "$(csv_field m.csv zero sqnr_db)" inf
    assert_eq "$(csv_field m.csv zero cosine)" 1
    # the same with --sort mae: non-finite still first, then mae high to low
    "$QPROBE" diff ref test --sort mae --csv m2.csv -q >/dev/null
    assert_eq "$(cut -d, -f2 m2.csv | tr '\n' ' ')" "name nan zref ztest zero "
}

test_diff_nan_fails_every_threshold() {
    # defect: an all-NaN tensor scored sqnr inf, cosine 1 and passed these
    mkdir ref test
    mkt ref/a.npy f32 3 1,2,3
    mkt test/a.npy f32 3 nan,nan,nan
    mkt ref/b.npy f32 3 1,2,3
    mkt test/b.npy f32 3 1,2,3
    assert_exit 3 "$QPROBE" diff ref test -q --fail-if 'sqnr_db<25'
    assert_contains err "threshold crossed: sqnr_db<25: 'a'"
    for cond in 'cosine<0.99' 'mae>1' 'max_abs>=100' 'rel_l2>0.5' 'sqnr_db<=-1000'; do
        assert_exit 3 "$QPROBE" diff ref test -q --fail-if "$cond"
        assert_contains err "'a'"
        case "$(cat err)" in *"'b'"*) fail "$cond: 'b' reported" ;; esac
    done
}

test_diff_empty_fail_if_is_a_usage_error() {
    mkdir ref test
    mkt ref/a.npy f32 3 1,2,3
    mkt test/a.npy f32 3 1,2,3
    for cond in '' ',' ',,,' 'sqnr_db<25,' ' , '; do
        assert_exit 2 "$QPROBE" diff ref test -q --fail-if "$cond"
        assert_contains err "empty condition"
    done
    assert_exit 0 "$QPROBE" diff ref test -q --fail-if 'sqnr_db<25,cosine<0.99'
}

test_diff_csv_to_stdout_is_only_the_csv() {
    mkdir ref test
    mkt ref/a.npy f32 3 1,2,3
    mkt test/a.npy f32 3 1,2,4
    "$QPROBE" diff ref test -q --csv - > out
    assert_eq "$(head -n 1 out | cut -d, -f1-3)" "rank,name,shape"
    assert_eq "$(wc -l < out | tr -d ' ')" 2
    "$QPROBE" inspect ref --csv - > out2
    assert_eq "$(head -n 1 out2 | cut -d, -f1-2)" "name,dtype"
    assert_eq "$(wc -l < out2 | tr -d ' ')" 2
}

test_diff_layout_on_one_side_warns_and_strict_refuses() {
    # defect: a same-shape 4-D pair with a layout tag on one side only was
    # compared silently
    mkdir ref
    mkt ref/x.npy f32 1x2x2x2 1,2,3,4,5,6,7,8
    "$MKDEMO" convert ref test raw-dir
    sed -i 's/"shape":/"layout": "NHWC", "shape":/' test/index.json
    "$QPROBE" diff ref test -q --csv m.csv > /dev/null 2> err
    assert_contains err "warning: 'x': layout NHWC known on the test side only"
    assert_eq "$(csv_field m.csv x sqnr_db)" inf
    assert_exit 1 "$QPROBE" diff ref test -q --strict
    assert_contains err "refused under --strict"
    # declaring the reference's layout makes it a conversion, no warning
    "$QPROBE" diff ref test -q --layout NCHW: > /dev/null 2> err
    case "$(cat err)" in *warning*) fail "warned after --layout" ;; esac
}

test_diff_int8_dequantized_and_layout() {
    make_act 10
    mkt ref/v.npy f32 2 1,1
    mkt test/v.npy f32 2 1,1
    "$QPROBE" diff ref test --csv m.csv --align-report a.csv >/dev/null 2>err
    assert_contains err "refused     act <- act: shapes differ: reference [1,2,1,3], test [1,1,3,2]; not compared (declare layouts with --layout REF:TEST, e.g. NCHW:NHWC)"
    assert_eq "$(csv_field m.csv act rank)" ""
    assert_eq "$(csv_field a.csv act how)" refused
    "$QPROBE" diff ref test --layout NCHW:NHWC --csv m.csv --align-report a.csv >/dev/null 2>err
    assert_eq "$(csv_field m.csv act sqnr_db)" inf
    assert_eq "$(csv_field m.csv act shape)" 1x2x1x3
    assert_eq "$(csv_field m.csv act ref_absmax)" 6
    assert_eq "$(csv_field a.csv act detail)" "layout NHWC->NCHW"
    # one element off by one LSB (0.5): err^2 = 0.25 of sum ref^2 = 91
    make_act 11
    "$QPROBE" diff ref test --layout NCHW:NHWC --csv m.csv -q >/dev/null
    assert_near "$(csv_field m.csv act sqnr_db)" 25.6110138 1e-6   # 10 lg 364
    assert_eq "$(csv_field m.csv act max_abs)" 0.5
}

test_diff_refuses_mismatched_shapes() {
    mkdir ref test
    mkt ref/a.npy f32 2x3 1,2,3,4,5,6
    mkt test/a.npy f32 6 1,2,3,4,5,6
    mkt ref/b.npy f32 1 1
    mkt test/b.npy f32 1 1
    "$QPROBE" diff ref test --csv m.csv >/dev/null 2>err
    assert_contains err "shapes differ: reference [2,3], test [6]; not compared"
    assert_eq "$(grep -c '^' m.csv)" 2   # header and b
    # only refused pairs: nothing was compared
    rm ref/b.npy test/b.npy
    assert_exit 1 "$QPROBE" diff ref test --csv m3.csv
    assert_contains err "qprobe: error: 'ref' vs 'test': every pair was refused"
    [ ! -e m3.csv ] || fail "CSV written although nothing was compared"
}

test_diff_map_rules_pairs_and_align_report() {
    mkdir ref test
    for n in input block1.conv2 pool logits only_ref; do mkt "ref/$n.npy" f32 2 1,2; done
    for n in input%3A0 b1_c2 global_pool Logits_output_0 only_test; do
        mkt "test/$n.npy" f32 2 1,2
    done
    cat >map.json <<'EOF'
{"pairs": {"pool": "global_pool"},
 "rules": [{"test": "^b([0-9]+)_c([0-9]+)$", "ref": "block\\1.conv\\2"}]}
EOF
    "$QPROBE" diff ref test --map map.json --align-report a.csv -q >/dev/null
    assert_eq "$(head -n 1 a.csv)" "ref,test,how,detail"
    assert_eq "$(csv_field a.csv input how)" normalised
    assert_eq "$(csv_field a.csv input test)" "input:0"
    assert_eq "$(csv_field a.csv block1.conv2 how)" map-rule
    assert_eq "$(csv_field a.csv block1.conv2 detail)" "rule 0"
    assert_eq "$(csv_field a.csv pool how)" map-pair
    assert_eq "$(csv_field a.csv logits test)" Logits_output_0
    assert_eq "$(csv_field a.csv only_ref how)" ref-only
    assert_eq "$(csv_field a.csv only_test how)" test-only
    # stderr summary: non-exact pairs listed, exact ones only with -v
    "$QPROBE" diff ref test --map map.json >/dev/null 2>err
    assert_contains err "alignment: 4 pairs (1 map-pair, 2 normalised, 1 map-rule), 0 refused; 1 only in 'ref', 1 only in 'test'"
    assert_contains err "  map-rule    block1.conv2 <- b1_c2: rule 0"
    assert_contains err "  test-only   only_test"
    # without the map the rule and pair do not apply
    "$QPROBE" diff ref test --align-report b.csv -q >/dev/null
    assert_eq "$(csv_field b.csv pool how)" ref-only
    # a bad map is an error naming the file
    echo '{"rules": [{"test": "(", "ref": "x"}]}' >bad.json
    assert_exit 1 "$QPROBE" diff ref test --map bad.json --csv m.csv
    assert_contains err "qprobe: error: 'bad.json': rule 0: bad regex '('"
    [ ! -e m.csv ] || fail "CSV written on failure"
}

test_diff_logits_kl_top1() {
    mkdir ref test
    # rows: p=(1/2,1/2) vs q=(1/4,3/4): KL = 1/2 ln 4/3, argmax differs;
    # second row identical: KL 0, agrees. mean KL = 1/4 ln 4/3
    mkt ref/out_logits.npy f32 2x2 0,0,1,-2
    mkt test/out_logits.npy f32 2x2 0,1.0986122886681098,1,-2
    mkt ref/scores.npy f32 2x2 0,0,1,-2
    mkt test/scores.npy f32 2x2 0,1.0986122886681098,1,-2
    "$QPROBE" diff ref test --csv m.csv -q >table.txt
    assert_near "$(csv_field m.csv out_logits kl)" 0.0719205181 1e-8
    assert_eq "$(csv_field m.csv out_logits top1)" 0.5
    assert_eq "$(csv_field m.csv scores kl)" ""
    assert_contains table.txt "top1"
    # --logits replaces the default '*logits*'
    "$QPROBE" diff ref test --logits 'sc*' --csv m.csv -q >/dev/null
    assert_eq "$(csv_field m.csv out_logits kl)" ""
    assert_near "$(csv_field m.csv scores kl)" 0.0719205181 1e-8
    "$QPROBE" diff ref test --logits 'sc*' --sort kl --csv m.csv -q >/dev/null
    assert_eq "$(csv_field m.csv scores rank)" 1
}

test_diff_fail_if_exit_3_names_tensors() {
    make_pair
    assert_exit 3 "$QPROBE" diff ref test --fail-if 'sqnr_db<25' --csv m.csv -q
    assert_contains err "threshold crossed: sqnr_db<25: 'x' (sqnr_db = 14.7712)"
    [ -s m.csv ] || fail "the CSV is written also when a threshold is crossed"
    assert_exit 0 "$QPROBE" diff ref test --fail-if 'sqnr_db<10' -q
    assert_exit 3 "$QPROBE" diff ref test --fail-if 'sqnr_db<10,mae>0.2' -q
    assert_contains err "mae>0.2: 'x' (mae = 0.25)"
    assert_exit 3 "$QPROBE" diff ref test --fail-if 'sqnr_db<10' --fail-if 'max_abs >= 1' -q
    assert_exit 0 "$QPROBE" diff ref test --fail-if 'nonfinite>0' -q
    assert_exit 2 "$QPROBE" diff ref test --fail-if 'snr<3'
    assert_contains err "unknown metric 'snr'"
}

test_diff_files_complete_when_the_reader_stops_early() {
    make_pair
    # head closes the pipe after one line: the table is printed after the
    # files are committed, so they are whole
    "$QPROBE" diff ref test --csv m.csv --align-report a.csv -q | head -n 1 >/dev/null
    assert_eq "$(grep -c '^' m.csv)" 3
    assert_eq "$(csv_field a.csv x how)" exact
}

test_diff_top_and_sort() {
    make_pair
    "$QPROBE" diff ref test --top 1 -q >t.txt
    assert_contains t.txt "(1 more; --top 0 shows all, --csv writes all)"
    assert_eq "$(grep -c ' same ' t.txt || true)" 0
    "$QPROBE" diff ref test --sort order --top 0 -q >t.txt
    [ "$(grep -n ' same ' t.txt | cut -d: -f1)" -lt "$(grep -n ' x ' t.txt | cut -d: -f1)" ] ||
        fail "dump order: $(cat t.txt)"
}

test_diff_plot_png_svg_and_script() {
    make_pair
    "$QPROBE" diff ref test --plot p.png --mark 1 -q >/dev/null
    assert_eq "$(head -c 4 p.png | od -An -c | tr -d ' ')" "211PNG"
    assert_contains p.gp "if (!exists(\"qp_dat\")) qp_dat = 'p.dat'"
    # the data: dump order (same, then x: natural order of the files), the
    # worst (x) marked, the inf drawn at the top as kind 1
    assert_eq "$(grep -c '"x"' p.dat)" 1
    # columns: index block value kind worst_rank mark_y name
    assert_eq "$(awk '$7 == "\"x\"" {print $1, $2, $4, $5}' p.dat)" "1 -1 0 1"
    assert_eq "$(awk '$7 == "\"same\"" {print $1, $2, $4, $5}' p.dat)" "0 -1 1 0"
    # the kept script draws it again
    rm p.png
    gnuplot p.gp
    [ -s p.png ] || fail "gnuplot p.gp did not draw p.png"
    mkdir sub
    "$QPROBE" diff ref test --plot sub/p.svg -q >/dev/null
    assert_contains sub/p.svg "<svg"
    assert_contains sub/p.svg "SQNR per tensor"
    [ -s sub/p.dat ] && [ -s sub/p.gp ] || fail "sub/p.dat or sub/p.gp missing"
}

test_diff_plot_hundreds_of_tensors_stays_readable() {
    # defect: with hundreds of tensors the worst-layer labels overprinted
    mkdir ref test
    for l in 0 1 2 3 4 5 6 7 8 9 10 11; do
        for k in q k v o gate up down; do
            mkt "ref/model.layers.$l.$k.npy" f32 4 1,2,3,4
            mkt "test/model.layers.$l.$k.npy" f32 4 1,2,3,$((5 + l))
        done
    done
    "$QPROBE" diff ref test --plot p.png --mark 30 -q >/dev/null
    # every marked point listed beside the plot (20 rows, then a count)
    assert_eq "$(grep -c "at screen 0.775" p.gp)" 22
    assert_contains p.gp "(+10 more in the CSV)"
    # rank numbers on the plot only where points are apart: at most 10
    n=$(grep -c "offset 0.8,0.8" p.gp)
    [ "$n" -ge 1 ] && [ "$n" -le 10 ] || fail "$n rank labels on the plot"
    # one dotted line per block boundary (12 blocks) and block numbers
    assert_eq "$(grep -c "nohead dt 3" p.gp)" 11
    assert_contains p.gp "set label 'L11'"
    assert_eq "$(awk '$7 == "\"model.layers.7.up\"" {print $2}' p.dat)" 7
    [ -s p.png ] || fail "no plot"
}

test_diff_bad_input_exit_1_no_partial_outputs() {
    make_pair
    assert_exit 1 "$QPROBE" diff missing test --csv m.csv --plot p.png
    assert_contains err "qprobe: error: 'missing'"
    head -c 136 ref/x.npy >test/x.npy   # truncated data
    assert_exit 1 "$QPROBE" diff ref test --csv m.csv --plot p.png --align-report a.csv
    assert_contains err "qprobe: error: 'test/x.npy'"
    for f in m.csv p.png p.gp p.dat a.csv; do [ ! -e "$f" ] || fail "$f left behind"; done
    no_tmp_left .
    # gnuplot failing: nothing written either
    make_pair
    QP_GNUPLOT=/nonexistent/gnuplot assert_exit 1 "$QPROBE" diff ref test --csv m.csv --plot p.png
    assert_contains err "qprobe: error: 'p.png': cannot run '/nonexistent/gnuplot'"
    for f in m.csv p.png p.gp p.dat; do [ ! -e "$f" ] || fail "$f left behind"; done
    no_tmp_left .
    # nothing pairs up
    mkdir other
    mkt other/zz.npy f32 1 1
    assert_exit 1 "$QPROBE" diff ref other
    assert_contains err "no tensor names pair up"
    mkt ref/extra.npy f32 1 1
    assert_exit 1 "$QPROBE" diff ref test --strict
    assert_contains err "--strict: some tensors are unpaired or refused"
}

test_diff_usage_errors() {
    assert_exit 2 "$QPROBE" diff onlyone
    assert_contains err "expected REF and TEST"
    assert_exit 2 "$QPROBE" diff a b --plot x.jpg
    assert_contains err "must end in .png or .svg"
    assert_exit 2 "$QPROBE" diff a b --sort speed
    assert_exit 2 "$QPROBE" diff a b --top -1
    assert_exit 2 "$QPROBE" diff a b --layout NCHW
    assert_contains err "expected REF:TEST"
    out=$("$QPROBE" diff --help)
    assert_contains "$out" "rank,name,shape,numel,sqnr_db,cosine,mae,max_abs,rel_l2,ref_absmax,"
    assert_contains "$out" "--fail-if COND"
    assert_contains "$out" "top1 = share of rows whose argmax agrees"
}

test_diff_across_formats_npy_vs_pb() {
    # the same device tensors in an ONNX TensorProto .pb directory (int8
    # with NAME.scale / NAME.zero_point companions) give the same CSV as in
    # an npy directory
    make_act 11
    mkt ref/x.npy f32 2x2 1,2,3,4
    mkt test/x.npy f32 2x2 1,2,3,5
    "$MKDEMO" convert test testpb pb-dir
    [ -f testpb/act.pb ] && [ -f testpb/act.scale.pb ] || fail "no .pb files"
    "$QPROBE" diff ref test --layout NCHW:NHWC --csv npy.csv -q >/dev/null
    "$QPROBE" diff ref testpb --layout NCHW:NHWC --csv pb.csv -q >/dev/null
    cmp npy.csv pb.csv || fail "npy and pb dumps differ: $(diff npy.csv pb.csv)"
    assert_near "$(csv_field pb.csv act sqnr_db)" 25.6110138 1e-6   # 10 lg 364
    assert_near "$(csv_field pb.csv x sqnr_db)" 14.7712125472 1e-7
}

test_diff_simd_and_reference_agree_and_version_names_them() {
    assert_contains "$(QP_KERNELS=ref "$QPROBE" --version)" "metrics=ref"
    assert_contains "$("$QPROBE" --version)" "metrics="
    "$MKDEMO" demo d
    args="d/ref.h5 d/device --map $ROOT/data/demo-map.json --layout NCHW:NHWC -q"
    # shellcheck disable=SC2086
    "$QPROBE" diff $args --csv simd.csv >/dev/null
    # shellcheck disable=SC2086
    QP_KERNELS=ref "$QPROBE" diff $args --csv ref.csv >/dev/null
    assert_eq "$(cut -d, -f1-4,8,11 simd.csv)" "$(cut -d, -f1-4,8,11 ref.csv)"
    cols=$(head -n 1 simd.csv | awk -F, '{ print NF }')
    paste -d, simd.csv ref.csv | awk -F, -v cols="$cols" 'NR > 1 {
        for (c = 5; c <= 10; c++) { a = $c; b = $(c + cols); d = a - b; if (d < 0) d = -d
            if (d > 1e-7 * (b < 0 ? -b : b) + 1e-12) { print "row " NR " col " c ": " a " vs " b; bad = 1 } }
    } END { exit bad }' || fail "SIMD and reference metrics differ"
}

test_diff_across_formats_h5_vs_raw_dir() {
    # a reference .h5 against a device folder of .raw files with JSON
    # metadata, a .safetensors and an .npz: every container gives the CSV
    # the npy folders give
    make_act 11
    mkt ref/x.npy f32 2x2 1,2,3,4
    mkt test/x.npy f32 2x2 1,2,3,5
    "$MKDEMO" convert ref ref.h5
    "$MKDEMO" convert test raw raw-dir
    "$MKDEMO" convert test t.safetensors
    "$MKDEMO" convert test t.npz
    "$QPROBE" diff ref test --layout NCHW:NHWC --csv npy.csv -q >/dev/null
    for t in raw t.safetensors t.npz; do
        "$QPROBE" diff ref.h5 "$t" --layout NCHW:NHWC --csv "$t.csv" -q >/dev/null
        cmp npy.csv "$t.csv" || fail "ref.h5 vs $t differs from npy: $(diff npy.csv "$t.csv")"
    done
    assert_near "$(csv_field raw.csv act sqnr_db)" 25.6110138 1e-6   # 10 lg 364
    assert_eq "$(csv_field raw.csv act max_abs)" 0.5
}
