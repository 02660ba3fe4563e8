package channel

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/facets-dev/facets/internal/safefile"
)

// Manifest is the immutable launch snapshot of a run. Field order is the
// on-disk key order both implementations write: version, the launch
// inputs, token, createdAt.
type Manifest struct {
	Version       int             `json:"version"`
	RunID         string          `json:"runId"`
	MainSessionID string          `json:"mainSessionId"`
	Title         string          `json:"title"`
	Task          string          `json:"task"`
	Cwd           string          `json:"cwd"`
	Profile       json.RawMessage `json:"profile"`
	Origin        string          `json:"origin,omitempty"`
	// SelfStart asks the Sub to submit Task as its first user message
	// itself: its surface (tmux) types nothing into it.
	SelfStart bool   `json:"selfStart,omitempty"`
	Token     string `json:"token"`
	CreatedAt int64  `json:"createdAt"`
	// StateDir is the state dir whose run record owns the channel. The
	// channel root is shared by every state dir of the user, so gc of one
	// state dir leaves another's channels alone.
	StateDir string `json:"stateDir,omitempty"`
}

// stillNamed checks, with an inbox lock held, that the channel's path still
// names the directory this Channel opened: a channel is removed only after
// it is moved out of its name under both inbox locks.
func (c *Channel) stillNamed() error {
	now, err := os.Stat(c.dir)
	if err != nil {
		return ErrRemoved
	}
	held, err := c.root.Stat()
	if err != nil || !os.SameFile(now, held) {
		return ErrRemoved
	}
	return nil
}

// Channel is an open channel directory. Its directory descriptors are opened
// once and checked, so every later read and write stays inside the checked
// directories even if a path component is swapped afterwards.
type Channel struct {
	dir      string
	manifest Manifest
	root     *os.File
	inbox    map[Direction]*os.File
	send     map[Direction]*sync.Mutex
	swept    map[Direction]bool     // stale temp files of d removed (guarded by send[d])
	lease    map[Direction]seqLease // reserved sequence numbers (guarded by send[d])
	seqSeen  map[Direction]seqStamp // counter version last read, held open (guarded by send[d])
	reserve  int64                  // numbers reserved per counter write
	now      func() time.Time
	fault    faultFunc
	list     func(*os.File) ([]string, error) // listNames unless a test lists instead
	uid      int                              // the effective uid, which owns every channel file
	pid      int                              // the process id temp file names carry
}

// Create makes a new channel for m below root (see RuntimeRoot): the parents
// with mode 0700 if missing, the channel directory itself non-recursively so
// an existing run id is never reused, both inboxes and manifest.json. The
// token, createdAt and (if empty) the run id are generated.
func Create(root string, m Manifest) (*Channel, error) {
	if m.RunID == "" {
		m.RunID = NewID()
	}
	m.Version = 1
	m.Token = randomHex(32)
	m.CreatedAt = time.Now().UnixMilli()
	if len(m.Profile) == 0 {
		m.Profile = json.RawMessage("null")
	}
	data, err := encodeJSON(m)
	if err != nil {
		return nil, fmt.Errorf("create channel: encode manifest: %w", err)
	}
	if len(m.Task) > MaxMessageBytes {
		return nil, fmt.Errorf("create channel: the task is %d bytes, over the %d byte limit", len(m.Task), MaxMessageBytes)
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("create channel: %s exceeds %d bytes", manifestFile, maxManifestBytes)
	}
	session, err := ensurePrivateDir(root, Safe(m.MainSessionID))
	if err != nil {
		return nil, fmt.Errorf("create channel: %w", err)
	}
	defer session.Close()
	name := Safe(m.RunID)
	dir := filepath.Join(session.Name(), name)
	if err := unix.Mkdirat(int(session.Fd()), name, 0o700); err != nil {
		return nil, fmt.Errorf("create channel %s: %w", dir, err)
	}
	c, err := populate(session, name, dir, m, data)
	if err != nil {
		if rerr := os.RemoveAll(dir); rerr != nil {
			return nil, fmt.Errorf("failed to create and clean up channel %s: %w", dir, errors.Join(err, rerr))
		}
		return nil, fmt.Errorf("create channel %s: %w", dir, err)
	}
	return c, nil
}

