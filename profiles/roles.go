package profiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/facets-dev/facets/internal/diag"
	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/internal/frontmatter"
	"github.com/facets-dev/facets/internal/safefile"
)

// Role layers, from lowest to highest precedence. Bundled roles and role
// packs together form pi-herdr-agents' "package" layer.
const (
	LayerBundled = "bundled"
	LayerPackage = "package"
	LayerGlobal  = "global"
	LayerProject = "project"
)

// MaxRoleFileBytes caps a role definition; larger files are refused before
// they are read whole.
const MaxRoleFileBytes = 262144

// maxPackageJSONBytes caps package.json, which is read only for name and
// version; real manifests are a few KiB.
const maxPackageJSONBytes = 1 << 20

// RoleSources says where role definitions are discovered.
type RoleSources struct {
	BundledDir string   // host package's agents/ dir; empty means no bundled layer
	Packs      []string // registered role-pack paths, in registration order
	AgentDir   string   // Pi's agent dir; roles live in <AgentDir>/agents
	Cwd        string   // working directory; project roles live in <Cwd>/.pi/agents
	Trusted    bool     // whether the project may contribute roles
	Overlay    Overlay  // unsaved contents read instead of the files (see Env.Overlay)
}

// RoleFile is one discovered role definition. Data is nil when the file
// could not be read; a diagnostic then says why.
type RoleFile struct {
	Layer           string
	Path            string
	Stem            string // file name without .md: the canonical role name
	Data            []byte
	Provider        string // package.json name (role packs only)
	ProviderVersion string // package.json version (role packs only)
}

// PackageFile is a package.json read while looking up a role pack's identity.
type PackageFile struct {
	Path string
	Data []byte
}

// Roles is the outcome of role discovery: role files in collection order
// (bundled, packs, global, project) and every package.json that was read.
type Roles struct {
	Files    []RoleFile
	Packages []PackageFile
}

// ListRoles is DiscoverRoles without reading the role files: a caller
// that handles one file at a time reads each with ReadRole, so the tree's
// files are never all held at once. The list keeps each directory once and
// only the names in it, a few dozen bytes a file, and builds a file's
// RoleFile when asked (RoleList.File). Its problems leave out those of
// reading a role file, which ReadRole returns.
func ListRoles(src RoleSources) (RoleList, []diag.Diagnostic) {
	d := discoverRoles(src, false)
	return d.list, d.problems
}

// RoleList is what ListRoles found: the role files in collection order
// (bundled, packs, global, project) and every package.json that was read.
type RoleList struct {
	groups   []roleGroup
	n        int
	Packages []PackageFile
}

// roleGroup is a run of listed role files in one directory, of one layer
// and package.
type roleGroup struct {
	layer string
	dir   string
	id    packageIdentity
	names []string // file names, in listing order
	start int      // the list index of names[0]
}

// Len is the number of role files listed.
func (l *RoleList) Len() int { return l.n }

// File returns the i-th role file, without Data. Its Stem shares the
// listed name, not the Path, which is built anew at each call.
func (l *RoleList) File(i int) RoleFile {
	g, name := l.at(i)
	return RoleFile{Layer: g.layer, Path: filepath.Join(g.dir, name), Stem: strings.TrimSuffix(name, ".md"),
		Provider: g.id.name, ProviderVersion: g.id.version}
}

// Layer is the layer of the i-th role file, File(i).Layer without
// building its path.
func (l *RoleList) Layer(i int) string {
	g, _ := l.at(i)
	return g.layer
}

func (l *RoleList) at(i int) (*roleGroup, string) {
	k, found := slices.BinarySearchFunc(l.groups, i, func(g roleGroup, i int) int { return g.start - i })
	if !found {
		k--
	}
	g := &l.groups[k]
	return g, g.names[i-g.start]
}

