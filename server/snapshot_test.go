package server

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/archive"
)

// TestSnapshot: GET /v1/snapshot sends the index as a tar that opens as a
// copy of it, with its position; the scratch folder a process killed while
// sending one left beside the index is removed, and the snapshot's own.
func TestSnapshot(t *testing.T) {
	ts, db := testServer(t, Options{Token: "s3cret"})
	ctx := context.Background()
	var docs []engine.Doc
	for i := range 50 {
		docs = append(docs, engine.Doc{ID: uint64(i + 1), Fingerprint: uint64(i) * 0x9e3779b97f4a7c15, Name: "d" + strconv.Itoa(i)})
	}
	require.NoError(t, db.InsertBatch(ctx, docs[:30]))
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.InsertBatch(ctx, docs[30:])) // in the log only
	parent := filepath.Dir(db.Path())
	stale := filepath.Join(parent, "."+filepath.Base(db.Path())+".snapshot-123")
	require.NoError(t, os.MkdirAll(filepath.Join(stale, "index"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stale, "index", "000001.sst"), []byte("left"), 0o644))

	r := call(t, ts, "GET", "/v1/snapshot", "")
	assert.Equal(t, 401, r.status, "no token, no snapshot")
	r = call(t, ts, "GET", "/v1/snapshot", "", "Authorization", "Bearer s3cret")
	require.Equal(t, 200, r.status, r.body)
	assert.Equal(t, "application/x-tar", r.header.Get("Content-Type"))
	assert.Equal(t, strconv.FormatUint(db.Applied(), 10), r.header.Get(AppliedHeader))
	assert.NoDirExists(t, stale)
	left, err := os.ReadDir(parent)
	require.NoError(t, err)
	for _, e := range left {
		assert.NotContains(t, e.Name(), ".snapshot-", "the snapshot's scratch is removed once sent")
	}

	copyDir := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, archive.Extract(strings.NewReader(r.body), copyDir))
	cp, err := engine.Open(copyDir, engine.Options{ReadOnly: true})
	require.NoError(t, err)
	defer cp.Close()
	var got []engine.Doc
	for d, err := range cp.Docs(ctx) {
		require.NoError(t, err)
		got = append(got, d)
	}
	assert.Equal(t, docs, got, "the flushed documents and those in the log")
}
