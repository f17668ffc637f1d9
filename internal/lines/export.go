package lines

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ExportHeaderPrefix starts the first line of simhashdb export's output: a
// comment to any reader of records (they skip lines starting with #), and
// to add what the records came from.
const ExportHeaderPrefix = "# simhashdb-export "

// MaxSketch bounds ExportHeader.Sketch (the engine's MaxSketch).
const MaxSketch = 128

// ExportHeader is the JSON of export's first line.
type ExportHeader struct {
	// Fingerprint is the JSON of the index's text options
	// (textindex.Schema), absent for an index that keeps none.
	Fingerprint json.RawMessage `json:"fingerprint,omitempty"`
	// Sketch is the bytes of the sketch each record carries after its
	// fingerprint, in hex (Syntax.SketchedRecord), 0 for none.
	Sketch int `json:"sketch,omitempty"`
}

// Line is h as export's first line, without its newline.
func (h ExportHeader) Line() string {
	b, _ := json.Marshal(h)
	return ExportHeaderPrefix + string(b)
}

// ParseExportHeader reads export's first line; ok is false for a line of
// another kind.
func ParseExportHeader(line string) (h ExportHeader, ok bool, err error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), strings.TrimSpace(ExportHeaderPrefix))
	if !ok {
		return h, false, nil
	}
	if err := json.Unmarshal([]byte(rest), &h); err != nil {
		return h, true, fmt.Errorf("export header: %w", err)
	}
	if h.Sketch < 0 || h.Sketch > MaxSketch {
		return h, true, fmt.Errorf("export header: sketch of %d bytes, at most %d", h.Sketch, MaxSketch)
	}
	return h, true, nil
}
