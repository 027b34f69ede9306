#!/usr/bin/env bash
# Runs the benchmark harness with the broker AND the harness's Sluice client
# built from one commit (SLUICE_REV, default HEAD), so edits in progress in
# the work tree neither break the build nor mix two protocol versions.
# SLUICE_REV=worktree measures the files as they are instead.
# Flags are passed on: benchmarks/run.sh -quick, benchmarks/run.sh -h.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
rev=${SLUICE_REV:-HEAD}
export SLUICE_BENCH_CMD="SLUICE_REV=$rev benchmarks/run.sh"
# Go returns freed memory lazily (MADV_FREE) in the load generator, as the
# sluice binary does and as every server gets it (serverEnv in procs.go).
export GODEBUG="${GODEBUG:+$GODEBUG,}madvdontneed=0"
if [ "$rev" = worktree ]; then
  cd "$here"
  exec go run . -sluice-rev worktree "$@"
fi
commit=$(git -C "$root" rev-parse --verify "$rev^{commit}")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-build-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
git -C "$root" archive "$commit" | tar -x -C "$tmp"
rm -rf "$tmp/benchmarks"
mkdir "$tmp/benchmarks"
cp "$here"/*.go "$here"/go.mod "$here"/go.sum "$tmp/benchmarks/"
(cd "$tmp/benchmarks" && GOWORK=off go build -o "$tmp/sluice-bench" .)
cd "$here"
"$tmp/sluice-bench" -sluice-rev "$commit" -client-rev "$commit" "$@"
