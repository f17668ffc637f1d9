package dataset

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonLines is a dataset of good and bad records; want is what reading it
// gives: records, and the places and words of its errors.
const jsonLines = `{"id": 7, "text": "the first text", "url": "https://a.example/"}
{"id": "12", "text": "an id as a string of digits"}

{"id": "doc-x", "text": "an id that is a key", "url": 5}
{"text": "no id at all"}
{"id": 3, "body": "no text field"}
{"id": -1, "text": "a negative id"}
{"id": 1.5, "text": "a fractional id"}
not json
{"id": 9, "text": null}
{"id": 10, "text": ["an", "array"]}
{"id": 11, "text": "the last text", "url": {"an": "object"}}
{"id": null, "text": "a null id"}
`

type outcome struct {
	place string
	rec   Record
	err   string // words the error holds
}

func wantJSONLines(name string) []outcome {
	p := func(n int) string { return fmt.Sprintf("%s:%d", name, n) }
	return []outcome{
		{p(1), Record{Text: "the first text", ID: 7, HasID: true, Name: "https://a.example/"}, ""},
		{p(2), Record{Text: "an id as a string of digits", ID: 12, HasID: true}, ""},
		{p(4), Record{Text: "an id that is a key", Key: "doc-x", Name: "5"}, ""},
		{p(5), Record{Text: "no id at all"}, ""},
		{p(6), Record{}, `no field "text"`},
		{p(7), Record{}, `field "id": -1`},
		{p(8), Record{}, `field "id": 1.5`},
		{p(9), Record{}, "not a JSON object"},
		{p(10), Record{}, `field "text": null, want a string`},
		{p(11), Record{}, `field "text": an array, want a string`},
		{p(12), Record{}, `field "url": an object`},
		{p(13), Record{Text: "a null id"}, ""},
	}
}

func readAll(t *testing.T, path string, o Options) []outcome {
	t.Helper()
	f, err := Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []outcome
	for rec, err := range f.Records(o) {
		if err != nil {
			var re *RecordError
			require.True(t, errors.As(err, &re), "a bad record is a RecordError: %v", err)
			out = append(out, outcome{re.Place, Record{}, err.Error()})
			continue
		}
		place := rec.Place
		rec.Place, rec.Ordinal = "", 0
		out = append(out, outcome{place, rec, ""})
	}
	assert.Equal(t, f.Size(), f.Read(), "the whole file read")
	return out
}

func check(t *testing.T, want, got []outcome) {
	t.Helper()
	require.Len(t, got, len(want))
	for i, w := range want {
		assert.Equal(t, w.place, got[i].place)
		if w.err == "" {
			assert.Empty(t, got[i].err, "%s", w.place)
			assert.Equal(t, w.rec, got[i].rec, "%s", w.place)
		} else {
			assert.Contains(t, got[i].err, w.err, "%s", w.place)
			assert.Contains(t, got[i].err, w.place, "the error names its place")
		}
	}
}

// TestJSONLines: plain, gzip and zstd files give the same records, each
// bad one named by file and line, the others read past it.
func TestJSONLines(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.jsonl")
	require.NoError(t, os.WriteFile(plain, []byte(jsonLines), 0o644))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write([]byte(jsonLines))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	gzPath := filepath.Join(dir, "data.json.gz")
	require.NoError(t, os.WriteFile(gzPath, gz.Bytes(), 0o644))
	zs, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	zstPath := filepath.Join(dir, "no-extension")
	require.NoError(t, os.WriteFile(zstPath, zs.EncodeAll([]byte(jsonLines), nil), 0o644))

	o := Options{Fields: Fields{Name: "url"}}
	for path, format := range map[string]Format{plain: JSONLines, gzPath: GzipJSONLines, zstPath: ZstdJSONLines} {
		f, err := Open(path)
		require.NoError(t, err)
		assert.Equal(t, format, f.Format())
		f.Close()
		check(t, wantJSONLines(path), readAll(t, path, o))
	}
}

