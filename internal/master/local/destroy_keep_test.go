package local

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master"
)

// TestDestroyKeepingDataWaitsOutTheLocks: destroy with keep_data_on_destroy keeps the AOF
// for a master started in that data dir, but a replacement at the same address from a new
// data_dir knows none of the locks: destroy must not return before they may have expired
// (here: the whole restart_delay, since the master's locks cannot be measured). Before,
// it returned at once.
func TestDestroyKeepingDataWaitsOutTheLocks(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	const delay = 2 * time.Second
	m := Master{Spec: master.Spec{Name: "kept", Bind: "127.0.0.1", Port: port, DataDir: dir, RestartDelay: delay},
		KeepDataOnDestroy: true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	if _, err := Destroy(ctx, m, Processes{}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < delay {
		t.Fatalf("destroy with keep_data_on_destroy returned after %v, before the locks (restart_delay %v) may have expired", took, delay)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("data_dir not kept: %v", err)
	}
	// A destroy cut short is an error: the caller keeps the master, so no replacement starts.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if _, err := Destroy(ctx2, m, Processes{}); err == nil {
		t.Fatal("a destroy cut short before the locks expired succeeded")
	}
}
