#!/usr/bin/env bash
# Installs what the tests, lint and docs checks need beyond `make deps` (make test-deps; make
# test and CI call it):
#   when the terraform on PATH is older than 1.11, v1.11.4 into ./bin/terraform-1.11.4 for the
#   write-only password tests;
#   staticcheck and terraform-docs (make module-docs), pinned, into ./bin;
#   for the host tests (internal/hostlab) and unless REDLOCK_HOSTS=0, the tools that run
#   Debian containers: systemd-nspawn (systemd-container), debootstrap (builds the host
#   image once), nft (nftables), ip (iproute2), nsenter/mount (util-linux), and chromium
#   (the chaos report's headless screenshot test), via apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin

# Host tests: apt-get install only what is missing (command -> Debian package).
if [ "${REDLOCK_HOSTS:-1}" != 0 ]; then
  missing=""
  for pair in systemd-nspawn:systemd-container debootstrap:debootstrap nft:nftables ip:iproute2 \
      nsenter:util-linux chroot:coreutils chromium:chromium; do
    cmd=${pair%%:*} pkg=${pair#*:}
    if ! command -v "$cmd" >/dev/null 2>&1 && ! [ -x "/usr/sbin/$cmd" ] && ! [ -x "/sbin/$cmd" ]; then
      case " $missing " in *" $pkg "*) ;; *) missing="$missing $pkg" ;; esac
    fi
  done
  if [ -n "$missing" ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
      echo "test-deps: host tests need:$missing (no apt-get here: install them by hand, or REDLOCK_HOSTS=0 to skip)" >&2
      exit 1
    fi
    sudo=""
    if [ "$(id -u)" != 0 ]; then
      command -v sudo >/dev/null 2>&1 || { echo "test-deps: installing$missing needs root (or sudo); REDLOCK_HOSTS=0 skips the host tests' tools" >&2; exit 1; }
      sudo=sudo
    fi
    echo "test-deps: installing for the host tests with apt-get:$missing"
    if [ -z "${apt_updated:-}" ]; then $sudo apt-get update -qq; apt_updated=1; fi
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
  fi
  echo "test-deps: host tests: $(systemd-nspawn --version 2>/dev/null | head -1), debootstrap $(dpkg-query -W -f='${Version}' debootstrap 2>/dev/null || echo '?'), $(nft --version 2>/dev/null || /usr/sbin/nft --version)"
fi

# The write-only password tests (provider, TF_ACC) need terraform >= 1.11; everything else
# runs with the terraform above (>= 1.5). When that one is older, build v1.11.4 into
# ./bin/terraform-1.11.4, which those tests then use. `go install ...@v1.11.4` is refused
# (its go.mod has replace directives for modules nested in its repository, which the module
# zip leaves out), so it is built from a throwaway module that requires it and points those
# nested modules at the same commit (v1.11.4 = 35645b8fca68), all through the Go proxy.
tf_current=$(TF_CLI_CONFIG_FILE=/dev/null terraform version -json 2>/dev/null | sed -n 's/.*"terraform_version": *"\([^"]*\)".*/\1/p')
if [ "$(printf '%s\n1.11.0\n' "$tf_current" | sort -V | head -1)" != 1.11.0 ]; then
  tf_wo_version=v1.11.4
  tf_wo_pseudo=v0.0.0-20250409131005-35645b8fca68
  if ! "$PWD/bin/terraform-1.11.4" version 2>/dev/null | grep -q "Terraform ${tf_wo_version}$"; then
    echo "test-deps: terraform $tf_current is older than 1.11; building $tf_wo_version into ./bin/terraform-1.11.4 for the write-only tests (a few minutes, once)"
    tf_tmp=$(mktemp -d)
    {
      printf 'module terraform-install\n\ngo 1.24\n\nrequire github.com/hashicorp/terraform %s\n\n' "$tf_wo_version"
      for m in backend/remote-state/azure backend/remote-state/consul backend/remote-state/cos backend/remote-state/gcs \
          backend/remote-state/kubernetes backend/remote-state/oss backend/remote-state/pg backend/remote-state/s3 legacy; do
        printf 'replace github.com/hashicorp/terraform/internal/%s => github.com/hashicorp/terraform/internal/%s %s\n' "$m" "$m" "$tf_wo_pseudo"
      done
    } >"$tf_tmp/go.mod"
    printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/hashicorp/terraform"\n' >"$tf_tmp/tools.go"
    # version.dev=no: a release build, as HashiCorp's (else it calls itself v1.11.4-dev).
    (cd "$tf_tmp" && go mod tidy && GOBIN="$tf_tmp/bin" go install \
      -ldflags "-X github.com/hashicorp/terraform/version.dev=no" github.com/hashicorp/terraform) || { rm -rf "$tf_tmp"; exit 1; }
    mv "$tf_tmp/bin/terraform" "$PWD/bin/terraform-1.11.4"
    rm -rf "$tf_tmp"
  fi
  echo "test-deps: write-only tests: $PWD/bin/terraform-1.11.4 ($("$PWD/bin/terraform-1.11.4" version 2>/dev/null | head -1))"
fi

# The linter, pinned, into ./bin (make lint).
staticcheck_version=v0.8.2
if ! "$PWD/bin/staticcheck" -version 2>/dev/null | grep -q "${staticcheck_version#v}"; then
  echo "test-deps: installing staticcheck $staticcheck_version into ./bin"
  GOBIN="$PWD/bin" go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
fi
echo "test-deps: $("$PWD/bin/staticcheck" -version)"

# terraform-docs, pinned, into ./bin (make module-docs, make check-docs). Built from a
# throwaway module that requires it, so the module's own go.mod/go.sum pin its dependencies
# and no "latest" lookup is needed (go install pkg@version also checks the module's
# deprecation through the version list, which a proxy may refuse).
terraform_docs_version=v0.22.0
if ! "$PWD/bin/terraform-docs" --version 2>/dev/null | grep -q "$terraform_docs_version"; then
  echo "test-deps: installing terraform-docs $terraform_docs_version into ./bin"
  tfd_tmp=$(mktemp -d)
  printf 'module terraform-docs-install\n\ngo 1.24\n\nrequire github.com/terraform-docs/terraform-docs %s\n' "$terraform_docs_version" >"$tfd_tmp/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/terraform-docs/terraform-docs"\n' >"$tfd_tmp/tools.go"
  (cd "$tfd_tmp" && go mod tidy && GOBIN="$OLDPWD/bin" go install github.com/terraform-docs/terraform-docs) || { rm -rf "$tfd_tmp"; exit 1; }
  rm -rf "$tfd_tmp"
fi
echo "test-deps: $("$PWD/bin/terraform-docs" --version)"
