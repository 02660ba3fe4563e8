//go:build ignore

// floor.go is the floor that `facets check` is measured against
// (internal/benchtree/bench-vs-cue.sh): the least any checker must do on a
// benchmark tree, with none of facets' validation. It lists the same
// directories and reads every file check reads — each profile's
// config.json (decoded as JSON) and instructions.md, the SKILL.md files of
// its skills/ directory (check only stats them; reading them makes the
// floor a little slower, never faster), every role .md (frontmatter split
// off and its key: value lines cut) and MAIN.md — on GOMAXPROCS
// goroutines. It prints the counts so the work cannot be optimised away.
//
// It carries the ignore build tag so that `go install ./...` never
// installs it: run it with
//
//	go run internal/benchtree/floor.go AGENT_DIR
//
// or build it once outside the tree, as bench-vs-cue.sh does:
// `go build -o "$(mktemp -d)/floor" internal/benchtree/floor.go`.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// config is the shape of a profile's config.json, decoded into a struct
// as a real checker would to look at its fields.
type config struct {
	Version            int      `json:"version"`
	Name               string   `json:"name"`
	Description        string   `json:"description"`
	Model              string   `json:"model"`
	ThinkingLevel      string   `json:"thinkingLevel"`
	SessionPersistence string   `json:"sessionPersistence"`
	Invocation         string   `json:"invocation"`
	Tools              []string `json:"tools"`
	Skills             []string `json:"skills"`
	Instructions       string   `json:"instructions"`
}

type counts struct {
	files, bytes, keys, tools atomic.Int64
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run floor.go AGENT_DIR")
		os.Exit(2)
	}
	agent := os.Args[1]
	var c counts
	profilesDir := filepath.Join(agent, "facets", "profiles")
	rolesDir := filepath.Join(agent, "agents")
	profiles := list(profilesDir)
	roles := list(rolesDir)
	work := len(profiles) + len(roles)
	forEach(work, func(i int) {
		if i < len(profiles) {
			profile(&c, filepath.Join(profilesDir, profiles[i]))
			return
		}
		if name := roles[i-len(profiles)]; strings.HasSuffix(name, ".md") {
			role(&c, filepath.Join(rolesDir, name))
		}
	})
	read(&c, filepath.Join(agent, "facets", "MAIN.md"))
	fmt.Printf("%d files, %d bytes, %d frontmatter keys, %d tools\n", c.files.Load(), c.bytes.Load(), c.keys.Load(), c.tools.Load())
}

// profile reads one directory profile: config.json decoded,
// instructions.md, and skills/*/SKILL.md.
func profile(c *counts, dir string) {
	var cfg config
	if err := json.Unmarshal(read(c, filepath.Join(dir, "config.json")), &cfg); err != nil {
		fail(fmt.Errorf("decode %s: %w", dir, err))
	}
	c.tools.Add(int64(len(cfg.Tools)))
	read(c, filepath.Join(dir, "instructions.md"))
	skills := filepath.Join(dir, "skills")
	for _, name := range list(skills) {
		p := filepath.Join(skills, name, "SKILL.md")
		if _, err := os.Stat(p); err == nil {
			read(c, p)
		}
	}
}

// role reads a role file and splits off its frontmatter.
func role(c *counts, path string) {
	b := read(c, path)
	rest, ok := bytes.CutPrefix(b, []byte("---\n"))
	if !ok {
		return
	}
	fm, _, ok := bytes.Cut(rest, []byte("\n---\n"))
	if !ok {
		return
	}
	for line := range bytes.SplitSeq(fm, []byte("\n")) {
		if k, _, ok := bytes.Cut(line, []byte(":")); ok && len(k) > 0 {
			c.keys.Add(1)
		}
	}
}

func read(c *counts, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		fail(err)
	}
	c.files.Add(1)
	c.bytes.Add(int64(len(b)))
	return b
}

// list returns a directory's entry names, or none if it does not exist.
func list(dir string) []string {
	f, err := os.Open(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		fail(err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		fail(err)
	}
	return names
}

// forEach runs fn(i) for i below n on GOMAXPROCS goroutines sharing a
// counter, as facets does.
func forEach(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "floor:", err)
	os.Exit(1)
}
