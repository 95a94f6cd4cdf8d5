#!/bin/sh
# scripts/cjson-source.sh: prints the folder holding cJSON.c and cJSON.h
# of the Debian source package of the installed libcjson-dev (the same
# version the host build links), for builds that cannot use the host's
# library: make test-aarch64 cross-compiles it into its static test
# binaries (Debian has no arm64 libcjson in the cross toolchain).
#
# The first time it fetches the source package with apt-get source, using
# a package list of its own under data/cache/ (deb-src lines for this
# release, signed by the Debian archive keyring; the system's apt
# configuration and package lists are not touched), and unpacks it with
# dpkg-source, which checks the files against the .dsc that apt verified
# against the archive's signature, and applies Debian's patches. The
# result is cached in data/cache/cjson-<version>/ (never committed);
# afterwards no network is used. Errors print "cjson-source: ..." on
# stderr and exit 1, leaving no partial cache entry.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${QP_CJSON_CACHE:-$ROOT/data/cache}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
TMP=""
trap '[ -z "$TMP" ] || rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
die() { echo "cjson-source: $*" >&2; exit 1; }

ver=$(dpkg-query -W -f='${Version}' libcjson-dev 2>/dev/null) ||
    die "libcjson-dev is not installed (make deps)"
dir=$CACHE/cjson-$ver
if [ -f "$dir/.done" ] && [ -f "$dir/cJSON.c" ] && [ -f "$dir/cJSON.h" ]; then
    echo "$dir"
    exit 0
fi

command -v apt-get >/dev/null && command -v dpkg-source >/dev/null ||
    die "apt-get and dpkg-source (dpkg-dev) are needed to fetch cJSON's source"
[ -r "$KEYRING" ] || die "no Debian archive keyring at $KEYRING"
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || die "cannot tell the Debian release from /etc/os-release"

mkdir -p "$CACHE" || die "cannot create the cache folder '$CACHE'"
TMP=$(mktemp -d "$CACHE/.fetch-cjson.XXXXXX") ||
    die "cannot create a temporary folder in '$CACHE'"
mkdir -p "$TMP/apt/lists/partial" "$TMP/apt/cache/archives/partial" "$TMP/src"
for suite in "$codename" "$codename-updates"; do
    echo "deb-src [signed-by=$KEYRING] http://deb.debian.org/debian $suite main"
done >"$TMP/apt/sources.list"
echo "deb-src [signed-by=$KEYRING] http://deb.debian.org/debian-security" \
     "$codename-security main" >>"$TMP/apt/sources.list"
set -- -o "Dir::Etc::SourceList=$TMP/apt/sources.list" \
       -o "Dir::Etc::SourceParts=$TMP/apt/none" \
       -o "Dir::State::Lists=$TMP/apt/lists" -o "Dir::Cache=$TMP/apt/cache" \
       -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root" -qq
echo "cjson-source: fetching Debian's cjson $ver source package" >&2
apt-get "$@" update >"$TMP/apt.log" 2>&1 ||
    { cat "$TMP/apt.log" >&2; die "apt-get update of the deb-src lists failed (is deb.debian.org reachable?)"; }
(cd "$TMP/src" && apt-get "$@" source --download-only "cjson=$ver") \
    >"$TMP/apt.log" 2>&1 ||
    { cat "$TMP/apt.log" >&2; die "apt-get source cjson=$ver failed"; }
dsc=$(ls "$TMP"/src/cjson_*.dsc 2>/dev/null | head -n 1)
[ -n "$dsc" ] || die "apt-get source left no .dsc"
dpkg-source -x "$dsc" "$TMP/x" >"$TMP/apt.log" 2>&1 ||
    { cat "$TMP/apt.log" >&2; die "dpkg-source could not unpack $(basename "$dsc")"; }
[ -f "$TMP/x/cJSON.c" ] && [ -f "$TMP/x/cJSON.h" ] ||
    die "the source package has no cJSON.c / cJSON.h"
mkdir "$TMP/out"
cp "$TMP/x/cJSON.c" "$TMP/x/cJSON.h" "$TMP/x/LICENSE" "$TMP/out/"
basename "$dsc" >"$TMP/out/.done"
rm -rf "$dir"
mv "$TMP/out" "$dir" || die "cannot move the source into '$dir'"
echo "$dir"
