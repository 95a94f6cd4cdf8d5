# qprobe quantize: integer and fake-quant outputs checked byte by byte
# against hand-computed values, the report against an awk oracle, recipes,
# selection, and every refusal (exit 1 with file and problem, usage exit 2,
# no partial output). Input models are npy directories written here with
# perl's pack (no Python).

# mknpy FILE CODE SHAPE VALUES...: a little-endian .npy; CODE f4 or i8,
# SHAPE as numpy writes it inside parentheses ("2, 4" or "3,")
mknpy() {
    perl -e '
        my ($file, $code, $shape, @v) = @ARGV;
        my $pack = $code eq "f4" ? "f<*" : "q<*";
        my $dict = "{\x27descr\x27: \x27<$code\x27, \x27fortran_order\x27: "
                 . "False, \x27shape\x27: ($shape), }";
        my $pad = (64 - (10 + length($dict) + 1) % 64) % 64;
        $dict .= " " x $pad . "\n";
        open(my $fh, ">", $file) or die "$file: $!";
        binmode $fh;
        print $fh "\x93NUMPY\x01\x00", pack("v", length($dict)), $dict,
                  pack($pack, @v);
        close $fh or die;' "$@"
}

# npy_values FILE OD_TYPE: the elements of a .npy, one per line
npy_values() {
    hl=$(od -An -tu2 -j8 -N2 "$1" | tr -d ' ')
    od -An -v -t"$2" -j$((10 + hl)) "$1" | tr -s ' ' '\n' | sed '/^$/d'
}

# npy_header FILE: the header dict
npy_header() { head -c 200 "$1" | tr -d '\0' | head -n 1; }

# st_header FILE: the JSON header of a .safetensors file
st_header() {
    perl -e 'open(F, "<", $ARGV[0]) or die; binmode F; read(F, $n, 8);
        read(F, $h, unpack("Q<", $n)); print $h, "\n"' "$1"
}

# st_bytes FILE NAME: the stored bytes of tensor NAME, in hex
st_bytes() {
    perl -e 'open(F, "<", $ARGV[0]) or die; binmode F; read(F, $n, 8);
        $n = unpack("Q<", $n); read(F, $h, $n);
        $h =~ /"\Q$ARGV[1]\E":\{[^}]*"data_offsets":\[(\d+),(\d+)\]/
            or die "no tensor $ARGV[1]\n";
        seek(F, 8 + $n + $1, 0); read(F, $d, $2 - $1);
        print unpack("H*", $d), "\n"' "$1" "$2"
}

# the test model: a linear layer, its bias, a 1x1 conv and an int64 counter
make_model() {
    mkdir -p m
    # row 0: amax 63.5 -> s = 0.5 exactly; row 1: amax 0.4 -> s = 0.4/127
    mknpy m/fc.weight.npy f4 "2, 4" 1.25 -63.5 0.75 10 0.1 0.2 -0.3 0.4
    mknpy m/fc.bias.npy f4 "2," 0.5 -0.5
    mknpy m/conv.weight.npy f4 "2, 2, 1, 1" 1 2 3 4
    mknpy m/steps.npy i8 "1," 7
}

lines() { tr '\n' ' ' | sed 's/ $//'; }

