package bench

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/simhashdb/simhashdb/bench/chart"
	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/huffman"
	"github.com/simhashdb/simhashdb/internal/compression"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
)

// CodecRow is the codec measured on one sorted table.
type CodecRow struct {
	Dist      string  `json:"distribution"`
	N         int     `json:"n"` // distinct fingerprints
	Blocks    int     `json:"blocks"`
	Bytes     int64   `json:"bytes"`
	BitsPerFP float64 `json:"bits_per_fp"` // the blocks, as the index's stats count them
	// WithKeys adds each block's 8-byte key, its last fingerprint, which
	// the index keeps as the block's key and the block does not repeat:
	// what a set kept alone costs.
	WithKeys   float64 `json:"with_keys_bits_per_fp"`
	Bound      float64 `json:"bound_bits_per_fp"`
	OverBound  float64 `json:"over_bound_pct"`
	EncodeMfps float64 `json:"encode_mfp_per_s"`
	DecodeMfps float64 `json:"decode_mfp_per_s"`
	// The same sorted fingerprints as plain 8-byte Pebble keys, by block
	// compression; raw is 64.
	PebbleNone   float64 `json:"pebble_none_bits_per_fp"`
	PebbleSnappy float64 `json:"pebble_snappy_bits_per_fp"`
	PebbleZstd   float64 `json:"pebble_zstd_bits_per_fp"`
	// The same set every other way (compression.Measure, as the
	// compression command reports it).
	Others []compression.Row `json:"others"`
}

// CodecResults is the codec section of a run.
type CodecResults struct {
	BlockSize int        `json:"block_size"`
	Rows      []CodecRow `json:"rows"`
	// Histograms of h (the paper's Figure 2a) of the largest uniform and
	// clustered tables.
	HistN     int                   `json:"histogram_n"`
	Histogram map[string][64]uint64 `json:"h_histogram"`
	Charts    []string              `json:"charts"`
}

// runCodec measures bits per fingerprint, encode and decode speed for
// uniform and clustered tables of 2^16 .. 2^26 fingerprints (2^16 .. 2^18
// when quick).
func runCodec(cfg Config) (*CodecResults, error) {
	maxLog := 26
	if cfg.Quick {
		maxLog = 18
	}
	res := &CodecResults{BlockSize: codec.DefaultBlockSize, Histogram: map[string][64]uint64{}}
	gen := map[string]func(int, uint64) []uint64{"uniform": fingerprints.Uniform, "clustered": fingerprints.Clustered}
	for _, dist := range []string{"uniform", "clustered"} {
		for lg := 16; lg <= maxLog; lg += 2 {
			fps := fingerprints.Sorted(gen[dist](1<<lg, cfg.Seed))
			row, hist, err := measureCodec(dist, fps)
			if err != nil {
				return nil, err
			}
			cfg.Log.Info("codec", "distribution", dist, "n", row.N, "bits/fp", fmt.Sprintf("%.3f", row.BitsPerFP),
				"bound", fmt.Sprintf("%.3f", row.Bound), "decode Mfp/s", fmt.Sprintf("%.1f", row.DecodeMfps))
			res.Rows = append(res.Rows, row)
			if lg == maxLog {
				res.HistN = 1 << lg
				res.Histogram[dist] = *hist
			}
		}
	}
	if cfg.TextCorpus != "" {
		n := 1 << 18
		if cfg.Quick {
			n = 1 << 14
		}
		start := time.Now()
		fps, err := textFingerprints(cfg.TextCorpus, n, cfg.Seed)
		if err != nil {
			return nil, fmt.Errorf("text corpus: %w", err)
		}
		cfg.Log.Info("fingerprinted text", "documents", n, "s", fmt.Sprintf("%.1f", time.Since(start).Seconds()))
		row, _, err := measureCodec("text", fingerprints.Sorted(fps))
		if err != nil {
			return nil, err
		}
		cfg.Log.Info("codec", "distribution", "text", "n", row.N, "bits/fp", fmt.Sprintf("%.3f", row.BitsPerFP))
		res.Rows = append(res.Rows, row)
	}
	return res, res.charts(cfg.Out)
}

