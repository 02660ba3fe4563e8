// Package channel implements the private file channel between a Main Pi and
// one Sub Pi: a per-run directory with two inboxes, per-direction sequence
// counters and small control files, written durably and read defensively.
//
// The on-disk layout and JSON shapes are those of TypeScript Facets, so that
// a channel written by one implementation can be read by the other. Where this
// package deliberately goes further:
//
//   - Durability: every write is temp file + fsync + rename + directory
//     fsync, so a crash never leaves a partial or lost message.
//   - One writer per direction is enforced with flock on the inbox, not only
//     by convention.
//   - The sequence file holds a reservation, not the last number used: one
//     counter write (with its fsync) covers the next 1,024 numbers of that
//     writer, where the TypeScript Facets writes the counter on every send
//     and stores the number it just used. Mixed writers (one direction
//     written by this package and by the TypeScript Facets in turn, e.g.
//     across an upgrade, never at once) still order correctly, because both read the counter before
//     every send (a stat against the version last read, which stays open so no
//     new version can take its inode number) and only go above it, and the counter is never below any
//     number either has used: the reference's next number skips the rest of
//     a reservation, and a writer here that finds the counter changed drops
//     its reservation and continues above the new value. The cost is gaps
//     (unused reserved numbers, or a restarted writer's), which readers
//     here and in the reference accept, since they only sort by sequence.
//   - A writer holds the inbox lock from reading the counter until its files
//     are renamed into place, so messages are published in sequence order
//     even with several writers. A receiver relies on it: a new message at
//     or below a sequence it already delivered is refused as a replay
//     (renamed to <id>.json.replayed beside the inbox's messages, so it is
//     kept for inspection but no longer retains the channel, and reported
//     once), except one that was already waiting in the inbox, e.g. a
//     failed submission retried.
//   - One writer per direction at a time is the rule every writer must
//     keep. This package enforces it with the lock; the TypeScript writer
//     takes no lock and does not fsync its counter, so it must stay the
//     only writer of its direction, and a power loss can make it reuse a
//     sequence: its next message is then refused as a replay, and the
//     refusal names that cause.
//   - A corrupt or foreign inbox file is reported and skipped instead of
//     blocking the whole channel; it stays on disk for inspection.
//   - Symlinks and foreign owners are refused on the channel directories and
//     files, and group/other permission bits on the directories; files are
//     written 0600 and sit inside those 0700 directories.
//   - The watcher scans a quiet channel at once on its first wake and
//     coalesces only the wakes that arrive while scans run into one more
//     scan, instead of waiting a fixed coalescing window. On Linux a wake
//     by renamed-in message files alone delivers the file that carries
//     the next sequence without listing the inbox (Receiver.ScanMoved):
//     below it every message is acknowledged or in flight, so there is
//     nothing it could overtake. Any other wake or doubt (a gap, an
//     unknown, rejected or receipted file, an overflow, a release) takes
//     the full scan, which keeps every rule above.
package channel
