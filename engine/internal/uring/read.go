package uring

// A Read is one read of ReadMany: len(P) bytes of the file at Off, read in
// full as io.ReaderAt reads (fewer only with Err, io.EOF at the file's
// end). Fd is the file; DirectFd, when Direct, the same file open with
// O_DIRECT (OpenDirect), which ReadMany reads what the page cache does
// not hold through, as ReadAtDirect does. Asking the page cache costs a
// system call a read: Unchecked skips it, for a caller whose reads of the
// file have found nothing there for a while.
//
// A Read with P nil reads Len bytes into a buffer of the ring's, which P
// then is until Release, starting on an 8-byte boundary (as Pebble's block
// decoders ask): a direct read is moved within the buffer it landed in
// rather than copied to another the caller allocates. Direct reads of a
// batch whose pages overlap or touch are one read of the disk, into one
// buffer they share until the last is released; one off the boundary is
// copied to a buffer of its own.
type Read struct {
	Fd, DirectFd uintptr
	Direct       bool
	Unchecked    bool
	P            []byte
	Len          int
	Off          int64
	// N and Err are the read's result; Cached, that a Direct read found
	// the page cache holding all of it and read it from there.
	N      int
	Err    error
	Cached bool
	lent   *aligned
}

// Release gives back the buffer a Read with P nil was read into: P is
// then nil, and the bytes it held may be another read's.
func (rd *Read) Release() {
	if rd.lent != nil {
		rd.lent.release()
		rd.lent, rd.P = nil, nil
	}
}