// add appends a file to the list, to the last group when it is of the
// same directory, layer and package.
func (l *RoleList) add(layer, dir, name string, id packageIdentity) {
	if n := len(l.groups); n == 0 || l.groups[n-1].layer != layer || l.groups[n-1].dir != dir || l.groups[n-1].id != id {
		l.groups = append(l.groups, roleGroup{layer: layer, dir: dir, id: id, start: l.n})
	}
	g := &l.groups[len(l.groups)-1]
	g.names = append(g.names, name)
	l.n++
}

// ReadRole reads a role file that ListRoles listed, through ov. A file
// that cannot be read yields nil data and the problem DiscoverRoles would
// have reported for it.
func ReadRole(ov Overlay, f RoleFile) ([]byte, *diag.Diagnostic) {
	data, p := readRoleFile(ov, f.Path)
	if p != nil {
		roleProblem(p, f.Layer, f.Stem, packageIdentity{f.Provider, f.ProviderVersion})
	}
	return data, p
}

// DiscoverRoles finds and reads role definitions in every layer. It never
// stops at a bad file: each problem is reported and discovery continues.
func DiscoverRoles(src RoleSources) (Roles, []diag.Diagnostic) {
	d := discoverRoles(src, true)
	out := Roles{Files: make([]RoleFile, d.list.Len()), Packages: d.list.Packages}
	for i := range out.Files {
		out.Files[i] = d.list.File(i)
		out.Files[i].Data = d.data[i]
	}
	return out, d.problems
}

func discoverRoles(src RoleSources, read bool) *roleDiscovery {
	d := &roleDiscovery{packages: map[string]packageIdentity{}, overlay: src.Overlay, read: read}
	if src.BundledDir != "" {
		dir := src.BundledDir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(src.Cwd, dir)
		}
		d.layerDir(LayerBundled, filepath.Clean(dir), true)
	}
	d.packs(src.Packs)
	if src.AgentDir != "" {
		d.layerDir(LayerGlobal, filepath.Join(src.AgentDir, "agents"), false)
	}
	// Deliberate divergence from pi-herdr-agents, which reads .pi/agents
	// without asking Pi: an untrusted project contributes no roles.
	if src.Trusted && src.Cwd != "" {
		d.layerDir(LayerProject, filepath.Join(src.Cwd, ".pi", "agents"), false)
	}
	return d
}

type roleDiscovery struct {
	list     RoleList
	data     [][]byte // the files' contents, by list index (DiscoverRoles)
	problems []diag.Diagnostic
	packages map[string]packageIdentity // by start directory
	overlay  Overlay
	read     bool // read the role files (DiscoverRoles), or only list them (ListRoles)
}

type packageIdentity struct {
	name, version string
}

func (d *roleDiscovery) problem(p diag.Diagnostic) { d.problems = append(d.problems, p) }

// layerDir reads the direct .md children of a bundled, global or project
// roles directory. A missing directory is an empty layer unless it was
// configured explicitly (the bundled dir).
func (d *roleDiscovery) layerDir(layer, dir string, required bool) {
	names, err := mdChildren(dir, d.overlay)
	if errors.Is(err, fs.ErrNotExist) && !required {
		return
	}
	if errors.Is(err, fs.ErrNotExist) {
		d.problem(diag.Diagnostic{Severity: diag.Error, File: dir, Code: "missing-bundled-roles-dir",
			Message: fmt.Sprintf("Bundled roles directory does not exist: %s", dir),
			Hint:    "point --bundled-roles or " + envvar.BundledRoles + " at the host package's agents/ directory, or unset it"})
		return
	}
	if err != nil {
		d.problem(diag.Diagnostic{Severity: diag.Error, File: dir, Code: "unreadable-role-dir",
			Message: fmt.Sprintf("Cannot read %s role directory %s: %v", layer, dir, unwrapPath(err)),
			Hint:    "make it a readable directory of .md role files"})
		return
	}
	// Files are read in parallel and recorded in name order.
	type read struct {
		data []byte
		p    *diag.Diagnostic
	}
	var reads []read
	if d.read {
		reads = make([]read, len(names))
		forEach(len(names), func(i int) {
			reads[i].data, reads[i].p = readRoleFile(d.overlay, filepath.Join(dir, names[i]))
		})
	}
	for i, name := range names {
		var r read
		if reads != nil {
			r = reads[i]
		}
		d.recordRole(layer, dir, name, packageIdentity{}, r.data, r.p)
	}
}

