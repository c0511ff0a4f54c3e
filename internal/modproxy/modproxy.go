// Package modproxy writes a file-based Go module proxy (GOPROXY=file://DIR) that serves this
// repository's modules (the root module, provider/ and test/) at one release version, zipped
// from the checkout the way a tag publishes them (golang.org/x/mod/zip: a nested module's
// files left out of the module around it, the same file checks).
//
// It is how the release check proves what a user of a release gets, before the tags exist
// and without the network: a consumer module resolves our modules from this directory with
// no replace directive. Only real semantic versions are served (no pseudo-version such as
// v0.0.0-00010101000000-000000000000, which no proxy serves).
package modproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

// ErrVersion is returned for a version a proxy would not serve as a release.
var ErrVersion = errors.New("not a release version")

// Module is one module the proxy serves.
type Module struct {
	Path string // module path, e.g. github.com/redlock-kit/redlock-kit/provider
	Dir  string // its directory in the checkout, slash-separated, relative to the repository root ("." for the root module)
}

// Build writes the proxy into out for every module of the repository at repoRoot (each
// directory with a go.mod, tracked or new, not ignored by git) at version
// (e.g. "v0.2.0"), and returns the modules it serves. Each zip holds the module's files as
// the working tree has them, so a check run before a commit sees what that commit would tag.
func Build(repoRoot, version, out string) ([]Module, error) {
	if !semver.IsValid(version) || semver.Canonical(version) != version || semver.Build(version) != "" ||
		module.IsPseudoVersion(version) {
		return nil, fmt.Errorf("modproxy: version %q: %w (want vMAJOR.MINOR.PATCH, e.g. v0.2.0, from VERSION)", version, ErrVersion)
	}
	files, err := gitFiles(repoRoot)
	if err != nil {
		return nil, err
	}
	var mods []Module
	for _, f := range files {
		if path.Base(f) != "go.mod" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(f)))
		if err != nil {
			return nil, fmt.Errorf("modproxy: %w", err)
		}
		mf, err := modfile.ParseLax(f, data, nil)
		if err != nil || mf.Module == nil {
			return nil, fmt.Errorf("modproxy: %s has no module line (%v)", f, err)
		}
		mods = append(mods, Module{Path: mf.Module.Mod.Path, Dir: path.Dir(f)})
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Path < mods[j].Path })
	for _, m := range mods {
		if err := writeModule(repoRoot, files, m, version, out); err != nil {
			return nil, err
		}
	}
	return mods, nil
}

func writeModule(repoRoot string, files []string, m Module, version, out string) error {
	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		return fmt.Errorf("modproxy: module path %q: %w", m.Path, err)
	}
	dir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("modproxy: %w", err)
	}
	mv := module.Version{Path: m.Path, Version: version}
	var zfiles []zip.File
	for _, f := range files {
		rel, ok := f, m.Dir == "."
		if !ok {
			rel, ok = strings.CutPrefix(f, m.Dir+"/")
		}
		if ok {
			zfiles = append(zfiles, checkoutFile{rel: rel, abs: filepath.Join(repoRoot, filepath.FromSlash(f))})
		}
	}
	var buf bytes.Buffer
	if err := zip.Create(&buf, mv, zfiles); err != nil {
		return fmt.Errorf("modproxy: zip of %s: %w", mv, err)
	}
	goMod, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(m.Dir), "go.mod"))
	if err != nil {
		return fmt.Errorf("modproxy: %w", err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": info,
		version + ".mod":  goMod,
		version + ".zip":  buf.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("modproxy: %w", err)
		}
	}
	return nil
}

// gitFiles lists the checkout's files (tracked and new, not ignored), slash-separated.
func gitFiles(repoRoot string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("modproxy: git ls-files in %s (the proxy is built from a git checkout): %v: %s", repoRoot, err, stderr.String())
	}
	var files []string
	for _, f := range strings.Split(string(outb), "\x00") {
		if f == "" {
			continue
		}
		// A tracked file deleted in the working tree is not part of what would be committed.
		if _, err := os.Lstat(filepath.Join(repoRoot, filepath.FromSlash(f))); err != nil {
			continue
		}
		files = append(files, f)
	}
	return files, nil
}

// checkoutFile is a file of the working tree, as golang.org/x/mod/zip reads it.
type checkoutFile struct{ rel, abs string }

func (f checkoutFile) Path() string                 { return f.rel }
func (f checkoutFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.abs) }
func (f checkoutFile) Open() (io.ReadCloser, error) { return os.Open(f.abs) }