// othersMax is the largest set measured every other way too: zstd at its
// best level and roaring64 take minutes and gigabytes beyond it.
const othersMax = 1 << 22

func measureCodec(dist string, fps []uint64) (CodecRow, *[huffman.Symbols]uint64, error) {
	row := CodecRow{Dist: dist, N: len(fps)}
	if dist == "uniform" { // the bound holds for a uniformly drawn set only
		row.Bound = codec.Bound(len(fps))
	}
	hist, err := codec.Histogram(fps)
	if err != nil {
		return row, nil, err
	}
	code := huffman.Build(hist)
	var blocks [][]byte
	var keys []uint64
	start := time.Now()
	err = codec.Encode(fps, code, 1, codec.DefaultBlockSize, func(key uint64, b []byte) error {
		blocks = append(blocks, append([]byte(nil), b...))
		keys = append(keys, key)
		return nil
	})
	if err != nil {
		return row, nil, err
	}
	row.EncodeMfps = float64(len(fps)) / time.Since(start).Seconds() / 1e6
	for _, b := range blocks {
		row.Bytes += int64(len(b))
	}
	row.Blocks = len(blocks)
	row.BitsPerFP = float64(row.Bytes*8) / float64(len(fps))
	row.WithKeys = float64((row.Bytes+8*int64(row.Blocks))*8) / float64(len(fps))
	for _, c := range []struct {
		to      *float64
		profile *sstable.CompressionProfile
	}{{&row.PebbleNone, sstable.NoCompression}, {&row.PebbleSnappy, sstable.SnappyCompression}, {&row.PebbleZstd, sstable.ZstdCompression}} {
		n, err := compression.PebbleKeysBytes(fps, c.profile)
		if err != nil {
			return row, nil, err
		}
		*c.to = float64(n*8) / float64(len(fps))
	}
	if len(fps) <= othersMax {
		others, err := compression.Measure(fps, nil)
		if err != nil {
			return row, nil, err
		}
		row.Others = others.Rows
	}
	if row.Bound > 0 {
		row.OverBound = 100 * (row.BitsPerFP/row.Bound - 1)
	}
	// Decode every block (whole-block decode) until at
	// least 2^24 fingerprints and 200 ms have passed; keep the best of three.
	codes := codec.CodeMap{1: code}
	buf := make([]uint64, 0, codec.DefaultBlockSize*8)
	for range 3 {
		n := 0
		start := time.Now()
		for n < 1<<24 || time.Since(start) < 200*time.Millisecond {
			for i, b := range blocks {
				if buf, err = codec.Decode(buf[:0], b, keys[i], codes); err != nil {
					return row, nil, err
				}
				n += len(buf)
			}
		}
		row.DecodeMfps = max(row.DecodeMfps, float64(n)/time.Since(start).Seconds()/1e6)
	}
	return row, hist, nil
}

func (c *CodecResults) charts(out string) error {
	var series []chart.Series
	bound := chart.Series{Name: "information bound (uniform)", Dashed: true}
	for _, dist := range []string{"uniform", "clustered"} {
		s := chart.Series{Name: "codec, " + dist}
		z := chart.Series{Name: "Pebble keys + Zstd, " + dist, Dashed: true}
		for _, r := range c.Rows {
			if r.Dist != dist {
				continue
			}
			s.X = append(s.X, float64(r.N))
			s.Y = append(s.Y, r.BitsPerFP)
			z.X = append(z.X, float64(r.N))
			z.Y = append(z.Y, r.PebbleZstd)
			if dist == "uniform" {
				bound.X = append(bound.X, float64(r.N))
				bound.Y = append(bound.Y, r.Bound)
			}
		}
		series = append(series, s, z)
	}
	series = append(series, bound, chart.Series{Name: "8 bytes raw", X: bound.X, Y: slices.Repeat([]float64{64}, len(bound.X)), Dashed: true})
	name := "codec-bits-per-fp.png"
	if err := chart.Lines(filepath.Join(out, name), chart.Axes{Title: "Bits per fingerprint: codec (1 KiB blocks, headers included) vs plain Pebble keys",
		X: "distinct fingerprints n", Y: "bits per fingerprint", LogX: true, LegendTop: true}, series); err != nil {
		return err
	}
	c.Charts = append(c.Charts, name)
	var hs []chart.Series
	for _, dist := range []string{"uniform", "clustered"} {
		h := c.Histogram[dist]
		var tot float64
		for _, v := range h {
			tot += float64(v)
		}
		s := chart.Series{Name: dist}
		for i, v := range h {
			if v > 0 {
				s.X = append(s.X, float64(i))
				s.Y = append(s.Y, float64(v)/tot)
			}
		}
		hs = append(hs, s)
	}
	name = "h-histogram.png"
	if err := chart.Lines(filepath.Join(out, name), chart.Axes{Title: fmt.Sprintf("Distribution of h over a sorted table of %d fingerprints (cf. paper Fig. 2a)", c.HistN),
		X: "h: leading zeros of the gap to the previous fingerprint", Y: "fraction of fingerprints", LogY: true, LegendTop: true}, hs); err != nil {
		return err
	}
	c.Charts = append(c.Charts, name)
	return nil
}

