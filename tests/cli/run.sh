#!/bin/bash
# CLI tests: every tests/cli/test-*.sh defines functions named test_*; each
# runs in a subshell with `set -e`, inside a fresh temporary directory, with
# QPROBE (the binary), ROOT (the repository) and the helpers of lib.sh.
# Prints a FAIL line per failure and ends with "cli: N passed, N failed".
QPROBE=${1:?usage: run.sh /path/to/qprobe}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export QPROBE ROOT
passed=0
failed=0
filter=${QP_CLI_FILTER:-}
for file in "$ROOT"/tests/cli/test-*.sh; do
    [ -e "$file" ] || continue
    fns=$(bash -c "source '$ROOT/tests/cli/lib.sh'; source '$file'; declare -F" |
          awk '{print $3}' | grep '^test_' || true)
    for fn in $fns; do
        case "$fn" in *"$filter"*) ;; *) continue ;; esac
        dir=$(mktemp -d "${TMPDIR:-/tmp}/qp-cli-XXXXXX")
        log="$dir.log"
        # Not inside `if` or an && list: bash ignores set -e in functions
        # run from either, so a failed assertion would not end the test.
        (cd "$dir" || exit 1; set -e; source "$ROOT/tests/cli/lib.sh"
         source "$file"; "$fn") >"$log" 2>&1
        if [ $? -eq 0 ]; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1))
            echo "FAIL $(basename "$file"): $fn" >&2
            tail -n 25 "$log" | sed 's/^/    /' >&2
        fi
        rm -rf "$dir" "$log"
    done
done
echo "cli: $passed passed, $failed failed"
