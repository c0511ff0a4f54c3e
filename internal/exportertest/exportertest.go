// Package exportertest runs the Prometheus programs the tests scrape (Debian's
// prometheus-redis-exporter, prometheus-node-exporter, prometheus) as child processes on free
// loopback ports, and scrapes metrics pages. The tests of internal/hostconfig, monitoring/
// and test/ use it.
package exportertest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// RequireEnv is the environment variable that turns a missing program into a failure
// (scripts/monitoring-check.sh and CI set it after installing them); without it the test skips.
const RequireEnv = "REDLOCK_REQUIRE_EXPORTERS"

// scrapeHangGuard bounds how long Scrape waits for a page to answer: a guard against a
// program that never listens, not a speed test.
const scrapeHangGuard = 60 * time.Second

// Binary finds the Debian program name on PATH. Without it the test skips, unless
// RequireEnv is 1.
func Binary(t testing.TB, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		pkg := name
		if name == "promtool" {
			pkg = "prometheus"
		}
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s not found: apt-get install %s (scripts/monitoring-check.sh does)", name, pkg)
		}
		t.Skipf("%s not installed (apt-get install %s; %s=1 makes this a failure)", name, pkg, RequireEnv)
	}
	return bin
}

// Start runs bin with args and env (added to this process's) listening on a free loopback
// port, passed as listenFlag=<host:port>, and returns that address; MetricsURL makes its
// metrics page of it. The process is stopped by pid when the test ends; its output goes to a
// log file whose tail the test logs when it failed.
func Start(t testing.TB, bin, listenFlag string, env []string, args ...string) string {
	t.Helper()
	port, err := redistest.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(bin, append([]string{listenFlag + "=" + addr}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	Run(t, filepath.Base(bin), cmd)
	return addr
}

// Run starts cmd (as Start does, for a command made elsewhere, e.g. in a lab's network
// namespace), named name in its log file's name and the log's tail, which the test logs when
// it failed; it is stopped by pid when the test ends.
func Run(t testing.TB, name string, cmd *exec.Cmd) {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		_ = log.Close()
		if t.Failed() {
			out, _ := os.ReadFile(log.Name())
			t.Logf("%s log (tail):\n%s", name, Tail(string(out), 2000))
		}
	})
}

// MetricsURL is the metrics page of a program listening on addr (host:port).
func MetricsURL(addr string) string { return "http://" + addr + "/metrics" }

// Scrape GETs url until it answers (a program just started may not listen yet) and parses
// the Prometheus text format it returns.
func Scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scrapeHangGuard)
	defer cancel()
	body := ScrapeText(ctx, t, http.DefaultClient, url)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s: not the Prometheus text format: %v", url, err)
	}
	return families
}

// ScrapeText GETs url through c until it answers 200 OK or ctx ends (then the test fails)
// and returns the body.
func ScrapeText(ctx context.Context, t testing.TB, c *http.Client, url string) string {
	t.Helper()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err == nil {
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				return string(body)
			}
			last = fmt.Errorf("status %d, %v", resp.StatusCode, err)
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never answered: %v", url, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Tail is the last n bytes of s.
func Tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
