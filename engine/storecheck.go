package engine

// checkStore is Check's look below the engine's keys, at the store's own
// files (store.CheckFiles): damage found is counted, files the MANIFEST
// does not list are reported.
func (db *DB) checkStore(c *checker) error {
	unlisted, err := db.store.CheckFiles(c.ctx, c.badErr)
	c.rep.Unlisted = append(c.rep.Unlisted, unlisted...)
	return err
}
