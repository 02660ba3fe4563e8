// Package cue embeds the facets CUE schemas and validates profile
// config.json documents, role-definition frontmatter and compiled manifests
// against them, reporting every problem with its file, line and column.
package cue

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"strings"

	cuelang "cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/encoding/jsonschema"
)

//go:embed schema/*.cue
var schemaFiles embed.FS

// schemaDir is the virtual directory the embedded schema is loaded from; it
// is what CUE prints as the schema's file name in positions.
const schemaDir = "/facets-schema"

// Definition names one schema definition.
type Definition string

// The schema definitions facets validates against.
const (
	Profile  Definition = "#Profile"
	Role     Definition = "#Role"
	Manifest Definition = "#Manifest"
)

// Schema is the facets schema. It is not safe for concurrent use,
// because a CUE context is not.
type Schema struct {
	ctx   *cuelang.Context
	root  cuelang.Value
	metas map[Definition]*defMeta

	// The generated fast validators' state (see fastvalidate.go).
	rx          fastRegexps
	scratchKeys []string
	scratchVals []fastValue
	slowOnly    bool // tests: validate everything with CUE, the reference
}

// Load returns the embedded schema. CUE compiles it on first use only: the
// validators generated from it decide valid documents without CUE, so a
// clean run never pays for compiling it.
func Load() (*Schema, error) {
	return &Schema{}, nil
}

// init compiles the embedded schema into a fresh CUE context, once.
func (s *Schema) init() error {
	if s.ctx != nil {
		return nil
	}
	overlay := map[string]load.Source{}
	entries, err := fs.ReadDir(schemaFiles, "schema")
	if err != nil {
		return fmt.Errorf("read embedded schema: %w", err)
	}
	for _, e := range entries {
		b, err := schemaFiles.ReadFile("schema/" + e.Name())
		if err != nil {
			return fmt.Errorf("read embedded schema %s: %w", e.Name(), err)
		}
		overlay[path.Join(schemaDir, e.Name())] = load.FromBytes(b)
	}
	insts := load.Instances([]string{"."}, &load.Config{Dir: schemaDir, Overlay: overlay, Package: "facets"})
	if len(insts) != 1 || insts[0].Err != nil {
		return fmt.Errorf("load embedded schema: %v", insts[0].Err)
	}
	ctx := cuecontext.New()
	root := ctx.BuildInstance(insts[0])
	if err := root.Err(); err != nil {
		return fmt.Errorf("build embedded schema: %w", err)
	}
	s.ctx, s.root = ctx, root
	return nil
}

// Digest returns the sha256, in hex, of the embedded schema files (their
// names and contents): it changes whenever what the schema accepts may.
func Digest() string {
	h := sha256.New()
	entries, _ := fs.ReadDir(schemaFiles, "schema")
	for _, e := range entries {
		b, _ := schemaFiles.ReadFile("schema/" + e.Name())
		fmt.Fprintf(h, "%s\x00%d\x00", e.Name(), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Source returns the embedded CUE schema as one self-contained CUE file:
// a single package clause, the union of the imports, then every
// declaration in file-name order, so it can be saved and used with cue vet.
func Source() ([]byte, error) {
	entries, err := fs.ReadDir(schemaFiles, "schema")
	if err != nil {
		return nil, fmt.Errorf("read embedded schema: %w", err)
	}
	merged := &ast.File{}
	merged.Decls = append(merged.Decls, &ast.Package{Name: ast.NewIdent("facets")})
	imports := &ast.ImportDecl{}
	var body []ast.Decl
	seen := map[string]bool{}
	for _, e := range entries {
		b, err := schemaFiles.ReadFile("schema/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("read embedded schema %s: %w", e.Name(), err)
		}
		f, err := parser.ParseFile(e.Name(), b, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("parse embedded schema %s: %w", e.Name(), err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.Package:
			case *ast.ImportDecl:
				for _, spec := range d.Specs {
					if !seen[spec.Path.Value] {
						seen[spec.Path.Value] = true
						imports.Specs = append(imports.Specs, ast.NewImport(nil, strings.Trim(spec.Path.Value, `"`)))
					}
				}
			default:
				body = append(body, d)
			}
		}
	}
	if len(imports.Specs) > 0 {
		merged.Decls = append(merged.Decls, imports)
	}
	merged.Decls = append(merged.Decls, body...)
	out, err := format.Node(merged)
	if err != nil {
		return nil, fmt.Errorf("format merged schema: %w", err)
	}
	return out, nil
}

func (s *Schema) def(d Definition) cuelang.Value {
	return s.root.LookupPath(cuelang.ParsePath(string(d)))
}

// JSONSchema generates a JSON Schema (draft 2020-12) document for one
// definition, derived from the CUE schema rather than written by hand.
func (s *Schema) JSONSchema(d Definition) ([]byte, error) {
	if err := s.init(); err != nil {
		return nil, err
	}
	v := s.def(d)
	if !v.Exists() {
		return nil, fmt.Errorf("schema has no definition %s", d)
	}
	expr, err := jsonschema.Generate(v, &jsonschema.GenerateConfig{})
	if err != nil {
		return nil, fmt.Errorf("generate JSON Schema for %s: %w", d, err)
	}
	out := s.ctx.BuildExpr(expr)
	if err := out.Err(); err != nil {
		return nil, fmt.Errorf("build JSON Schema for %s: %w", d, err)
	}
	b, err := out.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode JSON Schema for %s: %w", d, err)
	}
	// The white-space class of #NonBlank holds U+FEFF, which JSON readers
	// (CUE's among them) refuse raw as a byte-order mark: it is written as
	// the JSON escape, the same string.
	return bytes.ReplaceAll(b, []byte("\uFEFF"), []byte(`\ufeff`)), nil
}
