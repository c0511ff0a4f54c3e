#!/usr/bin/env bash
# scripts/build-binaries.sh [provider] [lockagent]
# Builds the named binaries (both when none is named) in one `go build`, each with its version
# stamped (-X main.version=$PROVIDER_VERSION, else the VERSION file), and puts them where the
# kit runs them:
#   provider:  terraform-provider-redlock, installed into the local filesystem mirror
#              build/mirror/registry.terraform.io/redlock-kit/redlock/<version>/<os>_<arch>/
#              as terraform-provider-redlock_v<version>, with the CLI config build/terraformrc
#              that makes `terraform init` find it offline (every make target and test sets
#              TF_CLI_CONFIG_FILE to it);
#   lockagent: bin/lockagent.
# One go build for both: the links and the packages only one of them needs run side by side.
# The flags are the go command's defaults (no -trimpath, cgo as the go command decides), as for
# `go test` and scripts/build-terraform.sh: what one of them compiled (the standard library
# above all) serves the others from GOCACHE.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- provider lockagent
version="${PROVIDER_VERSION:-$(cat VERSION)}"
pkgs=()
for what in "$@"; do
  case "$what" in
    provider) pkgs+=(./provider/cmd/terraform-provider-redlock) ;;
    lockagent) pkgs+=(./lockagent/cmd/lockagent) ;;
    *) echo "usage: scripts/build-binaries.sh [provider] [lockagent] (got \"$what\")" >&2; exit 2 ;;
  esac
done

# -o DIR/ names each binary after its package's directory. The directory is kept: go build
# leaves a binary there alone when it is up to date (its build ID), so a warm run links
# nothing; the binaries are copied from it.
out=build/binaries
mkdir -p "$out"
go build -ldflags "-X main.version=$version" -o "$out/" "${pkgs[@]}"

# install_file SRC DST: a new file renamed over DST, never DST rewritten in place: a provider or
# lockagent running from DST (a terraform test, a demo) keeps its file, and exec of DST never
# meets a half-written one ("text file busy").
install_file() {
  cp -f "$1" "$2.new.$$"
  mv -f "$2.new.$$" "$2"
}

for what in "$@"; do
  case "$what" in
    provider)
      mirror="$PWD/build/mirror"
      platform="$(go env GOOS)_$(go env GOARCH)" # the machine terraform runs on
      dir="$mirror/registry.terraform.io/redlock-kit/redlock/$version/$platform"
      mkdir -p "$dir"
      install_file "$out/terraform-provider-redlock" "$dir/terraform-provider-redlock_v$version"
      cat > build/terraformrc <<CFG
provider_installation {
  filesystem_mirror {
    path    = "$mirror"
    include = ["registry.terraform.io/redlock-kit/redlock"]
  }
  direct {
    exclude = ["registry.terraform.io/redlock-kit/redlock"]
  }
}
CFG
      echo "provider: installed redlock-kit/redlock $version into $mirror (TF_CLI_CONFIG_FILE=$PWD/build/terraformrc)"
      ;;
    lockagent)
      mkdir -p bin
      install_file "$out/lockagent" bin/lockagent
      echo "lockagent: bin/lockagent $version"
      ;;
  esac
done
