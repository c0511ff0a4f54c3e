#!/bin/sh
# previous-function-library.sh COMMIT: print the kit's function library as COMMIT generated
# it (FunctionLibrary().Code), for internal/versionskew/testdata. Offline: go-redis comes
# from the module cache.
set -eu
commit=${1:?usage: $0 COMMIT}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
git archive "$commit" lockagent/redlock | tar -x -C "$dir"
lib=$dir/lockagent/redlock
rm -f "$lib"/*_test.go
goredis=$(awk '$1 == "github.com/redis/go-redis/v9" { print $2; exit }' go.mod)
printf 'module github.com/redlock-kit/redlock-kit/lockagent/redlock\n\ngo 1.26.0\n\nrequire github.com/redis/go-redis/v9 %s\n' "$goredis" >"$lib/go.mod"
cp go.sum "$lib/"
mkdir "$dir/dump"
printf 'module dump\n\ngo 1.26.0\n\nrequire github.com/redlock-kit/redlock-kit/lockagent/redlock v0.0.0\n\nreplace github.com/redlock-kit/redlock-kit/lockagent/redlock => ../lockagent/redlock\n' >"$dir/dump/go.mod"
printf 'package main\n\nimport (\n\t"fmt"\n\n\t"github.com/redlock-kit/redlock-kit/lockagent/redlock"\n)\n\nfunc main() { fmt.Print(redlock.FunctionLibrary().Code) }\n' >"$dir/dump/main.go"
cp "$lib/go.sum" "$dir/dump/"
cd "$dir/dump" && GOWORK=off GOFLAGS=-mod=mod GOPROXY=off go run .
