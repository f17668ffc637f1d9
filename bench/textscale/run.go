package textscale

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Usage is what the kernel reports of a finished child process.
type Usage struct {
	Wall    time.Duration
	CPU     time.Duration // user and system
	PeakRSS int64         // bytes
}

// Measure runs a command to its end, its output to files in dir named
// after name, and returns its usage.
func Measure(ctx context.Context, dir, name string, args ...string) (Usage, error) {
	stdout, err := os.Create(filepath.Join(dir, name+".stdout"))
	if err != nil {
		return Usage{}, err
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, name+".stderr"))
	if err != nil {
		return Usage{}, err
	}
	defer stderr.Close()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	start := time.Now()
	err = cmd.Run()
	u := Usage{Wall: time.Since(start)}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			u.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			u.PeakRSS = int64(ru.Maxrss) << 10
		}
	}
	if err != nil {
		b, _ := os.ReadFile(stderr.Name())
		return u, fmt.Errorf("%s: %w: %s", name, err, lastLines(b))
	}
	return u, nil
}

func lastLines(b []byte) string {
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return string(b)
}

// DirSize is the bytes of the files under dir.
func DirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	return n, err
}

// Bands are the ranges of Jaccard similarity recall is reported by.
var Bands = []float64{0.9, 0.8, 0.7, 0.6, 0.5, 0}

// Score is how a run's pairs compare with the truth.
type Score struct {
	// Planted is the planted pairs by band (Bands[i] <= J < Bands[i-1]),
	// Found those of them reported.
	Planted, Found []int
	// Reported is the pairs reported; Below the reported pairs of J below
	// Floor, the least J of any reported pair MinJ.
	Reported, Below int
	Floor, MinJ     float64
}

// Evaluate scores the pairs a run reported: the planted pairs of every
// every-th family written (families of the corpus; every > 1 samples them
// at large sizes), by band of their true Jaccard similarity, and every
// reported pair's own similarity against floor.
func (c *Corpus) Evaluate(families uint64, docs int, pairs map[[2]uint64]struct{}, floor float64, every uint64) Score {
	s := Score{Planted: make([]int, len(Bands)), Found: make([]int, len(Bands)), Reported: len(pairs), Floor: floor, MinJ: 1}
	band := func(j float64) int {
		for i, b := range Bands {
			if j >= b {
				return i
			}
		}
		return len(Bands) - 1
	}
	written := 0
	sets := map[uint64]map[string]struct{}{}
	shingles := func(id uint64) map[string]struct{} {
		if s, ok := sets[id]; ok {
			return s
		}
		s := Shingles(c.TextOf(id))
		if len(sets) > 4096 {
			clear(sets)
		}
		sets[id] = s
		return s
	}
	for f := range families {
		n := min(c.Copies(f)+1, docs-written)
		written += n
		if f%max(every, 1) != 0 {
			continue
		}
		for i := range n {
			for j := i + 1; j < n; j++ {
				a, b := ID(f, i), ID(f, j)
				k := band(Jaccard(shingles(a), shingles(b)))
				s.Planted[k]++
				if _, ok := pairs[[2]uint64{a, b}]; ok {
					s.Found[k]++
				}
			}
		}
	}
	for p := range pairs {
		j := Jaccard(shingles(p[0]), shingles(p[1]))
		s.MinJ = min(s.MinJ, j)
		if j < floor {
			s.Below++
		}
	}
	return s
}

// Recall is the share of planted pairs found in band i, and the number of
// them.
func (s Score) Recall(i int) (float64, int) {
	if s.Planted[i] == 0 {
		return 0, 0
	}
	return float64(s.Found[i]) / float64(s.Planted[i]), s.Planted[i]
}