func populate(session *os.File, name, dir string, m Manifest, manifest []byte) (*Channel, error) {
	root, err := openDirAt(session, name)
	if err != nil {
		return nil, err
	}
	c := &Channel{dir: dir, manifest: m, root: root, now: time.Now, uid: os.Geteuid(), pid: os.Getpid()}
	for _, d := range []Direction{ToMain, ToSub} {
		if err := unix.Mkdirat(int(root.Fd()), string(d), 0o700); err != nil {
			c.Close()
			return nil, fmt.Errorf("mkdir %s: %w", d, err)
		}
	}
	if err := writeAtomic(root, manifestFile, manifest, nil); err != nil {
		c.Close()
		return nil, err
	}
	if err := syncDir(session, nil); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.openInboxes(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// EnsureRoot creates root (RuntimeRoot) with mode 0700 when missing and
// refuses it (ErrInsecure) if it is a symlink, someone else's or open to
// group or others: the rule of every channel below it, and of the plan
// daemon's socket beside them.
func EnsureRoot(root string) error {
	r, err := openRoot(root)
	if err != nil {
		return err
	}
	return r.Close()
}

// openRoot is EnsureRoot keeping the checked directory open.
func openRoot(root string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(root), 0o755); err != nil {
		return nil, err
	}
	if err := os.Mkdir(root, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	return openDirAt(nil, root)
}

// ensurePrivateDir creates root and root/name with mode 0700 when missing and
// refuses either if it is a symlink, foreign-owned or group/other accessible;
// under the temp-dir fallback root sits in a shared directory.
func ensurePrivateDir(root, name string) (*os.File, error) {
	r, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if err := unix.Mkdirat(int(r.Fd()), name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("mkdir %s: %w", filepath.Join(root, name), err)
	}
	return openDirAt(r, name)
}

// MaxTokenFileBytes caps a token file; a token is a few dozen bytes.
const MaxTokenFileBytes = 4096

// ErrNoToken means neither a token file nor a token was given.
var ErrNoToken = errors.New("no capability token")

// ReadToken returns the capability token from tokenFile (the 0600 file a Sub
// is launched with, PI_FACETS_TOKEN_FILE) or, when no file is named, the
// token a caller already holds (PI_FACETS_TOKEN); ErrNoToken if neither.
// A token file that is not a regular file owned by the user and closed to
// group and others is refused, as the channel directories are.
func ReadToken(tokenFile, token string) (string, error) {
	if tokenFile == "" {
		if token == "" {
			return "", ErrNoToken
		}
		return token, nil
	}
	b, err := safefile.ReadPrivate(tokenFile, MaxTokenFileBytes)
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Open opens an existing channel directory and proves possession of its
// capability token. The directory and both inboxes must be real directories
// owned by the current user with no group/other permissions.
func Open(dir, token string) (*Channel, error) {
	c, err := openUnchecked(dir)
	if err != nil {
		return nil, err
	}
	if token == "" || !tokenEqual(token, c.manifest.Token) {
		c.Close()
		return nil, fmt.Errorf("open channel %s: capability token does not match", dir)
	}
	return c, nil
}

// openUnchecked opens a channel without a token, for inspection by its owner.
func openUnchecked(dir string) (*Channel, error) {
	root, err := openDirAt(nil, dir)
	if err != nil {
		return nil, fmt.Errorf("open channel: %w", err)
	}
	c := &Channel{dir: dir, root: root, now: time.Now, uid: os.Geteuid(), pid: os.Getpid()}
	data, err := readFileAt(root, manifestFile, maxManifestBytes, c.uid)
	if err == nil {
		c.manifest, err = decodeManifest(data)
	}
	if err == nil {
		err = c.openInboxes()
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("open channel %s: %w", dir, err)
	}
	return c, nil
}

func (c *Channel) openInboxes() error {
	c.inbox = map[Direction]*os.File{}
	c.send = map[Direction]*sync.Mutex{ToMain: {}, ToSub: {}}
	c.swept = map[Direction]bool{}
	c.lease = map[Direction]seqLease{}
	c.reserve = defaultReserve
	for _, d := range []Direction{ToMain, ToSub} {
		f, err := openDirAt(c.root, string(d))
		if err != nil {
			return err
		}
		c.inbox[d] = f
	}
	return nil
}

func decodeManifest(data []byte) (Manifest, error) {
	var m Manifest
	bad := func(why string) (Manifest, error) {
		return Manifest{}, fmt.Errorf("invalid channel manifest: %s", why)
	}
	f, err := fields(data)
	if err != nil {
		return bad(err.Error())
	}
	if v, err := safeIntField(f, "version", 1); err != nil || v != 1 {
		return bad("version must be 1")
	}
	for _, k := range []string{"runId", "mainSessionId", "title", "task", "cwd", "token"} {
		if _, err := stringField(f, k); err != nil {
			return bad(err.Error())
		}
	}
	if _, err := numberField(f, "createdAt"); err != nil {
		return bad(err.Error())
	}
	if raw, ok := f["origin"]; ok && string(raw) != `"manual"` {
		return bad(`origin must be absent or "manual"`)
	}
	if err := checkProfile(f["profile"]); err != nil {
		return bad(err.Error())
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return bad(jsonTerms(err).Error())
	}
	if m.RunID == "" || !isToken(m.Token) {
		return bad("runId must be non-empty and token 64 lowercase hex characters")
	}
	return m, nil
}

// isToken reports whether t has the form of a capability token: 32 bytes
// in lowercase hex, as both implementations write it.
func isToken(t string) bool {
	if len(t) != 64 {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// checkProfile checks the fields a Sub relies on before it applies the
// resolved profile (version 1, a name, the source scope and path, and a
// non-empty list of tool names); its full schema belongs to the profiles
// package.
func checkProfile(raw json.RawMessage) error {
	p, err := fields(raw)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	if v, err := safeIntField(p, "version", 1); err != nil || v != 1 {
		return errors.New("profile version must be 1")
	}
	if name, err := stringField(p, "name"); err != nil || name == "" {
		return errors.New("profile name must be a non-empty string")
	}
	if src, err := stringField(p, "source"); err != nil || (src != "global" && src != "project") {
		return errors.New(`profile source must be "global" or "project"`)
	}
	if _, err := stringField(p, "sourcePath"); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	var tools []any
	if json.Unmarshal(p["tools"], &tools) != nil || len(tools) == 0 {
		return errors.New("profile tools must be a non-empty array of strings")
	}
	for _, t := range tools {
		if s, ok := t.(string); !ok || s == "" {
			return errors.New("profile tools must be non-empty strings")
		}
	}
	for _, k := range []string{"resolvedSkills", "resolvedExtensions"} {
		var items []any
		if raw := p[k]; len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
			return fmt.Errorf("profile %s must be an array of strings", k)
		}
		for _, it := range items {
			if _, ok := it.(string); !ok {
				return fmt.Errorf("profile %s must be an array of strings", k)
			}
		}
	}
	return nil
}

// Close releases the channel's directory descriptors.
func (c *Channel) Close() error {
	var errs []error
	for _, f := range c.inbox {
		errs = append(errs, f.Close())
	}
	for d := range c.seqSeen {
		c.forgetSequence(d)
	}
	if c.root != nil {
		errs = append(errs, c.root.Close())
	}
	return errors.Join(errs...)
}

// Dir returns the channel directory path.
func (c *Channel) Dir() string { return c.dir }

// Manifest returns the launch snapshot, including the token.
func (c *Channel) Manifest() Manifest { return c.manifest }

func (c *Channel) identity() identity {
	return identity{runID: c.manifest.RunID, token: c.manifest.Token}
}

// sequenceRecord is <direction>-sequence.json; it has no version field.
type sequenceRecord struct {
	RunID    string `json:"runId"`
	Token    string `json:"token"`
	Sequence int64  `json:"sequence"`
}

// seqLease is the part of the persisted reservation this writer has used.
type seqLease struct {
	persisted int64 // counter value this writer last saw or wrote
	used      int64 // highest sequence handed out under it
}

// defaultReserve is how many sequence numbers one counter write reserves.
// A restarted writer skips the unused rest; readers accept gaps.
const defaultReserve = 1024

// Sequence returns the persisted counter of d (0 if none): no message of d
// has a higher sequence, and the next one sent will have a higher one.
func (c *Channel) Sequence(d Direction) (int64, error) {
	data, err := readFileAt(c.root, sequenceFile(d), maxControlBytes, c.uid)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return c.parseSequence(d, data)
}

func (c *Channel) parseSequence(d Direction, data []byte) (int64, error) {
	f, err := fields(data)
	if err == nil {
		err = checkIdentity(f, c.identity())
	}
	var seq int64
	if err == nil {
		seq, err = safeIntField(f, "sequence", 1)
	}
	if err != nil {
		return 0, fmt.Errorf("invalid talk sequence counter %s: %w", sequenceFile(d), err)
	}
	return seq, nil
}

// Send writes one message into the inbox of d; see SendBatch. If it returns
// an error together with a message, that message was published but its
// durability is uncertain; resending it would deliver it twice.
func (c *Channel) Send(d Direction, text string) (Message, error) {
	ms, err := c.SendBatch(d, []string{text})
	if len(ms) == 0 {
		return Message{}, err
	}
	return ms[0], err
}

// SendBatch writes messages into the inbox of d in order. The sequence
// counter is persisted first whenever the batch needs numbers beyond the
// block reserved by the last counter write; then each payload is written to
// a temp file and fsynced, renamed into place, and the inbox directory is
// fsynced once.
// On error the returned prefix was published (possibly not yet durably) and
// the rest was not; the unused sequence numbers leave a gap, which readers
// accept.
// An oversized message fails the batch before anything is written.
func (c *Channel) SendBatch(d Direction, texts []string) ([]Message, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("send: unknown direction %q", d)
	}
	if len(texts) == 0 {
		return nil, nil
	}
	inbox := c.inbox[d]
	mu := c.send[d]
	mu.Lock()
	defer mu.Unlock()
	// flock on the inbox enforces the one-writer-per-direction rule across
	// processes instead of trusting every writer to keep it.
	if err := unix.Flock(int(inbox.Fd()), unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("send to %s: lock inbox: %w", c.dir, err)
	}
	defer unix.Flock(int(inbox.Fd()), unix.LOCK_UN)
	if err := c.stillNamed(); err != nil {
		return nil, fmt.Errorf("send to %s: %w", c.dir, err)
	}

	if !c.swept[d] {
		c.sweepTemps(d)
		c.swept[d] = true
	}
	persisted, err := c.sequenceIfChanged(d)
	if err != nil {
		return nil, fmt.Errorf("send to %s: %w", c.dir, err)
	}
	// The counter on disk is a reservation: numbers up to it may be handed
	// out without another counter write. Re-reading it on every send (a
	// cheap read, no fsync) detects any other writer and drops the lease.
	used := persisted
	if l := c.lease[d]; l.persisted == persisted && l.used > 0 {
		used = l.used
	}
	if used > maxSafeInteger-int64(len(texts)) {
		return nil, fmt.Errorf("send to %s: talk sequence exhausted", c.dir)
	}
	last := used + int64(len(texts))
	now := c.now().UnixMilli()
	msgs := make([]Message, len(texts))
	payloads := make([][]byte, len(texts))
	for i, text := range texts {
		w := wireMessage{Version: 1, ID: NewID(), Sequence: used + 1 + int64(i), RunID: c.manifest.RunID,
			Token: c.manifest.Token, CreatedAt: now, Message: text}
		data := encodeMessage(w)
		if len(data) > MaxMessageBytes {
			return nil, fmt.Errorf("send to %s: message %d is %d bytes serialized, over the %d byte limit", c.dir, i, len(data), MaxMessageBytes)
		}
		payloads[i] = data
		msgs[i] = Message{Direction: d, ID: w.ID, Sequence: w.Sequence, RunID: w.RunID, CreatedAt: now, Text: text}
	}
	if last > persisted {
		target := min(last+c.reserve, maxSafeInteger)
		counter, err := encodeJSON(sequenceRecord{RunID: c.manifest.RunID, Token: c.manifest.Token, Sequence: target})
		if err != nil {
			return nil, fmt.Errorf("send to %s: encode counter: %w", c.dir, err)
		}
		if err := writeAtomic(c.root, sequenceFile(d), counter, c.fault); err != nil {
			c.lease[d] = seqLease{}
			return nil, fmt.Errorf("send to %s: persist sequence: %w", c.dir, err)
		}
		persisted = target
	}
	// From here on the numbers are spent: a failed payload leaves a gap,
	// never a reused sequence.
	c.lease[d] = seqLease{persisted: persisted, used: last}
	pending, err := c.createTemps(inbox, msgs, payloads)
	if err != nil {
		return nil, fmt.Errorf("send to %s: %w", c.dir, err)
	}
	cleanup := func() {
		for _, p := range pending {
			_ = unix.Unlinkat(int(inbox.Fd()), p.tmp, 0)
		}
	}
	for i, p := range pending {
		if err := publish(inbox, p, c.fault); err != nil {
			pending = pending[i+1:]
			cleanup()
			return msgs[:i], fmt.Errorf("send to %s: %w", c.dir, err)
		}
	}
	if err := syncDir(inbox, c.fault); err != nil {
		// The files are visible (and may be delivered) but may not survive
		// a crash; returning them lets the caller avoid a duplicate resend.
		return msgs, fmt.Errorf("send to %s: %w", c.dir, err)
	}
	return msgs, nil
}

// createTemps writes and fsyncs the temp files of a batch concurrently, so
// the filesystem can commit their fsyncs together.
func (c *Channel) createTemps(inbox *os.File, msgs []Message, payloads [][]byte) ([]pendingFile, error) {
	pending := make([]pendingFile, len(payloads))
	errs := make([]error, len(payloads))
	if len(payloads) == 1 {
		pending[0], errs[0] = createTemp(inbox, Safe(msgs[0].ID)+".json", payloads[0], c.pid, c.fault)
	} else {
		var wg sync.WaitGroup
		sem := make(chan struct{}, maxParallelSyncs)
		for i := range payloads {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				pending[i], errs[i] = createTemp(inbox, Safe(msgs[i].ID)+".json", payloads[i], c.pid, c.fault)
			}()
		}
		wg.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		for _, p := range pending {
			if p.tmp != "" {
				_ = unix.Unlinkat(int(inbox.Fd()), p.tmp, 0)
			}
		}
		return nil, err
	}
	return pending, nil
}

// maxParallelSyncs bounds the goroutines (and open files) of one batch.
const maxParallelSyncs = 32

// sweepTemps removes temp files left by a writer of d that died mid-write.
// Only the writer of d creates temp files in its inbox and for its counter,
// and the caller holds that writer's lock, so none of them is in use.
func (c *Channel) sweepTemps(d Direction) {
	sweep := func(dir *os.File, prefix string) {
		names, err := listNames(dir)
		if err != nil {
			return
		}
		for _, n := range names {
			if strings.HasSuffix(n, ".tmp") && strings.HasPrefix(n, prefix) {
				_ = unix.Unlinkat(int(dir.Fd()), n, 0)
			}
		}
	}
	sweep(c.inbox[d], "")
	sweep(c.root, sequenceFile(d)+".")
}

// Problem is a protocol or I/O error found while reading a channel. The
// offending file is left on disk for inspection.
type Problem struct {
	Path string // the file or directory concerned
	Err  error
	// key identifies the unchanged failure: same file content and error.
	key string
}

// Error returns the underlying error's message, which names the file.
func (p Problem) Error() string { return p.Err.Error() }

// Unwrap exposes the cause, e.g. ErrInsecure or a syscall error.
func (p Problem) Unwrap() error { return p.Err }

// Pending lists the valid messages in the inbox of d in sequence order and
// reports every file that could not be accepted. Temp files are ignored.
func (c *Channel) Pending(d Direction) ([]Message, []Problem, error) {
	msgs, problems, _, err := c.pendingAfter(d, -1)
	return msgs, problems, err
}

// pendingAfter is Pending for a receiver whose delivered mark of d is
// after (-1 when unknown): a listing whose messages above the mark carry
// every sequence from after+1 on is complete, so the inbox is listed once
// instead of twice in the common case. complete is false when the inbox
// was still growing after maxListRounds passes and the newest messages
// were left for a later scan.
func (c *Channel) pendingAfter(d Direction, after int64) (msgs []Message, problems []Problem, complete bool, err error) {
	inbox, ok := c.inbox[d]
	if !ok {
		return nil, nil, false, fmt.Errorf("list %s: unknown direction %q", c.dir, d)
	}
	list := c.list
	if list == nil {
		list = listNames
	}
	// readdir may miss a file renamed in while it runs yet return a later
	// one, which would let sequence k+1 overtake k. Listing again until a
	// pass finds nothing new closes that gap: anything published before a
	// pass starts is seen by that pass. Writers publish in sequence order,
	// so once the passes so far show no gap above the delivered mark they
	// missed nothing a message they saw could overtake: the usual scan
	// lists once.
	seen := map[string]bool{}
	var cutoff int64 = -1
	for round := 0; ; round++ {
		names, err := list(inbox)
		if round == 0 && (err != nil || len(names) == 0) {
			// The held descriptors of a removed channel list an empty
			// inbox or fail (getdents of a deleted directory), which
			// must not pass for an empty or broken one. Only then is the
			// channel stat'ed: a directory is removed only once empty.
			if perr := c.checkPresent(); perr != nil {
				return nil, nil, false, fmt.Errorf("list %s: %w", inbox.Name(), perr)
			}
		}
		if err != nil {
			return nil, nil, false, fmt.Errorf("list %s: %w", inbox.Name(), err)
		}
		var maxBefore int64
		for _, m := range msgs {
			maxBefore = max(maxBefore, m.Sequence)
		}
		added := 0
		for _, name := range names {
			if seen[name] || !strings.HasSuffix(name, ".json") {
				continue
			}
			seen[name] = true
			added++
			m, perr := c.readMessage(inbox, d, name)
			if perr != nil {
				if !errors.Is(perr.Err, os.ErrNotExist) { // acknowledged meanwhile
					problems = append(problems, *perr)
				}
				continue
			}
			msgs = append(msgs, m)
		}
		if added == 0 || contiguousAbove(msgs, after) {
			break
		}
		if round == maxListRounds {
			// Still growing: keep only what an earlier pass vouches for;
			// the rest is picked up by the wake its own rename causes.
			cutoff = maxBefore
			break
		}
	}
	if cutoff >= 0 {
		kept := msgs[:0]
		for _, m := range msgs {
			if m.Sequence <= cutoff {
				kept = append(kept, m)
			}
		}
		msgs = kept
	}
	sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].Sequence < msgs[j].Sequence })
	return msgs, problems, cutoff < 0, nil
}

