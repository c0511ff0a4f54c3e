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
# BUILD_DIR (default: the checkout's build/) is where the binaries, the mirror and the CLI
# config go: make check-docs builds its own provider into a temporary one, so that it never
# replaces the provider a test is running.
# One go build for both: the links and the packages only one of them needs run side by side.
# The flags are the go command's defaults (no -trimpath, cgo as the go command decides), as for
# `go test` and scripts/build-terraform.sh: what one of them compiled (the standard library
# above all) serves the others from GOCACHE.
#
# The same source gives the same provider, byte for byte, and an identical build is not
# reinstalled: Terraform records the mirror's package by a hash of its content (h1: of the
# unpacked directory) in every root module's .terraform.lock.hcl, and `terraform init` fails
# when the package no longer matches. So -buildvcs=false (a commit or an edited file elsewhere
# must not change the binary through its VCS stamp; the version is -X main.version) and fixed
# ldflags. A provider whose code changed does get a new hash at the same version, and
# `terraform init -upgrade` does not replace a recorded hash of an unchanged version: add the
# new one with `terraform providers lock -fs-mirror=...` (printed below; it keeps the lock
# file), or delete the lock file (docs/guides/terraform-provider.md).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(realpath -m "${BUILD_DIR:-build}")
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
out=$build_dir/binaries
mkdir -p "$out"
go build -buildvcs=false -ldflags "-X main.version=$version" -o "$out/" "${pkgs[@]}"

# install_file SRC DST: a new file renamed over DST, never DST rewritten in place: a provider or
# lockagent running from DST (a terraform test, a demo) keeps its file, and exec of DST never
# meets a half-written one ("text file busy").
# A DST with the same bytes is left alone: nothing changes for Terraform's lock files, and
# nothing is written.
install_file() {
  if cmp -s "$1" "$2"; then
    return 1
  fi
  cp -f "$1" "$2.new.$$"
  mv -f "$2.new.$$" "$2"
}

for what in "$@"; do
  case "$what" in
    provider)
      mirror="$build_dir/mirror"
      platform="$(go env GOOS)_$(go env GOARCH)" # the machine terraform runs on
      dir="$mirror/registry.terraform.io/redlock-kit/redlock/$version/$platform"
      mkdir -p "$dir"
      relock=""
      installed="$dir/terraform-provider-redlock_v$version"
      previous=false
      [ ! -e "$installed" ] || previous=true
      if install_file "$out/terraform-provider-redlock" "$installed"; then
        how="installed"
        if $previous; then
          relock="provider: a new build at $version: a root module initialised with the previous one fails terraform init on its .terraform.lock.hcl; in it run
  terraform providers lock -fs-mirror=$mirror -platform=$platform registry.terraform.io/redlock-kit/redlock
(adds this build's hash to the lock file), or delete its .terraform.lock.hcl"
        fi
      else
        how="unchanged (the same build is installed; lock files stay valid):"
      fi
      cat > "$build_dir/terraformrc" <<CFG
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
      echo "provider: $how redlock-kit/redlock $version in $mirror (TF_CLI_CONFIG_FILE=$build_dir/terraformrc)"
      [ -z "$relock" ] || echo "$relock"
      ;;
    lockagent)
      mkdir -p bin
      install_file "$out/lockagent" bin/lockagent || true
      echo "lockagent: bin/lockagent $version"
      ;;
  esac
done
