// Package releaseconfig checks, on every CI run and without goreleaser, what a release relies
// on: .goreleaser.yml names the repository, binaries, archives, checksums and signature the
// way the Terraform Registry expects (terraform-provider-<name>, <name> being the provider's
// type name), its builds exist and stamp main.version, and the VERSION file, the CHANGELOG's
// headings and the module requirements agree on one version. `make release-check` adds the
// heavy part (goreleaser check and a snapshot build, cross builds, the consumer check).
package releaseconfig
