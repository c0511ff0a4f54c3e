package audit

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestEndpointMismatch: the endpoint must be one of the addresses the server listens on.
func TestEndpointMismatch(t *testing.T) {
	lookup := func(_ context.Context, host string) ([]string, error) {
		switch host {
		case "redis-1.internal":
			return []string{"10.0.0.5"}, nil
		case "localhost":
			return []string{"::1", "127.0.0.1"}, nil
		}
		return nil, errors.New("no such host")
	}
	for _, tc := range []struct {
		ep, port, bind, want string
	}{
		{"127.0.0.11:7379", "7379", "127.0.0.11", ""},
		{"10.0.0.5:6379", "6379", "10.0.0.5 -::1", ""},
		{"10.0.0.5:6379", "6379", "* -::*", ""},
		{"10.0.0.5:6379", "6379", "0.0.0.0", ""},
		{"redis-1.internal:6379", "6379", "10.0.0.5", ""},
		{"localhost:6379", "6379", "127.0.0.1", ""},
		{"[::1]:6379", "6379", "127.0.0.1 -::1", ""},
		{"unknown.internal:6379", "6379", "10.0.0.5", ""}, // cannot be told here
		{"10.0.0.5:6379", "", "", ""},                     // settings not read
		// Something in between: a port forward, NAT, a proxy.
		{"127.0.0.1:17379", "7379", "127.0.0.11", "listens on port 7379, not the endpoint's 17379"},
		{"192.168.1.9:6379", "6379", "10.0.0.5", "binds 10.0.0.5, and the endpoint's host 192.168.1.9"},
		{"redis-1.internal:6379", "6379", "10.0.0.6", "the endpoint's host redis-1.internal is none"},
	} {
		got := endpointMismatch(context.Background(), tc.ep, tc.port, tc.bind, lookup)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("endpoint %s, port %q, bind %q: %q, want %q", tc.ep, tc.port, tc.bind, got, tc.want)
		}
	}
}
