// Command go-client takes a lock on a redlock-kit deployment with the library: the
// README's example, built and run against real masters by its test.
//
//	terraform output -raw client_config > client.json   # or one of client_configs
//	go run ./examples/go-client client.json
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go-client CLIENT_FILE (the module's client_config output)")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "go-client:", err)
		os.Exit(1)
	}
}

func run(clientFile string) error {
	// One call: the masters, the lock user, TLS with the deployment's CA, the key prefix
	// and the max TTL from the file, each master's go-redis client with the safe options.
	locker, err := redlock.Open(clientFile, redlock.Options{})
	if err != nil {
		return err // names the field and the fix
	}
	defer locker.Close() // closes the go-redis clients too

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lock, err := locker.Acquire(ctx, "nightly-report", 10*time.Second, redlock.WithAutoRenew())
	if err != nil {
		return err // errors.Is: ErrTaken, ErrUnavailable, ErrDenied, ...
	}
	defer lock.Release(context.Background()) // if the work fails
	fmt.Printf("locked %s with fence %d, valid for %v\n", lock.Key(), lock.Fence(),
		time.Until(lock.Deadline()).Round(time.Second))

	if err := doWork(lock.Context(), lock.Fence()); err != nil {
		return err
	}
	if err := lock.Release(context.Background()); err != nil {
		return err
	}
	fmt.Println("released")
	return nil
}

// doWork stands for the job. It stops when ctx ends (the lock was lost, or its validity ran
// out), and sends fence with every write, so that the storage refuses a stale holder.
func doWork(ctx context.Context, fence uint64) error {
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(100 * time.Millisecond):
		return nil
	}
}
