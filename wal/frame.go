package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
)

// This file is the one home of a record's frame on disk: AppendRecord
// writes it, frameAt reads it, FuzzScan fuzzes it.
//
// A record is written in the v2 frame:
//
//	length   4 bytes little-endian: payload length
//	type     1 byte: the record type with its top bit set (0x80 | type)
//	hcrc     4 bytes little-endian: CRC-32C of length and type
//	crc      4 bytes little-endian: CRC-32C of the payload
//	payload  length bytes
//
// The header's own checksum is what tells a write cut off by a crash (the
// header intact, the payload short) from a length field that the disk
// damaged (the header's checksum fails): the first is a torn tail, never
// acknowledged; the second is damage, reported.
//
// Logs written before v2 hold v1 frames, still read:
//
//	length   4 bytes little-endian: payload length
//	type     1 byte, non-zero, top bit clear
//	checksum 4 bytes little-endian: CRC-32C of length, type and payload
//	payload  length bytes
//
// In a v1 frame a damaged length that reaches past the end of the segment
// cannot be told from a torn write.

// HeaderLen is the length of a record's frame before its payload.
const HeaderLen = 13

// headerLenV1 is the length of a v1 frame's header.
const headerLenV1 = 9

// frameV2 marks a v2 frame in the type byte; record types are below it.
const frameV2 = 0x80

// MaxType is the largest record type a caller may append.
const MaxType = typeSynced - 1

// typeTear is the log's own record that starts a segment opened after a
// write failed part way (a full disk): uvarint segment, uvarint offset,
// where that segment's complete records end. Replay takes what follows
// there as a torn tail although records follow in this segment.
const typeTear = frameV2 - 1

// typeSynced is the log's own record that says how far its segment was
// fsynced when the record was written: uvarint offset, every byte of the
// segment before it durable. Written before the first record of a write
// that follows a sync, it is what tells damage (a record a sync covered)
// from a power cut's tear (a record no sync covered) when both leave
// zeros: see cutByPower.
const typeSynced = frameV2 - 2

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// AppendRecord appends the frame of a record of type typ (1..MaxType) to dst.
func AppendRecord(dst []byte, typ byte, payload []byte) []byte {
	var h [HeaderLen]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(payload)))
	h[4] = frameV2 | typ
	binary.LittleEndian.PutUint32(h[5:], crc32.Checksum(h[:5], castagnoli))
	binary.LittleEndian.PutUint32(h[9:], crc32.Checksum(payload, castagnoli))
	return append(append(dst, h[:]...), payload...)
}

// appendTear appends the record that says segment seg was cut off at off.
func appendTear(dst []byte, at Position) []byte {
	p := binary.AppendUvarint(nil, at.Segment)
	p = binary.AppendUvarint(p, uint64(at.Offset))
	return AppendRecord(dst, typeTear, p)
}

// appendSynced appends the record that says the segment is durable up to
// offset off.
func appendSynced(dst []byte, off int64) []byte {
	return AppendRecord(dst, typeSynced, binary.AppendUvarint(nil, uint64(off)))
}

// parseSynced reads a typeSynced record's payload.
func parseSynced(p []byte) (int64, bool) {
	off, n := binary.Uvarint(p)
	if n <= 0 || n != len(p) || off > 1<<62 {
		return 0, false
	}
	return int64(off), true
}

// parseTear reads a typeTear record's payload.
func parseTear(p []byte) (Position, bool) {
	seg, n := binary.Uvarint(p)
	if n <= 0 {
		return Position{}, false
	}
	off, m := binary.Uvarint(p[n:])
	if m <= 0 || n+m != len(p) || off > 1<<62 {
		return Position{}, false
	}
	return Position{seg, int64(off)}, true
}

// frame is a record read from a segment.
type frame struct {
	typ     byte
	header  int // header length: HeaderLen, or headerLenV1
	payload []byte
}

// size is the frame's length on disk.
func (f frame) size() int { return f.header + len(f.payload) }

// Reasons a frame is not intact that a torn write explains.
const (
	reasonShortHeader  = "truncated header"
	reasonShortPayload = "truncated payload"
	reasonHeaderSum    = "header checksum"
)

// frameAt reads the record at rest[0], or says why it is not an intact one.
func frameAt(rest []byte) (frame, string) {
	if len(rest) < 5 {
		return frame{}, reasonShortHeader
	}
	plen := int(binary.LittleEndian.Uint32(rest))
	typ := rest[4]
	if typ&frameV2 == 0 {
		return frameV1At(rest, plen)
	}
	if len(rest) < HeaderLen {
		return frame{}, reasonShortHeader
	}
	if want, got := binary.LittleEndian.Uint32(rest[5:]), crc32.Checksum(rest[:5], castagnoli); got != want {
		return frame{}, fmt.Sprintf("%s %08x, computed %08x", reasonHeaderSum, want, got)
	}
	switch {
	case typ == frameV2:
		return frame{}, "record type 0"
	case plen > MaxRecord:
		return frame{}, fmt.Sprintf("length %d exceeds %d", plen, MaxRecord)
	case len(rest)-HeaderLen < plen:
		return frame{}, reasonShortPayload
	}
	p := rest[HeaderLen : HeaderLen+plen]
	if want, got := binary.LittleEndian.Uint32(rest[9:]), crc32.Checksum(p, castagnoli); got != want {
		return frame{}, fmt.Sprintf("checksum %08x, computed %08x", want, got)
	}
	return frame{typ: typ &^ frameV2, header: HeaderLen, payload: p}, ""
}