// packs processes registered role-pack paths as register(path) does:
// absolute paths only, a file must end in .md, a directory contributes its
// direct .md children.
func (d *roleDiscovery) packs(paths []string) {
	seenPath := map[string]bool{}
	// Deliberate divergence from pi-herdr-agents: a role file reached
	// through overlapping registrations (a directory and a file in it, or
	// two symlinked paths) is read once instead of being reported as a
	// duplicate of itself.
	seenFile := map[string]bool{}
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			d.problem(diag.Diagnostic{Severity: diag.Error, File: p, Code: "invalid-role-pack-path",
				Message: "Role packs must register an absolute file or directory path.",
				Hint:    fmt.Sprintf("%q is not absolute; pass an absolute path to --role-pack or %s", p, envvar.RolePacks)})
			continue
		}
		p = filepath.Clean(p)
		if seenPath[p] {
			continue
		}
		seenPath[p] = true
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			d.problem(diag.Diagnostic{Severity: diag.Error, File: p, Code: "missing-role-pack-path",
				Message: fmt.Sprintf("Registered role-pack path does not exist: %s", p),
				Hint:    "fix or remove the registration"})
			continue
		}
		if err != nil {
			d.unreadablePack(p, err)
			continue
		}
		var files []string
		start := p
		switch {
		case fi.IsDir():
			names, err := mdChildren(p, d.overlay)
			if err != nil {
				d.unreadablePack(p, err)
				continue
			}
			if len(names) == 0 {
				d.problem(diag.Diagnostic{Severity: diag.Warning, File: p, Code: "empty-role-pack",
					Message: fmt.Sprintf("Registered role-pack directory has no .md files: %s", p),
					Hint:    "role packs register a directory whose direct children are <role>.md files"})
			}
			for _, n := range names {
				files = append(files, filepath.Join(p, n))
			}
		case fi.Mode().IsRegular():
			start = filepath.Dir(p)
			files = []string{p}
		default:
			d.unreadablePack(p, fmt.Errorf("not a file or directory (%s)", safefile.Kind(fi.Mode())))
			continue
		}
		id := d.identity(start)
		if fi.Mode().IsRegular() && !strings.HasSuffix(p, ".md") {
			d.problem(diag.Diagnostic{Severity: diag.Error, File: p, Code: "invalid-role-pack-file", Subject: strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)),
				Message: fmt.Sprintf("Registered role-pack file must use the .md extension: %s", p),
				Hint:    providerHint(id)})
			continue
		}
		for _, f := range files {
			key := f
			if real, err := filepath.EvalSymlinks(f); err == nil {
				key = real
			}
			if seenFile[key] {
				continue
			}
			seenFile[key] = true
			d.readRole(LayerPackage, f, id)
		}
	}
}

func (d *roleDiscovery) unreadablePack(p string, err error) {
	d.problem(diag.Diagnostic{Severity: diag.Error, File: p, Code: "unreadable-role-pack-path",
		Message: fmt.Sprintf("Cannot read registered role-pack path %s: %v", p, unwrapPath(err)),
		Hint:    "register a readable .md file or a directory of them"})
}

func providerHint(id packageIdentity) string {
	if id.name == "" {
		return "registered without a package.json"
	}
	return fmt.Sprintf("registered by package %s", packageLabel(id.name, id.version))
}

func packageLabel(name, version string) string {
	if version == "" {
		return name
	}
	return name + "@" + version
}

