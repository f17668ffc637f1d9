package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
)

// pruneGone removes (or, dryRun, lists) the documents named by a path under
// the folders and files given (by their document names, docName) whose file
// is gone: add --text --prune, what users of sync tools expect. A name
// that is not a path under them is never touched.
func pruneGone(ctx context.Context, db api.Index, paths []string, dryRun bool, stdout, stderr io.Writer) int {
	var roots []string
	for _, p := range paths {
		roots = append(roots, docName(p))
	}
	under := func(name string) bool {
		for _, r := range roots {
			if name == r || strings.HasPrefix(name, strings.TrimSuffix(r, string(filepath.Separator))+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}
	var gone []engine.Doc
	for d, err := range db.Docs(ctx) {
		if err != nil {
			return fail(stderr, "add", exitFailed, err)
		}
		if !filepath.IsAbs(d.Name) || !under(d.Name) {
			continue
		}
		if _, err := os.Lstat(d.Name); errors.Is(err, fs.ErrNotExist) {
			gone = append(gone, d)
		}
	}
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	for _, d := range gone {
		fmt.Fprintf(stdout, "%s\t%d\t%s\n", verb, d.ID, d.Name)
	}
	if !dryRun && len(gone) > 0 {
		ids := make([]uint64, len(gone))
		for i, d := range gone {
			ids[i] = d.ID
		}
		if err := db.Delete(ctx, ids...); err != nil {
			return fail(stderr, "add", exitFailed, fmt.Errorf("removing the %d documents whose files are gone: %w", len(ids), err))
		}
	}
	fmt.Fprintf(stderr, "%s add: %d documents under %s whose files are gone: %s\n", programName, len(gone), strings.Join(roots, ", "), verb)
	return exitOK
}
