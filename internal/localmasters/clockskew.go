package localmasters

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// ClockSkew makes a master's wall clock wrong, the way a host with broken time sync is:
// Offset ahead (negative: behind) and running Rate times as fast as the real clock. Redis
// keeps expirations and TIME on the wall clock, so a skewed master expires locks early or
// late. The monotonic clock is not touched.
type ClockSkew struct {
	Offset time.Duration
	Rate   float64 // 0 means 1 (correct rate)
	// StepFile, when set, names a file whose first 8 bytes (a native-endian int64 of
	// nanoseconds, which must exist before the master starts) are added to the wall clock
	// on every read: rewriting them in place (WriteAt, never a truncating write) steps the
	// running master's clock.
	StepFile string
}

//go:embed shim/clockskew.c
var clockSkewSource []byte

var (
	clockSkewOnce sync.Once
	clockSkewLib  string
	clockSkewErr  error
)

// ClockSkewAvailable says why clock-skewed masters cannot be started here (no C compiler to
// build the shim), or nil when they can.
func ClockSkewAvailable() error {
	_, err := clockSkewLibrary()
	return err
}

// clockSkewLibrary compiles the LD_PRELOAD shim once per content (it is small; a C compiler
// is on every machine that builds Go with cgo) and returns its path.
func clockSkewLibrary() (string, error) {
	clockSkewOnce.Do(func() {
		cc, err := exec.LookPath("cc")
		if err != nil {
			clockSkewErr = fmt.Errorf("clock skew needs a C compiler (cc) to build its LD_PRELOAD shim: %w", err)
			return
		}
		sum := sha256.Sum256(clockSkewSource)
		dir := filepath.Join(os.TempDir(), "localmasters-clockskew-"+hex.EncodeToString(sum[:6]))
		lib := filepath.Join(dir, "clockskew.so")
		if _, err := os.Stat(lib); err == nil {
			clockSkewLib = lib
			return
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			clockSkewErr = err
			return
		}
		src := filepath.Join(dir, "clockskew.c")
		if err := os.WriteFile(src, clockSkewSource, 0o600); err != nil {
			clockSkewErr = err
			return
		}
		// Build beside the final name and rename, so a concurrent test process never
		// preloads a half-written library.
		tmp := lib + "." + strconv.Itoa(os.Getpid())
		if out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", tmp, src, "-ldl").CombinedOutput(); err != nil {
			clockSkewErr = fmt.Errorf("building the clock-skew shim: %v\n%s", err, out)
			return
		}
		clockSkewErr = os.Rename(tmp, lib)
		clockSkewLib = lib
	})
	return clockSkewLib, clockSkewErr
}

// env returns the environment that starts redis-server with this skew.
func (s ClockSkew) env() ([]string, error) {
	lib, err := clockSkewLibrary()
	if err != nil {
		return nil, err
	}
	rate := s.Rate
	if rate == 0 {
		rate = 1
	}
	env := append(os.Environ(), "LD_PRELOAD="+lib,
		"REDISTEST_CLOCK_OFFSET_NS="+strconv.FormatInt(s.Offset.Nanoseconds(), 10),
		"REDISTEST_CLOCK_RATE="+strconv.FormatFloat(rate, 'f', -1, 64))
	if s.StepFile != "" {
		env = append(env, "REDISTEST_CLOCK_STEP_FILE="+s.StepFile)
	}
	return env, nil
}

// ClockSkewLibrary builds (once) the LD_PRELOAD shim that skews a process's wall clock and
// returns its path, for tests that install it elsewhere (a host's file system). It reads
// REDISTEST_CLOCK_OFFSET_NS and REDISTEST_CLOCK_RATE from the environment at start, and
// REDISTEST_CLOCK_STEP_FILE (8 bytes, a native-endian int64 of nanoseconds) on every call.
func ClockSkewLibrary() (string, error) { return clockSkewLibrary() }
