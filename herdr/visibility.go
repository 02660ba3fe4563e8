package herdr

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/facets-dev/facets/internal/safefile"
)

// VisibilityAction is what the companion plugin asks for.
type VisibilityAction string

// Plugin actions. Startup re-applies the saved choice, because Herdr drops
// agent views when its server restarts.
const (
	ActionHide    VisibilityAction = "hide"
	ActionShow    VisibilityAction = "show"
	ActionToggle  VisibilityAction = "toggle"
	ActionStartup VisibilityAction = "startup"
)

// DefaultPluginID is the companion plugin's id in herdr-plugin.toml.
const DefaultPluginID = "facets.agent-visibility"

// Visibility hides Facets Subs from Herdr's Agents panel by installing an
// agent view that filters out panes tagged facets_role=sub. It only changes
// that panel: agent list, notifications and states are untouched.
type Visibility struct {
	// SocketPath is Herdr's API socket ($HERDR_SOCKET_PATH).
	SocketPath string
	// StateDir keeps the user's choice ($HERDR_PLUGIN_STATE_DIR).
	StateDir string
	// PluginID names the view's owner ($HERDR_PLUGIN_ID); empty means
	// DefaultPluginID.
	PluginID string
	// Timeout bounds the socket exchange; zero means 5 s.
	Timeout time.Duration
}

// visibilityState is the plugin's saved choice; the zero value hides Subs.
type visibilityState struct {
	ShowSubs bool `json:"showSubs"`
}

const visibilityFile = "visibility.json"

// Apply performs action and reports whether Subs are now hidden. The saved
// choice changes only after Herdr accepted the view, so a failed toggle can
// simply be retried.
func (v Visibility) Apply(ctx context.Context, action VisibilityAction) (hidden bool, err error) {
	if v.SocketPath == "" {
		return false, errors.New("herdr visibility: HERDR_SOCKET_PATH is not set; run this from a Herdr plugin action")
	}
	if v.StateDir == "" {
		return false, errors.New("herdr visibility: HERDR_PLUGIN_STATE_DIR is not set; run this from a Herdr plugin action")
	}
	cur, err := v.load()
	if err != nil {
		return false, err
	}
	next := cur
	switch action {
	case ActionHide:
		next.ShowSubs = false
	case ActionShow:
		next.ShowSubs = true
	case ActionToggle:
		next.ShowSubs = !cur.ShowSubs
	case ActionStartup:
	default:
		return false, fmt.Errorf("herdr visibility: unknown action %q (want hide, show, toggle or startup)", action)
	}
	source := "plugin:" + v.pluginID()
	var method string
	var params any
	if next.ShowSubs {
		method, params = "agent.view.clear", map[string]any{"source": source}
	} else {
		method, params = "agent.view.set", map[string]any{
			"source": source,
			"label":  "subs hidden",
			"filter": map[string]any{
				"op": "not",
				"filter": map[string]any{
					"op":    "eq",
					"field": map[string]any{"token": "facets_role"},
					"value": "sub",
				},
			},
			"sort": []any{},
		}
	}
	if err := v.request(ctx, method, params); err != nil {
		return false, err
	}
	if next != cur {
		if err := v.save(next); err != nil {
			return false, err
		}
	}
	return !next.ShowSubs, nil
}

func (v Visibility) pluginID() string {
	if v.PluginID == "" {
		return DefaultPluginID
	}
	return v.PluginID
}

// maxVisibilityBytes caps the visibility state file, a short list of panes.
const maxVisibilityBytes = 1 << 20

func (v Visibility) load() (visibilityState, error) {
	var st visibilityState
	path := filepath.Join(v.StateDir, visibilityFile)
	data, err := safefile.ReadFile(path, maxVisibilityBytes)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("herdr visibility: %w", err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("herdr visibility: %s is corrupt (delete it to reset): %w", path, err)
	}
	return st, nil
}

func (v Visibility) save(st visibilityState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("herdr visibility: %w", err)
	}
	if err := os.MkdirAll(v.StateDir, 0o700); err != nil {
		return fmt.Errorf("herdr visibility: %w", err)
	}
	if err := safefile.WriteFileAtomic(filepath.Join(v.StateDir, visibilityFile), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("herdr visibility: %w", err)
	}
	return nil
}

// request sends one newline-delimited JSON request to Herdr's socket and
// reads its one-line answer, which must be an agent_view result.
func (v Visibility) request(ctx context.Context, method string, params any) error {
	timeout := v.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", v.SocketPath)
	if err != nil {
		return fmt.Errorf("herdr %s: %w", method, err)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()

	req, err := json.Marshal(map[string]any{
		"id":     fmt.Sprintf("facets:%d:%d", time.Now().UnixMilli(), os.Getpid()),
		"method": method,
		"params": params,
	})
	if err != nil {
		return fmt.Errorf("herdr %s: %w", method, err)
	}
	if _, err := conn.Write(append(req, '\n')); err != nil {
		return fmt.Errorf("herdr %s: %w", method, err)
	}
	line, err := bufio.NewReaderSize(conn, 64*1024).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return fmt.Errorf("herdr %s: no response: %w", method, err)
	}
	if he, ok := parseErrorEnvelope(line); ok {
		return fmt.Errorf("herdr %s: %s: %s", method, he.Code, he.Message)
	}
	var view struct {
		Type string `json:"type"`
	}
	if err := decodeResult(line, &view); err != nil {
		return fmt.Errorf("herdr %s: %w", method, err)
	}
	if view.Type != "agent_view" {
		return fmt.Errorf("herdr %s: unexpected response %q", method, excerpt(line))
	}
	return nil
}