// contiguousAbove reports whether the sequences of msgs above after are
// exactly after+1, after+2, ... (none is contiguous too); a negative after
// means the mark is unknown, and nothing is.
func contiguousAbove(msgs []Message, after int64) bool {
	if after < 0 {
		return false
	}
	var above []int64
	for _, m := range msgs {
		if m.Sequence > after {
			above = append(above, m.Sequence)
		}
	}
	slices.Sort(above)
	for i, s := range above {
		if s != after+1+int64(i) {
			return false
		}
	}
	return true
}

func (c *Channel) readMessage(inbox *os.File, d Direction, name string) (Message, *Problem) {
	m, fd, perr := c.readMessageOpen(inbox, d, name)
	if perr == nil {
		unix.Close(fd)
	}
	return m, perr
}

// readMessageOpen is readMessage leaving the file open when it accepts it
// (see readFileAtOpen): the caller closes fd.
func (c *Channel) readMessageOpen(inbox *os.File, d Direction, name string) (Message, int, *Problem) {
	data, fd, err := readFileAtOpen(inbox, name, MaxMessageBytes, c.uid)
	var m Message
	if err == nil {
		var ok bool
		if m, ok = decodeMessageFast(data, d, c.identity()); !ok {
			m, err = decodeMessage(data, d, c.identity())
		}
	}
	if err == nil && Safe(m.ID)+".json" != name {
		err = fmt.Errorf("file name does not match message id %q", m.ID)
	}
	if err == nil {
		return m, fd, nil
	}
	if fd >= 0 {
		unix.Close(fd)
	}
	// The key names this version of the file, so an unchanged rejected file
	// is reported once; only rejected files pay for the extra stat.
	path := filepath.Join(inbox.Name(), name)
	key := path
	var st unix.Stat_t
	if unix.Fstatat(int(inbox.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		key = fmt.Sprintf("%s\x00%d\x00%d\x00%d", path, st.Ino, st.Size, st.Mtim.Nano())
	}
	return Message{}, -1, &Problem{Path: path, Err: fmt.Errorf("rejected message %s: %w", path, err), key: key + "\x00" + err.Error()}
}

// maxListRounds bounds the re-listing of a busy inbox in Pending.
const maxListRounds = 4

// ErrRemoved reports a channel whose directory was deleted while open.
var ErrRemoved = errors.New("channel directory was removed")

// checkPresent detects a removed channel: the held descriptors keep working
// on an unlinked directory, which would otherwise look like an empty inbox.
func (c *Channel) checkPresent() error {
	var st unix.Stat_t
	if err := unix.Fstat(int(c.root.Fd()), &st); err != nil {
		return err
	}
	if st.Nlink == 0 {
		return ErrRemoved
	}
	return nil
}

// Acknowledge removes a delivered message from the inbox. It must only be
// called once the receiver has recorded a receipt for m; a missing file is
// not an error. The unlink is not fsynced: if it is lost in a crash, the
// receipt suppresses redelivery and the next scan removes the file again.
func (c *Channel) Acknowledge(m Message) error {
	inbox, ok := c.inbox[m.Direction]
	if !ok {
		return fmt.Errorf("acknowledge in %s: unknown direction %q", c.dir, m.Direction)
	}
	err := unix.Unlinkat(int(inbox.Fd()), Safe(m.ID)+".json", 0)
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("acknowledge %s in %s: %w", m.ID, inbox.Name(), err)
	}
	return nil
}