test_w8c_writes_int8_with_scales_and_keeps_the_rest() {
    make_model
    "$QPROBE" quantize m --scheme w8c -o res >log
    # 64 bytes in; out: 8 + 4 int8 weights with 2 + 2 scales, and the
    # 16 bytes kept
    assert_eq "$(cat log)" "res: 2 tensors quantized, 2 kept; 64 B -> 44 B"
    assert_contains "$(npy_header res/fc.weight.npy)" "'descr': '|i1'"
    assert_contains "$(npy_header res/fc.weight.npy)" "'shape': (2, 4,)"
    # x / s = 2.5, -127, 1.5, 20 | 31.75, 63.5, -95.25, 127 (half away)
    assert_eq "$(npy_values res/fc.weight.npy d1 | lines)" "3 -127 2 20 32 64 -95 127"
    assert_eq "$(npy_values res/fc.weight.scale.npy f4 | lines)" "0.5 0.0031496063"
    [ ! -e res/fc.weight.zero_point.npy ] || fail "symmetric scheme wrote zero points"
    # conv [2,2,1,1] per output channel: [1,2] s = 2/127, [3,4] s = 4/127
    assert_eq "$(npy_values res/conv.weight.npy d1 | lines)" "64 127 95 127"
    # the bias (1-D) and the int64 counter are copied unchanged
    assert_contains "$(npy_header res/fc.bias.npy)" "'descr': '<f4'"
    assert_eq "$(npy_values res/fc.bias.npy f4 | lines)" "0.5 -0.5"
    assert_eq "$(npy_values res/steps.npy d8 | lines)" "7"
    # the schemes are in the directory's metadata
    assert_contains res/.qprobe-meta.json '"scheme:fc.weight":	"w8c"'
    assert_contains res/.qprobe-meta.json '"scheme:conv.weight":	"w8c"'
    no_tmp_left .
}

test_round_half_even_changes_ties_only() {
    make_model
    "$QPROBE" quantize m --scheme w8c --round half-even -o res -q
    # 2.5 -> 2 (even); 1.5 -> 2; 63.5 -> 64; the rest as before
    assert_eq "$(npy_values res/fc.weight.npy d1 | lines)" "2 -127 2 20 32 64 -95 127"
}

test_asymmetric_writes_uint8_and_zero_points() {
    make_model
    "$QPROBE" quantize m --scheme w8tz --include fc.bias -o res -q
    # fc.bias [0.5, -0.5]: s = float(1/255) is a hair above 1/255, so
    # -0.5 / s = -127.49999 -> z = 127; 0.5 -> 127 + 127, -0.5 -> 0
    assert_contains "$(npy_header res/fc.bias.npy)" "'descr': '|u1'"
    assert_eq "$(npy_values res/fc.bias.zero_point.npy d4 | lines)" "127"
    assert_eq "$(npy_values res/fc.bias.npy u1 | lines)" "254 0"
    # per-tensor conv [1..4]: range [0, 4], s = 4/255, z = 0:
    # x / s = 63.75, 127.49999, 191.25, 254.99998
    assert_eq "$(npy_values res/conv.weight.zero_point.npy d4 | lines)" "0"
    assert_eq "$(npy_values res/conv.weight.npy u1 | lines)" "64 127 191 255"
}

test_fake_writes_dequantized_fp32_of_the_same_shape() {
    make_model
    "$QPROBE" quantize m --scheme w4c --fake -o res -q
    assert_contains "$(npy_header res/fc.weight.npy)" "'descr': '<f4'"
    assert_contains "$(npy_header res/fc.weight.npy)" "'shape': (2, 4,)"
    [ ! -e res/fc.weight.scale.npy ] || fail "--fake wrote scales"
    # 4-bit, row 0: s = 63.5/7 = 9.0714; 1.25 -> 0, -63.5 -> -7, 0.75 -> 0,
    # 10 -> 1.1 -> 1
    assert_eq "$(npy_values res/fc.weight.npy f4 | head -n 4 | lines)" \
        "0 -63.5 0 9.071428"
}

