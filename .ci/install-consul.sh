#!/usr/bin/env bash
# Builds the Consul server used by the cluster tests from the Go module proxy
# and caches the binary. Prints the binary's path.
set -euo pipefail
version="${CONSUL_VERSION:-1.14.11}"
cache="${SLUICE_CACHE:-$HOME/.cache/sluice}"
bin="$cache/consul-$version/consul"
if [ -x "$bin" ] && "$bin" version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi
mkdir -p "$cache/consul-$version"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(
  cd "$work"
  cat > go.mod <<MOD
module consulbuild

go 1.26
MOD
  cat > tools.go <<'SRC'
//go:build tools

package tools

import _ "github.com/hashicorp/consul"
SRC
  go get "github.com/hashicorp/consul@v$version" >&2
  go mod tidy >&2
  go build -o "$bin.tmp" github.com/hashicorp/consul >&2
)
mv "$bin.tmp" "$bin"
echo "$bin"
