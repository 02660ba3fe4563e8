// Package cue embeds the facets CUE schemas and validates profile
// config.json documents, role-definition frontmatter and compiled manifests
// against them, reporting every problem with its file, line and column.
package cue

import (
	"embed"
	"fmt"
	"io/fs"
	"path"

	cuelang "cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/load"
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

// Schema is the compiled facets schema. It is not safe for concurrent use,
// because a CUE context is not.
type Schema struct {
	ctx  *cuelang.Context
	root cuelang.Value
}

// Load compiles the embedded schema into a fresh CUE context.
func Load() (*Schema, error) {
	overlay := map[string]load.Source{}
	entries, err := fs.ReadDir(schemaFiles, "schema")
	if err != nil {
		return nil, fmt.Errorf("read embedded schema: %w", err)
	}
	for _, e := range entries {
		b, err := schemaFiles.ReadFile("schema/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("read embedded schema %s: %w", e.Name(), err)
		}
		overlay[path.Join(schemaDir, e.Name())] = load.FromBytes(b)
	}
	insts := load.Instances([]string{"."}, &load.Config{Dir: schemaDir, Overlay: overlay, Package: "facets"})
	if len(insts) != 1 || insts[0].Err != nil {
		return nil, fmt.Errorf("load embedded schema: %v", insts[0].Err)
	}
	ctx := cuecontext.New()
	root := ctx.BuildInstance(insts[0])
	if err := root.Err(); err != nil {
		return nil, fmt.Errorf("build embedded schema: %w", err)
	}
	return &Schema{ctx: ctx, root: root}, nil
}

// Source returns the embedded CUE source of every schema file, concatenated
// in file-name order.
func Source() ([]byte, error) {
	entries, err := fs.ReadDir(schemaFiles, "schema")
	if err != nil {
		return nil, fmt.Errorf("read embedded schema: %w", err)
	}
	var out []byte
	for i, e := range entries {
		b, err := schemaFiles.ReadFile("schema/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("read embedded schema %s: %w", e.Name(), err)
		}
		if i > 0 {
			out = append(out, '\n')
		}
		out = append(out, fmt.Sprintf("// %s\n", e.Name())...)
		out = append(out, b...)
	}
	return out, nil
}

func (s *Schema) def(d Definition) cuelang.Value {
	return s.root.LookupPath(cuelang.ParsePath(string(d)))
}

// JSONSchema generates a JSON Schema (draft 2020-12) document for one
// definition, derived from the CUE schema rather than written by hand.
func (s *Schema) JSONSchema(d Definition) ([]byte, error) {
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
	return b, nil
}
