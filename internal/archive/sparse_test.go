package archive

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"testing"
)

// sparseTar is a tar whose one file is a PAX sparse file (GNU 1.0) of
// size bytes, nearly all of them a hole: a few hundred bytes that read as
// size zeros.
func sparseTar(t testing.TB, size int64) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	records := ""
	for _, kv := range [][2]string{{"GNU.sparse.major", "1"}, {"GNU.sparse.minor", "0"}, {"GNU.sparse.name", "s"}, {"GNU.sparse.realsize", fmt.Sprint(size)}} {
		rec := " " + kv[0] + "=" + kv[1] + "\n"
		n := len(rec)
		for len(fmt.Sprint(n+len(fmt.Sprint(n)))) != len(fmt.Sprint(n)) {
			n++
		}
		records += fmt.Sprint(n+len(fmt.Sprint(n))) + rec
	}
	// The extended header, written as a regular file and retyped.
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "PaxHeaders/s", Size: int64(len(records)), Format: tar.FormatUSTAR}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(tw, records); err != nil {
		t.Fatal(err)
	}
	m := []byte("1\n0\n0\n")
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "s", Size: 512, Format: tar.FormatUSTAR}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(append(m, make([]byte, 512-len(m))...)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	b[156] = tar.TypeXHeader
	sum := 0
	for i, c := range b[:512] {
		if i >= 148 && i < 156 {
			c = ' '
		}
		sum += int(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return b
}
