package lines

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuery(t *testing.T) {
	for _, tc := range []struct {
		line, qid string
		fp        uint64
		err       string
	}{
		{"0x10", "7", 16, ""},
		{"42 0x10", "42", 16, ""},
		{"page-a 17", `"page-a"`, 17, ""},
		{"1234567890123456", "7", 1234567890123456, ""},
		{"0x10\tdocs/a b.txt", `"docs/a b.txt"`, 16, ""},
		{"0123456789abcdef", "", 0, "write it as 0x0123456789abcdef"},
		{"a b c", "", 0, "want <fingerprint>, <qid> <fingerprint>"},
	} {
		qid, fp, err := Query(tc.line, 7)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.line)
			continue
		}
		require.NoError(t, err, tc.line)
		assert.Equal(t, tc.qid, string(qid), tc.line)
		assert.Equal(t, tc.fp, fp, tc.line)
	}
}

func TestRecord(t *testing.T) {
	id, fp, name, err := Record("5  0xff  https://example.com/a b ")
	require.NoError(t, err)
	assert.Equal(t, []any{uint64(5), uint64(255), "https://example.com/a b"}, []any{id, fp, name})
	_, _, _, err = Record("5")
	assert.ErrorContains(t, err, "want <id> <fingerprint> [name]")
	_, _, _, err = Record("-1 0x1")
	assert.ErrorContains(t, err, "id")
}

func TestFingerprint(t *testing.T) {
	v, err := Fingerprint("1234567890123456") // simhash-cpp's decimal, any length
	require.NoError(t, err)
	assert.Equal(t, uint64(1234567890123456), v)
	v, err = Fingerprint(" 0xFF ")
	require.NoError(t, err)
	assert.Equal(t, uint64(255), v)
	_, err = Fingerprint("18446744073709551616")
	assert.ErrorContains(t, err, "larger than 2^64-1")
}

// TestSyntax: fingerprint's own lines are read by every reader; bare hex
// only with Hex.
func TestSyntax(t *testing.T) {
	fp, name, ok := Syntax{}.Named("0x00000000000000ff\tdir/a file")
	require.True(t, ok)
	assert.Equal(t, uint64(255), fp)
	assert.Equal(t, "dir/a file", name)
	for _, l := range []string{"5 0xff name", "0xff", "255\tname", "0xzz\tname"} {
		_, _, ok := Syntax{}.Named(l)
		assert.False(t, ok, l)
	}
	v, err := Syntax{}.Pair("0x00000000000000ff\tdir/a")
	require.NoError(t, err)
	assert.Equal(t, uint64(255), v)
	v, err = Syntax{Hex: true}.Pair("0123456789012345")
	require.NoError(t, err)
	assert.Equal(t, uint64(0x0123456789012345), v)
	v, err = Syntax{}.Pair("0123456789012345")
	require.NoError(t, err)
	assert.Equal(t, uint64(123456789012345), v)
	id, fp, _, err := Syntax{Hex: true}.Record("3 ff")
	require.NoError(t, err)
	assert.Equal(t, []uint64{3, 255}, []uint64{id, fp})
}

func TestAppendArray(t *testing.T) {
	assert.Equal(t, "[1, 18446744073709551615]\n", string(AppendArray(nil, 1, ^uint64(0))))
	assert.Equal(t, "[]\n", string(AppendArray(nil)))
}

func TestScan(t *testing.T) {
	in := "a\r\n" + strings.Repeat("x", 20) + "\n\nlast"
	var got []string
	var long []int
	require.NoError(t, Scan(strings.NewReader(in), "f", 10, func(n int, line string, tooLong error) error {
		var tl TooLongError
		if errors.As(tooLong, &tl) {
			long = append(long, n, int(tl.Len))
			return nil
		}
		got = append(got, strings.Clone(line))
		return nil
	}))
	assert.Equal(t, []string{"a", "", "last"}, got)
	assert.Equal(t, []int{2, 20}, long)
}

// TestNameField: a name a line cannot carry as it is is written quoted
// and read back whole.
func TestNameField(t *testing.T) {
	for _, name := range []string{"/a/b.txt", "/a/line\nbreak.txt", "/tab\there", `"quoted"`, `plain "inner" quotes`} {
		line := "0x0000000000000001\t" + NameField(name)
		assert.NotContains(t, line, "\n", name)
		fp, got, ok := Syntax{}.Named(line)
		require.True(t, ok, name)
		assert.Equal(t, uint64(1), fp)
		assert.Equal(t, name, got)
	}
}

// TestAnyFingerprint: every line the commands write for one another.
func TestAnyFingerprint(t *testing.T) {
	for _, c := range []struct {
		line string
		fp   uint64
		skip bool
		bad  bool
	}{
		{"", 0, true, false},
		{"  # simhashdb-export {}", 0, true, false},
		{"0x10", 16, false, false},
		{"16", 16, false, false},
		{"0x0000000000000010\t/a b.txt", 16, false, false},
		{"7 0x10 https://a.example/ x", 16, false, false},
		{"7 16", 16, false, false},
		{"xyz 1", 0, false, true},
	} {
		fp, skip, err := Syntax{}.AnyFingerprint(c.line)
		assert.Equal(t, c.bad, err != nil, "%q: %v", c.line, err)
		assert.Equal(t, c.skip, skip, c.line)
		assert.Equal(t, c.fp, fp, c.line)
	}
}

