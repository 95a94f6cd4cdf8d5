# Hostile and broken input, outputs that cannot be written, interrupts:
# each case a defect once found (issues 8 and 15). Inputs are made with
# build/mkdemo and printf; models come from Debian's libonnx-testdata.

MKDEMO=$(dirname "$QPROBE")/mkdemo
NODE=/usr/share/libonnx-testdata/data/node
mkt() { "$MKDEMO" tensor "$@"; }

# npy_header FILE DESCR SHAPE: a v1 .npy header alone (no data)
npy_header() {
    h="{'descr': '$2', 'fortran_order': False, 'shape': ($3), }"
    pad=$(( (64 - (10 + ${#h} + 1) % 64) % 64 ))
    h="$h$(printf '%*s' "$pad" '')"
    len=$(( ${#h} + 1 ))
    { printf '\223NUMPY\001\000'
      printf "\\$(printf '%03o' $((len % 256)))\\$(printf '%03o' $((len / 256)))"
      printf '%s\n' "$h"; } >"$1"
}

test_reliab_missing_inputs_say_no_such_file() {
    mkt a.npy f32 2 1,2
    assert_exit 1 "$QPROBE" inspect nonexist
    assert_contains err "'nonexist': cannot open: No such file or directory"
    assert_exit 1 "$QPROBE" diff a.npy /no/dir
    assert_contains err "'/no/dir': cannot open: No such file or directory"
    assert_exit 1 "$QPROBE" quantize /no/dir/ --scheme w8c -o q.safetensors
    assert_contains err "'/no/dir/': cannot open: No such file or directory"
    # an existing file of no known kind is still "unknown dump format"
    printf 'x' >x.foo
    assert_exit 1 "$QPROBE" inspect x.foo
    assert_contains err "'x.foo': unknown dump format"
}

test_reliab_sparse_npy_of_terabytes_is_refused_at_once() {
    # 2^40 float32 elements: a 4 TiB sparse file; refused before any read
    npy_header huge.npy '<f4' '1099511627776,'
    truncate -s $((4 * 1099511627776 + 128)) huge.npy ||
        { echo "no sparse files here: skipped"; return 0; }
    for cmd in "inspect huge.npy" "quantize huge.npy --scheme w8c -o q.npz"; do
        # shellcheck disable=SC2086
        assert_exit 1 timeout 20 "$QPROBE" $cmd
        assert_contains err "'huge.npy': tensor 'huge' f32 [1099511627776] needs 4.4e+03 GB (4398046511104 bytes), more than this machine's"
    done
    [ ! -e q.npz ] || fail "an output was written"
    # QP_MAX_ALLOC sets another limit (and names itself)
    mkt small.npy f32 64x64 "$(seq -s, 4096)"
    assert_exit 1 env QP_MAX_ALLOC=8k "$QPROBE" inspect small.npy
    assert_contains err "'small.npy': tensor 'small' f32 [64,64] needs 1.64e-05 GB (16384 bytes), more than the 8.19e-06 GB limit of QP_MAX_ALLOC"
    assert_exit 0 env QP_MAX_ALLOC=16k "$QPROBE" inspect small.npy
    assert_exit 1 env QP_MAX_ALLOC=lots "$QPROBE" inspect small.npy
    assert_contains err "QP_MAX_ALLOC='lots' is not a size"
}

test_reliab_dump_extension_decides_or_is_refused() {
    m=$NODE/test_relu
    in=$m/test_data_set_0/input_0.pb
    assert_exit 1 "$QPROBE" run "$m/model.onnx" --input "$in" --dump out.unknownext
    assert_contains err "'out.unknownext': unknown extension .unknownext"
    [ ! -e out.unknownext ] || fail "out.unknownext was created"
    assert_exit 1 "$QPROBE" run "$m/model.onnx" --input "$in" --dump x.h5 -f npz
    assert_contains err "'x.h5': the extension .h5 says h5, not npz"
    [ ! -e x.h5 ] || fail "x.h5 was created"
    assert_exit 1 "$QPROBE" run "$m/model.onnx" --input "$in" --dump d/ -f h5
    assert_contains err "'d/' names a directory, and h5 dumps are files"
    assert_exit 1 "$QPROBE" quantize "$in" --scheme w8c -o q.zip
    assert_contains err "'q.zip': unknown extension .zip"
    no_tmp_left .
    # a format given for an unknown extension, or agreeing with a known
    # one, is written as asked
    assert_exit 0 "$QPROBE" run "$m/model.onnx" --input "$in" --dump out.v2 -f raw-dir
    [ -d out.v2 ] && ls out.v2 | grep -q '\.raw$' || fail "no raw dump in out.v2"
    assert_exit 0 "$QPROBE" run "$m/model.onnx" --input "$in" --dump y.h5 -f hdf5
    assert_exit 0 "$QPROBE" inspect y.h5
    assert_contains out "y"
    assert_exit 0 "$QPROBE" run "$m/model.onnx" --input "$in" --dump plain
    [ -f plain/y.npy ] || fail "no npy directory"
}

test_reliab_json_repeated_keys_are_refused_everywhere() {
    # a raw dump's sidecar used to take the first "dtype" silently
    mkdir raw
    printf '\001\002\003\004' >raw/x.raw
    printf '{"dtype": "i8", "shape": [4], "dtype": "u8"}' >raw/x.json
    assert_exit 1 "$QPROBE" inspect raw
    assert_contains err "raw/x.json': key \"dtype\" appears twice in the top-level object"
    # and so do a recipe and a map, at any depth
    mkt w.npy f32 2x2 1,2,3,4
    printf '{"qprobe_recipe": 1, "layers": {"w": "w8c", "w": "fp32"}}' >r.json
    assert_exit 1 "$QPROBE" quantize w.npy --recipe r.json -o q.safetensors
    assert_contains err "'r.json': key \"w\" appears twice in \"layers\""
    printf '{"pairs": {"a": "b"}, "rules": [{"ref": "x", "test": "y", "ref": "z"}]}' >m.json
    assert_exit 1 "$QPROBE" diff w.npy w.npy --map m.json
    assert_contains err "'m.json': key \"ref\" appears twice in \"rules\"[0]"
}

test_reliab_quantize_weights_near_flt_max_stay_finite() {
    # asymmetric schemes on +-3.4e38 wrote -inf with --fake (exit 0, and the
    # report said 23.5 dB): every dequantized value is now finite
    v=-3.4e38,3.4e38,-3.4e38,1,-3.4e38,3.4e38,-3.4e38,3.4e38
    mkt big.npy f32 2x8 "$v,$v"
    for s in w4g8z w8cz w2tz w8c; do
        assert_exit 0 "$QPROBE" quantize big.npy --scheme $s --fake -o f.safetensors \
            --report r.csv -q
        "$QPROBE" inspect f.safetensors --csv i.csv >/dev/null
        assert_eq "$(csv_field i.csv big nonfinite)" 0 "$s nonfinite"
        sqnr=$(csv_field r.csv big sqnr_db)
        awk -v x="$sqnr" 'BEGIN { exit !(x > 5 && x < 800) }' ||
            fail "$s: sqnr_db $sqnr"
    done
}

# big_zeros FILE N: a .npy of N float32 zeros (a sparse file)
big_zeros() {
    npy_header "$1" '<f4' "$2,"
    truncate -s $(( $(stat -c %s "$1") + 4 * $2 )) "$1"
}

# no_leftovers DIR: nothing but the inputs (no temporary, no output)
no_leftovers() {
    left=$(find "$1" -mindepth 1 ! -name 'in*' | head -n 3)
    [ -z "$left" ] || fail "left behind: $left"
}

test_reliab_interrupts_leave_nothing_behind() {
    set -m # job control: background jobs do not ignore SIGINT
    mkdir w
    big_zeros w/in.npy 50000000 # 200 MB
    mkt w/in-shape.npy i64 3 3000,3,4000
    mkt w/in-x.npy f32 3x1 1,2,3
    m=$NODE/test_expand_dim_changed/model.onnx
    RANDOM=15 # the moments below are random but the same on every run
    sigs="INT TERM HUP"
    set -- q.safetensors q.h5 q.npz qdir
    i=0
    for cmd in quantize run; do
        for out in "$@"; do
            sig=$(echo $sigs | cut -d ' ' -f $((i % 3 + 1)))
            i=$((i + 1))
            if [ $cmd = quantize ]; then
                "$QPROBE" quantize w/in.npy --scheme w8t -o "w/$out" -q 2>/dev/null &
            else
                "$QPROBE" run "$m" --input data=w/in-x.npy \
                    --input new_shape=w/in-shape.npy --dump "w/$out" 2>/dev/null &
            fi
            pid=$!
            sleep "0.$((RANDOM % 9 + 1))"
            kill -$sig $pid 2>/dev/null || true
            rc=0
            wait $pid || rc=$?
            echo "$cmd -> $out: SIG$sig, exit $rc"
            [ $rc = 0 ] || assert_eq $rc $((128 + $(kill -l $sig))) "exit of $cmd on SIG$sig"
            if [ -e "w/$out" ]; then # renamed into place before the signal
                "$QPROBE" inspect "w/$out" >/dev/null || fail "$out is not whole"
                rm -rf "w/$out"
            fi
            no_leftovers w
        done
    done
    # after SIGKILL nothing can clean up, but no file has the final name
    # unless it is whole
    for out in k.h5 k.safetensors; do
        "$QPROBE" quantize w/in.npy --scheme w8t -o "w/$out" -q 2>/dev/null &
        pid=$!
        sleep "0.$((RANDOM % 9 + 1))"
        kill -KILL $pid 2>/dev/null || true
        wait $pid || true
        [ ! -e "w/$out" ] || "$QPROBE" inspect "w/$out" >/dev/null ||
            fail "a partial $out"
        find w -name ".$out.tmp.*" -exec rm -rf {} +
    done
}

test_reliab_write_errors_name_the_output() {
    mkt a.npy f32 64x64 "$(seq -s, 4096)"
    # /dev/full through links (so a regression cannot replace /dev/full)
    for ext in safetensors npz h5; do
        ln -s /dev/full "full.$ext"
        assert_exit 1 "$QPROBE" quantize a.npy --scheme w8c -o "full.$ext"
        assert_contains err "'full.$ext': "
        assert_contains err "No space left on device"
        case "$(cat err)" in *tmp*|*HDF5*|*errno*) fail "raw text: $(cat err)" ;; esac
    done
    for ext in npy pb; do
        ln -s /dev/full "full.$ext"
        assert_exit 1 "$QPROBE" quantize a.npy --scheme w8c --fake -o "full.$ext"
        assert_contains err "'full.$ext': tensor 'a': write failed: No space left on device"
    done
    ln -s /dev/full full.gguf
    assert_exit 1 "$QPROBE" quantize a.npy --scheme q8_0 -o full.gguf
    assert_contains err "'full.gguf': write failed: No space left on device"
    m=$NODE/test_relu
    assert_exit 1 "$QPROBE" run "$m/model.onnx" --input "$m/test_data_set_0/input_0.pb" \
        --dump full.h5
    assert_contains err "'full.h5': cannot create: No space left on device"
    ln -s /dev/full full.csv
    assert_exit 1 "$QPROBE" inspect a.npy --csv full.csv
    assert_contains err "'full.csv': write failed: No space left on device"
    assert_exit 1 "$QPROBE" diff a.npy a.npy --csv full.csv
    assert_contains err "'full.csv': write failed: No space left on device"
    assert_exit 1 "$QPROBE" quantize a.npy --scheme w8c -o q.safetensors --report full.csv
    assert_contains err "'full.csv': write failed: No space left on device"
    [ -c /dev/full ] || fail "/dev/full was replaced"
    # a standard output that cannot be written
    assert_exit 1 sh -c "\"$QPROBE\" inspect a.npy >/dev/full"
    assert_contains err "cannot write to standard output: No space left on device"
    assert_exit 1 sh -c "\"$QPROBE\" inspect a.npy --csv - >/dev/full"
    assert_exit 1 sh -c "\"$QPROBE\" --version >/dev/full"
    # regular files beyond RLIMIT_FSIZE (a full disk): the final name in the
    # message, no temporary left
    mkdir lim
    for out in q.safetensors q.npz q.h5 qdir q.pb q.gguf; do
        assert_exit 1 sh -c "ulimit -f 8; exec \"$QPROBE\" quantize a.npy --scheme w8c --fake -o lim/$out"
        assert_contains err "'lim/$out': "
        assert_contains err "File too large"
        case "$(cat err)" in *.tmp.*) fail "a temporary name: $(cat err)" ;; esac
        [ -z "$(ls -A lim)" ] || fail "left in lim/: $(ls -A lim)"
    done
    big_zeros in.npy 20000
    assert_exit 1 sh -c "ulimit -f 8; exec \"$QPROBE\" quantize in.npy --scheme w8c --fake -o lim/r.raw -q"
    assert_contains err "unknown extension"
    mkt x.npy f32 3x1 1,2,3
    mkt s.npy i64 3 3,1,4000
    m=$NODE/test_expand_dim_changed/model.onnx
    assert_exit 1 sh -c "ulimit -f 8; exec \"$QPROBE\" run $m --input data=x.npy --input new_shape=s.npy --dump lim/r -f raw-dir"
    assert_contains err "'lim/r': "
    assert_contains err "File too large"
    case "$(cat err)" in *.tmp.*) fail "a temporary name: $(cat err)" ;; esac
    [ -z "$(ls -A lim)" ] || fail "left in lim/: $(ls -A lim)"
}

test_reliab_hdf5_hostile_files_fail_cleanly() {
    S=$ROOT/tests/fuzz/seeds/hdf5
    # 2^31 f32 in chunks never written: refused before any allocation
    cp "$S/regress-chunked-2g.h5" big.h5
    assert_exit 1 timeout 20 "$QPROBE" inspect big.h5
    assert_contains err "'big.h5': dataset 'huge': declares 8589934592 bytes, but the file stores 0 bytes of it, which its filters expand 1032:1 at most"
    assert_exit 1 timeout 20 "$QPROBE" quantize big.h5 --scheme w8c -o q.safetensors
    assert_contains err "declares 8589934592 bytes"
    # files on which libhdf5 itself crashes or loops: an error, not a crash
    cp "$S/regress-libhdf5-fpe.h5" fpe.h5
    assert_exit 1 "$QPROBE" inspect fpe.h5
    assert_contains err "'fpe.h5': the HDF5 library "
    assert_contains err "listing it: the file is malformed"
    cp "$S/regress-libhdf5-heap-overflow.h5" heap.h5
    assert_exit 1 "$QPROBE" diff heap.h5 heap.h5
    assert_contains err "'heap.h5': the HDF5 library "
    assert_contains err "the file is malformed"
    cp "$ROOT/tests/cli/data/libhdf5-endless-loop.h5" loop.h5
    assert_exit 1 timeout 60 "$QPROBE" inspect loop.h5
    assert_contains err "'loop.h5': the HDF5 library did not finish listing it in time"
    [ ! -e q.safetensors ] || fail "an output was written"
    no_tmp_left .
}
