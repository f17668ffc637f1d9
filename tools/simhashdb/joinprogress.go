package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/simhashdb/simhashdb/textindex"
)

// progressMode reads a --progress flag: auto is a bar on a terminal and
// nothing elsewhere.
func progressMode(mode string, stderr io.Writer) (string, error) {
	switch mode {
	case "auto":
		if isTerminal(stderr) {
			return "bar", nil
		}
		return "none", nil
	case "bar", "json", "none":
		return mode, nil
	}
	return "", fmt.Errorf("--progress %q: want auto, bar, json or none", mode)
}

// joinProgress prints the band join's progress (textindex.JoinProgress):
// a line rewritten in place, or JSON lines.
type joinProgress struct {
	mode    string
	w       io.Writer
	start   time.Time
	mu      sync.Mutex
	printed bool
	last    time.Time
}

func newJoinProgress(mode string, w io.Writer) *joinProgress {
	return &joinProgress{mode: mode, w: w, start: time.Now()}
}

var joinStages = map[string]string{
	"keys":       "1/4 reading band keys",
	"candidates": "2/4 pairing documents that share a key",
	"first":      "3/4 joining candidates with their first document",
	"verify":     "4/4 verifying candidates",
}

func (j *joinProgress) report(p textindex.JoinProgress) {
	j.mu.Lock()
	defer j.mu.Unlock()
	el := time.Since(j.start)
	switch j.mode {
	case "json":
		b, _ := json.Marshal(map[string]any{"stage": p.Stage, "documents": p.Docs, "candidates": p.Candidates,
			"pairs": p.Pairs, "spilled_bytes": p.Spilled, "elapsed_s": round3(el.Seconds())})
		fmt.Fprintf(j.w, "%s\n", b)
	case "bar":
		if time.Since(j.last) < 100*time.Millisecond {
			return
		}
		j.last = time.Now()
		line := fmt.Sprintf("%s: %s documents", joinStages[p.Stage], human(p.Docs))
		if p.Candidates > 0 {
			line += fmt.Sprintf(", %s candidates", human(p.Candidates))
		}
		if p.Pairs > 0 {
			line += fmt.Sprintf(", %s pairs", human(p.Pairs))
		}
		line += fmt.Sprintf(", %s spilled, %s", human(p.Spilled)+"B", el.Round(time.Second))
		fmt.Fprintf(j.w, "\r%-78s", line)
		j.printed = true
	}
}

// stop ends the line a bar rewrote.
func (j *joinProgress) stop() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.printed {
		fmt.Fprintln(j.w)
		j.printed = false
	}
}

// stageProgress prints a long stage's records done, rate and, when the
// bytes of its input are known, its share and ETA: a line rewritten in
// place, or JSON lines about every second.
type stageProgress struct {
	mode, stage string
	w           io.Writer
	size        int64
	bytes       func() int64
	start, last time.Time
	n           int64
	printed     bool
}

func newDedupProgress(mode string, w io.Writer, stage string, size int64, bytes func() int64) *stageProgress {
	return &stageProgress{mode: mode, stage: stage, w: w, size: size, bytes: bytes, start: time.Now()}
}

// count adds n records done.
func (p *stageProgress) count(n int64) {
	p.n += n
	if p.mode == "none" || p.n%1024 != 0 {
		return
	}
	if now := time.Now(); now.Sub(p.last) >= map[bool]time.Duration{true: 100 * time.Millisecond, false: time.Second}[p.mode == "bar"] {
		p.last = now
		p.print()
	}
}

func (p *stageProgress) print() {
	el := time.Since(p.start).Seconds()
	rate := float64(p.n) / max(el, 1e-9)
	frac := -1.0
	if p.size > 0 && p.bytes != nil {
		frac = min(float64(p.bytes())/float64(p.size), 1)
	}
	switch p.mode {
	case "json":
		m := map[string]any{"stage": p.stage, "records": p.n, "rate": round3(rate), "elapsed_s": round3(el)}
		if frac >= 0 {
			m["done"] = round3(frac)
		}
		b, _ := json.Marshal(m)
		fmt.Fprintf(p.w, "%s\n", b)
	case "bar":
		line := fmt.Sprintf("%s: %s records, %s/s", p.stage, human(p.n), human(int64(rate)))
		if frac > 0 {
			line += fmt.Sprintf(", %3.0f%%, ETA %s", frac*100, (time.Duration(el*(1-frac)/frac) * time.Second).Round(time.Second))
		}
		fmt.Fprintf(p.w, "\r%-78s", line)
		p.printed = true
	}
}

// stop prints the last count and ends a bar's line.
func (p *stageProgress) stop() {
	if p.mode == "none" {
		return
	}
	p.print()
	if p.printed {
		fmt.Fprintln(p.w)
	}
}
