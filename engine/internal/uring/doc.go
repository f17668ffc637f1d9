// Package uring reads files through a Linux io_uring instance, so that
// reads issued together by many goroutines reach the disk together.
//
// A goroutine blocked in pread holds its P until the runtime's monitor
// takes it back, tens of microseconds to milliseconds later; with two Ps,
// ten goroutines reading at once go to the disk about two at a time. Here
// a read is submitted without blocking (io_uring_enter returns at once;
// the kernel reads in the background, or at once from the page cache) and
// its goroutine parks until the completion arrives, which an eventfd in
// the runtime's poller announces: the disk sees every read issued at once.
//
// Where the kernel refuses io_uring (an old kernel, a seccomp profile that
// blocks it, another system), New fails with an error that wraps
// ErrUnsupported and callers read as before.
package uring
