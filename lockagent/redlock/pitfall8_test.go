package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// counterStore is the resource a lock protects: a counter updated in transactions whose
// commit refuses a fencing token lower than one it has already accepted.
type counterStore struct {
	mu       sync.Mutex
	value    int
	maxFence uint64
}

var errStaleFence = errors.New("stale fencing token")

type counterTx struct {
	store *counterStore
	fence uint64
	value int // read at begin, written at commit
}

func (s *counterStore) begin(fence uint64) *counterTx {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &counterTx{store: s, fence: fence, value: s.value}
}

func (tx *counterTx) commit() error {
	s := tx.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if tx.fence < s.maxFence {
		return errStaleFence
	}
	s.maxFence, s.value = tx.fence, tx.value
	return nil
}

// Pitfall 8: the lock released before the surrounding transaction commits. The right order
// is commit, then release; the wrong order lets a second holder read the state the first
// has not committed yet, and the first holder's late commit would overwrite the second's
// work. The fencing token makes the store refuse that late commit.
func TestPitfall8CommitBeforeRelease(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	ctx := context.Background()

	t.Run("8a commit under the lock, then release: the next holder sees every update", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		store := &counterStore{}
		for i := 0; i < 3; i++ {
			l := mustAcquire(t, c, "p8a", 5*time.Second)
			tx := store.begin(l.Fence())
			tx.value++
			if err := l.Context().Err(); err != nil {
				t.Fatalf("lock ended before commit: %v", err)
			}
			if err := tx.commit(); err != nil {
				t.Fatalf("commit %d: %v", i, err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("release %d: %v", i, err)
			}
		}
		if store.value != 3 {
			t.Fatalf("counter = %d after 3 increments under the lock, want 3", store.value)
		}
	})

	t.Run("8b released before commit: the fencing token refuses the late commit, no update is lost", func(t *testing.T) {
		a := newClient(t, cl, redlock.Options{})
		b := newClient(t, cl, redlock.Options{})
		store := &counterStore{}

		la := mustAcquire(t, a, "p8b", 5*time.Second)
		txA := store.begin(la.Fence())
		txA.value++
		if err := la.Release(ctx); err != nil { // the mistake: released before commit
			t.Fatal(err)
		}

		lb := mustAcquire(t, b, "p8b", 5*time.Second)
		if lb.Fence() <= la.Fence() {
			t.Fatalf("second holder's fence %d is not above the first's %d", lb.Fence(), la.Fence())
		}
		txB := store.begin(lb.Fence())
		txB.value++
		if err := txB.commit(); err != nil {
			t.Fatalf("the current holder's commit: %v", err)
		}
		defer lb.Release(ctx)

		if err := txA.commit(); !errors.Is(err, errStaleFence) {
			t.Fatalf("the first holder's late commit: %v, want %v", err, errStaleFence)
		}
		if store.value != 1 || store.maxFence != lb.Fence() {
			t.Fatalf("store = %d (fence %d), want B's commit (1, fence %d) kept", store.value, store.maxFence, lb.Fence())
		}
	})
}
