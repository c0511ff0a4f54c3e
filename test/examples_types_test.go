package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// An example hands its variables to a module. Terraform converts an object to the declared
// type without a word, dropping every attribute the type lacks: examples/local-five's
// lock_users had no allow_eval, so `allow_eval = true` was planned as false. So an example's
// object-typed variable must have exactly the type of the module variable of the same name,
// optional() attributes and defaults included. Read from the .tf files with terraform-docs
// (pinned, in ./bin: make test-deps); nothing is planned.
func TestExamplesKeepModuleObjectTypes(t *testing.T) {
	t.Parallel()
	examples, err := filepath.Glob(filepath.Join(repoRoot, "examples", "*", "main.tf"))
	if err != nil {
		t.Fatal(err)
	}
	source := regexp.MustCompile(`source\s*=\s*"\.\./\.\./(modules/[^"]+)"`)
	checked := 0
	for _, mainTF := range examples {
		b, err := os.ReadFile(mainTF)
		if err != nil {
			t.Fatal(err)
		}
		m := source.FindSubmatch(b)
		if m == nil {
			continue // not an example over one of the modules
		}
		example := filepath.Dir(mainTF)
		name, module := filepath.Base(example), string(m[1])
		exampleTypes, moduleTypes := variableTypes(t, example), variableTypes(t, filepath.Join(repoRoot, module))
		for _, problem := range objectTypeMismatches(exampleTypes, moduleTypes) {
			t.Errorf("examples/%s vs %s: %s", name, module, problem)
		}
		checked++
		t.Logf("examples/%s: every object-typed variable has the type of %s's", name, module)
	}
	if checked < 2 {
		t.Fatalf("checked %d examples over a module, want at least local-five and hosts-five", checked)
	}

	// Negative control: the lock_users type examples/local-five had is caught.
	before := map[string]string{"lock_users": "map(object({\n    key_prefix = string\n  }))"}
	module := map[string]string{"lock_users": "map(object({\n    key_prefix = string\n    allow_eval = optional(bool, false)\n  }))"}
	if problems := objectTypeMismatches(before, module); len(problems) != 1 {
		t.Errorf("the type without allow_eval: %d problems %q, want 1", len(problems), problems)
	}
}

// objectTypeMismatches lists the variables of example whose module counterpart (same name)
// has an object type that differs from the example's, whitespace aside.
func objectTypeMismatches(example, module map[string]string) []string {
	var problems []string
	for name, want := range module {
		got, ok := example[name]
		if !ok || !strings.Contains(want, "object(") {
			continue
		}
		if squeeze(got) != squeeze(want) {
			problems = append(problems, "variable "+name+" is "+squeeze(got)+", the module's is "+squeeze(want)+
				": use the module's type (an attribute the example's type lacks is dropped without a word)")
		}
	}
	sort.Strings(problems)
	return problems
}

func squeeze(s string) string { return strings.Join(strings.Fields(s), "") }

// variableTypes reads a configuration's variables and their types (as written).
func variableTypes(t *testing.T, dir string) map[string]string {
	t.Helper()
	tfd := filepath.Join(repoRoot, "bin", "terraform-docs")
	if _, err := os.Stat(tfd); err != nil {
		t.Fatalf("%s is missing: run make test-deps (it installs terraform-docs into ./bin)", tfd)
	}
	// A config of its own: the repository's injects tables into README.md.
	cfg := filepath.Join(t.TempDir(), "terraform-docs.yml")
	if err := os.WriteFile(cfg, []byte("formatter: json\noutput:\n  file: \"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tfd, "--config", cfg, dir)
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("terraform-docs %s: %v", dir, err)
	}
	var doc struct {
		Inputs []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"inputs"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("terraform-docs %s: %v\n%s", dir, err, out)
	}
	types := make(map[string]string, len(doc.Inputs))
	for _, in := range doc.Inputs {
		types[in.Name] = in.Type
	}
	return types
}
