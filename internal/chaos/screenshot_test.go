package chaos

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// screenshot renders page (a file) with headless Chromium into a PNG and returns its path.
// It skips when chromium is not installed, unless REDLOCK_REQUIRE_CHROMIUM=1.
func screenshot(t *testing.T, page string) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("REDLOCK_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("REDLOCK_REQUIRE_CHROMIUM=1 but chromium is not on PATH: install Debian's chromium package")
		}
		t.Skip("chromium is not installed (Debian package chromium); set REDLOCK_REQUIRE_CHROMIUM=1 to fail instead")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "shot.png")
	// A generous bound: the machine may be loaded; it only stops a hung browser.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+out, "--window-size=1200,800", "file://"+page)
	cmd.Env = append(os.Environ(), "HOME="+dir) // keep chromium's caches in the temp dir
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, msg)
	}
	return out
}

// decodeSolid decodes a PNG and reports whether every pixel has one colour.
func decodeSolid(t *testing.T, path string) (image.Image, bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	b := img.Bounds()
	first := img.At(b.Min.X, b.Min.Y)
	r0, g0, b0, a0 := first.RGBA()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, bl, a := img.At(x, y).RGBA(); r != r0 || g != g0 || bl != b0 || a != a0 {
				return img, false
			}
		}
	}
	return img, true
}

// TestReportScreenshot renders report.html in headless Chromium and checks that a picture
// came out: a PNG of the window's size that is not one colour. The negative control is a
// blank page, which must come out as one colour (so the check can fail).
// REDLOCK_SCREENSHOT_OUT=FILE keeps the report's screenshot (docs/images/chaos-report.png).
func TestReportScreenshot(t *testing.T) {
	dir := t.TempDir()
	in := history()
	if err := Analyze(in).WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	blank := filepath.Join(dir, "blank.html")
	if err := os.WriteFile(blank, []byte("<!DOCTYPE html><html><body></body></html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, solid := decodeSolid(t, screenshot(t, blank)); !solid {
		t.Fatal("negative control: a blank page's screenshot has more than one colour, so the check below proves nothing")
	}
	shot := screenshot(t, filepath.Join(dir, "report.html"))
	img, solid := decodeSolid(t, shot)
	if solid {
		t.Fatal("the report's screenshot is a single colour: the page did not render")
	}
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 800 {
		t.Fatalf("screenshot is %dx%d, want the 1200x800 window", b.Dx(), b.Dy())
	}
	if keep := os.Getenv("REDLOCK_SCREENSHOT_OUT"); keep != "" {
		data, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keep, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
