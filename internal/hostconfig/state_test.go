package hostconfig

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/redlock-kit/redlock-kit/internal/exportertest"
	"github.com/redlock-kit/redlock-kit/internal/pki"
)

// withStateFile points the policy's STATE_FILE at path (a later assignment in master.conf wins).
func (p *policy) withStateFile(path string) {
	p.t.Helper()
	p.appendConf("STATE_FILE=" + shellQuote(path) + "\n")
}

// nodeExporter runs Debian's node_exporter with only its textfile collector on dir and
// returns its metrics URL; it is stopped by pid when the test ends. Without the package the
// test skips, unless REDLOCK_REQUIRE_EXPORTERS=1.
func nodeExporter(t *testing.T, dir string) string {
	t.Helper()
	bin := exportertest.Binary(t, NodeExporterPackage)
	return exportertest.MetricsURL(exportertest.Start(t, bin, "--web.listen-address", nil,
		"--collector.disable-defaults", "--collector.textfile", "--collector.textfile.directory="+dir))
}

// gauge is the value of the family's series labelled master="m1" (and with want's labels).
func gauge(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	fam := fams[name]
	if fam == nil {
		return 0, false
	}
next:
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["master"] != "m1" {
			continue
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

// contractHeaders are the HELP and TYPE lines of the contract's example, by metric.
func contractHeaders(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("../../monitoring/testdata/redlock.prom")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return headers(t, f)
}

func headers(t *testing.T, r io.Reader) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "#" {
			out[f[2]] = append(out[f[2]], sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkState reads the state file: mode 0644, no temporary file left beside it, every HELP
// and TYPE line the contract's, and node_exporter publishes it without a scrape error.
func checkState(t *testing.T, url, path string) map[string]*dto.MetricFamily {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no state file: %v", err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("state file mode %v, want 0644", fi.Mode().Perm())
	}
	if left, _ := filepath.Glob(path + ".*"); len(left) > 0 {
		t.Errorf("temporary files left beside the state file: %v", left)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	got := headers(t, f)
	f.Close()
	want := contractHeaders(t)
	for name, lines := range got {
		if strings.Join(lines, "\n") != strings.Join(want[name], "\n") {
			t.Errorf("%s: HELP/TYPE lines\n%s\nwant the contract's\n%s", name, strings.Join(lines, "\n"), strings.Join(want[name], "\n"))
		}
	}
	fams := exportertest.Scrape(t, url)
	if v, ok := gauge2(fams, "node_textfile_scrape_error"); !ok || v != 0 {
		content, _ := os.ReadFile(path)
		t.Fatalf("node_exporter: node_textfile_scrape_error = %v (present %v): it refuses the state file\n%s", v, ok, content)
	}
	return fams
}

// gauge2 is the value of an unlabelled node_exporter gauge.
func gauge2(fams map[string]*dto.MetricFamily, name string) (float64, bool) {
	if fam := fams[name]; fam != nil && len(fam.GetMetric()) > 0 {
		return fam.GetMetric()[0].GetGauge().GetValue(), true
	}
	return 0, false
}

// TestStateFile: the policy's state file, read by a real node_exporter, says what the gate
// does: held (with the hold's end), then serving with appendfsync always read from a real
// server, then stopped cleanly with the exit's time. The boot id and the restart delay are
// there throughout; no TLS, so no certificate expiry.
func TestStateFile(t *testing.T) {
	textfiles := t.TempDir()
	path := filepath.Join(textfiles, "redlock.prom")
	url := nodeExporter(t, textfiles)
	p := newPolicy(t, 10*time.Second)
	p.withStateFile(path)
	const now = 7_000_000
	p.setClock(now)

	// Negative control: node_exporter flags a file it cannot parse, so the check can fail.
	if err := os.WriteFile(path, []byte("redlock_master_holding{master=\"m1\" 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v, ok := gauge2(exportertest.Scrape(t, url), "node_textfile_scrape_error"); !ok || v != 1 {
		t.Fatalf("control: node_exporter accepted a broken state file (scrape error %v, present %v)", v, ok)
	}

	// Held: a new host (no record) holds the whole delay from now.
	before := time.Now().Unix()
	g := p.startGate()
	if !g.waitFor("holding the start for 10000ms") {
		t.Fatalf("the gate did not hold 10 s:\n%s", g.output())
	}
	after := time.Now().Unix()
	fams := checkState(t, url, path)
	for _, c := range []struct {
		name     string
		labels   map[string]string
		min, max float64
	}{
		{"redlock_master_holding", nil, 1, 1},
		{"redlock_master_hold_until_seconds", nil, float64(before + 10), float64(after + 11)},
		{"redlock_master_restart_delay_seconds", nil, 10, 10},
		{"redlock_master_last_exit_seconds", nil, 0, 0},
		{"redlock_master_last_exit_clean", nil, 0, 0},
		{"redlock_master_boot_info", map[string]string{"boot_id": "boot-1"}, 1, 1},
		{"redlock_fence_seeded", nil, 1, 1},
	} {
		if v, ok := gauge(fams, c.name, c.labels); !ok || v < c.min || v > c.max {
			t.Errorf("held: %s%v = %v (present %v), want %v..%v", c.name, c.labels, v, ok, c.min, c.max)
		}
	}
	for _, absent := range []string{"redlock_master_appendfsync_always", "redlock_tls_cert_not_after_seconds"} {
		if _, ok := gauge(fams, absent, nil); ok {
			t.Errorf("held: %s is published, want it absent (no server answers, no TLS)", absent)
		}
	}

	// The hold ends: the gate opens and says so.
	p.setClock(now + 10_000)
	if err := g.wait(); err != nil {
		t.Fatalf("gate: %v\n%s", err, g.output())
	}
	fams = checkState(t, url, path)
	if v, ok := gauge(fams, "redlock_master_holding", nil); !ok || v != 0 {
		t.Errorf("gate open: holding = %v (present %v), want 0", v, ok)
	}
	if v, ok := gauge(fams, "redlock_master_hold_until_seconds", nil); !ok || v != 0 {
		t.Errorf("gate open: hold_until = %v (present %v), want 0", v, ok)
	}

	// Serving: the started step reads appendfsync from the server, as the admin.
	srv := p.startServer(p.dataDir)
	pid := strconv.Itoa(srv.cmd.Process.Pid)
	p.run("started", "MAINPID="+pid)
	fams = checkState(t, url, path)
	if v, ok := gauge(fams, "redlock_master_appendfsync_always", nil); !ok || v != 1 {
		t.Errorf("serving: appendfsync_always = %v (present %v), want 1", v, ok)
	}
	if v, ok := gauge(fams, "redlock_master_holding", nil); !ok || v != 0 {
		t.Errorf("serving: holding = %v (present %v), want 0", v, ok)
	}
	// everysec reads as 0 (the alert's case); the timer's step rewrites the file.
	if err := srv.admin.ConfigSet(context.Background(), "appendfsync", "everysec").Err(); err != nil {
		t.Fatal(err)
	}
	p.run("state")
	if v, ok := gauge(checkState(t, url, path), "redlock_master_appendfsync_always", nil); !ok || v != 0 {
		t.Errorf("serving with everysec: appendfsync_always = %v (present %v), want 0", v, ok)
	}
	if err := srv.admin.ConfigSet(context.Background(), "appendfsync", "always").Err(); err != nil {
		t.Fatal(err)
	}

	// A durable stop: a clean exit, at its time.
	stopAt := time.Now().Unix()
	p.run("stop", "MAINPID="+pid)
	if err := srv.wait(); err != nil {
		t.Fatalf("the server did not exit 0 after the stop step: %v", err)
	}
	p.run("stopped", "SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0")
	fams = checkState(t, url, path)
	if v, ok := gauge(fams, "redlock_master_last_exit_clean", nil); !ok || v != 1 {
		t.Errorf("after a clean stop: last_exit_clean = %v (present %v), want 1", v, ok)
	}
	if v, ok := gauge(fams, "redlock_master_last_exit_seconds", nil); !ok || v < float64(stopAt) || v > float64(time.Now().Unix()) {
		t.Errorf("after a clean stop: last_exit_seconds = %v (present %v), want the stop's time (from %d)", v, ok, stopAt)
	}
	if _, ok := gauge(fams, "redlock_master_appendfsync_always", nil); ok {
		t.Error("stopped: appendfsync_always is still published, want it absent (no server answers)")
	}

	// A kill -9 of the next run: unclean, and held until the hold's end.
	p.run("started", "MAINPID=4242")
	p.run("stopped", "SERVICE_RESULT=signal", "EXIT_CODE=killed", "EXIT_STATUS=KILL")
	fams = checkState(t, url, path)
	if v, ok := gauge(fams, "redlock_master_last_exit_clean", nil); !ok || v != 0 {
		t.Errorf("after a kill: last_exit_clean = %v (present %v), want 0", v, ok)
	}
	if v, ok := gauge(fams, "redlock_master_holding", nil); !ok || v != 1 {
		t.Errorf("after a kill: holding = %v (present %v), want 1 (the next start holds)", v, ok)
	}
}

// TestStateFileFailureChangesNothing: when the state file cannot be written (its directory
// is a regular file), every step logs it and the gate decides as it does with no state file:
// a clean stop starts at once, an unclean one holds; the records are the same.
func TestStateFileFailureChangesNothing(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			results := map[bool]string{}
			for _, broken := range []bool{false, true} {
				p := newPolicy(t, 2*time.Second)
				const now = 3_000_000
				p.setClock(now)
				if broken {
					blocker := filepath.Join(p.dir, "not-a-dir")
					if err := os.WriteFile(blocker, nil, 0o644); err != nil {
						t.Fatal(err)
					}
					p.withStateFile(filepath.Join(blocker, "redlock.prom"))
				}
				if clean {
					p.write("redlock.clean-stop", p.marker(testMachineID, "boot-1", now-100, p.aofDigest(), p.dataDir))
				} else {
					p.run("started", "MAINPID=4242")
					p.run("stopped", "SERVICE_RESULT=signal", "EXIT_CODE=killed", "EXIT_STATUS=KILL")
				}
				g := p.startGate()
				decided := "starting at once"
				if !clean {
					decided = "holding the start for 2000ms"
				}
				if !g.waitFor(decided) {
					t.Fatalf("broken state file %v: the gate did not say %q:\n%s", broken, decided, g.output())
				}
				if !clean {
					p.setClock(now + 2_000)
				}
				if err := g.wait(); err != nil {
					t.Fatalf("broken state file %v: gate: %v\n%s", broken, err, g.output())
				}
				if broken != strings.Contains(g.output(), "cannot write") {
					t.Errorf("broken state file %v, yet the gate's log about it is:\n%s", broken, g.output())
				}
				results[broken] = fmt.Sprintf("hold %v clean %v floor %q", p.exists("redlock.hold"), p.exists("redlock.clean-stop"), p.read("redlock.floor"))
			}
			if results[true] != results[false] {
				t.Errorf("records differ with a broken state file:\n ok:     %s\n broken: %s", results[false], results[true])
			}
		})
	}
}

// TestStateFileTLSExpiry: with TLS, the state file carries the server certificate's expiry
// (from the file master.conf names), which node_exporter publishes; without TLS it is absent
// (the held/serving test above checks that).
func TestStateFileTLSExpiry(t *testing.T) {
	textfiles := t.TempDir()
	path := filepath.Join(textfiles, "redlock.prom")
	url := nodeExporter(t, textfiles)
	ca, err := pki.NewCA(pki.CAOptions{Validity: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.NewServer(ca, pki.ServerOptions{IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, Validity: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := pki.ParseCert(cert.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	p := newPolicy(t, time.Second)
	certFile := filepath.Join(p.dir, "server.crt")
	if err := os.WriteFile(certFile, []byte(cert.CertPEM), 0o644); err != nil {
		t.Fatal(err)
	}
	p.withStateFile(path)
	p.appendConf("TLS_CERT_FILE=" + shellQuote(certFile) + "\n")
	p.run("state")
	if v, ok := gauge(checkState(t, url, path), "redlock_tls_cert_not_after_seconds", nil); !ok || int64(v) != parsed.NotAfter.Unix() {
		t.Errorf("redlock_tls_cert_not_after_seconds = %v (present %v), want the certificate's NotAfter %d", v, ok, parsed.NotAfter.Unix())
	}
}

// TestRenderStateFile: master.conf names the state file when the exporters are on, and
// nothing when they are off (the policy then writes no file and runs no timer).
func TestRenderStateFile(t *testing.T) {
	for _, on := range []bool{true, false} {
		h := exporterHost()
		h.Exporters = on
		b, err := Render(h)
		if err != nil {
			t.Fatal(err)
		}
		want := "STATE_FILE=''\n"
		if on {
			want = "STATE_FILE='" + StateMetricsPath + "'\n"
		}
		if conf := file(t, b, MasterConfPath).Content; !strings.Contains(conf, want) {
			t.Errorf("exporters %v: master.conf lacks %s:\n%s", on, want, conf)
		}
	}
}
