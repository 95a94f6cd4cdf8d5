# GGUF files and ggml schemes from the command line: inspect and diff read
# GGUF (blocks decoded as ggml decodes them), quantize writes ggml blocks
# into GGUF (read back by qprobe; tests/golden/ggml/README.md says what
# ggml's own reader made of such a file), and every refusal exits 1 naming
# the file and the tensor, leaving no output behind.

GGUF_IN="$ROOT/tests/golden/ggml/ggml-written.gguf"

test_gguf_inspect_reads_ggml_file() {
    assert_exit 0 "$QPROBE" inspect "$GGUF_IN" --csv s.csv
    assert_eq "$(csv_field s.csv blk.0.c.q4_0 shape)" "2x64"
    assert_eq "$(csv_field s.csv blk.0.c.q4_0 max)" "2.23046875"
    assert_eq "$(csv_field s.csv d.q4_k shape)" "2x1x256"
    assert_eq "$(csv_field s.csv b.f16 dtype)" "f16"
    assert_eq "$(csv_field s.csv a.f32 max)" "0.75"
}

test_gguf_quantize_q8_0_blocks_and_report() {
    assert_exit 0 "$QPROBE" quantize "$GGUF_IN" --scheme q8_0 --include d.q4_k \
        --exclude a.f32 --layout tflite -o out.gguf --report r.csv
    assert_contains out "out.gguf: 2 tensors quantized, 2 kept"
    # 64 values in blocks of 32 at 34 bytes, twice; 512 values: 16 blocks
    assert_eq "$(csv_field r.csv blk.0.c.q4_0 bytes_quantized)" "136"
    assert_eq "$(csv_field r.csv d.q4_k bytes_quantized)" "544"
    assert_eq "$(csv_field r.csv blk.0.c.q4_0 scheme)" "q8_0"
    assert_eq "$(csv_field r.csv a.f32 scheme)" "fp32"
    sq=$(csv_field r.csv blk.0.c.q4_0 sqnr_db)
    awk -v s="$sq" 'BEGIN { exit !(s > 40 && s < 60) }' || fail "sqnr $sq"
    # the GGUF reads back; its values are the fake quantization's exactly
    assert_exit 0 "$QPROBE" quantize "$GGUF_IN" --scheme q8_0 --include d.q4_k \
        --exclude a.f32 --layout tflite --fake -o fake.safetensors
    assert_exit 0 "$QPROBE" diff fake.safetensors out.gguf --csv d.csv
    for t in blk.0.c.q4_0 d.q4_k a.f32 b.f16; do
        assert_eq "$(csv_field d.csv "$t" max_abs)" "0" "$t max_abs"
    done
    assert_exit 0 "$QPROBE" diff "$GGUF_IN" out.gguf --csv d2.csv
    assert_eq "$(csv_field d2.csv a.f32 sqnr_db)" "inf"
    assert_near "$(csv_field d2.csv blk.0.c.q4_0 sqnr_db)" "$sq" 0.000001
}

# q4_0 of q4_0-decoded values gives the same blocks: each block's largest
# value is -8 d, so d and every level come back exactly.
test_gguf_q4_0_requantization_is_exact() {
    assert_exit 0 "$QPROBE" quantize "$GGUF_IN" --scheme q4_0 --exclude a.f32 \
        -o again.gguf
    assert_exit 0 "$QPROBE" diff "$GGUF_IN" again.gguf --csv d.csv
    assert_eq "$(csv_field d.csv blk.0.c.q4_0 max_abs)" "0"
    assert_eq "$(csv_field d.csv blk.0.c.q4_0 sqnr_db)" "inf"
}

