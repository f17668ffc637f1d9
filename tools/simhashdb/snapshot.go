package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/archive"
	"github.com/simhashdb/simhashdb/server"
)

// startFromSnapshot puts a peer's snapshot (GET /v1/snapshot of the serve
// at peer) into dir when dir holds no index yet, and returns whether it did
// and the snapshot's applied position. A new node of a replicated index
// starts from it and applies the stream from there on, instead of the
// whole stream.
func startFromSnapshot(ctx context.Context, peer, token, dir string) (bool, uint64, error) {
	if ok, err := engine.Exists(dir); err != nil || ok {
		return false, 0, err
	}
	// Only a new or empty folder takes a snapshot: one that holds other
	// files is the user's, left as it is.
	names, err := os.ReadDir(dir)
	existed := err == nil
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return false, 0, fmt.Errorf("--db %s: %w", dir, err)
	case len(names) > 0:
		return false, 0, fmt.Errorf("--db %s holds %d files and no index: a snapshot goes into a new or empty folder; nothing was changed", dir, len(names))
	}
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(peer, "/")+"/v1/snapshot", nil)
	if err != nil {
		return false, 0, fmt.Errorf("--snapshot-from %s: %w", peer, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, 0, fmt.Errorf("--snapshot-from %s: %w", peer, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return false, 0, fmt.Errorf("--snapshot-from %s: %s: %s", peer, resp.Status, strings.TrimSpace(string(b)))
	}
	applied, err := strconv.ParseUint(resp.Header.Get(server.AppliedHeader), 10, 64)
	if err != nil {
		return false, 0, fmt.Errorf("--snapshot-from %s: header %s %q: not a position", peer, server.AppliedHeader, resp.Header.Get(server.AppliedHeader))
	}
	if err := archive.Extract(resp.Body, dir); err != nil {
		// What the snapshot wrote goes; a folder the user made stays.
		written, _ := os.ReadDir(dir)
		for _, e := range written {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
		if !existed {
			os.Remove(dir)
		}
		return false, 0, fmt.Errorf("--snapshot-from %s: %w (nothing kept)", peer, err)
	}
	return true, applied, nil
}
