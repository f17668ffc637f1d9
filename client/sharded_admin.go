package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/textindex"
)

// This file holds what a sharded index says about itself: its statistics,
// its check and its settings, each gathered from every shard.

// Stats returns the shards' statistics as one index's: their documents,
// bytes, caches and reads added, their settings (K, the design, the
// sketch and block sizes) those of the first shard, which every shard
// must share. Fingerprints counts each shard's distinct fingerprints (one
// kept by two shards counts twice), and BitsPerFingerprint and
// EntropyBound are over that count. A figure a damaged shard cannot give
// makes the error a *engine.StatsError naming the shard, with every
// other figure filled.
func (s *Sharded) Stats(ctx context.Context) (engine.Stats, error) {
	per := make([]engine.Stats, len(s.shards))
	statsErrs := make([]error, len(s.shards))
	err := s.each(ctx, func(ctx context.Context, i int, c *Client) error {
		st, err := c.Stats(ctx)
		if err != nil && !errors.As(err, new(*engine.StatsError)) {
			return err
		}
		per[i], statsErrs[i] = st, err
		return nil
	})
	if err != nil {
		return engine.Stats{}, err
	}
	out := per[0]
	out.Tables = append([]engine.TableStats(nil), per[0].Tables...)
	out.BlockVersions = maps.Clone(per[0].BlockVersions)
	if out.BlockVersions == nil {
		out.BlockVersions = map[string]int{}
	}
	bits := per[0].BitsPerFingerprint * float64(per[0].Fingerprints)
	for i, st := range per[1:] {
		i++
		if st.K != out.K || st.SketchSize != out.SketchSize || len(st.Tables) != len(out.Tables) {
			return engine.Stats{}, fmt.Errorf("shard %d: k %d, %d tables, sketches of %d bytes; shard 0: k %d, %d tables, sketches of %d bytes: the shards of one index share its settings",
				i, st.K, len(st.Tables), st.SketchSize, out.K, len(out.Tables), out.SketchSize)
		}
		for t, ts := range st.Tables {
			o := &out.Tables[t]
			o.Blocks += ts.Blocks
			o.Bytes += ts.Bytes
			o.Codes += ts.Codes
			o.Pending += ts.Pending
		}
		for v, n := range st.BlockVersions {
			out.BlockVersions[v] += n
		}
		bits += st.BitsPerFingerprint * float64(st.Fingerprints)
		out.ExactWithin = min(out.ExactWithin, st.ExactWithin) // shards with several designs are exact within the least
		out.Documents += st.Documents
		out.Fingerprints += st.Fingerprints
		out.TableBytes += st.TableBytes
		out.PendingWrites += st.PendingWrites
		out.MemtableBytes += st.MemtableBytes
		out.MemtableBudget += st.MemtableBudget
		out.MemtablesMax += st.MemtablesMax
		out.WALBytes += st.WALBytes
		out.PebbleBytes += st.PebbleBytes
		out.BytesOnDisk += st.BytesOnDisk
		out.CacheSize += st.CacheSize
		out.CacheBytes += st.CacheBytes
		out.CacheHits += st.CacheHits
		out.CacheMisses += st.CacheMisses
		out.PebbleCacheHit += st.PebbleCacheHit
		out.PebbleCacheBytes += st.PebbleCacheBytes
		out.PebbleCacheSize += st.PebbleCacheSize
		out.PebbleIndexBytes += st.PebbleIndexBytes
		out.CacheForIndex = max(out.CacheForIndex, st.CacheForIndex)
		out.FileReads += st.FileReads
		out.FileReadRounds += st.FileReadRounds
		out.ReadSubmits += st.ReadSubmits
		out.ReadSubmitTime += st.ReadSubmitTime
		out.ReadWaitTime += st.ReadWaitTime
		out.ReadRing = out.ReadRing && st.ReadRing
		out.ReadDirect = out.ReadDirect && st.ReadDirect
		out.Applied = 0 // each shard has its own log
	}
	if out.Fingerprints > 0 {
		out.BitsPerFingerprint = bits / float64(out.Fingerprints)
		out.EntropyBound = codec.Bound(int(out.Fingerprints))
	}
	for i, err := range statsErrs {
		if err != nil {
			return out, fmt.Errorf("shard %d: %w", i, err)
		}
	}
	return out, nil
}