test_gguf_quantize_refusals() {
    assert_exit 1 "$QPROBE" quantize "$GGUF_IN" --scheme q4_k --exclude a.f32 \
        -o x.gguf
    assert_contains err "tensor 'blk.0.c.q4_0': rows of 64 values (axis 1) are not a multiple of q4_K's block of 256; llama.cpp falls back to q5_0"
    assert_exit 1 "$QPROBE" quantize "$GGUF_IN" --scheme w8c --exclude a.f32 \
        -o x.gguf
    assert_contains err "'x.gguf': tensor 'blk.0.c.q4_0': scheme 'w8c' has no GGUF type; the nearest is q8_0"
    assert_exit 1 "$QPROBE" quantize "$GGUF_IN" --scheme w4g32z -o x.gguf \
        --exclude a.f32
    assert_contains err "the nearest is q4_1"
    assert_exit 1 "$QPROBE" quantize "$GGUF_IN" --scheme q8_0 --exclude a.f32 \
        -o x.safetensors
    assert_contains err "scheme 'q8_0' is a ggml block type, which only a .gguf output holds"
    assert_exit 1 "$QPROBE" quantize "$GGUF_IN" --scheme q8_0 --exclude a.f32 \
        --include d.q4_k -o x.gguf
    assert_contains err "tensor 'd.q4_k': its input axis is 1, but GGUF rows are a tensor's last axis"
    assert_exit 2 "$QPROBE" quantize "$GGUF_IN" --scheme q4_k@mse -o x.gguf
    assert_contains err "a ggml type takes no '@' algorithm"
    [ ! -e x.gguf ] && [ ! -e x.safetensors ] || fail "output left behind"
    no_tmp_left .
}

test_gguf_malformed_files() {
    head -c 300 "$GGUF_IN" > short.gguf
    assert_exit 1 "$QPROBE" inspect short.gguf
    assert_contains err "'short.gguf': key 11: name of 12 bytes runs past the end of the file (6 bytes left)"
    head -c 720 "$GGUF_IN" > short.gguf
    assert_exit 1 "$QPROBE" inspect short.gguf
    assert_contains err "'short.gguf': tensor 'a.f32': its 24 bytes at offset 0 run past the end of the data section (16 bytes)"
    perl -e 'print "GGUF", pack("V", 3), pack("Q<", 1), pack("Q<", 0),
        pack("Q<", 1), "w", pack("V", 1), pack("Q<", 256), pack("V", 13),
        pack("Q<", 0), "\0" x 200' > q5k.gguf
    assert_exit 1 "$QPROBE" inspect q5k.gguf
    assert_contains err "'q5k.gguf': tensor 'w' has ggml type q5_K (13), which qprobe does not read"
    printf 'GGUF\001\000\000\000' > v1.gguf
    head -c 30 /dev/zero >> v1.gguf
    assert_exit 1 "$QPROBE" diff v1.gguf "$GGUF_IN"
    assert_contains err "'v1.gguf': GGUF version 1 is not supported"
}

test_gguf_recipe_mixes_types() {
    cat > r.json <<'JSON'
{ "qprobe_recipe": 1, "default": "q4_0",
  "layers": { "d.q4_k": "q6_k", "a.f32": "fp32" } }
JSON
    assert_exit 0 "$QPROBE" quantize "$GGUF_IN" --recipe r.json --include d.q4_k \
        --layout tflite -o mix.gguf --report r.csv
    assert_eq "$(csv_field r.csv d.q4_k scheme)" "q6_k"
    assert_eq "$(csv_field r.csv d.q4_k bytes_quantized)" "420"
    assert_eq "$(csv_field r.csv blk.0.c.q4_0 scheme)" "q4_0"
    assert_eq "$(csv_field r.csv blk.0.c.q4_0 bytes_quantized)" "72"
    assert_eq "$(csv_field r.csv a.f32 scheme)" "fp32"
    assert_exit 0 "$QPROBE" diff "$GGUF_IN" mix.gguf --csv d.csv
    assert_eq "$(csv_field d.csv blk.0.c.q4_0 max_abs)" "0"
    sq=$(csv_field d.csv d.q4_k sqnr_db)
    awk -v s="$sq" 'BEGIN { exit !(s > 25 && s < 60) }' || fail "q6_k sqnr $sq"
}