test_report_rows_match_an_independent_computation() {
    make_model
    "$QPROBE" quantize m --scheme w8c -o res --report r.csv -q
    assert_eq "$(head -n 1 r.csv)" \
        "name,shape,scheme,bits,sqnr_db,cosine,mae,max_abs,bytes_fp32,bytes_quantized"
    assert_eq "$(wc -l < r.csv | tr -d ' ')" 4  # header + 3 float tensors
    assert_eq "$(csv_field r.csv fc.weight shape)" "2x4"
    assert_eq "$(csv_field r.csv fc.weight scheme)" "w8c"
    assert_eq "$(csv_field r.csv fc.weight bits)" "8"
    assert_eq "$(csv_field r.csv fc.weight bytes_fp32)" "32"
    assert_eq "$(csv_field r.csv fc.weight bytes_quantized)" "16"  # 8 + 2 scales
    # oracle: x, and s*q from the hand-computed integers above
    want=$(awk 'BEGIN {
        split("1.25 -63.5 0.75 10 0.1 0.2 -0.3 0.4", x, " ");
        split("3 -127 2 20 32 64 -95 127", q, " ");
        for (i = 1; i <= 8; i++) { s = i <= 4 ? 0.5 : 0.4 / 127;
            d = x[i] - s * q[i]; r2 += x[i] * x[i]; e2 += d * d;
            a = d < 0 ? -d : d; mae += a / 8; if (a > mx) mx = a }
        printf "%.6f %.8f %.8f", 10 * log(r2 / e2) / log(10), mae, mx }')
    set -- $want
    assert_near "$(csv_field r.csv fc.weight sqnr_db)" "$1" 0.001
    assert_near "$(csv_field r.csv fc.weight mae)" "$2" 1e-6
    assert_near "$(csv_field r.csv fc.weight max_abs)" "$3" 1e-6
    # a kept tensor: no error, its own bytes
    assert_eq "$(csv_field r.csv fc.bias scheme)" "fp32"
    assert_eq "$(csv_field r.csv fc.bias sqnr_db)" "inf"
    assert_eq "$(csv_field r.csv fc.bias cosine)" "1"
    assert_eq "$(csv_field r.csv fc.bias bytes_quantized)" "8"
}

test_group_wise_scales_have_the_blocked_shape() {
    mkdir m
    mknpy m/w.npy f4 "2, 8" 1 2 3 4 5 6 7 8 -8 -7 -6 -5 -4 -3 -2 -1
    "$QPROBE" quantize m --scheme w8g4 -o res -q
    assert_contains "$(npy_header res/w.scale.npy)" "'shape': (2, 2,)"
    # groups [1..4] [5..8] [-8..-5] [-4..-1]: amax 4, 8, 8, 4
    assert_eq "$(npy_values res/w.scale.npy f4 | lines)" \
        "0.031496063 0.062992126 0.062992126 0.031496063"
}

test_partial_group_is_refused_for_companions_but_fake_works() {
    mkdir m
    mknpy m/w.npy f4 "2, 6" 1 2 3 4 5 6 1 2 3 4 5 6
    assert_exit 1 "$QPROBE" quantize m --scheme w8g4 -o res
    assert_contains err "qprobe: error: 'm': tensor 'w' [2,6]: groups of 4 along axis 1 (size 6) leave a partial last group"
    assert_contains err "read back as groups of 3"
    [ ! -e res ] || fail "partial output left"
    no_tmp_left .
    # safetensors records the block size beside the scales
    "$QPROBE" quantize m --scheme w8g4 -o q.safetensors -q
    assert_contains "$(st_header q.safetensors)" '\"axis\":1,\"block_size\":4'
    assert_contains "$(st_header q.safetensors)" '"w.scale":{"dtype":"F32","shape":[2,2],'
    # the partial group [5, 6]: 6/127 -> 5 / s = 105.8 -> 106, 127
    assert_eq "$(st_bytes q.safetensors w | cut -c9-12)" "6a7f"
    "$QPROBE" quantize m --scheme w8g4 --fake -o res -q
    # the partial group [5, 6] has its own scale: 6 / 127; 5 -> 105.8 -> 106
    assert_near "$(npy_values res/w.npy f4 | sed -n 5p)" "$(awk 'BEGIN { printf "%.7g", 106 * 6 / 127 }')" 1e-6
}

test_include_and_exclude_override_the_selection() {
    make_model
    "$QPROBE" quantize m --scheme w8t --include 'fc.b*' --exclude 'conv' -o res -q
    assert_contains "$(npy_header res/fc.bias.npy)" "'descr': '|i1'"
    assert_contains "$(npy_header res/conv.weight.npy)" "'descr': '<f4'"
    assert_contains "$(npy_header res/fc.weight.npy)" "'descr': '|i1'"
    # an integer tensor is never quantized, even when included
    "$QPROBE" quantize m --scheme w8t --include steps -o res2 -q
    assert_contains "$(npy_header res2/steps.npy)" "'descr': '<i8'"
}