// readRole reads one role file into the result, or reports why it cannot.
// An unreadable file is still listed (with nil Data) so that the compiler
// can keep it from silently falling back to a lower layer.
func (d *roleDiscovery) readRole(layer, path string, id packageIdentity) {
	var data []byte
	var p *diag.Diagnostic
	if d.read {
		data, p = readRoleFile(d.overlay, path)
	}
	d.recordRole(layer, filepath.Dir(path), filepath.Base(path), id, data, p)
}

// recordRole adds the role file name in dir that readRoleFile read (or,
// listing only, did not). The file's path is filepath.Join(dir, name).
func (d *roleDiscovery) recordRole(layer, dir, name string, id packageIdentity, data []byte, p *diag.Diagnostic) {
	if p != nil {
		roleProblem(p, layer, strings.TrimSuffix(name, ".md"), id)
		d.problem(*p)
	}
	d.list.add(layer, dir, name, id)
	if d.read {
		d.data = append(d.data, data)
	}
}

// roleProblem completes the problem of reading a role file: its subject is
// the role the file names, and a pack's file says which package it is from.
func roleProblem(p *diag.Diagnostic, layer, stem string, id packageIdentity) {
	p.Subject = stem
	if layer == LayerPackage && id.name != "" {
		p.Hint += "; " + providerHint(id)
	}
}

// readRoleFile reads a regular file of at most MaxRoleFileBytes.
func readRoleFile(ov Overlay, path string) ([]byte, *diag.Diagnostic) {
	data, err := ov.ReadFile(path, MaxRoleFileBytes)
	var big *safefile.TooLargeError
	switch {
	case err == nil:
		return data, nil
	case errors.As(err, &big):
		size := fmt.Sprint(big.Size)
		if big.Size < 0 {
			size = "more than " + fmt.Sprint(MaxRoleFileBytes) // it grew after the size check
		}
		return nil, &diag.Diagnostic{Severity: diag.Error, File: path, Code: "oversized-role-definition",
			Message: fmt.Sprintf("Role definition %s is %s bytes; the limit is %d bytes", path, size, MaxRoleFileBytes),
			Hint:    "shorten the role prompt or move reference material into a skill"}
	}
	return nil, &diag.Diagnostic{Severity: diag.Error, File: path, Code: "unreadable-role-definition",
		Message: fmt.Sprintf("Cannot read role definition %s: %v", path, unwrapPath(err)),
		Hint:    "make it a readable regular file"}
}

