package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/simhashdb/simhashdb/engine"
)

// walkHelp says how fingerprint and add --text walk folders.
const walkHelp = "Folders are read recursively. A symbolic link given as an argument is followed; inside a\n" +
	"folder, a link to a file is read and one to a folder is skipped (named on stderr: a link can\n" +
	"loop; give the folder itself to read it). Devices, sockets and pipes are skipped."

// errLinkedFolder is what a symbolic link to a folder met in a walk is
// reported with: skipped, not followed (a link can loop).
var errLinkedFolder = errors.New("a symbolic link to a folder: skipped (give the folder itself to read it)")

// walkFiles calls file for every file under root (root itself if it is a
// file), and bad for what it cannot read or skips with a word, as walkHelp
// says; skipDir, if it returns true for a folder, skips it. An error of
// file ends the walk.
func walkFiles(root string, skipDir func(string) bool, file func(path string) error, bad func(path string, err error)) error {
	if li, err := os.Lstat(root); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		if info, err := os.Stat(root); err == nil && info.IsDir() {
			root += string(filepath.Separator) // named: followed
		}
	}
	return filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			bad(path, unwrapPathError(err))
			return nil
		}
		if de.IsDir() {
			if skipDir != nil && skipDir(path) {
				return filepath.SkipDir
			}
			return nil
		}
		if de.Type()&fs.ModeSymlink != 0 {
			info, err := os.Stat(path)
			switch {
			case err != nil:
				bad(path, unwrapPathError(err))
				return nil
			case info.IsDir():
				bad(path, errLinkedFolder)
				return nil
			case !info.Mode().IsRegular():
				return nil
			}
			return file(path)
		}
		if !de.Type().IsRegular() {
			return nil
		}
		return file(path)
	})
}

// docName is the name a file's document gets: its absolute path, cleaned,
// with symbolic links resolved (the file's own path, not a link's), so that
// one file is one document however a command line spells it ("docs",
// "./docs", "$PWD/docs", a link to it); cut to engine.MaxName bytes.
func docName(path string) string {
	name, err := filepath.Abs(path)
	if err != nil {
		name = filepath.Clean(path)
	}
	if real, err := filepath.EvalSymlinks(name); err == nil {
		name = real
	}
	if len(name) > engine.MaxName {
		name = name[:engine.MaxName]
	}
	return name
}

// readFiles is walkFiles that reads each file whole for file, with the name
// its document gets (docName), and stops when ctx is done; a file it
// cannot read goes to bad.
func readFiles(ctx context.Context, root string, skipDir func(string) bool, file func(path, name string, b []byte) error, bad func(path string, err error)) error {
	return walkFiles(root, skipDir, func(path string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			bad(path, unwrapPathError(err))
			return nil
		}
		return file(path, docName(path), b)
	}, bad)
}
