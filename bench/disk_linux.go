package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/simhashdb/simhashdb/internal/directio"
)

// directReader reads random 4 KiB blocks of files with O_DIRECT: from the
// disk, whatever the page cache holds.
type directReader struct {
	files []*os.File
	sizes []int64
	bufs  [][]byte // one aligned buffer a slot: a goroutine reads into its own
}

const directBlock = directio.Align

// newDirectReader opens paths for reads into slots buffers.
func newDirectReader(paths []string, slots int) (*directReader, error) {
	r := &directReader{}
	for range slots {
		r.bufs = append(r.bufs, directio.Aligned(directBlock))
	}
	for _, p := range paths {
		f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECT, 0)
		if err != nil {
			r.Close()
			return nil, err
		}
		r.files = append(r.files, f)
		r.sizes = append(r.sizes, fileSize(p))
	}
	return r, nil
}

// readRandom reads one random aligned block into the buffer of slot; no
// two goroutines use one slot at once.
func (r *directReader) readRandom(rng *rand.Rand, slot int) error {
	i := rng.IntN(len(r.files))
	blocks := r.sizes[i] / directBlock
	if blocks == 0 {
		return fmt.Errorf("%s: smaller than a block", r.files[i].Name())
	}
	_, err := r.files[i].ReadAt(r.bufs[slot], rng.Int64N(blocks)*directBlock)
	return err
}

func (r *directReader) Close() {
	for _, f := range r.files {
		f.Close()
	}
}

// limitMemory puts process pid in a new memory cgroup of limit bytes
// (cgroup v2, else v1) and returns what removes it.
func limitMemory(pid int, limit int64) (func(), error) {
	name := "simhashdb-bench-" + strconv.Itoa(os.Getpid())
	try := []struct{ root, limitFile string }{
		{"/sys/fs/cgroup", "memory.max"},                   // v2
		{"/sys/fs/cgroup/memory", "memory.limit_in_bytes"}, // v1
	}
	var errs []error
	for _, t := range try {
		if t.limitFile == "memory.max" {
			if c, err := os.ReadFile(filepath.Join(t.root, "cgroup.controllers")); err != nil || !strings.Contains(string(c), "memory") {
				errs = append(errs, errors.New("no cgroup v2 memory controller"))
				continue
			}
		}
		dir := filepath.Join(t.root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		remove := func() { os.Remove(dir) }
		if err := os.WriteFile(filepath.Join(dir, t.limitFile), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
			remove()
			errs = append(errs, err)
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			remove()
			errs = append(errs, err)
			continue
		}
		return remove, nil
	}
	return func() {}, errors.Join(errs...)
}
