package engine

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOnlyStoreImportsPebble checks the engine's layering: Pebble is the
// store's business, and no other file of the engine (tests aside, which
// damage Pebble's files on purpose) imports it, so that a change of
// storage touches one package.
func TestOnlyStoreImportsPebble(t *testing.T) {
	t.Parallel()
	var dirs []string
	require.NoError(t, filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() != "testdata" && path != filepath.Join("internal", "store") {
			dirs = append(dirs, path)
		}
		return nil
	}))
	files := 0
	for _, dir := range dirs {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
			require.NoError(t, err)
			files++
			for _, imp := range f.Imports {
				path, err := strconv.Unquote(imp.Path.Value)
				require.NoError(t, err)
				require.False(t, strings.HasPrefix(path, "github.com/cockroachdb/pebble"), "%s imports %s: only engine/internal/store may", name, path)
			}
		}
	}
	require.Greater(t, files, 40, "the walk found the engine's files")
}
