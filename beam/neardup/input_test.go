package neardup

import (
	"testing"

	"github.com/simhashdb/simhashdb/internal/lines"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseLines: the Beam jobs read what the simhashdb command does:
// decimal of any length, 0x hex, "<id> <fp> [name]", and the lines of
// "simhashdb fingerprint" as they are.
func TestParseLines(t *testing.T) {
	f := &readDocsFn{Format: FormatFingerprints}
	for _, c := range []struct {
		line string
		want Doc
	}{
		{"4682519354896071", Doc{ID: 7, FP: 4682519354896071}},
		{"0x10", Doc{ID: 7, FP: 16}},
		{"42 0x10 a name", Doc{ID: 42, FP: 16, Name: "a name"}},
		{"0x0000000000000010\tdocs/a file.txt", Doc{ID: 7, FP: 16, Name: "docs/a file.txt"}},
	} {
		got, err := f.parse(lines.Syntax{}, 7, c.line, nil)
		require.NoError(t, err, c.line)
		assert.Equal(t, c.want, got, c.line)
	}
	_, err := f.parse(lines.Syntax{}, 7, "deadbeef", nil)
	assert.ErrorContains(t, err, "0xdeadbeef")
	// The records of an export of an index with sketches: the sketch is
	// read and left out, not taken into the name.
	sk := lines.Syntax{Sketch: 2}
	got, err := f.parse(sk, 2, "42 0x10 abcd a name", nil)
	require.NoError(t, err)
	assert.Equal(t, Doc{ID: 42, FP: 16, Name: "a name"}, got)
	_, err = f.parse(sk, 2, "42 0x10 a name", nil)
	assert.ErrorContains(t, err, "want 4 hexadecimal digits")
}
