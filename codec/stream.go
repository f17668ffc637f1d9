package codec

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"github.com/simhashdb/simhashdb/huffman"
)

// A block stream is one table's blocks, in order, as a file: what a job
// that builds tables apart from an index (simhashdb-beam build) writes, one
// stream per shard. Layout:
//
//	magic   8 bytes "SHDBBLK2"
//	code    32 bytes: the Huffman code of every block (huffman.Code's
//	        MarshalBinary); the blocks name it as code id 0
//	blocks  each a uvarint length n (at most MaxBlockSize), the block's
//	        key (8 bytes, big-endian), the block (n bytes), and a
//	        CRC-32C of key and block (4 bytes, little-endian)
//
// A stream ends at the end of the file, after a whole block. Streams of
// magic "SHDBBLK1" (blocks of versions 1 and 2, each with its checksum,
// without keys) are read too.
const (
	streamMagic   = "SHDBBLK2"
	streamMagicV1 = "SHDBBLK1"
)

// StreamWriter writes a block stream.
type StreamWriter struct {
	w   io.Writer
	b   *Builder
	buf []byte
	n   int64 // bytes written
	err error
}

// NewStreamWriter writes the stream's header to w and returns a writer of
// its blocks, each at most blockSize bytes, coded with code.
func NewStreamWriter(w io.Writer, code *huffman.Code, blockSize int) (*StreamWriter, error) {
	b, err := NewBuilder(code, 0, blockSize)
	if err != nil {
		return nil, err
	}
	c, _ := code.MarshalBinary()
	s := &StreamWriter{w: w, b: b}
	s.write(append([]byte(streamMagic), c...))
	return s, s.err
}

// Add adds the next fingerprint, which must be greater than the last.
func (s *StreamWriter) Add(fp uint64) error {
	if s.err != nil {
		return s.err
	}
	ok, err := s.b.Add(fp)
	if err != nil {
		return err
	}
	if !ok {
		s.flush()
		if _, err := s.b.Add(fp); err != nil {
			return err
		}
	}
	return s.err
}

// Close writes the last block. It does not close the underlying writer.
func (s *StreamWriter) Close() error {
	if s.err == nil && s.b.Len() > 0 {
		s.flush()
	}
	return s.err
}

// Size returns the bytes written so far.
func (s *StreamWriter) Size() int64 { return s.n }

func (s *StreamWriter) flush() {
	var head [binary.MaxVarintLen64 + 8]byte
	key, block := s.b.Finish(s.buf[:0])
	n := binary.PutUvarint(head[:], uint64(len(block)))
	binary.BigEndian.PutUint64(head[n:], key)
	sum := crc32.Update(crc32.Checksum(head[n:n+8], castagnoli), castagnoli, block)
	s.write(head[:n+8])
	s.write(block)
	s.write(binary.LittleEndian.AppendUint32(nil, sum))
	s.buf = block
}

func (s *StreamWriter) write(p []byte) {
	if s.err != nil {
		return
	}
	n, err := s.w.Write(p)
	s.n += int64(n)
	s.err = err
}

// StreamReader reads a block stream.
type StreamReader struct {
	r     *bufio.Reader
	codes CodeMap
	off   int64 // of the next block's length
	buf   []byte
	keyed bool // blocks framed with key and checksum (SHDBBLK2)
}

// NewStreamReader reads a stream's header from r.
func NewStreamReader(r io.Reader) (*StreamReader, error) {
	br := bufio.NewReader(r)
	head := make([]byte, len(streamMagic)+huffman.Symbols/2)
	if _, err := io.ReadFull(br, head); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: block stream header cut off", ErrCorrupt)
		}
		return nil, err
	}
	magic := string(head[:len(streamMagic)])
	if magic != streamMagic && magic != streamMagicV1 {
		return nil, fmt.Errorf("%w: not a block stream (magic %q)", ErrCorrupt, magic)
	}
	code, err := huffman.Unmarshal(head[len(streamMagic):])
	if err != nil {
		return nil, fmt.Errorf("%w: block stream's code: %v", ErrCorrupt, err)
	}
	return &StreamReader{r: br, codes: CodeMap{0: code}, off: int64(len(head)), keyed: magic == streamMagic}, nil
}

// Next returns the next block's fingerprints, appended to dst[:0], and
// io.EOF after the last. A damaged block is an error wrapping ErrCorrupt
// that names its offset.
func (s *StreamReader) Next(dst []uint64) ([]uint64, error) {
	head, err := s.r.Peek(binary.MaxVarintLen64)
	if len(head) == 0 {
		if err == io.EOF {
			return dst[:0], io.EOF
		}
		return dst[:0], err
	}
	n, size := binary.Uvarint(head)
	if size <= 0 {
		if err != nil && err != io.EOF {
			return dst[:0], err
		}
		return dst[:0], fmt.Errorf("%w: block length at offset %d cut off or too long", ErrCorrupt, s.off)
	}
	s.r.Discard(size)
	if n == 0 || n > MaxBlockSize {
		return dst[:0], fmt.Errorf("%w: block at offset %d: length %d, want 1 to %d", ErrCorrupt, s.off, n, MaxBlockSize)
	}
	frame := int(n)
	if s.keyed {
		frame += 8 + checksumLen
	}
	if cap(s.buf) < frame {
		s.buf = make([]byte, frame)
	}
	s.buf = s.buf[:frame]
	if _, err := io.ReadFull(s.r, s.buf); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return dst[:0], fmt.Errorf("%w: block at offset %d cut off", ErrCorrupt, s.off)
		}
		return dst[:0], err
	}
	var out []uint64
	if s.keyed {
		body := s.buf[:8+n]
		if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(s.buf[8+n:]); got != want {
			return dst[:0], fmt.Errorf("%w: block at offset %d: checksum %08x, computed %08x", ErrCorrupt, s.off, want, got)
		}
		key := binary.BigEndian.Uint64(body)
		out, err = decodeRange(dst[:0], body[8:], &key, s.codes, 0, math.MaxUint64)
	} else {
		out, err = decodeRange(dst[:0], s.buf, nil, s.codes, 0, math.MaxUint64)
	}
	if err != nil {
		return dst[:0], fmt.Errorf("block at offset %d: %w", s.off, err)
	}
	s.off += int64(size) + int64(frame)
	return out, nil
}
