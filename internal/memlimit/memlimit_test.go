package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMemoryLimit(t *testing.T) {
	const gib = int64(1) << 30
	meminfo := "MemTotal:       25165824 kB\nMemFree:        1000 kB\n" // 24 GiB
	tests := []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"no cgroup: physical memory", map[string]string{
			"proc/meminfo": meminfo,
		}, 24 * gib},
		{"nothing known", map[string]string{}, 0},
		{"cgroup v2 limit in the process's own group", map[string]string{
			"proc/meminfo":                               meminfo,
			"proc/self/cgroup":                           "0::/app.slice/svc\n",
			"sys/fs/cgroup/cgroup.controllers":           "memory\n",
			"sys/fs/cgroup/app.slice/svc/memory.max":     "2147483648\n",
			"sys/fs/cgroup/app.slice/memory.max":         "max\n",
			"sys/fs/cgroup/app.slice/svc/memory.current": "1\n",
		}, 2 * gib},
		{"cgroup v2 limit in an ancestor", map[string]string{
			"proc/meminfo":                           meminfo,
			"proc/self/cgroup":                       "0::/app.slice/svc\n",
			"sys/fs/cgroup/cgroup.controllers":       "memory\n",
			"sys/fs/cgroup/app.slice/svc/memory.max": "max\n",
			"sys/fs/cgroup/app.slice/memory.max":     "1073741824\n",
		}, gib},
		{"cgroup v2 in a namespace: the path is not under the mount", map[string]string{
			"proc/meminfo":                     meminfo,
			"proc/self/cgroup":                 "0::/kubepods/pod1/ctr\n",
			"sys/fs/cgroup/cgroup.controllers": "memory\n",
			"sys/fs/cgroup/memory.max":         "536870912\n",
		}, gib / 2},
		{"cgroup v2 no limit", map[string]string{
			"proc/meminfo":                     meminfo,
			"proc/self/cgroup":                 "0::/\n",
			"sys/fs/cgroup/cgroup.controllers": "memory\n",
			"sys/fs/cgroup/memory.max":         "max\n",
		}, 24 * gib},
		{"cgroup v1 limit", map[string]string{
			"proc/meminfo":     meminfo,
			"proc/self/cgroup": "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "3221225472\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":            "9223372036854771712\n",
		}, 3 * gib},
		{"cgroup v1 unlimited, hybrid v2 unlimited", map[string]string{
			"proc/meminfo":     meminfo,
			"proc/self/cgroup": "4:memory:/x\n0::/\n",
			"sys/fs/cgroup/memory/x/memory.limit_in_bytes": "9223372036854771712\n",
			"sys/fs/cgroup/unified/cgroup.controllers":     "\n",
		}, 24 * gib},
		{"a limit above the machine's memory", map[string]string{
			"proc/meminfo":                     meminfo,
			"proc/self/cgroup":                 "0::/\n",
			"sys/fs/cgroup/cgroup.controllers": "memory\n",
			"sys/fs/cgroup/memory.max":         "107374182400\n",
		}, 24 * gib},
		{"garbage is no limit", map[string]string{
			"proc/meminfo":                     "MemTotal: lots\n",
			"proc/self/cgroup":                 "nonsense\n0::/\n",
			"sys/fs/cgroup/cgroup.controllers": "memory\n",
			"sys/fs/cgroup/memory.max":         "-5\n",
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, body := range tc.files {
				p := filepath.Join(root, name)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
			}
			require.Equal(t, tc.want, Of(root))
		})
	}
	t.Run("GOMEMLIMIT", func(t *testing.T) {
		root := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(root, "proc"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "proc/meminfo"), []byte(meminfo), 0o644))
		old := debug.SetMemoryLimit(3 * gib / 2)
		defer debug.SetMemoryLimit(old)
		require.Equal(t, 3*gib/2, Of(root))
	})
}
