package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/simhashdb/simhashdb/internal/lines"
	"github.com/simhashdb/simhashdb/simhash"
)

// Requests of add --text --server stay under these bounds (the server's
// defaults are above them: --max-batch 50,000 lines, 64 MiB a body).
const (
	remoteTextLines = 50_000
	remoteTextBytes = 8 << 20
)

// remoteTextAdder sends files as documents named by their paths to
// POST /v1/documents, which fingerprints them with the index's options and
// gives each the id of its path, as a local add --text does.
type remoteTextAdder struct {
	ctx      context.Context
	c        *remote
	stdout   io.Writer
	stderr   io.Writer
	code     int
	body     []string // JSON lines of the request being gathered
	names    []string // their paths, as the command line spelled them
	docNames []string // their documents' names (docName)
	bytes    int
	files    int
	// counts from the answers
	stored, unchanged int
	binaries, empty   int
}

// addTextRemote is add --text --server: the files under paths stored
// through the server, each once durable there before its id is printed.
func addTextRemote(rf *remoteFlags, paths []string, stdout, stderr io.Writer) int {
	c, err := rf.client()
	if err != nil {
		return fail(stderr, "add", exitUsage, err)
	}
	ctx, stop := signalContext()
	defer stop()
	a := &remoteTextAdder{ctx: ctx, c: c, stdout: stdout, stderr: stderr}
	for _, arg := range paths {
		if err := readFiles(ctx, arg, nil, a.file, a.bad); err != nil {
			return a.stopped(err)
		}
	}
	if err := a.send(); err != nil {
		return a.stopped(err)
	}
	fmt.Fprintf(stderr, "%s add: %d files: %d stored (added or replaced), %d unchanged%s\n", programName, a.files, a.stored, a.unchanged, skippedSummary(a.binaries, a.empty))
	return a.code
}

// stopped reports the error that ended the run and what was stored.
func (a *remoteTextAdder) stopped(err error) int {
	code := fail(a.stderr, "add", exitFailed, err)
	fmt.Fprintf(a.stderr, "%s add: %d files stored before it stopped (their ids are printed); add the same paths again to finish: files stored are left as they are\n", programName, a.stored+a.unchanged)
	return code
}

// bad reports a file that could not be added, and goes on.
func (a *remoteTextAdder) bad(path string, err error) {
	fmt.Fprintf(a.stderr, "%s add: %s: %v\n", programName, path, err)
	a.code = exitFailed
}

func (a *remoteTextAdder) file(path, name string, b []byte) error {
	a.files++
	if !utf8.Valid(b) {
		// A JSON string would carry U+FFFD instead, and the server would
		// fingerprint other bytes than the file's.
		a.bad(path, errors.New("not UTF-8 text, which a JSON line cannot carry unchanged (compressed, binary or in another encoding): add it with --db on the server's machine"))
		return nil
	}
	line, err := json.Marshal(struct {
		Name string `json:"name"`
		Text string `json:"text"`
	}{name, string(b)})
	if err != nil {
		return err
	}
	if len(a.body) > 0 && a.bytes+len(line) > remoteTextBytes {
		if err := a.send(); err != nil {
			return err
		}
	}
	a.body, a.names, a.docNames = append(a.body, string(line)), append(a.names, path), append(a.docNames, name)
	a.bytes += len(line) + 1
	if len(a.body) == remoteTextLines {
		return a.send()
	}
	return nil
}

// send posts the lines gathered and prints the ids of those stored.
func (a *remoteTextAdder) send() error {
	if len(a.body) == 0 {
		return nil
	}
	defer func() { a.body, a.names, a.docNames, a.bytes = a.body[:0], a.names[:0], a.docNames[:0], 0 }()
	var ans struct {
		Stored, Unchanged int
		Errors            []struct {
			Line  int
			Error string
		}
		IDs            []*uint64
		Fingerprints   []*string
		UnchangedLines []int `json:"unchanged_lines"`
	}
	err := a.c.call(a.ctx, "POST", "/v1/documents", strings.NewReader(strings.Join(a.body, "\n")+"\n"), &ans)
	var re *remoteError
	if errors.As(err, &re) && re.status == http.StatusRequestEntityTooLarge && len(a.body) == 1 {
		a.bad(a.names[0], fmt.Errorf("refused by the server: %s", re.msg))
		return nil
	}
	if err != nil {
		return err
	}
	if len(ans.IDs) != len(a.body) || len(ans.Fingerprints) != len(a.body) {
		return fmt.Errorf("%s: the answer to POST /v1/documents has %d ids and %d fingerprints for %d files: is the server older than this command?", a.c.base, len(ans.IDs), len(ans.Fingerprints), len(a.body))
	}
	unchanged := map[int]bool{}
	for _, n := range ans.UnchangedLines {
		unchanged[n-1] = true
	}
	why := map[int]string{}
	for _, e := range ans.Errors {
		why[e.Line-1] = e.Error
	}
	for i, id := range ans.IDs {
		switch {
		case id == nil || ans.Fingerprints[i] == nil:
			msg, ok := why[i]
			switch {
			case !ok:
				a.bad(a.names[i], errors.New("refused by the server (its answer names the first reasons only)"))
			case strings.HasSuffix(msg, simhash.ErrBinary.Error()):
				a.binaries++
			case strings.HasSuffix(msg, simhash.ErrEmpty.Error()):
				a.empty++
				fmt.Fprintf(a.stderr, "%s add: %s: no words: not stored (every such file would be a duplicate of every other)\n", programName, a.names[i])
			default:
				a.bad(a.names[i], errors.New(msg))
			}
		case unchanged[i]: // as a local add, which prints what it stores
		default:
			fmt.Fprintf(a.stdout, "%d\t%s\t%s\n", *id, *ans.Fingerprints[i], lines.NameField(a.docNames[i]))
		}
	}
	a.stored += ans.Stored
	a.unchanged += ans.Unchanged
	return nil
}
