package herdr

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPluginManifestCallsFacets keeps the plugin's commands in step with the
// actions `facets herdr-visibility` accepts. TOML string arrays without
// escapes are also JSON, which is all this reads.
func TestPluginManifestCallsFacets(t *testing.T) {
	f, err := os.Open(filepath.Join("plugin", "herdr-plugin.toml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	top := map[string]string{}
	table := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "[["):
			table = line
		case strings.HasPrefix(line, "command = "):
			var argv []string
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "command = ")), &argv); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if len(argv) != 3 || argv[0] != "facets" || argv[1] != "herdr-visibility" {
				t.Errorf("%s command = %v", table, argv)
				continue
			}
			got = append(got, table+" "+argv[2])
		case table == "" && strings.Contains(line, " = "):
			k, v, _ := strings.Cut(line, " = ")
			top[k] = strings.Trim(v, `"`)
		}
	}
	want := []string{"[[startup]] startup", "[[actions]] toggle", "[[actions]] hide", "[[actions]] show"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plugin commands (-want +got):\n%s", diff)
	}
	if top["id"] != DefaultPluginID {
		t.Errorf("plugin id = %q, want %q", top["id"], DefaultPluginID)
	}
	if top["min_herdr_version"] != MinVersion.String() {
		t.Errorf("min_herdr_version = %q, want %s", top["min_herdr_version"], MinVersion)
	}
}