test_recipe_picks_a_scheme_per_tensor() {
    make_model
    cat > r.json <<'EOF'
{ "qprobe_recipe": 1, "default": "w8t",
  "layers": { "fc": "fp32", "conv*": "w8cz" } }
EOF
    "$QPROBE" quantize m --recipe r.json -o res --report r.csv -q
    assert_contains "$(npy_header res/fc.weight.npy)" "'descr': '<f4'"
    assert_contains "$(npy_header res/conv.weight.npy)" "'descr': '|u1'"
    # zero points are stored in the narrowest type holding them
    assert_contains "$(npy_header res/conv.weight.zero_point.npy)" "'descr': '|u1'"
    assert_eq "$(csv_field r.csv conv.weight scheme)" "w8cz"
    assert_eq "$(csv_field r.csv fc.weight scheme)" "fp32"
}

test_bad_scheme_points_at_the_character() {
    make_model
    # a malformed argument is a usage error (2)
    assert_exit 2 "$QPROBE" quantize m --scheme w4g0 -o res
    assert_eq "$(cat err)" "qprobe quantize: --scheme: scheme 'w4g0': group size must be at least 1; see 'qprobe quantize --help'
  w4g0
     ^"
    [ ! -e res ] || fail "output written"
}

test_bad_recipe_names_file_and_key() {
    make_model
    printf '{"qprobe_recipe": 1, "layers": {"fc": "w8c", "conv*": "w9c"}}' > r.json
    assert_exit 1 "$QPROBE" quantize m --recipe r.json -o res
    assert_contains err "qprobe: error: 'r.json': layers \"conv*\": scheme 'w9c': bits must be 2..8 or 16, got 9"
    printf '{"qprobe_recipe": 1, "default": "w8c",}' > r.json
    assert_exit 1 "$QPROBE" quantize m --recipe r.json -o res
    assert_contains err "'r.json': invalid JSON at line 1"
    printf '{"qprobe_recipe": 1, "layer": {}}' > r.json
    assert_exit 1 "$QPROBE" quantize m --recipe r.json -o res
    assert_contains err "'r.json': unknown key \"layer\""
    assert_exit 1 "$QPROBE" quantize m --recipe missing.json -o res
    assert_contains err "'missing.json': cannot open"
    [ ! -e res ] || fail "output written"
    no_tmp_left .
}

test_bad_model_files_fail_without_output() {
    assert_exit 1 "$QPROBE" quantize nope.npz --scheme w8c -o res
    assert_contains err "qprobe: error: 'nope.npz'"
    mkdir m
    mknpy m/a.npy f4 "2, 2" 1 2 3 4
    printf '\223NUMPY\001\000\010\000{bad}   \n' > m/b.npy
    assert_exit 1 "$QPROBE" quantize m --scheme w8c -o res
    assert_contains err "b.npy"
    [ ! -e res ] || fail "partial output left"
    no_tmp_left .
    # a non-finite weight is named
    rm m/b.npy
    mknpy m/c.npy f4 "2, 2" 1 nan 3 4
    assert_exit 1 "$QPROBE" quantize m --scheme w8c -o res
    assert_contains err "tensor 'c': element 1 is nan"
    [ ! -e res ] || fail "partial output left"
    no_tmp_left .
}