// TestLines: a line over the limit is named and skipped without being
// held, a last line without a newline is read, and CRLF is taken.
func TestLines(t *testing.T) {
	long := strings.Repeat("x", 200000)
	in := "{\"text\":\"a\"}\r\n{\"text\":\"" + long + "\"}\n{\"text\":\"b\"}"
	var got []string
	for l, err := range Lines(strings.NewReader(in), "in", 1000) {
		if err != nil {
			require.ErrorIs(t, err, ErrTooLarge)
			got = append(got, err.Error())
			continue
		}
		got = append(got, fmt.Sprintf("%s %s", l.Place(), l.Bytes))
	}
	assert.Equal(t, []string{`in:1 {"text":"a"}`, "in:2: dataset: record too large: longer than 1000 bytes", `in:3 {"text":"b"}`}, got)
}

// TestOpenRefuses: a folder and a missing file are errors, not datasets.
func TestOpenRefuses(t *testing.T) {
	_, err := Open(t.TempDir())
	assert.ErrorContains(t, err, "not a regular file")
	_, err = Open(filepath.Join(t.TempDir(), "absent"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

type row struct {
	ID   *int64  `parquet:"id,optional"`
	Key  string  `parquet:"key"`
	Text *string `parquet:"text,optional"`
	URL  string  `parquet:"url"`
}

// TestParquet: rows in several row groups are records named by group and
// row; a null text is a bad record, and the rows after it are read; a
// missing column is an error naming it.
func TestParquet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data.parquet")
	f, err := os.Create(path)
	require.NoError(t, err)
	w := parquet.NewGenericWriter[row](f, parquet.MaxRowsPerRowGroup(3))
	str := func(s string) *string { return &s }
	num := func(i int64) *int64 { return &i }
	rows := []row{
		{ID: num(1), Key: "a", Text: str("one"), URL: "u1"},
		{ID: num(2), Key: "b", Text: str("two"), URL: "u2"},
		{ID: nil, Key: "c", Text: str("three"), URL: "u3"},
		{ID: num(4), Key: "d", Text: nil, URL: "u4"},
		{ID: num(5), Key: "e", Text: str("five"), URL: "u5"},
	}
	_, err = w.Write(rows)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())

	p := func(g, r int) string { return fmt.Sprintf("%s: row group %d, row %d", path, g, r) }
	check(t, []outcome{
		{p(1, 1), Record{Text: "one", ID: 1, HasID: true, Name: "u1"}, ""},
		{p(1, 2), Record{Text: "two", ID: 2, HasID: true, Name: "u2"}, ""},
		{p(1, 3), Record{Text: "three", Name: "u3"}, ""},
		{p(2, 1), Record{}, `column "text": null, want a string`},
		{p(2, 2), Record{Text: "five", ID: 5, HasID: true, Name: "u5"}, ""},
	}, readAll(t, path, Options{Fields: Fields{Name: "url"}}))

	check(t, []outcome{
		{p(1, 1), Record{Text: "one", Key: "a"}, ""},
		{p(1, 2), Record{Text: "two", Key: "b"}, ""},
		{p(1, 3), Record{Text: "three", Key: "c"}, ""},
		{p(2, 1), Record{}, "null"},
		{p(2, 2), Record{Text: "five", Key: "e"}, ""},
	}, readAll(t, path, Options{Fields: Fields{ID: "key"}}))

	df, err := Open(path)
	require.NoError(t, err)
	defer df.Close()
	for _, err := range df.Records(Options{Fields: Fields{Text: "body"}}) {
		require.ErrorIs(t, err, ErrField)
		assert.ErrorContains(t, err, `no column "body"`)
		assert.ErrorContains(t, err, path)
	}
}

// FuzzParseJSON: any line gives a record or an error, never a panic; the
// one-pass scan and encoding/json read every line alike.
func FuzzParseJSON(f *testing.F) {
	for _, l := range strings.Split(jsonLines, "\n") {
		f.Add([]byte(l))
	}
	for _, l := range []string{
		`{"text":"\u00e9\ud800","id":18446744073709551615}`,
		`{"text":"\ud83d\ude00 \ud83d\u0041 \udc00 \u003cyear\u003e \" \\ \/ \b\f\n\r\t"}`,
		`{"text":"a","id":18446744073709551616}`,
		`{"text":"a","text":"b","url":"c"}`,
		`{"text":"a\"b", "url": [1, {"x": [true, false, null]}], "id": 1e3}`,
		`{"text":"\xff"}`,
		`{"text":"tab\tin", "id": -0, "url": -1.5e-3}`,
		` { "text" : "spaces" } `,
		`{"text":"a"} x`,
		`{"text":"a",}`,
		`{"te\u0078t":"escaped key"}`,
		`{"text":truex}`,
		`{"text":"a","id":01}`,
		`[]`,
		`{}`,
		`null`,
	} {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fields := Fields{Name: "url"}
		rec, err := parseJSON(line, fields, true)
		slow, slowErr := parseJSON(line, fields, false)
		if (err == nil) != (slowErr == nil) {
			t.Fatalf("%q: scanned: %v; encoding/json: %v", line, err, slowErr)
		}
		if err == nil && rec != slow {
			t.Fatalf("%q: scanned %+v; encoding/json %+v", line, rec, slow)
		}
		if err == nil && rec.HasID && rec.Key != "" {
			t.Fatalf("a record with both an id and a key: %+v", rec)
		}
	})
}

