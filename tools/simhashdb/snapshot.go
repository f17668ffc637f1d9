package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
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
		os.RemoveAll(dir)
		return false, 0, fmt.Errorf("--snapshot-from %s: %w (nothing kept)", peer, err)
	}
	return true, applied, nil
}
