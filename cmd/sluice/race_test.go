//go:build race

package main

// raceEnabled builds the broker under test with the race detector too.
const raceEnabled = true
