package server

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/simhashdb/simhashdb/internal/archive"
)

// AppliedHeader is the header of GET /v1/snapshot that gives the
// snapshot's applied position (engine.DB.Applied of the index it holds).
const AppliedHeader = "Simhashdb-Applied"

// snapshot answers GET /v1/snapshot: a checkpoint of the index
// (engine.DB.Checkpoint), as a tar of its folder, from which a new node
// of a replicated index starts (serve --snapshot-from). The checkpoint is
// written beside the index, its files linked, and removed once sent; one
// at a time.
func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) error {
	if !s.snapshotMu.TryLock() {
		return busy{errors.New("a snapshot is being sent: one at a time")}
	}
	defer s.snapshotMu.Unlock()
	parent := filepath.Dir(s.db.Path())
	prefix := "." + filepath.Base(s.db.Path()) + ".snapshot-"
	// A scratch folder here now was left by a process killed while it
	// sent a snapshot: this one holds the index and the only snapshot.
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		d := filepath.Join(parent, e.Name())
		if err := os.RemoveAll(d); err != nil {
			s.opts.Logger.Warn("simhashdb server: removing a snapshot's scratch folder left by a process killed while sending it", "dir", d, "err", err)
		}
	}
	tmp, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "index")
	applied, err := s.db.Checkpoint(r.Context(), dir)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set(AppliedHeader, strconv.FormatUint(applied, 10))
	w.WriteHeader(http.StatusOK)
	if err := archive.Write(w, dir); err != nil {
		// The answer has begun: the client sees a tar cut short.
		s.opts.Logger.Error("simhashdb server: sending a snapshot", "err", err)
	}
	return nil
}
