package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// stage is a package's place on the data flow files → profiles → cue →
// compiler → manifest → runtime → surface; 0 is outside it (internal/*,
// cmd/facets), -1 a package the rules below do not know.
func stage(rel string) int {
	switch {
	case rel == "profiles":
		return 1
	case rel == "cue" || strings.HasPrefix(rel, "cue/"):
		return 2
	case rel == "compiler" || rel == "compiler/manifest":
		return 3 // the manifest is the compiler's output format
	case rel == "runtime/tmux":
		return 5 // a surface that lives with the runtime: nothing of the runtime imports it
	case strings.HasPrefix(rel, "runtime/"):
		return 4
	case rel == "herdr" || strings.HasPrefix(rel, "herdr/"):
		return 5
	case rel == "cmd/facets" || strings.HasPrefix(rel, "internal/"):
		return 0
	}
	return -1
}

// TestImportsFlowOneWay: no package of the flow imports one that stands
// after it; the runtime and the surfaces take from the compiler side only
// the manifest (no CUE evaluator, no discovery); internal packages other
// than the front ends and test helpers import no stage at all. A back edge
// fails here.
func TestImportsFlowOneWay(t *testing.T) {
	const mod = "github.com/facets-dev/facets/"
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	// Front ends (the LSP, the Pi startup call, the runtime commands' setup) and test helpers may import
	// what they present or fake.
	frontEnds := map[string]bool{"internal/lsp": true, "internal/startup": true, "internal/runtimeenv": true, "internal/exampletest": true, "internal/herdrtest": true, "internal/surfacetest": true}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	packages := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		from := strings.TrimPrefix(p.ImportPath, mod)
		packages++
		if stage(from) < 0 {
			t.Errorf("%s has no place on the data flow (add it to stage)", from)
			continue
		}
		for _, imp := range p.Imports {
			to, ok := strings.CutPrefix(imp, mod)
			if !ok {
				continue
			}
			sf, st := stage(from), stage(to)
			switch {
			case st < 0:
				t.Errorf("%s imports %s, which has no place on the data flow", from, to)
			case sf > 0 && st > sf:
				t.Errorf("%s imports %s, which stands after it in the flow", from, to)
			case (sf >= 4 || from == "compiler/manifest") && st >= 1 && st <= 3 && to != "compiler/manifest":
				t.Errorf("%s imports %s: the manifest, the runtime and the surfaces take nothing from the compiler side but the manifest (no CUE evaluator, no discovery)", from, to)
			case sf == 0 && st > 0 && from != "cmd/facets" && !frontEnds[from]:
				t.Errorf("%s imports %s: an internal package stands below every stage", from, to)
			}
		}
	}
	if packages < 20 {
		t.Fatalf("go list found %d packages; is the pattern right?", packages)
	}
}
