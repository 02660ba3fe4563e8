package cue

import (
	"fmt"
	"slices"
	"strings"

	cuelang "cuelang.org/go/cue"
)

// Field documents one field of a definition for editors (facets lsp's
// completion and hover): its comment in the schema, the kind of value it
// takes and, for an enum, the allowed values.
type Field struct {
	Name     string
	Doc      string   // the field's comment in the schema, without "//"
	Required bool     // a field! in the schema
	Kind     string   // "string", "bool", "list", "number" or "" when mixed
	Enum     []string // the allowed values of an enum field, as JSON or YAML writes them
	Hint     string   // the @facets hint shown with its diagnostics
}

// Fields returns the fields of d in schema order.
func (s *Schema) Fields(d Definition) ([]Field, error) {
	if err := s.init(); err != nil {
		return nil, err
	}
	def := s.def(d)
	if !def.Exists() {
		return nil, fmt.Errorf("schema has no definition %s", d)
	}
	it, err := def.Fields(cuelang.Optional(true))
	if err != nil {
		return nil, fmt.Errorf("fields of %s: %w", d, err)
	}
	var out []Field
	for it.Next() {
		v := it.Value()
		f := Field{Name: it.Selector().Unquoted(), Required: it.Selector().ConstraintType() == cuelang.RequiredConstraint,
			Hint: attrText(v)[1]}
		var doc []string
		for _, cg := range v.Doc() {
			doc = append(doc, strings.TrimSpace(cg.Text()))
		}
		f.Doc = strings.Join(doc, "\n")
		switch k := kindOf(v, 0); k {
		case cuelang.StringKind:
			f.Kind = "string"
		case cuelang.BoolKind:
			f.Kind = "bool"
		case cuelang.ListKind:
			f.Kind = "list"
		case cuelang.IntKind, cuelang.FloatKind, cuelang.NumberKind:
			f.Kind = "number"
		}
		f.Enum = enumValues(v)
		out = append(out, f)
	}
	return out, nil
}

// enumValues returns the concrete alternatives of a disjunction of
// literals ("a" | "b"), or the one value of a field fixed to a literal.
func enumValues(v cuelang.Value) []string {
	if v.IsConcrete() && v.Kind() != cuelang.StructKind && v.Kind() != cuelang.ListKind {
		return []string{literalText(v)}
	}
	op, args := v.Expr()
	if op != cuelang.OrOp {
		return nil
	}
	var out []string
	var numbers []float64
	for _, a := range args {
		if !a.IsConcrete() {
			return nil // a disjunction of constraints is no enum
		}
		if f, err := a.Float64(); err == nil {
			// Another spelling of a number already listed (version: 1 |
			// 1.0) is one value to offer.
			if slices.Contains(numbers, f) {
				continue
			}
			numbers = append(numbers, f)
		}
		out = append(out, literalText(a))
	}
	return out
}

func literalText(v cuelang.Value) string {
	if s, err := v.String(); err == nil {
		return s
	}
	b, err := v.MarshalJSON()
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// kindOf is the kind of values v admits. A conjunction that CUE cannot
// evaluate on its own (an open list with list.MinItems) is bottom; its
// conjuncts still say what kind it takes.
func kindOf(v cuelang.Value, depth int) cuelang.Kind {
	if k := v.IncompleteKind() &^ cuelang.BottomKind; k != 0 || depth > 4 {
		return k
	}
	_, args := v.Expr()
	for _, a := range args {
		if k := kindOf(a, depth+1); k != 0 {
			return k
		}
	}
	return 0
}