test_gptq_and_calib_are_refused_clearly() {
    make_model
    assert_exit 1 "$QPROBE" quantize m --scheme w4g128@gptq -o res
    assert_contains err "scheme 'w4g128@gptq': GPTQ needs calibration data"
    printf '{"qprobe_recipe": 1, "layers": {"fc*": "w4g32@gptq"}}' > r.json
    assert_exit 1 "$QPROBE" quantize m --recipe r.json -o res
    assert_contains err "'r.json': layers \"fc*\": scheme 'w4g32@gptq': GPTQ"
    assert_exit 1 "$QPROBE" quantize m --scheme w8c --calib x.npz -o res
    assert_contains err "--calib 'x.npz': only '@gptq' schemes use calibration data"
    # GPTQ runs the model: a checkpoint without a graph is refused
    assert_exit 1 "$QPROBE" quantize m --scheme w4g128@gptq --calib x.npz -o res
    assert_contains err "'m': GPTQ runs the model on the calibration inputs, which needs its graph"
    [ ! -e res ] || fail "output written"
}

test_usage_errors_exit_2() {
    make_model
    assert_exit 2 "$QPROBE" quantize m -o res
    assert_contains err "give exactly one of --scheme and --recipe"
    assert_exit 2 "$QPROBE" quantize m --scheme w8c --recipe r.json -o res
    assert_exit 2 "$QPROBE" quantize m --scheme w8c
    assert_contains err "-o OUT is missing"
    assert_exit 2 "$QPROBE" quantize --scheme w8c -o res
    assert_contains err "expected one MODEL, got 0 operands"
    assert_exit 2 "$QPROBE" quantize m n --scheme w8c -o res
    assert_exit 2 "$QPROBE" quantize m --scheme w8c -o res --layout nchw
    assert_contains err "--layout: must be torch, tflite, keras or io, not 'nchw'"
    assert_exit 2 "$QPROBE" quantize m --scheme w8c -o res --round up
    assert_exit 2 "$QPROBE" quantize m --scheme w8c -o res --bogus
    assert_exit 0 "$QPROBE" quantize --help
    assert_contains out "usage: qprobe quantize MODEL"
}

test_packed_bits_need_a_container_that_holds_them() {
    make_model
    assert_exit 1 "$QPROBE" quantize m --scheme w4g2 -o res
    assert_contains err "qprobe: error: 'res': tensor 'conv.weight': .npy files cannot hold i4 (4-bit packed) tensors"
    [ ! -e res ] || fail "partial output left"
    no_tmp_left .
    "$QPROBE" quantize m --scheme w4g2 -o q.safetensors -q
    h=$(st_header q.safetensors)
    # packed int4 is stored as its bytes, the logical type in __qprobe__
    assert_contains "$h" '"fc.weight":{"dtype":"U8","shape":[4],'
    assert_contains "$h" '\"fc.weight\":{\"dtype\":\"i4\",\"shape\":[2,4],\"axis\":1,\"block_size\":2}'
    assert_contains "$h" '"fc.weight.scale":{"dtype":"F32","shape":[2,2],'
    # the scheme of each quantized tensor, and how it was made
    assert_contains "$h" '"scheme:fc.weight":"w4g2"'
    assert_contains "$h" '"scheme:conv.weight":"w4g2"'
    assert_contains "$h" '"quantize:round":"half-away"'
    case $h in *'"scheme:fc.bias"'*) fail "kept tensor has a scheme" ;; esac
    # row 0, groups (1.25, -63.5) s = 63.5/7: 0, -7 = 0x9; (0.75, 10)
    # s = 10/7: 1, 7; low nibble first
    assert_eq "$(st_bytes q.safetensors fc.weight | cut -c1-4)" "9071"
    # inspect reads the parameters back
    "$QPROBE" inspect q.safetensors --csv i.csv -q >/dev/null
    assert_eq "$(csv_field i.csv fc.weight dtype)" "i4"
    assert_eq "$(csv_field i.csv fc.weight q_granularity)" "group 2 axis 1"
    assert_eq "$(csv_field i.csv conv.weight q_granularity)" "per-axis 0"
    assert_near "$(csv_field i.csv fc.weight q_scale_max)" "$(awk 'BEGIN { print 63.5 / 7 }')" 1e-5
}

test_layouts_choose_the_channel_axis() {
    mkdir m
    # keras dense [in 2, out 3]: channels are columns
    mknpy m/k.npy f4 "2, 3" 1 -2 0.5 -4 1 0.25
    "$QPROBE" quantize m --scheme w8c --layout keras -o res -q
    assert_eq "$(npy_values res/k.scale.npy f4 | lines)" \
        "0.031496063 0.015748031 0.003937008"
}

