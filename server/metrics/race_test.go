//go:build race

package metrics

// raceEnabled: the race detector drops a quarter of sync.Pool's Puts at
// random, so allocation counts under it are not the program's.
const raceEnabled = true
