package naming_test

import (
	"context"
	"fmt"
	"os"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/textindex/naming"
)

// A folder added twice: a name's id is the same each time (a hash of the
// name), so the second time a file whose text changed is replaced under
// its id, and one that did not is left as it is.
func Example() {
	dir, err := os.MkdirTemp("", "naming-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, err := engine.Open(dir, engine.Options{})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if err := naming.Init(ctx, db); err != nil {
		panic(err)
	}
	what := []string{naming.Added: "added", naming.Replaced: "replaced", naming.Unchanged: "unchanged"}
	add := func(files map[string]uint64) {
		ids, err := naming.New(ctx, db, true)
		if err != nil {
			panic(err)
		}
		for _, name := range []string{"docs/a.txt", "docs/b.txt"} {
			id, w, err := ids.ID(ctx, name, files[name], "")
			if err != nil {
				panic(err)
			}
			if w != naming.Unchanged {
				if err := db.Insert(ctx, engine.Doc{ID: id, Fingerprint: files[name], Name: name}); err != nil {
					panic(err)
				}
			}
			fmt.Printf("%s: id %d, %s\n", name, id, what[w])
		}
		fmt.Println(ids.Summary())
	}
	add(map[string]uint64{"docs/a.txt": 0x1111, "docs/b.txt": 0x2222})
	add(map[string]uint64{"docs/a.txt": 0x1111, "docs/b.txt": 0x2233})
	// Output:
	// docs/a.txt: id 6226064213624198, added
	// docs/b.txt: id 6923649290296756, added
	// 2 added, 0 replaced, 0 unchanged
	// docs/a.txt: id 6226064213624198, unchanged
	// docs/b.txt: id 6923649290296756, replaced
	// 0 added, 1 replaced, 1 unchanged
}
