package envvar_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// root is the module root, two levels above this package.
const root = "../.."

// contract parses envvar.go and returns its constants' names and values in
// source order, failing the test for a constant without a doc comment.
func contract(t *testing.T) (names, values []string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "envvar.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if vs.Doc == nil && (gd.Lparen.IsValid() || gd.Doc == nil) {
				t.Errorf("constant %s has no doc comment saying who sets and who reads it", vs.Names[0].Name)
			}
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("constant %s is not a string literal", n.Name)
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				names, values = append(names, n.Name), append(values, v)
			}
		}
	}
	if len(values) == 0 {
		t.Fatal("no constants found in envvar.go")
	}
	return names, values
}

// variables are the contract's variable names, without the prefix constant.
func variables(t *testing.T) []string {
	names, values := contract(t)
	var vars []string
	for i, n := range names {
		if n != "PiPrefix" {
			vars = append(vars, values[i])
		}
	}
	return vars
}

// TestNoLiteralsOutsideContract fails when a string literal in a non-test
// .go file outside this package spells a facets variable, so every name
// goes through a constant of the contract.
func TestNoLiteralsOutsideContract(t *testing.T) {
	t.Parallel()
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			abs, err := filepath.Abs(path)
			if err != nil {
				return err
			}
			if name := d.Name(); abs == self || name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.Contains(lit.Value, "FACETS_") {
				t.Errorf("%s: %s spells a facets environment variable; use a constant of internal/envvar", fset.Position(lit.Pos()), lit.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 10 {
		t.Fatalf("checked only %d files; is the module root %s?", checked, root)
	}
}

// TestDocsTable checks that the table of docs/environment.md lists exactly
// the contract's variables, in the same order.
func TestDocsTable(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(root, "docs", "environment.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\|")
	var got []string
	for _, m := range row.FindAllStringSubmatch(string(data), -1) {
		got = append(got, m[1])
	}
	if d := cmp.Diff(variables(t), got); d != "" {
		t.Errorf("docs/environment.md's table differs from internal/envvar (-contract +docs):\n%s", d)
	}
}

// TestExtensionNamesInContract checks that every variable the TypeScript
// extension reads is a constant of the contract, as the package doc says.
func TestExtensionNamesInContract(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(root, "runtime", "pibridge", "extension", "index.ts"))
	if err != nil {
		t.Fatal(err)
	}
	vars := variables(t)
	uses := regexp.MustCompile(`process\.env\.([A-Za-z_][A-Za-z0-9_]*)`).FindAllSubmatch(data, -1)
	if len(uses) == 0 {
		t.Fatal("the extension reads no variable; update this test and the package doc")
	}
	for _, m := range uses {
		if name := string(m[1]); !slices.Contains(vars, name) {
			t.Errorf("index.ts reads %s, which internal/envvar does not define", name)
		}
	}
}
