// Command hostlab-image builds the five-host tests' Debian image into its cache
// ($REDLOCK_HOSTLAB_CACHE, else /var/cache/redlock-kit/hostlab) when it is missing, and
// prints the image's rootfs. It needs root and debootstrap, like the tests that boot hosts.
// make test-deps runs it in the background on a machine that runs the host tests.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/redlock-kit/redlock-kit/internal/hostlab"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	rootfs, err := hostlab.BuildImage(ctx, logf)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hostlab-image: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(rootfs)
}
