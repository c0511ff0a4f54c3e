#!/usr/bin/env bash
# Builds terraform-provider-redlock and installs it into the local filesystem mirror
# (build/mirror), with the CLI config build/terraformrc that makes `terraform init` find it
# offline: scripts/build-binaries.sh provider, which has the details.
exec "$(dirname "$0")/build-binaries.sh" provider
