// Package memlimit finds the memory a process may use: the Go runtime's
// limit (GOMEMLIMIT), the memory cgroup's (v1 or v2, its ancestors
// included) and the machine's physical memory, whichever binds first.
package memlimit

import (
	"math"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
)

// Of is the least of the memory limits that bind this process:
// the Go runtime's (GOMEMLIMIT), the memory cgroup's (v1 or v2, its
// ancestors included) and the machine's physical memory; 0 if none is
// known. root prefixes /proc and /sys (tests give a fake tree).
func Of(root string) int64 {
	limit := int64(math.MaxInt64)
	if l := debug.SetMemoryLimit(-1); l > 0 {
		limit = l
	}
	if l := cgroupMemoryLimit(root); l > 0 {
		limit = min(limit, l)
	}
	if l := physicalMemory(root); l > 0 {
		limit = min(limit, l)
	}
	if limit == math.MaxInt64 {
		return 0
	}
	return limit
}

// cgroupMemoryLimit reads the memory limit of the cgroups this process is
// in, from /proc/self/cgroup: the least over the cgroup and its ancestors
// (a container's own path may not exist under its mount, whose root then
// holds its limit); 0 if there is none.
func cgroupMemoryLimit(root string) int64 {
	b, err := os.ReadFile(path.Join(root, "/proc/self/cgroup"))
	if err != nil {
		return 0
	}
	best := int64(0)
	take := func(l int64) {
		if l > 0 && (best == 0 || l < best) {
			best = l
		}
	}
	for line := range strings.Lines(string(b)) {
		// "hierarchy-ID:controller-list:cgroup-path"
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "": // cgroup v2, mounted alone or beside v1
			for _, mount := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
				if _, err := os.Stat(path.Join(root, mount, "cgroup.controllers")); err == nil {
					take(cgroupWalk(path.Join(root, mount), f[2], "memory.max"))
					break
				}
			}
		case strings.Contains(","+f[1]+",", ",memory,"): // cgroup v1
			take(cgroupWalk(path.Join(root, "/sys/fs/cgroup/memory"), f[2], "memory.limit_in_bytes"))
		}
	}
	return best
}

// cgroupWalk returns the least limit in file of cgroup p under mount and
// its ancestors; 0 if none sets one.
func cgroupWalk(mount, p, file string) int64 {
	best := int64(0)
	for p = path.Clean("/" + p); ; p = path.Dir(p) {
		if l := readLimit(path.Join(mount, p, file)); l > 0 && (best == 0 || l < best) {
			best = l
		}
		if p == "/" {
			return best
		}
	}
}

// readLimit parses a cgroup limit file: a number of bytes, or "max" (v2)
// or a number near 2^63 (v1) for none, read as 0.
func readLimit(file string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	s := strings.TrimSpace(string(b))
	l, err := strconv.ParseInt(s, 10, 64)
	if err != nil || l <= 0 || l >= math.MaxInt64/2 {
		return 0
	}
	return l
}

// physicalMemory reads MemTotal from /proc/meminfo; 0 if unknown.
func physicalMemory(root string) int64 {
	b, err := os.ReadFile(path.Join(root, "/proc/meminfo"))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil || kb <= 0 {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