// mdChildren lists the names of a directory's direct children ending in
// .md (case-sensitive, dotfiles included, as in pi-herdr-agents), in byte
// order, as os.ReadDir returns them. pi-herdr-agents sorts with
// localeCompare; byte order is the locale-independent choice and only
// matters within one layer.
func mdChildren(dir string, ov Overlay) ([]string, error) {
	// Names only: a DirEntry per file would cost an allocation each in a
	// directory of thousands of roles, and the type is not needed here.
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	all, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, err
	}
	names := all[:0]
	for _, n := range all {
		if strings.HasSuffix(n, ".md") {
			names = append(names, n)
		}
	}
	clear(all[len(names):])
	// Unsaved role files not on disk yet (facets lsp).
	for _, p := range ov.unlisted(dir, func(rel string) bool { return !strings.Contains(rel, "/") && strings.HasSuffix(rel, ".md") }) {
		if n := filepath.Base(p); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// identity finds the nearest package.json at or above start. Only string
// name and version count. An unreadable or unparsable package.json stops
// the walk (as in pi-herdr-agents), with a warning naming it.
func (d *roleDiscovery) identity(start string) packageIdentity {
	if id, ok := d.packages[start]; ok {
		return id
	}
	var id packageIdentity
	for dir := start; ; dir = filepath.Dir(dir) {
		pj := filepath.Join(dir, "package.json")
		if _, err := os.Lstat(pj); err == nil {
			id = d.readPackage(pj)
			break
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	d.packages[start] = id
	return id
}

func (d *roleDiscovery) readPackage(path string) packageIdentity {
	warn := func(err error) packageIdentity {
		d.problem(diag.Diagnostic{Severity: diag.Warning, File: path, Code: "invalid-package-json",
			Message: fmt.Sprintf("Cannot read package.json %s: %v; role-pack identity lookup stops here", path, err),
			Hint:    "fix the package.json; roles from this pack have no provider name or version"})
		return packageIdentity{}
	}
	data, err := safefile.ReadFile(path, maxPackageJSONBytes)
	if err != nil {
		return warn(unwrapPath(err))
	}
	d.list.Packages = append(d.list.Packages, PackageFile{Path: path, Data: data})
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(data, &meta); err != nil {
		return warn(fmt.Errorf("invalid JSON: %w", err))
	}
	// As in pi-herdr-agents, a field that is not a string is ignored and
	// the walk stops here anyway; the warning says why provenance is lost.
	var id packageIdentity
	for _, f := range []struct {
		key string
		dst *string
	}{{"name", &id.name}, {"version", &id.version}} {
		raw, ok := meta[f.key]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, f.dst); err != nil || string(raw) == "null" {
			*f.dst = ""
			d.problem(diag.Diagnostic{Severity: diag.Warning, File: path, Code: "invalid-package-json",
				Message: fmt.Sprintf("package.json %s: %q is %s, not a string; it is ignored", path, f.key, jsonKind(raw)),
				Hint:    fmt.Sprintf("make %q a string; until then roles from this pack have no provider %s", f.key, f.key)})
		}
	}
	return id
}

// jsonKind names the type of a raw JSON value for messages.
func jsonKind(raw json.RawMessage) string {
	switch t := bytes.TrimSpace(raw); {
	case len(t) == 0:
		return "empty"
	case t[0] == '[':
		return "an array"
	case t[0] == '{':
		return "an object"
	case t[0] == 't' || t[0] == 'f':
		return "a boolean"
	case t[0] == 'n':
		return "null"
	case t[0] == '"':
		return "a string"
	}
	return "a number"
}

// SplitFrontmatter splits a role file the way pi-herdr-agents does (see
// frontmatter.Split).
func SplitFrontmatter(src []byte) (yaml []byte, startLine int, body string, ok bool) {
	return frontmatter.Split(src)
}

// FrontmatterLine reads key the way pi-herdr-agents' line parser does: the
// first line starting with "key:" at column 0, its value trimmed, quotes
// and comments kept. line is 1-based within yaml; an empty value is absent.
func FrontmatterLine(yaml []byte, key string) (value string, line int, ok bool) {
	// Called for every key of every role: walk the lines in place rather
	// than split and copy the block each time.
	for n, rest := 1, yaml; ; n++ {
		l, after, more := bytes.Cut(rest, []byte("\n"))
		if len(l) > len(key) && l[len(key)] == ':' && string(l[:len(key)]) == key {
			v := strings.TrimSpace(string(l[len(key)+1:]))
			return v, n, v != ""
		}
		if !more {
			return "", 0, false
		}
		rest = after
	}
}

// KeyLines returns the 1-based lines of yaml that look like a declaration
// of key at any indentation ("key:" or "key :"), so callers can detect
// declarations a line parser and a YAML parser would read differently.
func KeyLines(yaml []byte, key string) []int {
	var lines []int
	for n, rest := 1, yaml; ; n++ {
		l, after, more := bytes.Cut(rest, []byte("\n"))
		l = bytes.TrimLeft(l, " \t")
		if len(l) >= len(key) && string(l[:len(key)]) == key && bytes.HasPrefix(bytes.TrimLeft(l[len(key):], " \t"), []byte(":")) {
			lines = append(lines, n)
		}
		if !more {
			return lines
		}
		rest = after
	}
}