func (c *CodecResults) report(md *strings.Builder) {
	fmt.Fprintf(md, "## Codec (block size %d bytes)\n\n", c.BlockSize)
	md.WriteString("The information bound log2(C(2^64, n))/n applies to uniformly drawn sets; clustered tables, like real simhash tables, compress far below it. ")
	md.WriteString("Rows \"text\" (opt-in, `--text DIR`) are fingerprints of real documents: the license texts of the quality evaluation's corpora and seeded edits of them (timestamps, counters, ad blocks, replaced words). ")
	md.WriteString("Bits per fingerprint count the blocks with their headers, as the index's `stats` does; \"with keys\" adds each block's 8-byte key, its last fingerprint, which the index keeps as the block's key (a block does not repeat it) and a set kept alone needs. Decode: whole blocks, one goroutine, best of three passes.\n\n")
	fmt.Fprintf(md, "Beside it, the same sorted fingerprints kept the plain way: 8-byte Pebble keys with empty values in one sstable as Pebble writes its bottom level (format FormatValueSeparation), with Pebble's block compression none, Snappy or Zstd; 8 bytes raw is 64 bits.\n\n")
	md.WriteString("| data | n | blocks | bits/fp | with keys | bound | over bound | Pebble none | Pebble Snappy | Pebble Zstd | codec vs best Pebble | encode M fp/s | decode M fp/s |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range c.Rows {
		bound, over := "—", "—"
		if r.Bound > 0 {
			bound, over = fmt.Sprintf("%.3f", r.Bound), fmt.Sprintf("%+.2f%%", r.OverBound)
		}
		best := min(r.PebbleNone, r.PebbleSnappy, r.PebbleZstd)
		fmt.Fprintf(md, "| %s | %d | %d | %.3f | %.3f | %s | %s | %.2f | %.2f | %.2f | %.2fx smaller | %.1f | %.1f |\n", r.Dist, r.N, r.Blocks, r.BitsPerFP, r.WithKeys, bound, over,
			r.PebbleNone, r.PebbleSnappy, r.PebbleZstd, best/r.BitsPerFP, r.EncodeMfps, r.DecodeMfps)
	}
	md.WriteString("\n")
	if len(c.Rows) > 0 && len(c.Rows[0].Others) > 0 {
		md.WriteString("The same sets every other way, in bits per fingerprint (`simhashdb compression` reports these for any fingerprints); the codec with its blocks' keys, as a set kept alone needs them:\n\n| data | n | codec and keys |")
		for _, o := range c.Rows[0].Others {
			fmt.Fprintf(md, " %s |", o.Method)
		}
		md.WriteString("\n|---|---:|---:|" + strings.Repeat("---:|", len(c.Rows[0].Others)) + "\n")
		for _, r := range c.Rows {
			if len(r.Others) == 0 {
				continue
			}
			fmt.Fprintf(md, "| %s | %d | %.3f |", r.Dist, r.N, r.WithKeys)
			for _, o := range r.Others {
				fmt.Fprintf(md, " %.3f |", o.BitsPerFP)
			}
			md.WriteString("\n")
		}
		md.WriteString("\n")
	}
	for _, ch := range c.Charts {
		fmt.Fprintf(md, "![%s](%s)\n\n", ch, ch)
	}
}
