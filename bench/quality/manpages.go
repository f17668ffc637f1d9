package quality

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/simhashdb/simhashdb/simhash"
)

// ManResult compares the roff reader (simhash.ReadMan, on the page's source)
// with what man itself shows (man -l without hyphenation or justification,
// its overstrikes, header and footer removed, read as text): the Hamming distance of the two fingerprints of each page, which
// is what a reading that differs costs the index.
type ManResult struct {
	Pages    int   `json:"pages"`    // compared
	Aliases  int   `json:"aliases"`  // ".so" pages, which man follows and the reader cannot
	Failed   int   `json:"failed"`   // man or the reader gave no text
	Distance []int `json:"distance"` // pages at each distance 0..64
	Within3  int   `json:"within_3"`
	// Worst are the pages farthest from man's, farthest first.
	Worst []ManPage `json:"worst"`
}

// ManPage is one page compared.
type ManPage struct {
	Path     string `json:"path"`
	Distance int    `json:"distance"`
}

// CompareManPages compares up to limit pages (every page when limit is 0,
// else an even sample of them) under root, fingerprinted with f.
func CompareManPages(ctx context.Context, root string, limit int, f *simhash.Fingerprinter) (ManResult, error) {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable folder: skipped
		}
		if d.Type().IsRegular() && strings.HasPrefix(filepath.Base(filepath.Dir(p)), "man") {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return ManResult{}, err
	}
	slices.Sort(paths)
	if limit > 0 && len(paths) > limit {
		step := float64(len(paths)) / float64(limit)
		sample := make([]string, limit)
		for i := range sample {
			sample[i] = paths[int(float64(i)*step)]
		}
		paths = sample
	}
	res := ManResult{Distance: make([]int, 65)}
	dist := make([]int, len(paths)) // -1: failed, -2: an alias
	parallel(len(paths), func(i int) { dist[i] = manDistance(ctx, paths[i], f) })
	for i, d := range dist {
		switch {
		case d == -2:
			res.Aliases++
		case d < 0:
			res.Failed++
		default:
			res.Pages++
			res.Distance[d]++
			if d <= 3 {
				res.Within3++
			}
			res.Worst = append(res.Worst, ManPage{paths[i], d})
		}
	}
	slices.SortStableFunc(res.Worst, func(a, b ManPage) int { return b.Distance - a.Distance })
	res.Worst = res.Worst[:min(len(res.Worst), 20)]
	return res, ctx.Err()
}

// manDistance is the distance between the reader's fingerprint of the page
// at path and man's; -1 when either has no text, -2 for an alias.
func manDistance(ctx context.Context, path string, f *simhash.Fingerprinter) int {
	raw, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	ours, err := f.Document(bytes.NewReader(raw), simhash.ReadMan)
	if err != nil {
		if src, derr := decompressed(raw); derr == nil && bytes.HasPrefix(bytes.TrimSpace(src), []byte(".so ")) {
			return -2
		}
		return -1
	}
	// Without hyphenation or justification, and without the header and
	// footer lines man adds (its layout, not the page's text).
	cmd := exec.CommandContext(ctx, "sh", "-c", `man --nh --nj -l "$1" 2>/dev/null | col -bx | sed '/^[[:space:]]*$/d' | sed '1d;$d'`, "sh", path)
	cmd.Env = append(os.Environ(), "MANWIDTH=200", "MAN_KEEP_FORMATTING=", "MANPAGER=cat", "PAGER=cat")
	out, err := cmd.Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		return -1
	}
	theirs, err := f.Document(bytes.NewReader(out), simhash.ReadText)
	if err != nil {
		return -1
	}
	return bits.OnesCount64(ours ^ theirs)
}

// decompressed is raw, gunzipped if it is gzip.
func decompressed(raw []byte) ([]byte, error) {
	if !bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
		return raw, nil
	}
	z, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(z, 64<<20))
}

// String summarises r.
func (r ManResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d pages compared (%d aliases skipped, %d without text): %d within 3 bits of man's text (%.1f%%), %d farther\n",
		r.Pages, r.Aliases, r.Failed, r.Within3, 100*float64(r.Within3)/float64(max(r.Pages, 1)), r.Pages-r.Within3)
	fmt.Fprintf(&b, "distance: ")
	for d, n := range r.Distance {
		if n > 0 {
			fmt.Fprintf(&b, "%d:%d ", d, n)
		}
	}
	b.WriteString("\nfarthest:\n")
	for _, p := range r.Worst {
		fmt.Fprintf(&b, "  %2d  %s\n", p.Distance, p.Path)
	}
	return b.String()
}
