// Command simhashdb fingerprints documents and finds near-duplicates.
//
// Usage:
//
//	simhashdb <command> [flags] [arguments]
//
// Run "simhashdb help" for the commands and "simhashdb <command> --help" for
// one command's flags and an example.
//
// Exit codes: 0 success; 1 the command ran but some input failed (each
// failure is reported on standard error naming the file, line and problem);
// 2 the command line is wrong.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"sort"
)

// command is one subcommand.
type command struct {
	summary string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

var commands = map[string]command{
	"add":           {"store documents (id, fingerprint, name), text files or datasets in an index", runAdd},
	"dedup":         {"write a dataset's records less their near-duplicates (and groups), against an index too", runDedup},
	"batch":         {"answer many queries at once, one JSON line each", runBatch},
	"check":         {"verify every checksum and cross-reference of an index", runCheck},
	"compression":   {"report the bits per fingerprint of fingerprints or an index, every way of keeping them", runCompression},
	"delete":        {"remove documents by id", runDelete},
	"demo":          {"find near-duplicates in the bundled sample of license texts", runDemo},
	"export":        {"write every document of an index, as add reads them (rebuild with another K)", runExport},
	"get":           {"print documents by id", runGet},
	"find-all":      {"print every pair within distance K (simhash-cpp compatible)", runFindAll},
	"find-clusters": {"print groups of near-duplicates (simhash-cpp compatible)", runFindClusters},
	"fingerprint":   {"print the SimHash fingerprint of documents", runFingerprint},
	"query":         {"find the stored documents within distance K of one fingerprint or text", runQuery},
	"serve":         {"serve an index over HTTP with JSON, to many clients in any language", runServe},
	"route":         {"serve the API in front of an index's shards, one address for clients in any language", runRoute},
	"stats":         {"describe an index: documents, tables, bits per fingerprint", runStats},
}

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	programName = "simhashdb"
)

func main() {
	// SIMHASHDB_CPUPROFILE=FILE writes a CPU profile of the command (go
	// tool pprof reads it): how to see where a slow run spends its time.
	if path := os.Getenv("SIMHASHDB_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			code := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
			pprof.StopCPUProfile()
			f.Close()
			os.Exit(code)
		}
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "--help", "-help":
		usage(stdout)
		return exitOK
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, version())
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n", programName, args[0])
		usage(stderr)
		return exitUsage
	}
	return c.run(args[1:], stdin, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "%s finds near-duplicate documents by SimHash fingerprints.\n\nUsage:\n  %s <command> [flags] [arguments]\n\nCommands:\n", programName, programName)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-14s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nRun '%s <command> --help' for a command's flags and an example, '%s --version' for the build.\n", programName, programName)
	fmt.Fprintf(w, "Exit codes: 0 success, 1 some input failed or the index is damaged (reported on stderr, one line\n")
	fmt.Fprintf(w, "each; SIMHASHDB_VERBOSE=1 adds the details of the libraries below), 2 bad command line.\n")
}

// version names this build: the module's version (or the commit it was
// built from, with "+dirty" for uncommitted changes) and Go's.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return programName + " (no build information)"
	}
	v := bi.Main.Version
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" && (v == "" || v == "(devel)") {
		v = rev[:min(len(rev), 12)] + dirty
	}
	if v == "" || v == "(devel)" {
		v = "devel (no version stamped: built by go run, or outside a git checkout; go build in the checkout stamps the commit)"
	}
	return fmt.Sprintf("%s %s (%s)", programName, v, bi.GoVersion)
}
