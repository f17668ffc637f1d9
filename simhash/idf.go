package simhash

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// IDF is a table of inverse document frequencies learnt from a corpus. Build
// it with a Fingerprinter whose Tokenizer, Shingle, StopWords and Hash are
// those of the Fingerprinter that will use it (set Options.IDF), since it is
// keyed by feature hash. Add documents before the table is used: it is safe
// for concurrent reads, not for reads during AddDocument.
type IDF struct {
	docs uint64
	df   map[uint64]uint32
}

// NewIDF returns an empty table.
func NewIDF() *IDF { return &IDF{df: make(map[uint64]uint32)} }

// AddDocument counts each distinct feature of the text read from r once.
func (t *IDF) AddDocument(f *Fingerprinter, r io.Reader) error {
	seen := make(map[uint64]struct{})
	if err := f.Features(r, func(h uint64) { seen[h] = struct{}{} }); err != nil {
		return err
	}
	t.docs++
	for h := range seen {
		t.df[h]++
	}
	return nil
}

// Documents returns how many documents the table has seen.
func (t *IDF) Documents() uint64 { return t.docs }

// Weight returns the smoothed inverse document frequency of a feature,
// 1 + ln((1+N)/(1+df)): 1 for a feature in every document, larger for rare
// ones and largest for features the corpus never showed.
func (t *IDF) Weight(h uint64) float64 {
	return 1 + math.Log(float64(1+t.docs)/float64(1+uint64(t.df[h])))
}

const idfMagic = "SHIDF001"

// ErrCorruptIDF is wrapped by ReadIDF's errors for malformed input.
var ErrCorruptIDF = errors.New("simhash: corrupt IDF table")

// WriteTo writes the table: a magic string, the document count, the entries,
// and a CRC-32C of all that.
func (t *IDF) WriteTo(w io.Writer) (int64, error) {
	crc := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	bw := bufio.NewWriter(io.MultiWriter(w, crc))
	var n int64
	put := func(b []byte) {
		m, _ := bw.Write(b)
		n += int64(m)
	}
	put([]byte(idfMagic))
	put(binary.LittleEndian.AppendUint64(nil, t.docs))
	put(binary.LittleEndian.AppendUint64(nil, uint64(len(t.df))))
	var e [12]byte
	for h, c := range t.df {
		binary.LittleEndian.PutUint64(e[:], h)
		binary.LittleEndian.PutUint32(e[8:], c)
		put(e[:])
	}
	if err := bw.Flush(); err != nil {
		return n, err
	}
	m, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	return n + int64(m), err
}

// ReadIDF reads a table written by WriteTo, checking its checksum.
func ReadIDF(r io.Reader) (*IDF, error) {
	crc := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	raw := bufio.NewReader(r)
	br := io.TeeReader(raw, crc)
	var head [24]byte
	if _, err := io.ReadFull(br, head[:]); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrCorruptIDF, err)
	}
	if string(head[:8]) != idfMagic {
		return nil, fmt.Errorf("%w: bad magic %q", ErrCorruptIDF, head[:8])
	}
	t := &IDF{docs: binary.LittleEndian.Uint64(head[8:]), df: make(map[uint64]uint32)}
	n := binary.LittleEndian.Uint64(head[16:])
	var e [12]byte
	for i := uint64(0); i < n; i++ {
		if _, err := io.ReadFull(br, e[:]); err != nil {
			return nil, fmt.Errorf("%w: entry %d of %d: %v", ErrCorruptIDF, i, n, err)
		}
		t.df[binary.LittleEndian.Uint64(e[:])] = binary.LittleEndian.Uint32(e[8:])
	}
	want := crc.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(raw, sum[:]); err != nil {
		return nil, fmt.Errorf("%w: checksum: %v", ErrCorruptIDF, err)
	}
	if got := binary.LittleEndian.Uint32(sum[:]); got != want {
		return nil, fmt.Errorf("%w: checksum %08x, computed %08x", ErrCorruptIDF, got, want)
	}
	return t, nil
}
