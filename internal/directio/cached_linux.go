package directio

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// noCachestat is set once the kernel refuses cachestat (before Linux 6.5).
var noCachestat atomic.Bool

// Cached says whether the page cache holds every page of [off, off+n) of
// the file open as fd, without reading any (cachestat). It fails, with an
// error wrapping errors.ErrUnsupported, where the kernel cannot say.
func Cached(fd uintptr, off int64, n int) (bool, error) {
	if noCachestat.Load() {
		return false, fmt.Errorf("cachestat: %w", errors.ErrUnsupported)
	}
	if n <= 0 {
		return true, nil
	}
	start := off &^ (Align - 1)
	end := (off + int64(n) + Align - 1) &^ (Align - 1)
	var cs unix.Cachestat_t
	err := unix.Cachestat(uint(fd), &unix.CachestatRange{Off: uint64(start), Len: uint64(end - start)}, &cs, 0)
	if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EOPNOTSUPP) {
		noCachestat.Store(true)
		return false, fmt.Errorf("cachestat: %w: %w", errors.ErrUnsupported, err)
	}
	if err != nil {
		return false, fmt.Errorf("cachestat: %w", err)
	}
	return cs.Cache == uint64(end-start)/Align, nil
}