# ---- the real PP-OCRv4 detector (scripts/fetch-models.sh, data/MODELS.md)

# ppocr_det: path of the cached detector (fetched on first use)
ppocr_det() {
    sh "$ROOT/scripts/fetch-models.sh" ppocr-v4 | grep '/ch_PP-OCRv4_det_infer\.onnx$'
}

# sum_col CSV COLUMN [SCHEME]: the column summed over rows (of one scheme)
sum_col() {
    awk -F, -v col="$2" -v sch="${3:-}" 'NR == 1 { for (i = 1; i <= NF; i++) {
            if ($i == col) c = i; if ($i == "scheme") k = i } next }
        sch == "" || $k == sch { s += $c } END { printf "%.0f", s }' "$1"
}

test_ppocr_det_quantizes_with_w8c_w8t_w4g32_w4g32z() {
    det=$(ppocr_det)
    [ -f "$det" ] || fail "no PP-OCRv4 detector from scripts/fetch-models.sh"
    for s in w8c w8t w4g32 w4g32z; do
        "$QPROBE" quantize "$det" --scheme $s -o "q-$s.safetensors" --report "r-$s.csv" -q
        # 342 weights (data/MODELS.md), 66 of them conv weights (4-D)
        assert_eq "$(awk 'END { print NR - 1 }' "r-$s.csv")" 342
        assert_eq "$(awk -F, -v s=$s '$3 == s' "r-$s.csv" | wc -l | tr -d ' ')" 66
        h=$(st_header "q-$s.safetensors")
        # every weight, plus 66 scales (and 66 zero points when asymmetric)
        n=$(printf '%s' "$h" | grep -o '"data_offsets"' | wc -l | tr -d ' ')
        assert_eq "$n" "$([ $s = w4g32z ] && echo 474 || echo 408)"
        assert_contains "$h" "\"scheme:conv2d_421.w_0\":\"$s\""
        case $s in w4*) assert_contains "$h" '\"conv2d_421.w_0\":{\"dtype\":\"'"$([ $s = w4g32z ] && echo u4 || echo i4)"'\",\"shape\":[384,384,1,1],\"axis\":1,\"block_size\":32}' ;; esac
        # the worst tensor: per-tensor int8 suffers on the heavy tails
        # (~13 dB), per-channel int8 does not (~32 dB), int4 groups ~16-19
        worst=$(awk -F, -v s=$s '$3 == s && (m == "" || $5 < m) { m = $5 } END { print m }' "r-$s.csv")
        case $s in w8c) min=30 ;; w8t) min=12 ;; w4g32) min=15 ;; w4g32z) min=18 ;; esac
        awk -v w="$worst" -v m="$min" 'BEGIN { exit !(w > m) }' ||
            fail "$s: worst sqnr $worst dB, expected above $min"
    done
    # asymmetric groups beat symmetric ones on the whole model
    awk -F, 'FNR > 1 && $3 ~ /^w4/ { e[$3] += $9 / 10 ^ ($5 / 10) }
        END { exit !(e["w4g32z"] < e["w4g32"]) }' r-w4g32.csv r-w4g32z.csv ||
        fail "w4g32z does not beat w4g32"
    # sizes: int8 is a quarter of fp32 plus per-channel scales; int4 about
    # an eighth plus a scale (and a 4-bit zero point) per 32 weights
    fp=$(sum_col r-w8c.csv bytes_fp32 w8c)
    for s in w8c:0.25:0.27 w8t:0.25:0.251 w4g32:0.125:0.17 w4g32z:0.125:0.18; do
        IFS=: read -r name lo hi <<< "$s"
        q=$(sum_col "r-$name.csv" bytes_quantized "$name")
        awk -v q="$q" -v f="$fp" -v lo="$lo" -v hi="$hi" \
            'BEGIN { r = q / f; exit !(r >= lo && r < hi) }' ||
            fail "$name: $q of $fp bytes"
    done
}