// frameV1At reads a v1 frame of payload length plen at rest[0].
func frameV1At(rest []byte, plen int) (frame, string) {
	if len(rest) < headerLenV1 {
		return frame{}, reasonShortHeader
	}
	switch {
	case plen > MaxRecord:
		return frame{}, fmt.Sprintf("length %d exceeds %d", plen, MaxRecord)
	case len(rest)-headerLenV1 < plen:
		return frame{}, reasonShortPayload
	case rest[4] == 0:
		return frame{}, "record type 0"
	}
	p := rest[headerLenV1 : headerLenV1+plen]
	want := binary.LittleEndian.Uint32(rest[5:])
	if got := crc32.Update(crc32.Checksum(rest[:5], castagnoli), castagnoli, p); got != want {
		return frame{}, fmt.Sprintf("checksum %08x, computed %08x", want, got)
	}
	return frame{typ: rest[4], header: headerLenV1, payload: p}, ""
}

// sectorSize is the unit a disk writes whole. A power cut keeps some of
// what was written since the last sync and not the rest, sector by
// sector (a file system's page by page): where a record's data did not
// reach the disk, its file holds whole sectors of zeros, perhaps with
// later data after them. A bit flip never makes a sector of zeros.
const sectorSize = 512

// cutByPower reports whether the record at rest[0], at offset off of its
// segment, is not intact because a power cut kept only part of it. A sync
// covers whole records, so what a cut loses starts where a record starts:
// the record begins with zeros up to a sector boundary (the rest of a
// page whose start was synced), or a whole aligned sector of zeros starts
// within it (within a sector of its header when the header cannot say how
// long it is). An intact header never begins with zeros through its type
// byte.
//
// Zeros alone cannot tell a tear from a record whose own payload holds a
// sector of zeros and that was damaged elsewhere; what follows can. A
// record found after rest[0] that notes the segment synced past off means
// a sync covered the record at off: a power cut does not tear what was
// synced, so it is damage, and the records after it were acknowledged.
func cutByPower(rest []byte, off int64) bool {
	if syncedPast(rest, off) {
		return false
	}
	_, reason := frameAt(rest)
	if reason == "" {
		return false
	}
	first := (sectorSize - int(off%sectorSize)) % sectorSize // the first boundary at or after rest[0]
	if first > 0 && first <= len(rest) && len(bytes.Trim(rest[:first], "\x00")) == 0 {
		// Zeros through the type byte: never a header. Zeros in the
		// length's low bytes only: a header whose checksum fails.
		if first >= 5 || strings.HasPrefix(reason, reasonHeaderSum) {
			return true
		}
	}
	n := HeaderLen + sectorSize
	if len(rest) >= HeaderLen && rest[4]&frameV2 != 0 && !strings.HasPrefix(reason, reasonHeaderSum) {
		n = HeaderLen + int(binary.LittleEndian.Uint32(rest)) // the header is intact: its length holds
	}
	for i := first; i < n && i+sectorSize <= len(rest); i += sectorSize {
		if len(bytes.Trim(rest[i:i+sectorSize], "\x00")) == 0 {
			return true
		}
	}
	return false
}

// syncedPast reports whether a record after the start of rest, at offset
// off of its segment, notes that the segment was fsynced past off.
func syncedPast(rest []byte, off int64) bool {
	for o := 1; o+HeaderLen <= len(rest); o++ {
		f, bad := frameAt(rest[o:])
		if bad != "" {
			continue
		}
		if f.typ == typeSynced {
			if at, ok := parseSynced(f.payload); ok && at > off {
				return true
			}
		}
		o += f.size() - 1
	}
	return false
}

// classify says what is wrong with the record at rest[0], and whether a
// torn write explains it: a frame cut off by the end of the segment, or
// zeros from inside its header to the end (space a file system allocated
// but a crash left unwritten). It is a torn tail only if no valid record
// follows (tornTail), and only in the last segment that holds records.
func classify(rest []byte) (reason string, torn bool) {
	_, reason = frameAt(rest)
	switch reason {
	case reasonShortHeader, reasonShortPayload:
		return reason, true
	}
	if len(bytes.Trim(rest[min(len(rest), HeaderLen):], "\x00")) != 0 {
		return reason, false
	}
	// Nothing but zeros after the header: a header whose own checksum
	// fails was cut off inside it; a v1 header cannot say.
	return reason, strings.HasPrefix(reason, reasonHeaderSum) || len(bytes.Trim(rest, "\x00")) == 0
}