// FuzzNameField: every name survives a line of "simhashdb fingerprint"
// (NameField, then Named) whole, and the line never breaks.
func FuzzNameField(f *testing.F) {
	for _, s := range []string{"/a/b.txt", "line\nbreak", "\"quoted\"", "tab\there", "", " lead", "\\\"x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		field := NameField(name)
		if strings.ContainsAny(field, "\n\r") {
			t.Fatalf("%q written as %q: a line break", name, field)
		}
		_, got, ok := Syntax{}.Named("0x0000000000000001\t" + field)
		if !ok {
			t.Fatalf("%q: the line does not read", name)
		}
		if got != name {
			t.Fatalf("%q read back as %q", name, got)
		}
	})
}

// FuzzAnyFingerprint: any line gives a fingerprint, a skip or an error,
// and a line that Pair or Record reads gives theirs.
func FuzzAnyFingerprint(f *testing.F) {
	for _, s := range []string{"0x10", "16", "# c", "", "7 0x10 name", "0x0000000000000010\t/a", "xyz 1", "18446744073709551616"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		fp, skip, err := Syntax{}.AnyFingerprint(line)
		if skip && (err != nil || fp != 0) {
			t.Fatalf("%q: skipped with %x, %v", line, fp, err)
		}
		if p, perr := (Syntax{}).Pair(line); perr == nil && !skip && (err != nil || fp != p) {
			t.Fatalf("%q: Pair reads %x, AnyFingerprint %x, %v", line, p, fp, err)
		}
	})
}

// TestSketchedRecord: a record of an index with sketches carries its
// sketch in hex after the fingerprint; a record without one, or with one
// of another size, is an error that says what the line needs.
func TestSketchedRecord(t *testing.T) {
	syn := Syntax{Sketch: 2}
	for _, c := range []struct{ line, sketch, name string }{
		{"1 0x1 00ff", "\x00\xff", ""},
		{"1 0x1 00ff a name  with spaces", "\x00\xff", "a name  with spaces"},
		{"1 0x1 abcd\tname", "\xab\xcd", "name"},
	} {
		id, fp, sk, name, err := syn.SketchedRecord(c.line)
		require.NoError(t, err, c.line)
		assert.Equal(t, []any{uint64(1), uint64(1), c.sketch, c.name}, []any{id, fp, sk, name}, c.line)
	}
	for _, c := range []struct{ line, want string }{
		{"1 0x1", "want 4 hexadecimal digits"},
		{"1 0x1 name", "want 4 hexadecimal digits"},
		{"1 0x1 00ff00 name", "want 4 hexadecimal digits"},
		{"1", "and a sketch after the fingerprint"},
	} {
		_, _, _, _, err := syn.SketchedRecord(c.line)
		require.Error(t, err, c.line)
		assert.Contains(t, err.Error(), c.want, c.line)
	}
}

// FuzzSketchedRecord: a line reads as a record with a sketch of the size
// asked, or is an error; what reads is the line export would write back.
func FuzzSketchedRecord(f *testing.F) {
	for _, s := range []string{"1 0x1 00ff", "1 0x1 00ff a b", "1 0x1\t00ff\tname", "1 0x1", "x", "1 0x1 zz name"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		id, fp, sk, name, err := Syntax{Sketch: 2}.SketchedRecord(line)
		if err != nil {
			return
		}
		if len(sk) != 2 {
			t.Fatalf("%q: a sketch of %d bytes", line, len(sk))
		}
		back := fmt.Sprintf("%d 0x%016x %x", id, fp, sk)
		if name != "" {
			back += " " + name
		}
		id2, fp2, sk2, name2, err := Syntax{Sketch: 2}.SketchedRecord(back)
		if err != nil || id2 != id || fp2 != fp || sk2 != sk || name2 != name {
			t.Fatalf("%q read as %d %x %x %q; written back as %q, read as %d %x %x %q, %v", line, id, fp, sk, name, back, id2, fp2, sk2, name2, err)
		}
	})
}

// FuzzExportHeader: export's header reads back as written, and any line
// is a header, not one, or an error.
func FuzzExportHeader(f *testing.F) {
	for _, s := range []string{`# simhashdb-export {"fingerprint":{"shingle":1},"sketch":32}`, "# simhashdb-export {}", "# other comment", `# simhashdb-export {"sketch":99}`, "# simhashdb-export {"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		h, ok, err := ParseExportHeader(line)
		if !ok || err != nil {
			return
		}
		if h.Sketch < 0 || h.Sketch > MaxSketch {
			t.Fatalf("%q: sketch %d accepted", line, h.Sketch)
		}
		back, ok, err := ParseExportHeader(h.Line())
		if !ok || err != nil || back.Sketch != h.Sketch {
			t.Fatalf("%q read as %+v, written as %q, read back as %+v, %v", line, h, h.Line(), back, err)
		}
	})
}
