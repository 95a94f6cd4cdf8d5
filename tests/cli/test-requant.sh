# CLI tests of `qprobe requant`: golden cases through the real binary,
# hand-computed values, --explain, both derivations, and every refusal.

# le WIDTH VALUE: VALUE as WIDTH little-endian bytes (floats as bit patterns)
le() {
    local w=$1 v=$2 i
    for ((i = 0; i < w; i++)); do
        printf "\\$(printf '%03o' $(((v >> (8 * i)) & 255)))"
    done
}

# npy FILE DESCR SHAPE V...: a version 1.0 .npy file, e.g. npy a.npy '<i4' '(2,)' 1 2
npy() {
    local f=$1 descr=$2 shape=$3 w
    shift 3
    case "$descr" in *1) w=1 ;; *2) w=2 ;; *4) w=4 ;; *8) w=8 ;; esac
    local hdr="{'descr': '$descr', 'fortran_order': False, 'shape': $shape, }"
    local hlen=$(((10 + ${#hdr} + 1 + 63) / 64 * 64 - 10))
    {
        printf '\x93NUMPY\x01\x00'
        le 2 "$hlen"
        printf '%s' "$hdr"
        printf "%$((hlen - ${#hdr} - 1))s\n" ''
        for v in "$@"; do le "$w" "$v"; done
    } >"$f"
}

# data_offset FILE: where a version 1.0 .npy file's data starts
data_offset() {
    set -- $(od -An -v -t u1 -j 8 -N 2 "$1")
    echo $((10 + $1 + 256 * $2))
}

# vals FILE TYPE: the data of an .npy file, as od prints TYPE (d1, d2, d4)
vals() {
    od -An -v -t "$2" -j "$(data_offset "$1")" "$1" | tr -s ' \n' ' ' | sed 's/^ //; s/ $//'
}

shared_dir() {
    for d in "${QP_SHARED:-}" "$ROOT/../shared" /work/shared; do
        [ -n "$d" ] && [ -d "$d/golden" ] && { echo "$d"; return 0; }
    done
    fail "golden data not found (QP_SHARED, ../shared, /work/shared)"
}

json_field() { sed -n "s/^ *\"$2\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$1" | head -n 1; }

test_requant_golden_cases_through_cli() {
    root=$(shared_dir)/golden/public/requant
    n=0
    for flavor in tflite-double tflite-single tflite-int64-double tflite-int64-single \
        cmsis-nn-double cmsis-nn-single cmsis-nn-s64 gemmlowp xnnpack-fp32; do
        for c in case_000 case_011 case_023 case_029; do
            d=$root/$flavor/$c
            [ -f "$d/case.json" ] || fail "missing $d"
            zp=$(json_field "$d/case.json" output_zero_point)
            lo=$(json_field "$d/case.json" qmin)
            hi=$(json_field "$d/case.json" qmax)
            dt=$(json_field "$d/case.json" output_dtype)
            if [ -f "$d/scale.npy" ]; then
                params="--scale $d/scale.npy"
            else
                params="--multiplier $d/multiplier.npy --shift $d/shift.npy"
            fi
            # shellcheck disable=SC2086
            assert_exit 0 "$QPROBE" requant --flavor "$flavor" --acc "$d/acc.npy" $params \
                --zero-point "$zp" --qmin "$lo" --qmax "$hi" --out-dtype "$dt" -o out.npy
            # the same data bytes (headers may differ in padding)
            bytes=$(($(stat -c %s out.npy) - $(data_offset out.npy)))
            assert_eq "$bytes" $(($(stat -c %s "$d/expected.npy") - $(data_offset "$d/expected.npy")))
            cmp <(tail -c "$bytes" out.npy) <(tail -c "$bytes" "$d/expected.npy") ||
                fail "$flavor $c: output differs from expected.npy"
            n=$((n + 1))
        done
    done
    assert_eq "$n" 36 "golden cases run"
}

test_requant_hand_values_per_channel() {
    # columns: 0.5 = (2^30, 0) and 0.25 = (2^30, -1), zero point 10, int16.
    # 100 -> 50, 25; -7: SRDHM gives -3.5 -> -3 (half up); col 1 then
    # RoundingDivideByPOT(-3, 1) = -1.5 -> -2 (away): 7 and 8.
    npy acc.npy '<i4' '(2, 2)' 100 100 -7 -7
    npy m.npy '<i4' '(2,)' $((1 << 30)) $((1 << 30))
    npy s.npy '<i4' '(2,)' 0 -1
    assert_exit 0 "$QPROBE" requant --flavor tflite --acc acc.npy --multiplier m.npy \
        --shift s.npy -z 10 --out-dtype int16 -o out.npy
    assert_eq "$(vals out.npy d2)" "60 35 7 8"
    # the single-rounding flavor: -3.5 -> -3, -1.75 -> -2
    assert_exit 0 "$QPROBE" requant --flavor tflite-single --acc acc.npy --multiplier m.npy \
        --shift s.npy -z 10 --out-dtype int16 -o out.npy
    assert_eq "$(vals out.npy d2)" "60 35 7 8"
    # 0.25 of 1: double rounding 0.5 -> 1 -> 1, single 0.25 -> 0; a
    # per-tensor (length 1) multiplier broadcasts; clamp [0, 5] with
    # --qmin/--qmax in output units
    npy one.npy '<i4' '(3,)' 1 1 100
    npy m1.npy '<i4' '(1,)' $((1 << 30))
    npy s1.npy '<i4' '(1,)' -1
    assert_exit 0 "$QPROBE" requant -f tflite-double --acc one.npy --multiplier m1.npy \
        --shift s1.npy --qmin 0 --qmax 5 -o d.npy
    assert_exit 0 "$QPROBE" requant -f tflite-single --acc one.npy --multiplier m1.npy \
        --shift s1.npy --qmin 0 --qmax 5 -o s.npy
    assert_eq "$(vals d.npy d1)" "1 1 5"
    assert_eq "$(vals s.npy d1)" "0 0 5"
}

test_requant_float_flavors_and_int64() {
    # scale 0.5 (float32 0x3f000000), zp 1: 5 -> 2.5 -> 2 (even) + 1 = 3;
    # onnx-ref adds the zero point first: 3.5 -> 4; -5 -> -1 / -2
    npy acc.npy '<i4' '(3,)' 5 -5 1000
    npy sc.npy '<f4' '(1,)' 0x3f000000
    assert_exit 0 "$QPROBE" requant --flavor xnnpack-fp32 --acc acc.npy --scale sc.npy -z 1 -o x.npy
    assert_exit 0 "$QPROBE" requant --flavor onnx --acc acc.npy --scale sc.npy -z 1 -o o.npy
    assert_eq "$(vals x.npy d1)" "3 -1 127"
    assert_eq "$(vals o.npy d1)" "4 -2 127"
    # a float64 scale file works when its values are float32 values
    npy sc8.npy '<f8' '(1,)' 0x3FE0000000000000
    assert_exit 0 "$QPROBE" requant --flavor ort --acc acc.npy --scale sc8.npy -z 1 -o r.npy
    assert_eq "$(vals r.npy d1)" "3 -1 127"
    # int64 accumulators, real 0.5: 2^31 -> 2^30 in TFLite (clamped to
    # 32767), but CMSIS-NN's s64 path keeps 32 bits: -2^30 -> -32768
    npy a64.npy '<i8' '(2,)' $((1 << 31)) -3
    npy m.npy '<i4' '(1,)' $((1 << 30))
    npy s.npy '<i4' '(1,)' 0
    assert_exit 0 "$QPROBE" requant --flavor tflite-int64-double --acc a64.npy --multiplier m.npy \
        --shift s.npy -o t.npy
    assert_exit 0 "$QPROBE" requant --flavor cmsis-nn-s64 --acc a64.npy --multiplier m.npy \
        --shift s.npy -o c.npy
    assert_eq "$(vals t.npy d2)" "32767 -1"
    assert_eq "$(vals c.npy d2)" "-32768 -1"
    # an int64 file for an int32 flavor is fine when the values fit
    npy small64.npy '<i8' '(2,)' 6 -6
    assert_exit 0 "$QPROBE" requant --flavor gemmlowp --acc small64.npy --multiplier m.npy \
        --shift s.npy -o g.npy
    assert_eq "$(vals g.npy d1)" "3 -3"
}

test_requant_explain_prints_intermediates() {
    # 1.0 = (2^30, 1), acc 3: x' = 6, product 6 * 2^30 = 6442450944, nudge
    # 2^30, high = 7 * 2^30 / 2^31 = 3 (truncating), + zero point 5 = 8
    npy acc.npy '<i4' '(2,)' 3 -4
    npy m.npy '<i4' '(1,)' $((1 << 30))
    npy s.npy '<i4' '(1,)' 1
    assert_exit 0 "$QPROBE" requant --flavor tflite --acc acc.npy --multiplier m.npy --shift s.npy \
        -z 5 --explain 1
    assert_contains out "[0] acc 3, channel 0: multiplier 1073741824, shift 1 (real 1)"
    grep -q "x' = x \* 2^l, int32 (wraps on overflow) *6$" out || fail "no x' line: $(cat out)"
    grep -q "product = x' \* multiplier *6442450944$" out || fail "no product line"
    grep -q "nudge.* 1073741824$" out || fail "no nudge line"
    grep -q "high = (product + nudge) / 2^31, truncating *3$" out || fail "no high line"
    grep -q "^    output *8$" out || fail "no output line"
    grep -q "\[1\]" out && fail "explained more than 1 element"
    # float flavors show the float steps; explain and -o together
    npy sc.npy '<f4' '(1,)' 0x3f000000
    assert_exit 0 "$QPROBE" requant --flavor xnnpack-fp32 --acc acc.npy --scale sc.npy \
        --explain 2 -o x.npy
    grep -q "product = float(acc) \* scale (float32) *1.5$" out || fail "no float product: $(cat out)"
    grep -q "rounded half to even *2$" out || fail "no rounding line"
    assert_eq "$(vals x.npy d1)" "2 -2"
}

test_requant_derive() {
    # 1.0 -> (2^30, 1); 0.5 -> (2^30, 0); 2^-33 flushes to (0, 0); 2^40
    # keeps shift 41 in the double build and saturates to (2^31-1, 30) in
    # the single-rounding build
    npy real.npy '<f8' '(4,)' 0x3FF0000000000000 0x3FE0000000000000 0x3DE0000000000000 \
        0x4270000000000000
    assert_exit 0 "$QPROBE" requant --flavor tflite-double --derive real.npy \
        --multiplier-out m.npy --shift-out s.npy
    assert_eq "$(vals m.npy d4)" "1073741824 1073741824 0 1073741824"
    assert_eq "$(vals s.npy d4)" "1 0 0 41"
    assert_exit 0 "$QPROBE" requant --flavor tflite-single --derive real.npy \
        --multiplier-out m.npy --shift-out s.npy
    assert_eq "$(vals m.npy d4)" "1073741824 1073741824 0 2147483647"
    assert_eq "$(vals s.npy d4)" "1 0 0 30"
    # per channel: 0.5 * 3 / 1 = 1.5 -> (0x60000000, 1); 0.5 * 0.25 =
    # 0.125 -> (2^30, -2)
    npy ws.npy '<f4' '(2,)' 0x40400000 0x3E800000
    assert_exit 0 "$QPROBE" requant --flavor tflite --derive-per-channel --input-scale 0.5 \
        --weight-scale ws.npy --output-scale 1 --multiplier-out m.npy --shift-out s.npy
    assert_eq "$(vals m.npy d4)" "1610612736 1073741824"
    assert_eq "$(vals s.npy d4)" "1 -2"
    # xnnpack-rndnu: the same scales as float32 -> mantissa << 7, exponent
    assert_exit 0 "$QPROBE" requant --flavor xnnpack-rndnu --derive-per-channel --input-scale 0.5 \
        --weight-scale ws.npy --output-scale 1 --multiplier-out m.npy --shift-out s.npy
    assert_eq "$(vals m.npy d4)" "1610612736 1073741824"
    assert_eq "$(vals s.npy d4)" "1 -2"
    no_tmp_left .
}

test_requant_refusals() {
    npy acc.npy '<i4' '(2, 2)' 1 2 3 4
    npy m.npy '<i4' '(2,)' $((1 << 30)) $((1 << 30))
    npy s.npy '<i4' '(2,)' 0 0
    npy m3.npy '<i4' '(3,)' 1 2 3
    npy s31.npy '<i4' '(2,)' 0 31
    npy f.npy '<f4' '(2, 2)' 0 0 0 0
    npy big.npy '<i8' '(2,)' 4294967296 1
    npy sc01.npy '<f8' '(1,)' 0x3FB999999999999A
    npy nan.npy '<f8' '(1,)' 0x7FF8000000000000
    run() { "$QPROBE" requant "$@"; }
    # usage errors: exit 2
    assert_exit 2 run --acc acc.npy --multiplier m.npy --shift s.npy -o out.npy
    assert_contains err "--flavor is required"
    assert_exit 2 run -f tflite-triple --acc acc.npy --multiplier m.npy --shift s.npy -o out.npy
    assert_contains err "--flavor: unknown requantization flavor 'tflite-triple' (tflite-double"
    assert_exit 2 run -f tflite --acc acc.npy --multiplier m.npy --shift s.npy
    assert_contains err "-o OUT.npy (or --explain N) is required"
    assert_exit 2 run -f tflite --acc acc.npy --multiplier m.npy -o out.npy
    assert_contains err "give --multiplier and --shift, or --scale"
    assert_exit 2 run -f tflite --acc acc.npy --multiplier m.npy --shift s.npy --scale m.npy -o out.npy
    assert_contains err "not both"
    assert_exit 2 run -f xnnpack-fp32 --acc acc.npy --multiplier m.npy --shift s.npy -o out.npy
    assert_contains err "xnnpack-fp32 multiplies by a float scale: give --scale"
    assert_exit 2 run -f tflite --acc acc.npy --multiplier m.npy --shift s.npy -z 200 -o out.npy
    assert_contains err "zero point 200 is outside the i8 range [-128, 127]"
    assert_exit 2 run -f tflite --acc acc.npy --multiplier m.npy --shift s.npy --out-dtype f32 -o out.npy
    assert_contains err "--out-dtype: 'f32': int8, uint8 or int16"
    assert_exit 2 run -f tflite --acc acc.npy --multiplier m.npy --shift s.npy --qmin x -o out.npy
    assert_contains err "--qmin must be a whole number in [-2147483648, 2147483647], not 'x'"
    assert_exit 2 run -f ort --derive m.npy --multiplier-out a.npy --shift-out b.npy
    assert_contains err "ort multiplies by a float scale; it derives no"
    assert_exit 2 run -f tflite --derive-per-channel --weight-scale m.npy --multiplier-out a.npy \
        --shift-out b.npy
    assert_contains err "needs --input-scale, --weight-scale and --output-scale"
    assert_exit 2 run -f tflite --acc acc.npy --bogus
    assert_contains err "unknown option '--bogus'"
    # bad data: exit 1, the file named, no output left behind
    assert_exit 1 run -f tflite --acc f.npy --multiplier m.npy --shift s.npy -o out.npy
    assert_contains err "qprobe: error: 'f.npy': accumulators must be int32 or int64, not f32"
    assert_exit 1 run -f tflite --acc acc.npy --multiplier m3.npy --shift s.npy -o out.npy
    assert_contains err "'m3.npy': multiplier has 3 values; expected 1 or 2 (the last axis of 'acc.npy')"
    assert_exit 1 run -f tflite --acc acc.npy --multiplier m.npy --shift s31.npy -o out.npy
    assert_contains err "'m.npy', 's31.npy': tflite-double: shift[1] = 31 is outside [-31, 30]"
    assert_exit 1 run -f tflite --acc acc.npy --multiplier f.npy --shift s.npy -o out.npy
    assert_contains err "'f.npy': multiplier has 4 values"
    assert_exit 1 run -f tflite --acc big.npy --multiplier m.npy --shift s.npy -o out.npy
    assert_contains err "'big.npy': accumulator[0] = 4294967296 does not fit int32"
    assert_exit 1 run -f xnnpack-fp32 --acc acc.npy --scale sc01.npy -o out.npy
    assert_contains err "'sc01.npy': scale[0] = 0.10000000000000001 is not a float32 value"
    assert_exit 1 run -f xnnpack-fp32 --acc acc.npy --scale nan.npy -o out.npy
    assert_contains err "'nan.npy': xnnpack-fp32: scale[0] = nan must be finite and > 0"
    assert_exit 1 run -f tflite --acc missing.npy --multiplier m.npy --shift s.npy -o out.npy
    assert_contains err "missing.npy"
    assert_exit 1 run -f tflite --derive nan.npy --multiplier-out a.npy --shift-out b.npy
    assert_contains err "'nan.npy': tflite-double: real multiplier [0] is nan"
    [ ! -e out.npy ] && [ ! -e a.npy ] || fail "output written despite the error"
    no_tmp_left .
}
