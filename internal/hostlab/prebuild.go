package hostlab

import "context"

// BuildImage builds the host image into its cache when it is missing (once per package
// list; the same lock and the same checks as a lab's first boot) and returns its rootfs.
// make test-deps runs it (through cmd/hostlab-image) beside its other installs, so that on
// a fresh machine the image is not built inside the first test that boots a lab.
func BuildImage(ctx context.Context, logf func(string, ...any)) (string, error) {
	return ensureImage(ctx, logf)
}
