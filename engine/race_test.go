//go:build race

package engine

// raceEnabled is true under the race detector, where a test that checks
// no concurrency and runs ten times slower (a large commit's log records)
// runs in the plain test run only.
const raceEnabled = true
