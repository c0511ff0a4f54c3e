package releaseconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

const root = "../.."

// config is the part of .goreleaser.yml the registry and our version rule depend on.
type config struct {
	ProjectName string `yaml:"project_name"`
	Builds      []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Ldflags []string `yaml:"ldflags"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
	} `yaml:"builds"`
	Archives []struct {
		IDs          []string `yaml:"ids"`
		Formats      []string `yaml:"formats"`
		NameTemplate string   `yaml:"name_template"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		ExtraFiles   []struct {
			Glob string `yaml:"glob"`
		} `yaml:"extra_files"`
	} `yaml:"checksum"`
	Signs []struct {
		Artifacts string `yaml:"artifacts"`
	} `yaml:"signs"`
	Release struct {
		GitHub struct {
			Owner string `yaml:"owner"`
			Name  string `yaml:"name"`
		} `yaml:"github"`
	} `yaml:"release"`
}

// providerTypeName reads the provider's type name (resp.TypeName) from its source.
func providerTypeName(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, "provider", "provider.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`resp\.TypeName = "([a-z0-9]+)"`).FindSubmatch(src)
	if m == nil {
		t.Fatal(`provider/provider.go sets no resp.TypeName = "<name>"`)
	}
	return string(m[1])
}

// checkConfig returns every way cfg breaks what the registry expects for provider name.
func checkConfig(cfg config, name string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	want := "terraform-provider-" + name
	if cfg.ProjectName != want {
		bad("project_name is %q; the registry needs %q (terraform-provider-<type name>)", cfg.ProjectName, want)
	}
	if cfg.Release.GitHub.Name != want {
		bad("release.github.name is %q; the registry reads releases from a repository named %q", cfg.Release.GitHub.Name, want)
	}
	var provider bool
	for _, b := range cfg.Builds {
		if _, err := os.Stat(filepath.Join(root, b.Main, "main.go")); err != nil {
			bad("build %s: main %s has no main.go", b.ID, b.Main)
		}
		if !slices.ContainsFunc(b.Ldflags, func(f string) bool { return strings.Contains(f, "-X main.version={{ .Version }}") }) {
			bad("build %s: ldflags do not stamp -X main.version={{ .Version }}", b.ID)
		}
		for _, p := range []string{"linux", "darwin"} {
			if !slices.Contains(b.Goos, p) {
				bad("build %s: goos lacks %s", b.ID, p)
			}
		}
		for _, a := range []string{"amd64", "arm64"} {
			if !slices.Contains(b.Goarch, a) {
				bad("build %s: goarch lacks %s", b.ID, a)
			}
		}
		if b.Main == "./provider/cmd/terraform-provider-redlock" {
			provider = true
			if b.Binary != "{{ .ProjectName }}_v{{ .Version }}" {
				bad("provider binary is %q; the registry needs {{ .ProjectName }}_v{{ .Version }}", b.Binary)
			}
			var zipped bool
			for _, a := range cfg.Archives {
				if slices.Contains(a.IDs, b.ID) {
					zipped = slices.Equal(a.Formats, []string{"zip"}) &&
						a.NameTemplate == "{{ .ProjectName }}_{{ .Version }}_{{ .Os }}_{{ .Arch }}"
				}
			}
			if !zipped {
				bad("the provider's archive must be a zip named {{ .ProjectName }}_{{ .Version }}_{{ .Os }}_{{ .Arch }}")
			}
		}
	}
	if !provider {
		bad("no build of ./provider/cmd/terraform-provider-redlock")
	}
	if cfg.Checksum.NameTemplate != "{{ .ProjectName }}_{{ .Version }}_SHA256SUMS" {
		bad("checksum name is %q; the registry needs {{ .ProjectName }}_{{ .Version }}_SHA256SUMS", cfg.Checksum.NameTemplate)
	}
	if !slices.ContainsFunc(cfg.Checksum.ExtraFiles, func(f struct {
		Glob string `yaml:"glob"`
	}) bool {
		return f.Glob == "terraform-registry-manifest.json"
	}) {
		bad("the SHA256SUMS do not cover terraform-registry-manifest.json")
	}
	if !slices.ContainsFunc(cfg.Signs, func(s struct {
		Artifacts string `yaml:"artifacts"`
	}) bool {
		return s.Artifacts == "checksum"
	}) {
		bad("nothing signs the checksum file (the registry verifies SHA256SUMS.sig)")
	}
	return errs
}

func readConfig(t *testing.T) config {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".goreleaser.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg config
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatalf(".goreleaser.yml: %v", err)
	}
	return cfg
}

