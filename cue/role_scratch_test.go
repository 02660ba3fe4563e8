package cue

import (
	"fmt"
	"testing"
)

func TestScratchRole(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, y := range []string{
		"name: a\ndescription: x\ntools: read, bash\nspawning: yes\nfoo: 1\n",
		"tools: [a, b]\nthinking: huge\nauto-exit: True\n",
		"tools: |\n  read, bash\n",
		"",
		"- a\n- b\n",
		"name: 12\nname: b\n",
		"description: Reviews: code\n",
		"a: b: c\n",
		"x: \xff\n",
		"tools: read # c\nskills: \"a, b\"\n",
	} {
		r := s.ValidateFrontmatter(Role, "f.md", []byte(y), 2)
		fmt.Printf("%q ok=%v\n", y, r.OK())
		for _, f := range r.Findings {
			fmt.Printf("   %+v\n", f)
		}
		var m map[string]any
		fmt.Println("   decode:", r.Decode(&m), m)
	}
}
