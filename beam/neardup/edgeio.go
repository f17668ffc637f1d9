package neardup

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/fileio"
	"github.com/simhashdb/simhashdb/internal/lines"
)

// The text between a job's rounds: "<a> <b>" a line, two unsigned
// decimals (an edge, or a fingerprint and its count).

func init() {
	beam.RegisterFunction(numberPairLine)
	beam.RegisterFunction(countLine)
	beam.RegisterType(reflect.TypeOf((*readNumberPairsFn)(nil)).Elem())
	beam.RegisterFunction(toCount)
}

// NumberPairLines formats KV<uint64, uint64> (edges) as "<a> <b>" lines.
func NumberPairLines(s beam.Scope, kvs beam.PCollection) beam.PCollection {
	return beam.ParDo(s.Scope("neardup.NumberPairLines"), numberPairLine, kvs)
}

// CountLines formats KV<uint64, int64> (Distinct's dups) as "<v> <n>" lines.
func CountLines(s beam.Scope, kvs beam.PCollection) beam.PCollection {
	return beam.ParDo(s.Scope("neardup.CountLines"), countLine, kvs)
}

func numberPairLine(a, b uint64, emit func(string)) {
	emit(strconv.FormatUint(a, 10) + " " + strconv.FormatUint(b, 10))
}

func countLine(v uint64, n int64, emit func(string)) { numberPairLine(v, uint64(n), emit) }

// ReadNumberPairs reads what NumberPairLines wrote to the files glob
// matches. A malformed line fails the job: these files are the program's
// own.
func ReadNumberPairs(s beam.Scope, glob string) beam.PCollection {
	s = s.Scope("neardup.ReadNumberPairs")
	files := fileio.ReadMatches(s, fileio.MatchFiles(s, glob, fileio.MatchEmptyAllow()), fileio.ReadUncompressed())
	return beam.ParDo(s, &readNumberPairsFn{}, files)
}

// ReadCounts reads what CountLines wrote: KV<uint64, int64>.
func ReadCounts(s beam.Scope, glob string) beam.PCollection {
	return beam.ParDo(s.Scope("neardup.ReadCounts"), toCount, ReadNumberPairs(s, glob))
}

func toCount(v, n uint64, emit func(uint64, int64)) error {
	if n < 2 || n > 1<<62 {
		return fmt.Errorf("neardup: count %d of %d, want 2 or more", n, v)
	}
	emit(v, int64(n))
	return nil
}

type readNumberPairsFn struct{}

func (readNumberPairsFn) ProcessElement(ctx context.Context, file fileio.ReadableFile, emit func(uint64, uint64)) error {
	name := file.Metadata.Path
	r, err := file.Open(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer r.Close()
	return lines.Scan(r, name, 64, func(n int, line string, tooLong error) error {
		a, b, ok := strings.Cut(line, " ")
		x, err1 := strconv.ParseUint(a, 10, 64)
		y, err2 := strconv.ParseUint(b, 10, 64)
		if tooLong != nil || !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("%s:%d: want two unsigned decimals, got %q", name, n, line)
		}
		emit(x, y)
		return nil
	})
}
