#!/usr/bin/env bash
# Refreshes the vendored uPlot (the console's chart library, MIT) from the
# npm registry: go build needs no npm, this script is the only use of it.
# Usage: console/static/uplot/refresh.sh [VERSION]
set -euo pipefail
version=${1:-1.6.32}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack "uplot@$version" --silent >/dev/null && tar xzf uplot-*.tgz)
cp "$tmp/package/dist/uPlot.iife.min.js" "$tmp/package/dist/uPlot.min.css" "$tmp/package/LICENSE" "$here/"
echo "$version" > "$here/VERSION"
echo "uPlot $version vendored in $here"
