// Package lines reads the input lines and writes the output lines of the
// simhashdb command's batch jobs (find-all, find-clusters, batch, add), so
// that every program that claims to read or write them (the command, the
// Beam jobs) uses one implementation.
package lines
