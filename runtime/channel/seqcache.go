package channel

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// seqStamp identifies one version of a sequence counter file. Every counter
// write replaces the file by rename, so a new version is a new inode (with
// its own change time), whoever wrote it. The version read is held open:
// a file system may give a new file the inode number of one just deleted
// (ext4 does, within the same clock tick as well), and an open file keeps
// its number taken.
type seqStamp struct {
	dev, ino, size int64
	ctime, mtime   unix.Timespec
	value          int64
	pin            *os.File
}

func stampOf(st *unix.Stat_t) seqStamp {
	return seqStamp{dev: int64(st.Dev), ino: int64(st.Ino), size: st.Size, ctime: st.Ctim, mtime: st.Mtim}
}

func (s seqStamp) same(o seqStamp) bool {
	return s.dev == o.dev && s.ino == o.ino && s.size == o.size && s.ctime == o.ctime && s.mtime == o.mtime
}

// sequenceIfChanged returns the persisted counter of d like Sequence, but
// reads and parses the file only when a stat shows it is not the version
// read last time. Re-reading it on every send was a third of a send's cost
// on tmpfs; a stat still detects another writer's counter write.
func (c *Channel) sequenceIfChanged(d Direction) (int64, error) {
	var st unix.Stat_t
	err := unix.Fstatat(int(c.root.Fd()), sequenceFile(d), &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		c.forgetSequence(d)
		return 0, nil
	}
	if err != nil {
		return c.Sequence(d) // reports the failure with the file's name
	}
	if seen, ok := c.seqSeen[d]; ok && seen.same(stampOf(&st)) {
		return seen.value, nil
	}
	// The stamp kept is that of the file read, not of the stat above.
	f, fst, data, err := openReadAt(c.root, sequenceFile(d), maxControlBytes, c.uid)
	c.forgetSequence(d)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	v, err := c.parseSequence(d, data)
	if err != nil {
		f.Close()
		return 0, err
	}
	if c.seqSeen == nil {
		c.seqSeen = map[Direction]seqStamp{}
	}
	stamp := stampOf(&fst)
	stamp.value, stamp.pin = v, f
	c.seqSeen[d] = stamp
	return v, nil
}

// forgetSequence drops the cached counter version of d and lets its inode go.
func (c *Channel) forgetSequence(d Direction) {
	if seen, ok := c.seqSeen[d]; ok {
		seen.pin.Close()
		delete(c.seqSeen, d)
	}
}
