// Package quality measures how well SimHash fingerprints separate real
// near-duplicate documents from unrelated ones, in the manner of Figure 1 of
// Manku et al.: precision and recall versus the distance k, on license texts
// (natural variants such as GPL-2.0 and GPL-2.0-or-later, the BSD family) and
// on synthetic edits of them (timestamps, counters, ad blocks, changed
// words).
//
// The corpora are fetched by fetch.sh from package registries (the npm
// package spdx-license-list and the Go module
// github.com/google/licenseclassifier/v2); the default test run uses small
// generated fixtures instead.
package quality

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Doc is one document of a corpus.
type Doc struct {
	Name string
	Text string
}

// LoadCorpus reads the documents fetch.sh placed under dir: the license
// texts of spdx-license-list (dir/spdx/licenses/*.json, field licenseText)
// and the text assets of licenseclassifier (dir/licenseclassifier/**/*.txt).
// Texts that are byte-identical after trimming are kept once, so that exact
// copies do not pass for near-duplicates found.
func LoadCorpus(dir string) ([]Doc, error) {
	var docs []Doc
	seen := map[string]bool{}
	add := func(name, text string) {
		text = strings.TrimSpace(text)
		if text == "" || seen[text] {
			return
		}
		seen[text] = true
		docs = append(docs, Doc{Name: name, Text: text})
	}
	spdx, err := filepath.Glob(filepath.Join(dir, "spdx", "licenses", "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(spdx)
	for _, p := range spdx {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var v struct {
			LicenseText string `json:"licenseText"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		add("spdx/"+strings.TrimSuffix(filepath.Base(p), ".json"), v.LicenseText)
	}
	lc := filepath.Join(dir, "licenseclassifier")
	if _, err := os.Stat(lc); errors.Is(err, fs.ErrNotExist) {
		lc = "" // only the SPDX texts were fetched
	}
	if lc != "" {
		err = filepath.WalkDir(lc, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".txt") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(lc, p)
			add("lc/"+filepath.ToSlash(rel), string(b))
			return nil
		})
	}
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("no documents under %s: run bench/quality/fetch.sh %s first", dir, dir)
	}
	return docs, nil
}
