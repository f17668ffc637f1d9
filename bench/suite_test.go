package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	if ChildMain() { // a baseline the suite runs as a child process
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestQuickRun is the suite's smoke test: a quick run writes a complete
// report. It asserts what was measured about size, never about speed.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quick suite")
	}
	out := t.TempDir()
	res, err := Run(Config{Out: out, Quick: true})
	require.NoError(t, err)
	for _, f := range []string{"results.json", "report.md", "codec-bits-per-fp.png", "h-histogram.png"} {
		st, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
		assert.Positive(t, st.Size(), f)
	}
	js, err := os.ReadFile(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	var back Results
	require.NoError(t, json.Unmarshal(js, &back))
	assert.Equal(t, res.Codec.Rows, back.Codec.Rows)
	require.NotEmpty(t, res.Codec.Rows)
	for _, r := range res.Codec.Rows {
		if r.Dist == "uniform" {
			assert.Less(t, r.OverBound, 3.0, "uniform n=%d within 3%% of the bound", r.N)
			assert.Greater(t, r.BitsPerFP, r.Bound, "no encoding beats the bound")
		}
		assert.Positive(t, r.DecodeMfps)
		assert.Len(t, r.Others, 6, "n=%d measured every other way", r.N)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(report), "The same sets every other way")
	require.NotNil(t, res.Batch)
	require.NotEmpty(t, res.Batch.FindAll)
	for _, r := range res.Batch.FindAll {
		assert.Positive(t, r.Pairs, "planted neighbours are found: %s", r.Tool)
	}
}
