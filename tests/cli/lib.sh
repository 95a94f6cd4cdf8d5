# tests/cli/lib.sh: assertions for CLI tests. Each prints what differed and
# returns 1, which ends the test (the runner uses set -e).

fail() { echo "assertion failed: $*" >&2; return 1; }

# assert_eq ACTUAL EXPECTED [what]
assert_eq() {
    [ "$1" = "$2" ] || fail "${3:-value}: got '$1', expected '$2'"
}

# assert_contains FILE_OR_TEXT NEEDLE: FILE if it exists, else the text
assert_contains() {
    if [ -f "$1" ]; then
        grep -qF -- "$2" "$1" || { fail "'$1' lacks '$2'"; cat "$1" >&2; return 1; }
    else
        case "$1" in *"$2"*) ;; *) fail "output lacks '$2': $1" ;; esac
    fi
}

# assert_exit CODE CMD...: runs CMD, captures stdout/stderr in ./out ./err
assert_exit() {
    want=$1; shift
    set +e
    "$@" >out 2>err
    got=$?
    set -e
    [ "$got" = "$want" ] || { fail "exit $got, expected $want: $*"; cat err >&2; return 1; }
}

# assert_near A B TOL: numeric |A-B| <= TOL (inf == inf)
assert_near() {
    awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN {
        if (a == b) exit 0; d = a - b; if (d < 0) d = -d; exit !(d <= t) }' ||
        fail "$1 not within $3 of $2"
}

# csv_field FILE ROW_MATCH COLUMN_NAME: the named column of the first row
# whose first field equals or whose name column matches ROW_MATCH
csv_field() {
    awk -F, -v key="$2" -v col="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
        { for (i = 1; i <= NF; i++) if ($i == key) { print $c; exit } }' "$1"
}

# no_tmp_left DIR: no temporary output left behind in DIR
no_tmp_left() {
    left=$(find "${1:-.}" -name '.*.tmp.*' | head -n 1)
    [ -z "$left" ] || fail "temporary file left behind: $left"
}

# The weight bits ONNX Runtime's fused uint8 kernels sum exactly on this
# CPU: w7c on x86-64 without VNNI, where they add 8-bit weights' products
# in pairs that saturate at int16; w8c elsewhere (tests/unit/ort-cpu.h).
ort_u8_weights() {
    case "$(uname -m)" in
    x86_64) grep -qwE 'avx512_vnni|avx_vnni' /proc/cpuinfo && echo w8c || echo w7c ;;
    *) echo w8c ;;
    esac
}