// AsideSuffix ends the name of an inbox file a receiver refused as a
// replay and moved aside: out of the inbox's message names (so it no
// longer retains the channel) but kept beside them for inspection.
const AsideSuffix = ".replayed"

// SetAside renames the inbox file of m to its name plus AsideSuffix and
// returns the new path.
func (c *Channel) SetAside(m Message) (string, error) {
	inbox, ok := c.inbox[m.Direction]
	if !ok {
		return "", fmt.Errorf("set aside in %s: unknown direction %q", c.dir, m.Direction)
	}
	name := Safe(m.ID) + ".json"
	if err := unix.Renameat(int(inbox.Fd()), name, int(inbox.Fd()), name+AsideSuffix); err != nil {
		return "", fmt.Errorf("set aside %s in %s: %w", m.ID, inbox.Name(), err)
	}
	return filepath.Join(inbox.Name(), name+AsideSuffix), nil
}

// ErrRetained is returned by Remove while Sub→Main messages are still queued.
var ErrRetained = errors.New("channel retained: Sub-to-Main messages are still queued")

// Remove deletes the channel directory once the Main has received every
// queued Sub→Main message; until then it returns ErrRetained and keeps the
// channel (and its closed state) on disk. The channel is closed either way
// only on success.
func (c *Channel) Remove() error {
	names, err := listNames(c.inbox[ToMain])
	if err != nil {
		return fmt.Errorf("remove %s: %w", c.dir, err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".json") {
			return fmt.Errorf("remove %s: %w", c.dir, ErrRetained)
		}
	}
	if err := c.Close(); err != nil {
		return fmt.Errorf("remove %s: %w", c.dir, err)
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("remove %s: %w", c.dir, err)
	}
	return nil
}
