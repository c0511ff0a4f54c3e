package audit

import (
	"context"
	"testing"
	"time"
)

// One machine is said plainly, and only of one machine: distinct hosts are not called it.
func TestIndependence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		endpoints  []string
		oneMachine bool
	}{
		{"all loopback, distinct addresses", []string{"127.0.0.11:6379", "127.0.0.12:6379", "127.0.0.13:6379"}, true},
		{"localhost and ::1", []string{"localhost:1", "[::1]:2", "127.0.0.1:3"}, true},
		{"one address, three ports", []string{"10.0.0.5:1", "10.0.0.5:2", "10.0.0.5:3"}, true},
		{"three hosts", []string{"10.0.0.5:6379", "10.0.1.5:6379", "10.0.2.5:6379"}, false},
		{"loopback next to a host", []string{"127.0.0.1:1", "127.0.0.2:1", "10.0.0.5:1"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			one, says := independence(context.Background(), tc.endpoints, time.Second)
			if one != tc.oneMachine || (says == OneMachineNotice) != tc.oneMachine {
				t.Fatalf("independence(%v) = %v %q, want one machine %v", tc.endpoints, one, says, tc.oneMachine)
			}
		})
	}
}
