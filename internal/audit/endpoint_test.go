package audit

import (
	"strings"
	"testing"
)

// TestForwarded: the address dialled must be the server's end of the connection (laddr).
func TestForwarded(t *testing.T) {
	for _, tc := range []struct{ dialled, laddr, want string }{
		{"127.0.0.11:7379", "127.0.0.11:7379", ""},
		{"[::1]:6379", "::1:6379", ""},
		{"[::ffff:127.0.0.1]:6379", "127.0.0.1:6379", ""},
		{"[fe80::1%lo]:6379", "fe80::1:6379", ""},
		// Something in between: a port forward, NAT, a proxy.
		{"127.0.0.1:17379", "127.0.0.11:7379", "dialled to 127.0.0.1:17379 and reached the server at 127.0.0.11:7379"},
		{"127.0.0.1:7379", "127.0.0.11:7379", "reached the server at 127.0.0.11:7379"},
		{"[::1]:7379", "127.0.0.1:7379", "reached the server at 127.0.0.1:7379"},
		{"127.0.0.1:7379", "", "reports no address"},
		{"127.0.0.1:7379", "/run/redis.sock:0", "not an IP address"},
	} {
		got := forwarded(tc.dialled, tc.laddr)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("dialled %s, laddr %q: %q, want %q", tc.dialled, tc.laddr, got, tc.want)
		}
	}
}
