package subs

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/facets-dev/facets/compiler/manifest"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/facets-dev/facets/internal/safefile"
	"github.com/facets-dev/facets/runtime/channel"
	"github.com/facets-dev/facets/runtime/surface"
	"github.com/facets-dev/facets/runtime/worktree"
)

// DefaultStateDir is where runs and bindings are kept when no state dir is
// given: <agentDir>/facets/state.
func DefaultStateDir(agentDir string) string {
	return filepath.Join(agentDir, "facets", "state")
}

// RunVersion is the format version of a stored Run.
const RunVersion = 1

// Run is the Main's durable record of one Sub: its identity, profile,
// channel, session and lifetime, plus what a short-lived CLI process needs
// to find the Sub again (the Herdr handle, a reserved launch slot, a failed
// rollback).
type Run struct {
	Version            int      `json:"version"`
	RunID              string   `json:"runId"`
	MainSessionID      string   `json:"mainSessionId"`
	Title              string   `json:"title"`
	Cwd                string   `json:"cwd"`
	ProfileName        string   `json:"profileName"`
	Origin             string   `json:"origin,omitempty"` // "manual" for user-invoked runs
	Purpose            string   `json:"purpose,omitempty"`
	SessionPersistence string   `json:"sessionPersistence"`
	ChannelDir         string   `json:"channelDir"`
	CreatedAt          int64    `json:"createdAt"`
	UpdatedAt          int64    `json:"updatedAt"`
	ClosedAt           int64    `json:"closedAt,omitempty"`
	SubSessionID       string   `json:"subSessionId,omitempty"`
	SubSessionFile     string   `json:"subSessionFile,omitempty"`
	Surface            *Surface `json:"surface,omitempty"`
	Tools              []string `json:"tools,omitempty"`
	Skills             []string `json:"skills,omitempty"`
	// LaunchPID, while set, marks a slot reserved before launch.OpenTab
	// returned, by that process; if it dies the run becomes closable.
	LaunchPID int `json:"launchPid,omitempty"`
	// LaunchError is set when a launch failed and its rollback did too: the
	// tab may still exist, so the run stays open until a close succeeds.
	LaunchError string `json:"launchError,omitempty"`
	// Worktree is the Sub's own git worktree (a "workspace": "worktree"
	// profile); WorktreeRemoved is set once close or discard removed it.
	Worktree        *worktree.Worktree `json:"worktree,omitempty"`
	WorktreeRemoved bool               `json:"worktreeRemoved,omitempty"`
}

// Surface is where a run's Sub lives (a Herdr tab, a tmux window): the
// launch's handle, whose fields are stored inline beside "adapter".
type Surface struct {
	Adapter string `json:"adapter"`
	surface.Handle
}

// Open reports whether the run holds one of the Main's open-Sub slots.
func (r *Run) Open() bool { return r.ClosedAt == 0 }

// Launching reports whether the run's launch has not returned yet.
func (r *Run) Launching() bool { return r.LaunchPID != 0 }

// Manual reports whether the run was started by a user profile command.
func (r *Run) Manual() bool { return r.Origin == manifest.OriginManual }

// Persistent reports whether the Sub's Pi session is saved and resumable.
func (r *Run) Persistent() bool { return r.SessionPersistence == "persistent" }

// adapter is the surface that opened the run ("herdr" for records from
// before there was a choice).
func (r *Run) adapter() string {
	if r.Surface == nil || r.Surface.Adapter == "" {
		return "herdr"
	}
	return r.Surface.Adapter
}

func (r *Run) handle() surface.Handle {
	if r.Surface == nil {
		return surface.Handle{}
	}
	return r.Surface.Handle
}

// Binding ties a Main session and a profile to the run a user profile
// command last launched, so /reload and a resumed Main reuse that Sub.
type Binding struct {
	MainSessionID string `json:"mainSessionId"`
	ProfileName   string `json:"profileName"`
	RunID         string `json:"runId"`
}

// Store keeps runs and bindings under Dir, one directory per Main session:
// <Dir>/<safe main>/runs/<run>.json and bindings/<profile>.json. Files are
// 0600 and replaced atomically, so a crash leaves the old or the new record.
type Store struct {
	Dir string
}

// absDir is Dir made absolute, as channels record their owner.
func (s Store) absDir() string {
	if d, err := filepath.Abs(s.Dir); err == nil {
		return d
	}
	return s.Dir
}

func (s Store) mainDir(mainSessionID string) string {
	return filepath.Join(s.Dir, channel.Safe(mainSessionID))
}

