#!/usr/bin/env bash
# Builds terraform-provider-redlock and installs it into a local filesystem mirror, then
# writes a CLI config that makes `terraform init` find it offline. Every make target and
# test sets TF_CLI_CONFIG_FILE to build/terraformrc.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${PROVIDER_VERSION:-$(cat VERSION)}"
mirror="$PWD/build/mirror"
platform="$(go env GOOS)_$(go env GOARCH)" # the machine terraform runs on
dir="$mirror/registry.terraform.io/redlock-kit/redlock/$version/$platform"
mkdir -p "$dir"
go build -ldflags "-X main.version=$version" -o "$dir/terraform-provider-redlock_v$version" ./provider/cmd/terraform-provider-redlock
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
