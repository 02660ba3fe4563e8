package startup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/facets-dev/facets/internal/envvar"
	"github.com/facets-dev/facets/runtime/pibridge"
)

// Answer answers one plan daemon request as `facets pi-extension plan` run
// as a process with the request's arguments, environment, working directory
// and stdin answers it: it calls Plan with what the request gives, changes
// no directory and no process-wide setting, and reads of the environment
// only envvar.Plan. binary is this binary's side of the handshake.
//
// It takes only the command line the extension sends (the role, the
// protocol and the extension's version). For any other, for a working
// directory that is gone and for a relative path in one of
// envvar.PlanPaths (which a process resolves against its own directory, and
// may print as given) it returns an error, and the extension spawns the
// plan instead.
func Answer(req pibridge.DaemonRequest, binary pibridge.Peer) (pibridge.DaemonReply, error) {
	c, err := daemonCall(req.Args)
	if err != nil {
		return pibridge.DaemonReply{}, err
	}
	if fi, err := os.Stat(req.Dir); err != nil || !fi.IsDir() {
		return pibridge.DaemonReply{}, fmt.Errorf("plan request: working directory %s is gone", req.Dir)
	}
	getenv, err := requestEnv(req.Env)
	if err != nil {
		return pibridge.DaemonReply{}, err
	}
	c.Sources.Cwd = req.Dir
	c.Manifest = getenv(envvar.Manifest)
	c.Binary = binary
	var out bytes.Buffer
	if err := EncodePlan(&out, Plan(c, RequestFrom(strings.NewReader(req.Stdin)), getenv, getenv(envvar.Home))); err != nil {
		return pibridge.DaemonReply{}, err
	}
	return pibridge.DaemonReply{Stdout: out.String()}, nil
}

// RequestFrom is Plan's read: it applies the request the extension writes
// on the plan's stdin (pibridge.PlanRequest) over the call's flags. A
// terminal is a person running the hidden command by hand: it is not read.
func RequestFrom(stdin io.Reader) func(*Call) error {
	return func(c *Call) error {
		if f, ok := stdin.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				return nil
			}
		}
		req, ok, err := pibridge.ReadRequest(stdin)
		if err != nil || !ok {
			return err
		}
		c.Apply(req)
		return nil
	}
}

// EncodePlan writes plan as the one JSON line the extension reads.
func EncodePlan(w io.Writer, plan pibridge.Plan) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(plan)
}

// daemonCall reads the command line the extension sends a daemon:
// pi-extension plan --role main|sub --protocol N [--extension-version V],
// each flag once, as "--flag value" or "--flag=value".
func daemonCall(args []string) (Call, error) {
	c := Call{Role: "main", Extension: pibridge.Peer{Protocol: 1}}
	if len(args) < 2 || args[0] != "pi-extension" || args[1] != "plan" {
		return c, fmt.Errorf("the plan daemon runs only pi-extension plan, not %q", args)
	}
	seen := map[string]bool{}
	for rest := args[2:]; len(rest) > 0; {
		name, value, inline := strings.Cut(rest[0], "=")
		rest = rest[1:]
		if !inline {
			if len(rest) == 0 {
				return c, fmt.Errorf("plan daemon: %s has no value", name)
			}
			value, rest = rest[0], rest[1:]
		}
		if seen[name] {
			return c, fmt.Errorf("plan daemon: %s given twice", name)
		}
		seen[name] = true
		switch name {
		case "--role":
			if value != "main" && value != "sub" {
				return c, fmt.Errorf("plan daemon: unknown --role %q", value)
			}
			c.Role = value
		case "--protocol":
			n, err := strconv.Atoi(value)
			if err != nil {
				return c, fmt.Errorf("plan daemon: --protocol %q: %w", value, err)
			}
			c.Extension.Protocol = n
		case "--extension-version":
			c.Extension.Version = value
		default:
			return c, fmt.Errorf("plan daemon: the extension sends no %s", name)
		}
	}
	return c, nil
}

// requestEnv is a request's environment as a plan process would see it:
// only the variables of envvar.Plan, the first of each winning as getenv(3)
// finds it. A relative value of one of envvar.PlanPaths is an error.
func requestEnv(kvs []string) (func(string) string, error) {
	env := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !slices.Contains(envvar.Plan, k) {
			continue
		}
		if _, seen := env[k]; seen {
			continue
		}
		if v != "" && !filepath.IsAbs(v) && slices.Contains(envvar.PlanPaths, k) {
			return nil, fmt.Errorf("plan daemon: %s=%s is relative to the caller's directory", k, v)
		}
		env[k] = v
	}
	return func(k string) string { return env[k] }, nil
}
