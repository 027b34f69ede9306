#!/usr/bin/env bash
# Regenerates the Go code for the .proto files in this folder with protoc and
# the protoc-gen-go version pinned in go.mod. Run through `go generate ./messages`.
set -euo pipefail
cd "$(dirname "$0")"
command -v protoc >/dev/null || { echo "protoc not found: apt-get install protobuf-compiler" >&2; exit 1; }
# The generated files name the protoc version; CI compares them byte for byte.
want="libprotoc 3.21.12"
have=$(protoc --version)
[ "$have" = "$want" ] || { echo "protoc is '$have'; the committed code was generated with '$want' (Debian 12's protobuf-compiler)" >&2; exit 1; }
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
protoc --plugin=protoc-gen-go="$bin/protoc-gen-go" --go_out=. --go_opt=paths=source_relative ./*.proto