func (s Store) runPath(mainSessionID, runID string) string {
	return filepath.Join(s.mainDir(mainSessionID), "runs", channel.Safe(runID)+".json")
}

func (s Store) bindingPath(mainSessionID, profile string) string {
	return filepath.Join(s.mainDir(mainSessionID), "bindings", channel.Safe(profile)+".json")
}

// SaveRun writes r.
func (s Store) SaveRun(r *Run) error {
	return writeJSON(s.runPath(r.MainSessionID, r.RunID), r)
}

// DeleteRun forgets a run; a missing record is not an error.
func (s Store) DeleteRun(mainSessionID, runID string) error {
	if err := os.Remove(s.runPath(mainSessionID, runID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete run %s: %w", runID, err)
	}
	return nil
}

// LoadRun reads one run; ok is false when no record exists.
func (s Store) LoadRun(mainSessionID, runID string) (*Run, bool, error) {
	var r Run
	ok, err := readJSON(s.runPath(mainSessionID, runID), &r)
	if err != nil || !ok {
		return nil, ok, err
	}
	return &r, true, nil
}

// Runs returns the Main's runs, oldest first.
func (s Store) Runs(mainSessionID string) ([]*Run, error) {
	dir := filepath.Join(s.mainDir(mainSessionID), "runs")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	var runs []*Run
	var bad BadRecordsError
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue // temp files of an interrupted write
		}
		var r Run
		if _, err := readJSON(filepath.Join(dir, e.Name()), &r); err != nil {
			bad = append(bad, err)
			continue
		}
		runs = append(runs, &r)
	}
	sort.SliceStable(runs, func(i, j int) bool {
		if runs[i].CreatedAt != runs[j].CreatedAt {
			return runs[i].CreatedAt < runs[j].CreatedAt
		}
		return runs[i].RunID < runs[j].RunID
	})
	if len(bad) > 0 {
		return runs, bad
	}
	return runs, nil
}

// BadRecordsError lists run records that could not be read, each error
// naming its file. Runs returns it together with every readable run, so a
// caller that can do without the broken ones reports them and goes on.
type BadRecordsError []error

func (e BadRecordsError) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return "unreadable run records (fix or delete them): " + strings.Join(msgs, "; ")
}

// usableRuns keeps the readable runs of a Runs result and returns the
// unreadable records as problems, so one corrupt record does not block the
// others; any other error is returned.
func usableRuns(runs []*Run, err error) ([]*Run, []string, error) {
	var bad BadRecordsError
	if !errors.As(err, &bad) {
		return runs, nil, err
	}
	problems := make([]string, len(bad))
	for i, e := range bad {
		problems[i] = e.Error()
	}
	return runs, problems, nil
}

// MainSessions lists the Main session directories present in the store.
func (s Store) MainSessions() ([]string, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list main sessions: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// SaveBinding records b.
func (s Store) SaveBinding(b Binding) error {
	return writeJSON(s.bindingPath(b.MainSessionID, b.ProfileName), b)
}

// LoadBinding reads the binding of a profile; ok is false when none exists.
func (s Store) LoadBinding(mainSessionID, profile string) (Binding, bool, error) {
	var b Binding
	ok, err := readJSON(s.bindingPath(mainSessionID, profile), &b)
	return b, ok, err
}

// Lock takes an exclusive lock named name in the Main's directory, held
// until the returned function is called. CLI processes run concurrently
// (two delegates from one Main), so slot checks must be serialized.
//
// The lock file exists only while the lock is held: unlocking removes it,
// so no operation, failed or not, leaves lock files in the state dir. A
// waiter that wakes up on a file its holder already removed tries again on
// a fresh one, so two processes never hold the same name at once.
func (s Store) Lock(mainSessionID, name string) (func(), error) {
	dir := s.mainDir(mainSessionID)
	path := filepath.Join(dir, name+".lock")
	for {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		if err = safefile.LockExclusive(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		held, herr := f.Stat()
		now, nerr := os.Stat(path)
		if herr == nil && nerr == nil && os.SameFile(held, now) {
			return func() {
				os.Remove(path) // still locked here, so no one else can have opened this inode and won
				f.Close()
			}, nil
		}
		f.Close() // the previous holder removed this file after we opened it
	}
}

// maxRecordBytes caps a run record or binding; real ones are a few KiB.
const maxRecordBytes = 1 << 20

func readJSON(path string, v any) (bool, error) {
	data, err := safefile.ReadFile(path, maxRecordBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err // names path already
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	return true, nil
}

// writeJSON replaces path with v through an fsynced 0600 temp file.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return safefile.WriteFileAtomic(path, append(data, '\n'), 0o600)
}