// bigLines is a reader of n JSON lines of about size bytes each, made as
// it is read: a dataset larger than the memory a test may hold.
type bigLines struct {
	n, size, made int
	buf           []byte
}

func (b *bigLines) Read(p []byte) (int, error) {
	if len(b.buf) == 0 {
		if b.made == b.n {
			return 0, io.EOF
		}
		b.made++
		b.buf = fmt.Appendf(nil, `{"id": %d, "text": "%s"}`+"\n", b.made, strings.Repeat("word ", b.size/5))
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

// TestRecordsStream: a dataset of hundreds of megabytes is read in the
// memory of a record or two: the heap stays far below the data read.
func TestRecordsStream(t *testing.T) {
	const n, size = 300, 1 << 20
	path := filepath.Join(t.TempDir(), "big.jsonl")
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = io.Copy(f, &bigLines{n: n, size: size})
	require.NoError(t, err)
	require.NoError(t, f.Close())
	df, err := Open(path)
	require.NoError(t, err)
	defer df.Close()
	runtime.GC()
	var ms runtime.MemStats
	var peak uint64
	count := 0
	for rec, err := range df.Records(Options{}) {
		require.NoError(t, err)
		require.Len(t, rec.Text, size/5*5)
		count++
		if count%10 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}
	assert.Equal(t, n, count)
	t.Logf("%d MB read, heap at most %d MB", df.Size()>>20, peak>>20)
	assert.Less(t, peak, uint64(64<<20), "the heap holds a few records, not the %d MB read", df.Size()>>20)
}

// FuzzParquet: any bytes in a file that starts as Parquet does give
// records or errors naming the file, never a panic out of Records.
func FuzzParquet(f *testing.F) {
	var b bytes.Buffer
	w := parquet.NewGenericWriter[row](&b)
	text := "some text"
	id := int64(3)
	_, err := w.Write([]row{{ID: &id, Key: "k", Text: &text, URL: "u"}, {Key: "k2", URL: "u2"}})
	require.NoError(f, err)
	require.NoError(f, w.Close())
	f.Add(b.Bytes())
	f.Add([]byte("PAR1"))
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.parquet")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		df, err := Open(path)
		if err != nil {
			return
		}
		defer df.Close()
		for _, err := range df.Records(Options{Fields: Fields{Name: "url"}}) {
			var re *RecordError
			if err != nil && !errors.As(err, &re) {
				require.Contains(t, err.Error(), path)
			}
		}
	})
}
