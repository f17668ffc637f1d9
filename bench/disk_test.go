package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// directIOWorks reports whether dir's file system takes O_DIRECT reads
// (tmpfs does not).
func directIOWorks(t *testing.T, dir string) bool {
	if runtime.GOOS != "linux" {
		return false
	}
	p := filepath.Join(dir, "probe")
	require.NoError(t, os.WriteFile(p, make([]byte, 1<<16), 0o644))
	r, err := newDirectReader([]string{p}, 1)
	if errors.Is(err, syscall.EINVAL) {
		return false
	}
	require.NoError(t, err)
	r.Close()
	return true
}

// TestDiskQuickRun: the disk section, quick, writes its numbers and its
// table: the disk's limit, and queries at 1 and 16 concurrent, each asked
// once, from a child process.
func TestDiskQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an index and runs children")
	}
	if !directIOWorks(t, os.TempDir()) {
		t.Skip("no O_DIRECT reads in the temporary folder's file system")
	}
	out := t.TempDir()
	res, err := Run(Config{Out: out, Quick: true, Only: []string{"disk"}})
	require.NoError(t, err)
	require.Nil(t, res.Codec, "only the section named")
	require.Len(t, res.Disk, 1)
	d := res.Disk[0]
	assert.Equal(t, "optimiser", d.Design)
	_, memMiB, nq := diskConfig(Config{Quick: true})
	assert.Positive(t, d.Tables)
	assert.Positive(t, d.IndexBytes)
	assert.NotEmpty(t, d.PageCache)
	assert.Equal(t, d.Tables, d.Disk.RoundOf)
	assert.Positive(t, d.Disk.One.P50)
	assert.LessOrEqual(t, d.Disk.One.P50, d.Disk.One.P99)
	assert.Positive(t, d.Disk.IOPSMany)
	assert.Positive(t, d.Disk.Async.P50)
	assert.LessOrEqual(t, d.Disk.Async.P50, d.Disk.Async.P99)
	assert.Positive(t, d.Disk.IOPSAsync)
	assert.Positive(t, d.Disk.AsyncSubmitUs, "a round's time in io_submit")
	assert.Less(t, d.Disk.AsyncSubmitUs, d.Disk.Async.P999, "a part of the round")
	require.Len(t, d.Runs, 2*len(diskWays))
	for i, r := range d.Runs {
		assert.Equal(t, []int{1, 16}[i%2], r.Concurrency)
		if way := diskWays[i/2]; way == "pread" {
			assert.Equal(t, "pread", r.Reads, "the last pair reads with pread")
		} else {
			assert.Contains(t, []string{way, "pread"}, r.Reads, "pread only where the kernel refuses the ring")
		}
		assert.Contains(t, []string{"ring", "direct", "pread"}, r.AutoReads, "how the default reads the index")
		assert.Positive(t, r.ReadsPerQuery, "the cache is smaller than the index")
		assert.Equal(t, nq, r.Queries, "every query asked once")
		assert.Positive(t, r.QPS)
		assert.LessOrEqual(t, r.Latency.P50, r.Latency.P99)
		assert.LessOrEqual(t, r.Latency.P99, r.Latency.P999)
		assert.Positive(t, r.Round.P50, "the round timed before the run")
		assert.LessOrEqual(t, r.Round.P50, r.Round.P99)
		assert.Positive(t, r.RoundIOPS)
		assert.LessOrEqual(t, r.Latency.P50, r.Latency.P999)
		assert.Positive(t, r.Latency.Mean)
		assert.Positive(t, r.PeakRSS, "the child's peak resident memory")
		if strings.HasPrefix(d.PageCache, "a memory cgroup") {
			assert.Less(t, r.PeakRSS, int64(memMiB)<<20, "within its cgroup")
		}
		if r.Reads == "pread" {
			assert.Zero(t, r.SubmitsPerQuery, "no ring, no submissions")
		} else if r.RoundsPerQuery > 0 {
			// Rounds through the ring are reads it submitted.
			assert.Positive(t, r.SubmitsPerQuery, "%s, %d at a time", r.Reads, r.Concurrency)
			assert.Positive(t, r.SubmitUs)
			if r.Concurrency == 1 {
				assert.Less(t, r.SubmitUs+r.WaitUs, r.Latency.Mean, "one query at a time: its system calls are a part of its time")
			}
		}
		round, _ := d.roundOf(r)
		if r.Concurrency == 1 {
			assert.Positive(t, r.Between.P50, "rounds timed between the queries one at a time")
			assert.LessOrEqual(t, r.Between.P50, r.Between.P99)
			assert.Positive(t, r.BetweenIOPS)
			assert.Equal(t, r.Between, round, "the run's ratios are to the rounds between its queries")
		} else {
			assert.Zero(t, r.Between, "no rounds between queries 16 at a time")
			assert.Equal(t, r.Round, round, "the run's ratios are to its own round")
		}
	}
	// The fingerprints alone: the tables' reads, one round a query.
	require.Len(t, d.Fingerprints, 2)
	for i, r := range d.Fingerprints {
		assert.Equal(t, []int{1, 16}[i], r.Concurrency)
		assert.Equal(t, "fingerprints", r.Answer)
		assert.Contains(t, []string{"direct", "pread"}, r.Reads, "pread only where the kernel refuses the ring")
		assert.Equal(t, nq, r.Queries, "every query asked once")
		assert.Positive(t, r.ReadsPerQuery, "the cache is smaller than the index")
		if r.Reads != "pread" {
			assert.LessOrEqual(t, r.RoundsPerQuery, 1.0, "%d at a time: no query waits for a second round", r.Concurrency)
		}
		if r.Concurrency == 1 {
			assert.Positive(t, r.Between.P50, "rounds timed between the queries one at a time")
		}
	}
	for _, r := range d.Kinds {
		assert.Positive(t, r.Round.P50, "the round timed before the run")
		assert.Positive(t, r.Between.P50, "rounds timed between the queries")
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(report), "## Queries on the disk")
	// At 200K the optimiser's design is ForDisk's 4 tables.
	assert.Equal(t, 4, d.Tables)
	assert.True(t, d.DiskDesign)
	assert.Contains(t, string(report), "`--design disk` (`permutation.ForDisk`) picks this design")
	assert.Contains(t, string(report), fmt.Sprintf("reads this index, in the child's memory limit, as **%s**", d.Runs[0].AutoReads))
	assert.Equal(t, pairedRounds/10, d.PairedRounds, "a quick run times fewer rounds")
	assert.Contains(t, string(report), fmt.Sprintf("timed again (%d rounds)", d.PairedRounds), "the report names the rounds the run timed")
	assert.Contains(t, string(report), fmt.Sprintf("%.1fx the round between its queries, %.0f us", d.Kinds[0].Latency.P50/max(d.Kinds[0].Between.P50, 1), d.Kinds[0].Between.P50), "a kind's ratio is to the rounds between its queries")
	assert.Contains(t, string(report), "--only disk")
	for _, r := range d.Runs {
		if r.Concurrency == 1 && r.SubmitsPerQuery > 0 {
			assert.Contains(t, string(report), fmt.Sprintf("Where the queries' time goes (%s, one at a time, means): %.0f us a query; %.0f us in the system calls", r.Reads, r.Latency.Mean, r.SubmitUs))
		}
	}
	require.Len(t, d.Charts, 1)
	st, err := os.Stat(filepath.Join(out, d.Charts[0]))
	require.NoError(t, err)
	assert.Positive(t, st.Size())
}
