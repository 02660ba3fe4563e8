package subs

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/facets-dev/facets/internal/safefile/safefiletest"
)

// FuzzStoreRecords feeds a run record and a binding, files any process of
// the user can edit or tear, to LoadRun, Runs and LoadBinding. They must
// never panic; a refusal names the file and leaves it on disk; Runs agrees
// with LoadRun, reporting a bad record as a BadRecordsError instead of
// failing; and what is accepted survives SaveRun/LoadRun (SaveBinding/
// LoadBinding) under its own ids unchanged.
func FuzzStoreRecords(f *testing.F) {
	f.Add([]byte(`{"version":1,"runId":"run-1","mainSessionId":"main-1","title":"T","cwd":"/w","profileName":"review",
		"sessionPersistence":"ephemeral","channelDir":"/rt/main-1/run-1","createdAt":1,"updatedAt":2,
		"surface":{"adapter":"herdr","tabId":"w1:t2","paneId":"w1:p3","promptSeq":4},"tools":["read"],"skills":[]}`),
		[]byte(`{"mainSessionId":"main-1","profileName":"review","runId":"run-1"}`))
	f.Add([]byte(`{"runId":"../../x","mainSessionId":"..","closedAt":-1,"launchPid":2147483648,"launchError":"\ud800"}`),
		[]byte(`{"runId":7}`))
	f.Add([]byte(`{"surface":null,"tools":null,"createdAt":1e3}`), []byte(`null`))
	f.Add([]byte(`{"createdAt":1.5}`), []byte(`[]`))
	f.Add([]byte(`{} trailing`), []byte(``))
	f.Fuzz(func(t *testing.T, run, binding []byte) {
		st := Store{Dir: t.TempDir()}
		runFile, bindingFile := st.runPath("main-1", "run-1"), st.bindingPath("main-1", "review")
		safefiletest.Put(t, runFile, run)
		safefiletest.Put(t, bindingFile, binding)

		r, ok, err := st.LoadRun("main-1", "run-1")
		runs, lerr := st.Runs("main-1")
		var bad BadRecordsError
		if err != nil {
			safefiletest.Kept(t, err, runFile, run)
			if !errors.As(lerr, &bad) || len(bad) != 1 || len(runs) != 0 || !strings.Contains(bad[0].Error(), runFile) {
				t.Fatalf("Runs = %v, %v; want one bad record naming %s", runs, lerr, runFile)
			}
		} else {
			if !ok || lerr != nil || len(runs) != 1 || !cmp.Equal(runs[0], r) {
				t.Fatalf("LoadRun = %+v, %v but Runs = %v, %v", r, ok, runs, lerr)
			}
			other := Store{Dir: t.TempDir()}
			if err := other.SaveRun(r); err != nil {
				t.Fatal(err)
			}
			back, ok, err := other.LoadRun(r.MainSessionID, r.RunID)
			if err != nil || !ok {
				t.Fatalf("saved run not loaded back: %v, %v", ok, err)
			}
			if diff := cmp.Diff(r, back, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("run record round trip (-loaded +saved and reloaded):\n%s", diff)
			}
		}

		b, ok, err := st.LoadBinding("main-1", "review")
		if err != nil {
			safefiletest.Kept(t, err, bindingFile, binding)
			return
		}
		if !ok {
			t.Fatal("binding present but not found")
		}
		other := Store{Dir: t.TempDir()}
		if err := other.SaveBinding(b); err != nil {
			t.Fatal(err)
		}
		back, ok, err := other.LoadBinding(b.MainSessionID, b.ProfileName)
		if err != nil || !ok || back != b {
			t.Fatalf("binding round trip: %+v -> %+v, %v, %v", b, back, ok, err)
		}
	})
}