// Check verifies every shard's stored bytes and returns their reports
// added; damage in any shard matches engine.ErrCorrupt and names it.
func (s *Sharded) Check(ctx context.Context) (engine.CheckReport, error) {
	per := make([]engine.CheckReport, len(s.shards))
	errs := make([]error, len(s.shards))
	err := s.each(ctx, func(ctx context.Context, i int, c *Client) error {
		per[i], errs[i] = c.Check(ctx)
		if errs[i] != nil && !errors.Is(errs[i], engine.ErrCorrupt) {
			return errs[i]
		}
		return nil
	})
	if err != nil {
		return engine.CheckReport{}, err
	}
	out := engine.CheckReport{BlockVersions: map[string]int64{}}
	for i, r := range per {
		out.Documents += r.Documents
		out.Postings += r.Postings
		out.Fingerprints += r.Fingerprints
		out.Blocks += r.Blocks
		out.WALRecords += r.WALRecords
		for v, n := range r.BlockVersions {
			out.BlockVersions[v] += n
		}
		for _, u := range r.Unlisted {
			out.Unlisted = append(out.Unlisted, fmt.Sprintf("shard %d: %s", i, u))
		}
		if errs[i] != nil {
			errs[i] = fmt.Errorf("shard %d: %w", i, errs[i])
		}
	}
	return out, errors.Join(errs...)
}

// Meta returns the setting name, which every shard must hold alike
// (engine.ErrNotFound when none holds it).
func (s *Sharded) Meta(ctx context.Context, name string) ([]byte, error) {
	per := make([][]byte, len(s.shards))
	errs := make([]error, len(s.shards))
	err := s.each(ctx, func(ctx context.Context, i int, c *Client) error {
		per[i], errs[i] = c.Meta(ctx, name)
		if errs[i] != nil && !errors.Is(errs[i], engine.ErrNotFound) {
			return errs[i]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	held := func(i int) string {
		if errs[i] != nil {
			return "none"
		}
		return fmt.Sprintf("%q", trimmedSetting(per[i]))
	}
	for i := 1; i < len(per); i++ {
		if (errs[i] == nil) != (errs[0] == nil) || !bytes.Equal(per[i], per[0]) {
			return nil, fmt.Errorf("setting %q: shard %d holds %s, shard 0 %s: the shards of one index share its settings", name, i, held(i), held(0))
		}
	}
	return per[0], errs[0]
}

// SetMeta keeps a setting in every shard, as each keeps it (a shard that
// holds another value refuses it).
func (s *Sharded) SetMeta(ctx context.Context, name string, value []byte) error {
	return s.each(ctx, func(ctx context.Context, _ int, c *Client) error {
		return c.SetMeta(ctx, name, value)
	})
}

// TextSchema is how the index reads text (nil in an index of
// fingerprints), which every shard must share.
func (s *Sharded) TextSchema(ctx context.Context) (*textindex.Schema, error) {
	per := make([]*textindex.Schema, len(s.shards))
	err := s.each(ctx, func(ctx context.Context, i int, c *Client) (err error) {
		per[i], err = c.TextSchema(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	for i, sc := range per[1:] {
		if (sc == nil) != (per[0] == nil) || sc != nil && *sc != *per[0] {
			return nil, fmt.Errorf("shard %d reads text otherwise than shard 0: the shards of one index share its settings", i+1)
		}
	}
	return per[0], nil
}

// trimmedSetting is a setting's value short enough for an error.
func trimmedSetting(v []byte) []byte {
	if len(v) > 80 {
		return append(v[:77:77], "..."...)
	}
	return v
}
