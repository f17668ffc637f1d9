package simhash

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzReadIDF: any bytes read as a table or fail with ErrCorruptIDF, never
// a panic; a table that reads writes back to one that reads the same.
func FuzzReadIDF(f *testing.F) {
	idf := NewIDF()
	fp, err := New(Options{Shingle: 1})
	require.NoError(f, err)
	require.NoError(f, idf.AddDocument(fp, bytes.NewReader([]byte("common rare"))))
	var buf bytes.Buffer
	_, err = idf.WriteTo(&buf)
	require.NoError(f, err)
	f.Add(buf.Bytes())
	f.Add([]byte(idfMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ReadIDF(bytes.NewReader(b))
		if err != nil {
			require.ErrorIs(t, err, ErrCorruptIDF)
			return
		}
		var out bytes.Buffer
		_, err = got.WriteTo(&out)
		require.NoError(t, err)
		again, err := ReadIDF(&out)
		require.NoError(t, err)
		require.Equal(t, got, again)
	})
}