test_ppocr_det_heavy_tail_wants_channels_and_clipping() {
    det=$(ppocr_det)
    [ -f "$det" ] || fail "no PP-OCRv4 detector from scripts/fetch-models.sh"
    # the heaviest-tailed weight according to inspect (conv2d_421.w_0,
    # [384,384,1,1], excess kurtosis ~1264)
    "$QPROBE" inspect "$det" --csv k.csv -q >/dev/null
    set -- $(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "kurtosis") k = i
            if ($i == "name") n = i } next }
        $k != "nan" && $k + 0 > best { best = $k + 0; name = $n }
        END { print name, best }' k.csv)
    heavy=$1
    awk -v k="$2" 'BEGIN { exit !(k > 1000) }' || fail "largest kurtosis $2 ($1)"
    assert_eq "$heavy" conv2d_421.w_0
    for s in w8c w8t w8t@mse w4c w4c@mse; do
        "$QPROBE" quantize "$det" --scheme "$s" --fake -o "q" --report "r.csv" -q
        eval "sqnr_$(echo "$s" | tr -c 'a-z0-9\n' _)=$(csv_field r.csv "$heavy" sqnr_db)"
    done
    # per-channel scales follow each channel's range: clearly better
    awk -v c="$sqnr_w8c" -v t="$sqnr_w8t" 'BEGIN { exit !(c > t + 10) }' ||
        fail "w8c $sqnr_w8c dB vs w8t $sqnr_w8t dB"
    # clipping the tail beats min/max
    awk -v m="$sqnr_w8t_mse" -v t="$sqnr_w8t" 'BEGIN { exit !(m > t + 1) }' ||
        fail "w8t@mse $sqnr_w8t_mse dB vs w8t $sqnr_w8t dB"
    awk -v m="$sqnr_w4c_mse" -v t="$sqnr_w4c" 'BEGIN { exit !(m > t + 1) }' ||
        fail "w4c@mse $sqnr_w4c_mse dB vs w4c $sqnr_w4c dB"
}

# PaddlePaddle exports MatMul weights as [in, out]: the graph says which
# axis is the output, and per-channel scales follow it unless --layout says
test_onnx_weight_layouts_come_from_the_graph() {
    rec=$(sh "$ROOT/scripts/fetch-models.sh" ppocr-v4 | grep '/ch_PP-OCRv4_rec_infer\.onnx$')
    [ -f "$rec" ] || fail "no PP-OCRv4 recognizer from scripts/fetch-models.sh"
    "$QPROBE" quantize "$rec" -s w8c -o g.safetensors --report g.csv -q
    "$QPROBE" quantize "$rec" -s w8c -o t.safetensors --report t.csv -q --layout torch
    # linear_77.w_0 is MatMul's B, [120 in, 360 out]: 360 scales from the
    # graph, 120 when told it is [out, in]; conv weights are OIHW either way
    assert_eq "$(csv_field g.csv linear_77.w_0 bytes_quantized)" $((120 * 360 + 4 * 360))
    assert_eq "$(csv_field t.csv linear_77.w_0 bytes_quantized)" $((120 * 360 + 4 * 120))
    assert_eq "$(csv_field g.csv conv2d_10.w_0 bytes_quantized)" $((16 * 27 + 4 * 16))
    "$QPROBE" inspect g.safetensors --csv gi.csv -q >/dev/null
    assert_eq "$(csv_field gi.csv linear_77.w_0 q_granularity)" "per-axis 1"
    assert_eq "$(csv_field gi.csv conv2d_10.w_0 q_granularity)" "per-axis 0"
    # per output channel is the better grouping here
    g=$(csv_field g.csv linear_77.w_0 sqnr_db)
    t=$(csv_field t.csv linear_77.w_0 sqnr_db)
    awk -v g="$g" -v t="$t" 'BEGIN { exit !(g > t + 1) }' || fail "graph $g dB vs torch $t dB"
}
