package uring

// A Read is one read of ReadMany: len(P) bytes of the file at Off, read in
// full as io.ReaderAt reads (fewer only with Err, io.EOF at the file's
// end). Fd is the file; DirectFd, when Direct, the same file open with
// O_DIRECT (OpenDirect), which ReadMany reads what the page cache does
// not hold through, as ReadAtDirect does.
type Read struct {
	Fd, DirectFd uintptr
	Direct       bool
	P            []byte
	Off          int64
	// N and Err are the read's result.
	N   int
	Err error
}
