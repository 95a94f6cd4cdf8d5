#!/bin/sh
# The demo: the whole job on the bundled data, report in reports/demo/.
# (Filled in as the commands land; see README.md.)
set -eu
BUILD=${1:-build}
"$BUILD/qprobe" --version
