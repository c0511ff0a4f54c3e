package redistest

import (
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/localmasters"
)

// KitRestartDelay is localmasters.KitRestartDelay.
const KitRestartDelay = localmasters.KitRestartDelay

// StartKit is Start, then PublishDeployment(KitRestartDelay).
func StartKit(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c := Start(t, opts)
	if err := c.PublishDeployment(KitRestartDelay); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return c
}