func TestGoreleaserConfigMeetsTheRegistry(t *testing.T) {
	cfg := readConfig(t)
	if errs := checkConfig(cfg, providerTypeName(t)); len(errs) > 0 {
		t.Fatalf(".goreleaser.yml: %v", errors.Join(errs...))
	}
	// Negative control: a config for another repository name and an unsigned checksum fails.
	broken := cfg
	broken.Release.GitHub.Name = "redlock-kit"
	broken.Signs = nil
	if errs := checkConfig(broken, providerTypeName(t)); len(errs) != 2 {
		t.Fatalf("a broken config gave %d errors, want 2: %v", len(errs), errs)
	}
}

// checkVersion returns every way the CHANGELOG and the go.mod files disagree with
// version (X.Y.Z, from VERSION).
func checkVersion(version, changelog string, goMods map[string][]byte) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	v := "v" + version
	if !semver.IsValid(v) || semver.Canonical(v) != v {
		return []error{fmt.Errorf("VERSION is %q; write a release version X.Y.Z (e.g. 0.2.0)", version)}
	}
	heading := regexp.MustCompile(`(?m)^## (Unreleased|[0-9]+\.[0-9]+\.[0-9]+)\b`)
	var unreleased, current bool
	for _, m := range heading.FindAllStringSubmatch(changelog, -1) {
		switch h := m[1]; {
		case h == "Unreleased":
			unreleased = true
		case h == version:
			current = true
		case semver.Compare("v"+h, v) > 0:
			bad("CHANGELOG.md has a heading for %s, newer than VERSION %s: raise VERSION", h, version)
		}
	}
	if !unreleased && !current {
		bad("CHANGELOG.md has neither an Unreleased heading nor one for VERSION %s", version)
	}
	const ours = "github.com/redlock-kit/redlock-kit"
	for path, data := range goMods {
		mf, err := modfile.Parse(path, data, nil)
		if err != nil {
			bad("%s: %v", path, err)
			continue
		}
		for _, r := range mf.Require {
			if (r.Mod.Path == ours || strings.HasPrefix(r.Mod.Path, ours+"/")) && r.Mod.Version != v {
				bad("%s requires %s %s, not VERSION %s: run scripts/modules.sh tidy", path, r.Mod.Path, r.Mod.Version, v)
			}
		}
		// provider/ and test/ build against the root module of the same commit (=> ../); the
		// root module, the one users require, has no replace (a user's build ignores it).
		for _, r := range mf.Replace {
			if mf.Module == nil || mf.Module.Mod.Path == ours || r.Old.Path != ours || r.Old.Version != "" || strings.TrimSuffix(r.New.Path, "/") != ".." {
				bad("%s: replace %s => %s: only provider/ and test/ replace, and only %s => ../ (the root module has none: users' builds ignore replaces)", path, r.Old.Path, r.New.Path, ours)
			}
		}
	}
	return errs
}

func TestOneVersion(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatalf("VERSION: %v", err)
	}
	version := strings.TrimSpace(string(raw))
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	goMods := map[string][]byte{}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "build" || d.Name() == "bin" || d.Name() == ".terraform") {
			return filepath.SkipDir
		}
		if d.Name() == "go.mod" {
			data, err := os.ReadFile(path)
			goMods[path] = data
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(goMods) != 3 {
		t.Fatalf("found %d go.mod files, not 3 (the root module, provider/, test/): the walk is broken, or a module was added (RELEASING.md)", len(goMods))
	}
	if errs := checkVersion(version, string(changelog), goMods); len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	// Negative controls: a newer CHANGELOG heading, a stale requirement, a replace of
	// another module and a replace in the root module fail.
	stale := map[string][]byte{
		"x/go.mod": []byte("module github.com/redlock-kit/redlock-kit/x\n\ngo 1.26.0\n\n" +
			"require github.com/redlock-kit/redlock-kit v0.0.0-00010101000000-000000000000\n\n" +
			"replace github.com/redlock-kit/redlock-kit/lockagent/redlock => ../lockagent/redlock\n"),
		"go.mod": []byte("module github.com/redlock-kit/redlock-kit\n\ngo 1.26.0\n\n" +
			"replace github.com/redlock-kit/redlock-kit => ../\n"),
	}
	if errs := checkVersion(version, "## Unreleased\n## 99.0.0\n", stale); len(errs) != 4 {
		t.Fatalf("the negative controls gave %d errors, want 4: %v", len(errs), errs)
	}
	if errs := checkVersion("1.2", "## Unreleased\n", nil); len(errs) != 1 {
		t.Fatalf("VERSION 1.2 was accepted")
	}
}
