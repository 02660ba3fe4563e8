package compiler

import "testing"

func TestShellJoin(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tools", "read,grep", "-e", "/a/b.ts"}, "--tools read,grep -e /a/b.ts"},
		{[]string{"--name", "[sub] x"}, "--name '[sub] x'"},
		{[]string{"mcp__*", ""}, "'mcp__*' ''"},
		{[]string{"it's"}, `'it'\''s'`},
	} {
		if got := shellJoin(tc.args); got != tc.want {
			t.Errorf("shellJoin(%q) = %s, want %s", tc.args, got, tc.want)
		}
	}
}
