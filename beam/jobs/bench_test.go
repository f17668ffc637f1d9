package jobs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simhashdb/simhashdb/beam/neardup"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
)

// benchN is the size of the benchmarks' input: 1M fingerprints, 1% with
// planted neighbours at every distance 0..3 (bench/fingerprints.Planted).
const benchN = 1 << 20

// benchInput writes the benchmarks' input files once: fingerprints, the
// same as stored records, and 100K queries.
func benchInput(b *testing.B) (dir string) {
	b.Helper()
	dir = filepath.Join(os.TempDir(), fmt.Sprintf("simhashdb-beam-bench-%d", benchN))
	if _, err := os.Stat(filepath.Join(dir, "done")); err == nil {
		return dir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	fps := fingerprints.Planted(benchN, 3, 0.01, 1)
	var f, r, q strings.Builder
	for i, v := range fps {
		fmt.Fprintf(&f, "%d\n", v)
		fmt.Fprintf(&r, "%d %#x\n", i+1, v)
	}
	for _, v := range fingerprints.Queries(fps, 100_000, 1) {
		fmt.Fprintf(&q, "%#x\n", v)
	}
	for name, s := range map[string]string{"fps.txt": f.String(), "stored.txt": r.String(), "queries.txt": q.String(), "done": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// reportJob reports a job's CPU seconds per million input fingerprints
// (prism runs the workers in this process) and the bytes its packed
// batches took through shuffles per input fingerprint.
func reportJob(b *testing.B, rep *Report, fps int) {
	b.ReportMetric(rep.CPU/float64(fps)*1e6, "cpu-s/Mfp")
	b.ReportMetric(float64(rep.Counters[neardup.CounterShuffleBytes])/float64(fps), "shuffle-B/fp")
}

// reportCLI runs the simhashdb command and reports its CPU seconds per
// million input fingerprints.
func reportCLI(b *testing.B, fps int, args ...string) {
	b.Helper()
	cmd := exec.Command(simhashdbBin, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("simhashdb %v: %v: %s", args, err, out)
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	b.ReportMetric(cpu.Seconds()/float64(fps)*1e6, "cpu-s/Mfp")
}

func benchJob(b *testing.B, job func(context.Context, Config) (*Report, error), c Config, fps int) {
	for range b.N {
		rep, err := job(context.Background(), c)
		if err != nil {
			b.Fatal(err)
		}
		reportJob(b, rep, fps)
	}
}

// BenchmarkJobs times each job on prism beside its simhashdb counterpart
// on the same files, in one run:
//
//	go test ./jobs -run XXX -bench Jobs -benchtime 1x -count 3
func BenchmarkJobs(b *testing.B) {
	dir := benchInput(b)
	in := filepath.Join(dir, "fps.txt")
	out := filepath.Join(b.TempDir(), "out")
	b.Run("find-all/beam", func(b *testing.B) {
		benchJob(b, FindAll, Config{Input: in, Output: out, Distance: 3}, benchN)
	})
	b.Run("find-all/simhashdb", func(b *testing.B) {
		for range b.N {
			reportCLI(b, benchN, "find-all", "-d", "3", "-i", in, "-o", out)
		}
	})
	b.Run("find-clusters/beam", func(b *testing.B) {
		benchJob(b, FindClusters, Config{Input: in, Output: out, Distance: 3}, benchN)
	})
	b.Run("find-clusters/simhashdb", func(b *testing.B) {
		for range b.N {
			reportCLI(b, benchN, "find-clusters", "-d", "3", "-i", in, "-o", out)
		}
	})
	stored, queries := filepath.Join(dir, "stored.txt"), filepath.Join(dir, "queries.txt")
	b.Run("batch/beam", func(b *testing.B) {
		benchJob(b, Batch, Config{Input: queries, Stored: stored, Output: out, Distance: 3}, benchN)
	})
	b.Run("batch/simhashdb", func(b *testing.B) {
		// The index is built once, outside the timing: batch answers
		// from one; the Beam job reads the stored file each time.
		idx := filepath.Join(b.TempDir(), "idx")
		if o, err := exec.Command(simhashdbBin, "add", "--db", idx, "--input", stored).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, o)
		}
		b.ResetTimer()
		for range b.N {
			reportCLI(b, benchN, "batch", "--db", idx, "--k", "3", "--input", queries, "--output", out)
		}
	})
	b.Run("build/beam", func(b *testing.B) {
		benchJob(b, Build, Config{Input: in, Output: out, Distance: 3}, benchN)
	})
}
