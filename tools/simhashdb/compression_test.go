package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// compressionJSON is what compression --json prints.
type compressionJSON struct {
	Documents int     `json:"documents"`
	N         int     `json:"n"`
	Bound     float64 `json:"bound_bits_per_fp"`
	Rows      []struct {
		Method    string  `json:"method"`
		Bytes     int64   `json:"bytes"`
		BitsPerFP float64 `json:"bits_per_fp"`
	} `json:"rows"`
}

func TestCompressionCommand(t *testing.T) {
	dir := t.TempDir()
	// Every form of line the command reads, and a repeated fingerprint.
	var in strings.Builder
	for i := range 3000 {
		fp := uint64(i)*0x9E3779B97F4A7C15 + 7
		switch i % 4 {
		case 0:
			fmt.Fprintf(&in, "0x%016x\n", fp)
		case 1:
			fmt.Fprintf(&in, "%d\n", fp)
		case 2:
			fmt.Fprintf(&in, "0x%016x\tdocs/%d.txt\n", fp, i)
		case 3:
			fmt.Fprintf(&in, "%d 0x%016x name-%d\n", i, fp, i)
		}
	}
	in.WriteString("0x0000000000000007\n") // fingerprint of i = 0 again
	in.WriteString("\n# a comment, skipped as add skips it\n")
	input := filepath.Join(dir, "fps.txt")
	require.NoError(t, os.WriteFile(input, []byte(in.String()), 0o644))

	t.Run("text", func(t *testing.T) {
		chart := filepath.Join(dir, "bits.png")
		r := runCLI(t, "", "compression", "-i", input, "--chart", chart)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "3001 fingerprints, 3000 distinct")
		for _, m := range []string{"codec, 1024-byte blocks", "Elias-Fano", "partitioned Elias-Fano", "roaring64", "zstd over varint gaps", "Pebble keys, Zstd"} {
			require.Contains(t, r.stdout, m)
		}
		st, err := os.Stat(chart)
		require.NoError(t, err)
		require.Positive(t, st.Size())
	})
	t.Run("json, standard input, block sizes", func(t *testing.T) {
		r := runCLI(t, in.String(), "compression", "--json", "--block-sizes", "512,2048")
		require.Equal(t, 0, r.code, r.stderr)
		var rep compressionJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
		require.Equal(t, 3001, rep.Documents)
		require.Equal(t, 3000, rep.N)
		require.Equal(t, "codec, 512-byte blocks", rep.Rows[0].Method)
		require.Equal(t, "codec, 2048-byte blocks", rep.Rows[1].Method)
		require.Len(t, rep.Rows, 8)
	})
	t.Run("an index", func(t *testing.T) {
		db := filepath.Join(dir, "idx")
		var recs strings.Builder
		for i := range 500 {
			fmt.Fprintf(&recs, "%d 0x%016x\n", i, uint64(i%250)*0x9E3779B97F4A7C15)
		}
		r := runCLI(t, recs.String(), "add", "--db", db)
		require.Equal(t, 0, r.code, r.stderr)
		r = runCLI(t, "", "compression", "--db", db, "--json")
		require.Equal(t, 0, r.code, r.stderr)
		var rep compressionJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
		require.Equal(t, 500, rep.Documents)
		require.Equal(t, 250, rep.N, "a table holds each fingerprint once")
	})
	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct {
			stdin string
			args  []string
			code  int
			want  string
		}{
			{"0x0000000000000001\nnot a fingerprint\n", nil, 1, "<stdin>:2: want a fingerprint"},
			{"", []string{"--block-sizes", "1024,7"}, 2, `--block-sizes: "7" is not a block size (64..1048576 bytes)`},
			{"", []string{"--db", dir, "-i", input}, 2, "--db or --server, and --input: give one"},
			{"", []string{"-i", filepath.Join(dir, "missing.txt")}, 1, "missing.txt"},
			{"", []string{"extra"}, 2, "unexpected argument"},
			{"\n# only a comment\n", nil, 1, "no fingerprints in the input"},
		} {
			r := runCLI(t, tc.stdin, append([]string{"compression"}, tc.args...)...)
			require.Equal(t, tc.code, r.code, "%v: %s", tc.args, r.stderr)
			require.Contains(t, r.stderr, tc.want)
		}
	})
}
